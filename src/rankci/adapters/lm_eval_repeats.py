"""lm-evaluation-harness ``repeats``: the score of each of a document's N responses.

A task YAML with ``repeats: N`` makes lm-eval ask the model N times per document. The
``samples_*.jsonl`` line keeps the N responses (``resps``) but only ONE metric value per document
and filter: the filter chain reduces the N responses to one (``take_first``: the first;
``majority_vote`` then ``take_first``: the most common answer) before the metric is computed.
``read_lm_eval(repeats="trial")`` scores every response against the target, the way the harness
scores the one it keeps, so each response becomes a repeated trial of the item
(:mod:`rankci.trials`: the mean, pass@K or pass^K per item).

What can be re-scored, and how (lm-eval 0.4, ``ConfigurableTask.process_results``):

=================  ==========================  ==============================================
output_type        metric                      the score of response r
=================  ==========================  ==============================================
generate_until     ``exact_match``             1 if response r equals the target (after the
                                               metric's ``regexes_to_ignore``, ``ignore_case``,
                                               ``ignore_punctuation``, ``ignore_numbers``); a
                                               list of targets: 1 if any equals
multiple_choice    ``acc``                     1 if the choice with the largest log-likelihood
                                               in repeat r is the gold choice
multiple_choice    ``acc_norm``                the same with log-likelihoods divided by the
                                               choice's length in characters
=================  ==========================  ==============================================

Only filters that pick one of the N responses without changing it (``take_first``,
``majority_vote``; the default filter ``none`` is ``take_first``) leave each response as it was
scored, so only they are re-scored; a filter that rewrites responses (``regex``, ``lowercase``,
a custom function) is refused, naming the task, the filter and its functions. Every other
metric or output type is refused, naming the task and the metric.

Every document is checked: the response the filter keeps (the first, or the majority answer by
``collections.Counter.most_common`` as lm-eval's ``MajorityVoteFilter`` picks it), scored here,
must give the metric value the harness logged; a difference is an error naming the file, the
document and both values. So a re-scoring that does not reproduce the harness never passes
silently.

References
----------
EleutherAI lm-evaluation-harness, docs/task_guide.md (``repeats``, ``filter_list``) and
lm_eval/api/task.py (``process_results``), https://github.com/EleutherAI/lm-evaluation-harness.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping

import numpy as np

__all__ = ["REPEATS", "REPEAT_METRICS", "SELECTING_FILTERS", "response_scores"]

#: what ``read_lm_eval(repeats=...)`` may be: the harness's one value per document, or a trial
#: per response
REPEATS = ("metric", "trial")
#: the metrics whose per-response value is re-scored, by output type
REPEAT_METRICS: Mapping[str, tuple[str, ...]] = {
    "generate_until": ("exact_match",),
    "multiple_choice": ("acc", "acc_norm"),
}
#: the filter functions that select one response without rewriting it
SELECTING_FILTERS = ("take_first", "majority_vote")
_EXACT_MATCH_OPTIONS = ("regexes_to_ignore", "ignore_case", "ignore_punctuation", "ignore_numbers")
_METRIC_KEYS = ("metric", "aggregation", "higher_is_better")


def _filter_functions(config: Mapping, filter_name: str, task: str) -> list[str]:
    """The function names of the task's filter ``filter_name`` (``none``: take_first)."""
    listed = config.get("filter_list")
    if not listed:
        if filter_name != "none":
            raise ValueError(
                f"task {task!r}: filter {filter_name!r} is not in the task's config (no "
                "filter_list), so its functions are unknown; repeats='trial' cannot tell what it "
                "did to the responses"
            )
        return ["take_first"]
    for entry in listed:
        if isinstance(entry, Mapping) and str(entry.get("name")) == filter_name:
            return [str(step.get("function")) for step in entry.get("filter") or []]
    raise ValueError(
        f"task {task!r}: filter {filter_name!r} is not in the task's filter_list; repeats='trial' "
        "cannot tell what it did to the responses"
    )


def _metric_options(config: Mapping, metric: str) -> dict:
    for entry in config.get("metric_list") or []:
        if isinstance(entry, Mapping) and entry.get("metric") == metric:
            return {k: v for k, v in entry.items() if k not in _METRIC_KEYS}
    return {}


def _normalise(texts: list[str], options: Mapping) -> list[str]:
    """lm-eval's ``exact_match_hf_evaluate`` transformations, in its order."""
    out = list(texts)
    for pattern in options.get("regexes_to_ignore") or ():
        out = [re.sub(pattern, "", x) for x in out]
    if options.get("ignore_case"):
        out = [x.lower() for x in out]
    if options.get("ignore_punctuation"):
        out = [x.translate(str.maketrans("", "", string.punctuation)) for x in out]
    if options.get("ignore_numbers"):
        out = [x.translate(str.maketrans("", "", string.digits)) for x in out]
    return out


def _generated(record: Mapping, options: Mapping, where: str) -> list[float]:
    resps = record.get("resps")
    if not (isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list)):
        raise ValueError(f"{where}: 'resps' is not one list of responses")
    responses = [str(r) for r in resps[0]]
    target = record.get("target")
    targets = target if isinstance(target, list) else [target]
    if not targets or not all(isinstance(t, str) for t in targets):
        raise ValueError(
            f"{where}: the target is {type(target).__name__} {str(target)[:40]!r}, not a string "
            "(or list of strings); exact_match cannot be re-scored per response"
        )
    given = _normalise(responses, options)
    wanted = _normalise(list(targets), options)
    return [float(any(g == w for w in wanted)) for g in given]


def _choice_lengths(record: Mapping, n_choices: int, delimiter: str, where: str) -> np.ndarray:
    arguments = record.get("arguments") or {}
    lengths = []
    for c in range(n_choices):
        entry = arguments.get(f"gen_args_{c}") if isinstance(arguments, Mapping) else None
        text = entry.get("arg_1") if isinstance(entry, Mapping) else None
        if not isinstance(text, str):
            raise ValueError(f"{where}: no continuation text for choice {c} (arguments.arg_1)")
        lengths.append(float(len(text[len(delimiter) :] if text.startswith(delimiter) else text)))
    return np.array(lengths)


def _chosen(record: Mapping, metric: str, delimiter: str, where: str) -> list[float]:
    resps = record.get("resps")
    if not isinstance(resps, list) or not resps:
        raise ValueError(f"{where}: 'resps' is not a list of choices")
    counts = {len(choice) for choice in resps}
    if len(counts) != 1:
        raise ValueError(f"{where}: the choices have different numbers of responses ({counts})")
    lls = np.array([[float(pair[0]) for pair in choice] for choice in resps])  # (choices, N)
    target = str(record.get("target"))
    if not target.strip().lstrip("-").isdigit():
        raise ValueError(
            f"{where}: the target {target[:40]!r} is not one gold choice index; {metric} cannot "
            "be re-scored per response"
        )
    gold = int(target)
    if metric == "acc_norm":
        lls = lls / _choice_lengths(record, len(resps), delimiter, where)[:, None]
    return [float(np.argmax(lls[:, r]) == gold) for r in range(lls.shape[1])]


def response_scores(
    records: list[dict],
    config: Mapping | None,
    *,
    task: str,
    metric: str,
    filter_name: str,
    path: str,
) -> list[list[float]]:
    """The score of each response of each sample line (one list of N per line).

    ``config`` is the task's entry in the results file's ``configs``; ``metric`` and
    ``filter_name`` the ones read. Every line's kept response, re-scored, must equal its logged
    ``metric`` (module docstring).

    Raises
    ------
    ValueError
        A task without its config, a metric or output type that cannot be re-scored (naming
        the task and the metric), a filter that rewrites the responses (naming the filter and
        its functions), a line whose re-scored kept response differs from the logged value.

    Examples
    --------
    >>> config = {"output_type": "generate_until", "metric_list": [{"metric": "exact_match"}]}
    >>> line = {"doc_id": 0, "target": "cat", "resps": [["cat", "dog", "cat"]],
    ...         "exact_match": 1.0}
    >>> response_scores([line], config, task="echo", metric="exact_match",
    ...                 filter_name="none", path="samples_echo.jsonl")
    [[1.0, 0.0, 1.0]]
    """
    if not config:
        raise ValueError(
            f"task {task!r}: repeats='trial' needs the task's config (the 'configs' entry of its "
            "results_*.json beside the samples), to know its output type, filters and metric"
        )
    output_type = str(config.get("output_type"))
    if config.get("process_results"):
        raise ValueError(
            f"task {task!r}: its config scores documents with its own process_results, so the "
            f"per-response value of metric {metric!r} cannot be determined from the samples "
            "file; read this task with repeats='metric'"
        )
    if metric not in REPEAT_METRICS.get(output_type, ()):
        offered = "; ".join(f"{k}: {', '.join(v)}" for k, v in REPEAT_METRICS.items())
        raise ValueError(
            f"task {task!r}: the per-response value of metric {metric!r} ({output_type} task) "
            "cannot be determined from the samples file (lm-eval logs one value per document "
            f"for its repeats); repeats='trial' re-scores {offered}. Read this task with "
            "repeats='metric' (the harness's value per document), or leave it out"
        )
    functions = _filter_functions(config, filter_name, task)
    rewriting = [f for f in functions if f not in SELECTING_FILTERS]
    if rewriting:
        raise ValueError(
            f"task {task!r}, metric {metric!r}: filter {filter_name!r} ({' -> '.join(functions)}) "
            f"rewrites the responses ({', '.join(rewriting)}), so the score of each response "
            "cannot be recomputed from the samples file; repeats='trial' reads filters that "
            f"only select a response ({', '.join(SELECTING_FILTERS)}): choose one with filter="
        )
    options = _metric_options(config, metric)
    allowed = _EXACT_MATCH_OPTIONS if output_type == "generate_until" else ()
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"task {task!r}: metric {metric!r} has the option "
            f"{unknown[0]}={options[unknown[0]]!r}, "
            "which repeats='trial' does not re-apply; read this task with repeats='metric'"
        )
    delimiter = str(config.get("target_delimiter", " "))
    majority = "majority_vote" in functions
    out = []
    for k, record in enumerate(records):
        where = f"{path!r}, doc_id {record.get('doc_id', k)!r} (task {task!r})"
        if output_type == "generate_until":
            scores = _generated(record, options, where)
            if majority:
                vote = Counter(str(r) for r in record["resps"][0]).most_common(1)[0][0]
                kept = str(vote)
                index = [str(r) for r in record["resps"][0]].index(kept)
            else:
                index = 0
        else:
            scores = _chosen(record, metric, delimiter, where)
            index = 0
            if majority:
                raise ValueError(
                    f"task {task!r}: a majority_vote filter on a multiple_choice task is not "
                    "re-scored by repeats='trial'"
                )
        repeats = config.get("repeats")
        if isinstance(repeats, int) and len(scores) != repeats:
            raise ValueError(
                f"{where}: {len(scores)} responses, but the task's config has repeats: {repeats}"
            )
        logged = record.get(metric)
        if logged is not None and not np.isclose(scores[index], float(logged)):
            raise ValueError(
                f"{where}: the response filter {filter_name!r} keeps scores {scores[index]:g} "
                f"when rankci re-scores it, but the harness logged {metric} = {float(logged):g}; "
                "the task's scoring is not the one repeats='trial' reproduces (a custom "
                "process_results?), so its responses cannot be scored one by one"
            )
        out.append(scores)
    return out
