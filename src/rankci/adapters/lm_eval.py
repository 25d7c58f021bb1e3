"""Read lm-evaluation-harness ``--log_samples`` output into :class:`rankci.Scores`.

``lm_eval run ... --output_path OUT --log_samples`` writes, for each model, a directory
``OUT/<model>/`` holding ``results_<date>.json`` (aggregate metrics, the model name, the groups and
their subtasks) and one ``samples_<task>_<date>.jsonl`` per task: one JSON line per document (and
filter) with ``doc_id``, ``doc``, ``doc_hash``, ``filter`` and one field per per-sample metric
(``acc``, ``acc_norm``, ``exact_match``, ...).

What rankci takes from them, and how to change it:

=========  ========================================================  ============================
role       default                                                   override
=========  ========================================================  ============================
model      ``model_name`` of the results file beside the samples     ``model=`` (name, mapping)
           (the directory name when there is none)
item       ``<task>/<doc_id>``                                       ``item="doc.id"`` (a field)
cluster    the task (subtask), e.g. ``mmlu_anatomy``                 ``cluster="group"``,
                                                                     ``"benchmark"``, ``"doc.X"``,
                                                                     ``None``
score      ``acc`` if the task has it, else ``exact_match``, else     ``metric=`` (name, list
           the task's first metric; the task's first filter           or {task: name}),
                                                                     ``filter=``
=========  ========================================================  ============================

``cluster="group"`` is the innermost group listing the task (``mmlu_stem`` for ``mmlu_anatomy``),
``cluster="benchmark"`` the outermost (``mmlu``); a task outside every group is its own cluster.
Items are matched across models by id; a document whose ``doc_hash`` differs between two models
under the same id is an error (the models were run on different data).

A run's identity is its model, its ``model_args``, its task and its ``num_fewshot`` (from the
results file of the run): runs under one model name whose ``model_args`` differ
(``revision=step1``, ``revision=step2``) are different models, ``"pythia (revision=step1)"``
(``notes["models_told_apart"]``); a task run with different numbers of shots is several tasks,
``"<task>:num_fewshot=<n>"``, whose items are not paired (``notes["tasks_split_by_fewshot"]``).
Of several runs of one identity the latest is read; the others are listed in
``notes["superseded"]`` and a warning line names both runs (and says when their task hashes
differ). Tasks a results file lists without a samples file (``notes["tasks_without_samples"]``),
samples files with fewer documents than ``n-samples.effective`` (``notes["samples_cut_down"]``),
names of ``tasks=`` a model never ran (``notes["tasks_not_run"]``) and groups whose harness score
is not the mean of their items, as with ``weight_by_size: false``
(``notes["group_means_differ"]``), are named with a warning.

Layouts and variants read:

* lm-eval >= 0.4.3: ``results_<date>.json`` and ``samples_<task>_<date>.jsonl`` (one JSON object
  per line);
* lm-eval <= 0.4.2: ``results.json`` and ``<model_args>_<task>.jsonl`` beside it, each holding one
  JSON array (``<model_args>`` is ``--model_args`` with ``/`` and ``=`` replaced by ``__``);
* sample lines without a ``filter`` key (lm-eval <= 0.4.4): a task with several filters writes one
  block of lines per filter, in the order of its ``filter_list``; ``filter=`` picks one (checked
  against the harness's aggregate when the results file has it);
* tasks whose metric is aggregated over the whole corpus (bleu, f1 of some tasks, perplexities)
  have no per-item score: they are skipped, listed in ``notes["tasks_skipped_corpus_metric"]``;
* tinyBenchmarks tasks (IRT-scored: the harness's score is an IRT estimate of the full
  benchmark, not the mean over the items) are read as raw per-item scores and flagged in
  ``notes["irt_scored"]`` with a warning;
* Git LFS pointer files in place of logs are named as such.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rankci._base import check_choice
from rankci.adapters._common import (
    LogReader,
    ModelNames,
    Source,
    build_scores,
    check_not_lfs_pointer,
    expand_sources,
    get_field,
    matches_task,
    model_namer,
    select_tasks,
    task_names,
    task_wanted,
    tasks_not_run,
    warn,
)
from rankci.adapters.lm_eval_repeats import REPEATS, response_scores
from rankci.data import Scores

__all__ = ["read_lm_eval", "PREFERRED_METRICS"]

PREFERRED_METRICS = ("acc", "exact_match")
CLUSTER_CHOICES = ("task", "group", "benchmark")

_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
SAMPLES_FILE = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl?$")
RESULTS_FILE = re.compile(rf"^results_(?P<date>{_DATE})\.json$")
#: the results file of lm-eval <= 0.4.2 (its samples are ``<model_args>_<task>.jsonl`` arrays)
LEGACY_RESULTS = "results.json"
#: the tinyBenchmarks tasks of lm-eval, scored by item response theory (IRT) estimates
IRT_TASKS = frozenset(
    {
        "tinyArc",
        "tinyGSM8k",
        "tinyHellaswag",
        "tinyMMLU",
        "tinyTruthfulQA",
        "tinyTruthfulQA_mc1",
        "tinyWinogrande",
    }
)
# fields of a sample line that are not per-sample metrics
_NOT_METRICS = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)

try:  # a faster JSON parser when one is installed; the standard library otherwise
    import orjson as _orjson

    _loads = _orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


def read_lm_eval(
    source: Source,
    *,
    metric: str | Sequence[str] | Mapping[str, str] | None = None,
    filter: str | Sequence[str] | Mapping[str, str] | None = None,
    model: ModelNames = None,
    item: str | None = None,
    cluster: str | None = "task",
    tasks: Sequence[str] | str | None = None,
    exclude_tasks: Sequence[str] | str | None = None,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    as_frame: bool = False,
    repeats: str = "metric",
    trial_gaps: str = "refuse",
) -> Scores | pd.DataFrame:
    """Read the per-sample logs of lm-evaluation-harness (``--log_samples``) for several models.

    Parameters
    ----------
    source : path, glob pattern, or list of them
        The ``--output_path`` directory (one subdirectory per model), a model's directory, single
        ``samples_*.jsonl`` / ``results_*.json`` files, or a pattern such as ``"out/*/"``.
        Directories are searched recursively.
    metric : str, list of str, or mapping task -> str, optional
        The per-sample metric used as the score; a list gives an order of preference (each task
        uses the first it has). Default: ``["acc", "exact_match"]``, then the task's first
        metric. The choice per task is recorded in ``notes["metric"]``.
    filter : str, list of str, or mapping task -> str, optional
        The filter whose results are read (``strict-match``, ``flexible-extract``, ...), chosen
        like ``metric``. Default: the task's first filter; a task with a single filter (``none``)
        always uses it.
    model : str, mapping or callable, optional
        Rename the models found (a single name when the logs hold one model).
    item : str, optional
        A field of the sample line naming the item (``"doc.id"``, ``"doc_hash"``); the default is
        the document index ``doc_id``. Ids are prefixed with the task: ``"<task>/<id>"``.
    cluster : {"task", "group", "benchmark"}, a field such as ``"doc.subject"``, or None
        Where each item's cluster comes from (see the module docstring).
    tasks : sequence of str, optional
        Read only these tasks (the others are listed in ``notes["tasks_skipped"]``). A name may
        be a group (``mmlu`` reads its subtasks) or a glob pattern (``mmlu_*``); a name that
        matches nothing is an error.
    exclude_tasks : sequence of str, optional
        Leave these tasks (or groups, or patterns) out.
    bounds : (float, float) or None, default (0, 1)
        Allowed score range; None for metrics outside [0, 1].
    as_frame : bool, default False
        Return the long table (model, item, [cluster], score; notes in ``.attrs["notes"]``)
        instead of Scores: one model's logs, or logs to combine with others later.
    repeats : {"metric", "trial"}, default "metric"
        Tasks run with ``repeats: N`` (N responses per document). ``"metric"``: the harness's
        one metric value per document (after its filter reduced the N responses to one).
        ``"trial"``: each response is a repeated trial of the item, scored against the target
        as the harness scores the one it keeps (exact match of ``generate_until`` tasks,
        ``acc`` / ``acc_norm`` of ``multiple_choice`` tasks;
        :mod:`rankci.adapters.lm_eval_repeats`),
        in a ``trial`` column (0 to N - 1; :mod:`rankci.trials`): the Scores' per-item score is
        the mean over the trials, and ``Scores.per_item("pass@K")`` re-scores them. A task whose
        per-response correctness cannot be determined is refused, naming it and its metric.
    trial_gaps : {"refuse", "allow"}, default "refuse"
        With ``repeats="trial"``: documents whose responses skip a trial others have (see
        :mod:`rankci.trials`) are refused, or read as fewer trials with ``"allow"``.

    Returns
    -------
    Scores
        With ``notes`` recording the files read, the metric and filter of every task, documents
        without a metric value, superseded runs and the items some models lack
        (``notes["missing"]``, also announced with a :class:`rankci.RankciWarning`).

    Raises
    ------
    ValueError
        No samples files found, an unknown metric or filter (naming the task and what it has),
        a document that differs between models under the same id, sample lines of several
        filters without a ``filter`` key and no ``filter=``, a Git LFS pointer file, only one
        model without ``as_frame``.

    References
    ----------
    EleutherAI lm-evaluation-harness documentation, docs/interface.md (``--output_path`` and
    ``--log_samples``: the ``results_<date>.json`` and ``samples_<task>_<date>.jsonl`` files),
    https://github.com/EleutherAI/lm-evaluation-harness.

    Examples
    --------
    Two models' ``samples_*.jsonl`` files, one directory per model:

    >>> import json, os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> for model, acc in [("model-a", [1, 1, 0]), ("model-b", [0, 1, 0])]:
    ...     os.makedirs(os.path.join(folder.name, model))
    ...     name = os.path.join(folder.name, model, "samples_arc_2024-01-01T00-00-00.jsonl")
    ...     with open(name, "w") as handle:
    ...         for doc_id, value in enumerate(acc):
    ...             line = {"doc_id": doc_id, "filter": "none", "acc": value}
    ...             _ = handle.write(json.dumps(line))
    ...             _ = handle.write(chr(10))
    >>> scores = read_lm_eval(folder.name, metric="acc")
    >>> scores.models, scores.n_items
    (('model-a', 'model-b'), 3)
    >>> scores.to_frame().values.tolist()[:2]
    [['model-a', 'arc/0', 'arc', 1.0], ['model-a', 'arc/1', 'arc', 1.0]]
    >>> folder.cleanup()
    """
    files = _find_sample_files(expand_sources(source, "lm-evaluation-harness samples"))
    told_apart = _tell_models_apart(files)
    found_models = sorted({f["model"] for f in files})
    rename = model_namer(model, found_models)
    files, superseded, superseding = _latest_runs(files, rename)
    for line in superseding:
        warn(line)
    by_shots = _split_by_fewshot(files)
    models_found = sorted({f["model"] for f in files})
    every_file = files
    _check_tasks_have_samples(files, tasks)
    files, skipped_tasks = select_tasks(files, tasks, exclude_tasks)
    if told_apart:
        warn(
            "lm-evaluation-harness logs: "
            + "; ".join(
                f"the runs of {name!r} differ in model_args, so they are different models: "
                + ", ".join(repr(n) for n in names)
                for name, names in told_apart.items()
            )
        )
    if by_shots:
        warn(
            "lm-evaluation-harness logs: "
            + "; ".join(
                f"task {task!r} was run with different numbers of few-shot examples ("
                + ", ".join(f"{n}-shot: {', '.join(m)}" for n, m in shots.items())
                + f"), so each is a task of its own ({task}:num_fewshot=N) and their items are "
                "not paired"
                for task, shots in by_shots.items()
            )
        )
    wanted, unwanted = task_names(tasks), task_names(exclude_tasks)
    without_samples = _tasks_without_samples(every_file, wanted, unwanted)
    not_run = _tasks_not_run(every_file, wanted)

    cluster_mode = _cluster_mode(cluster)
    check_choice("repeats", repeats, REPEATS)
    frames = []
    metric_used: dict[str, str] = {}
    filter_used: dict[str, str] = {}
    no_value: dict[str, int] = {}
    cut_down: dict[str, dict[str, int]] = {}
    corpus: dict[str, str] = {}
    read_files = []
    for f in files:
        task = f["task"]
        if task in corpus:
            continue
        outcome = _read_samples(f, metric, filter, item, cluster_mode, repeats)
        if isinstance(outcome, str):  # a corpus-level metric: the task is skipped
            corpus[task] = outcome
            continue
        frame, chosen_metric, chosen_filter, n_none, n_lines = outcome
        effective = _effective_samples(f)
        if effective is not None and n_lines < effective:
            cut_down[f"{f['model']}/{task}"] = {"lines": n_lines, "effective": effective}
        for used, chosen in ((metric_used, chosen_metric), (filter_used, chosen_filter)):
            if used.setdefault(task, chosen) != chosen:
                raise ValueError(
                    f"task {task!r} offers different metrics or filters in different models' logs "
                    f"({used[task]!r} and {chosen!r}); name them with metric= and filter="
                )
        if n_none:
            no_value[f"{f['model']}/{task}"] = n_none
        frames.append(frame)
        read_files.append(f)
    if corpus:
        frames = [fr for fr, f in zip(frames, read_files) if f["task"] not in corpus]
        read_files = [f for f in read_files if f["task"] not in corpus]
        for used in (metric_used, filter_used):
            for task in corpus:
                used.pop(task, None)
        if not frames:
            raise ValueError(
                "every task read has only corpus-level metrics, which give no per-item score: "
                + "; ".join(corpus.values())
            )
        warn(
            f"lm-evaluation-harness logs: {len(corpus)} task(s) skipped, their metric has no "
            "per-item score: " + "; ".join(corpus.values())
        )
    irt = _irt_tasks(read_files)
    if irt:
        warn(
            "lm-evaluation-harness logs: "
            + ", ".join(repr(t) for t in irt)
            + " are tinyBenchmarks tasks, scored by the harness with an IRT estimate of the full "
            "benchmark; rankci compares the raw per-item scores of these items, which differ "
            "from the harness's reported score (see Scores.notes['irt_scored'])"
        )
    long = pd.concat(frames, ignore_index=True)
    _check_same_documents(long)
    long = long.drop(columns=["doc_hash"])
    group_means = _group_means_differ(read_files, frames, metric_used, filter_used, cut_down)
    _warn_reading(without_samples, cut_down, not_run, group_means)
    notes = {
        "source": "lm-eval",
        "files": [str(f["path"]) for f in read_files],
        "log_layout": sorted({f["layout"] for f in read_files}),
        "metric": metric_used,
        "filter": filter_used,
        "cluster": cluster if cluster is not None else None,
    }
    if repeats == "trial":
        notes["repeats"] = {
            f"{f['model']}/{f['task']}": int(fr["trial"].nunique())
            for f, fr in zip(read_files, frames)
        }
    if no_value:
        notes["samples_without_value"] = no_value
    if superseded:
        notes["superseded"] = superseded
    if told_apart:
        notes["models_told_apart"] = told_apart
    if by_shots:
        notes["tasks_split_by_fewshot"] = by_shots
    if without_samples:
        notes["tasks_without_samples"] = without_samples
    if cut_down:
        notes["samples_cut_down"] = cut_down
    if not_run:
        notes["tasks_not_run"] = not_run
    if group_means:
        notes["group_means_differ"] = group_means
    if skipped_tasks:
        notes["tasks_skipped"] = skipped_tasks
    if corpus:
        notes["tasks_skipped_corpus_metric"] = corpus
    if irt:
        notes["irt_scored"] = irt
    return build_scores(
        long,
        cluster=cluster_mode is not None,
        prompt=False,
        bounds=bounds,
        notes=notes,
        source="lm-evaluation-harness",
        models_found=models_found,
        as_frame=as_frame,
        trial=repeats == "trial",
        trial_gaps=trial_gaps,
        reasons={
            **{
                m: "its results files list " + ", ".join(repr(t) for t in names)
                + " without a samples file"
                for m, names in without_samples.items()
            },
            **{
                m: "it never ran " + ", ".join(repr(t) for t in names)
                for m, names in not_run.items()
            },
        },
    )


# ---------------------------------------------------------------------- what the runs lack
def _listed_tasks(f: dict) -> list[str]:
    """The tasks a run's results file lists (with per-task sample counts, else results)."""
    results = f.get("results") or {}
    listed = results.get("n-samples") or {}
    if not listed:
        groups = set(results.get("group_subtasks") or {})
        listed = {t: None for t in results.get("results") or {} if t not in groups}
    return [str(t) for t in listed]


def _tasks_without_samples(files: list[dict], wanted, unwanted) -> dict[str, list[str]]:
    """{model: [tasks]}: tasks that a run read lists in its results file, within the task
    selection, with no samples file of that run (``--log_samples`` off for it, a file lost)."""
    have: dict[str, set] = {}
    runs: dict[str, dict] = {}
    for f in files:
        if f["run"]:
            have.setdefault(f["run"], set()).add(f["base_task"])
            runs.setdefault(f["run"], f)
    out: dict[str, list[str]] = {}
    read = {(f["model"], f["base_task"]) for f in files}
    for run, f in runs.items():
        for task in _listed_tasks(f):
            record = {"task": task, "aliases": _ancestors(task, f["parents"])}
            if task in have[run] or (f["model"], task) in read:
                continue
            if task_wanted(record, wanted, unwanted):
                out.setdefault(f["model"], []).append(task)
    return {m: sorted(set(t)) for m, t in sorted(out.items())}


def _check_tasks_have_samples(files: list[dict], tasks) -> None:
    """A name of ``tasks=`` that no samples file matches but a results file lists: say so."""
    for name in task_names(tasks) or ():
        if any(matches_task(f, name) for f in files):
            continue
        listing = sorted(
            {
                f["model"]
                for f in files
                for t in _listed_tasks(f)
                if matches_task({"task": t, "aliases": _ancestors(t, f["parents"])}, name)
            }
        )
        if listing:
            raise ValueError(
                f"task {name!r} has no samples file in the logs, though the results files of "
                + ", ".join(repr(m) for m in listing)
                + " list it: it was run without --log_samples (or its samples files are "
                "elsewhere), so it has no per-item scores"
            )


def _tasks_not_run(files: list[dict], wanted) -> dict[str, list[str]]:
    """{model: [names]}: names of ``tasks=`` that match no task of a model's runs, neither a
    samples file nor a task its results files list: the model never ran them."""
    records: list[dict] = []
    for f in files:
        records.append(f)
        records.extend(
            {"model": f["model"], "task": t, "aliases": _ancestors(t, f["parents"])}
            for t in _listed_tasks(f)
        )
    return tasks_not_run(records, wanted)


def _effective_samples(f: dict) -> int | None:
    """The number of documents the harness evaluated for the task (``n-samples.effective``)."""
    counts = ((f.get("results") or {}).get("n-samples") or {}).get(f["base_task"]) or {}
    effective = counts.get("effective") if isinstance(counts, Mapping) else None
    return int(effective) if isinstance(effective, (int, float)) else None


def _leaves(group: str, children: dict) -> list[str]:
    out, stack, seen = [], [group], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in children:
            stack.extend(reversed(children[node]))
        elif node != group:
            out.append(node)
    return out


def _group_means_differ(
    files: list[dict], frames, metric_used: dict, filter_used: dict, cut_down: dict
) -> list:
    """Groups whose score in the harness's results file differs from the mean of the items
    rankci read for them (lm-eval's ``weight_by_size: false`` averages the subtasks' scores,
    not the items): one record per (model, group), with both numbers. A group with a subtask
    whose samples file is cut short is not compared (that file is named already)."""
    per_run: dict[str, dict[str, tuple[float, int]]] = {}
    run_of: dict[str, dict] = {}
    for f, frame in zip(files, frames):
        if f["run"] and len(frame) and f"{f['model']}/{f['task']}" not in cut_down:
            per_run.setdefault(f["run"], {})[f["base_task"]] = (
                float(frame["score"].sum()),
                len(frame),
                f["task"],
            )
            run_of.setdefault(f["run"], f)
    out = []
    for run, tasks in per_run.items():
        f = run_of[run]
        results = f["results"]
        children = {
            str(g): [str(c) for c in (cs or [])]
            for g, cs in (results.get("group_subtasks") or {}).items()
        }
        for group, aggregate in sorted((results.get("groups") or {}).items()):
            leaves = _leaves(str(group), children)
            if not leaves or any(t not in tasks for t in leaves):
                continue  # not every subtask read: no mean of the group to compare
            used = {(metric_used.get(tasks[t][2]), filter_used.get(tasks[t][2])) for t in leaves}
            if len(used) != 1:
                continue
            metric_name, filter_name = used.pop()
            harness = (aggregate or {}).get(f"{metric_name},{filter_name}")
            if not isinstance(harness, (int, float)):
                continue
            pooled = sum(tasks[t][0] for t in leaves) / sum(tasks[t][1] for t in leaves)
            if abs(pooled - float(harness)) <= 1e-9:
                continue
            subscores = []
            for child in children.get(str(group), []):
                value = ((results.get("results") or {}).get(child) or {}).get(
                    f"{metric_name},{filter_name}"
                )
                if value is None:
                    value = ((results.get("groups") or {}).get(child) or {}).get(
                        f"{metric_name},{filter_name}"
                    )
                subscores.append(value)
            macro = (
                all(isinstance(v, (int, float)) for v in subscores)
                and abs(float(np.mean(subscores)) - float(harness)) <= 1e-9
            )
            out.append(
                {
                    "model": f["model"],
                    "group": str(group),
                    "metric": f"{metric_name},{filter_name}",
                    "harness": float(harness),
                    "mean_of_items": pooled,
                    "harness_weighting": (
                        "unweighted mean of its subtasks (weight_by_size: false)"
                        if macro
                        else "not the mean of its items"
                    ),
                }
            )
    return out


def _warn_reading(without_samples, cut_down, not_run, group_means) -> None:
    """One warning per kind of thing the runs lack or report otherwise."""
    if without_samples:
        warn(
            "lm-evaluation-harness logs: tasks in the results files with no samples file (run "
            "with --log_samples, or a file lost), so they have no per-item scores: "
            + "; ".join(f"{m}: {', '.join(t)}" for m, t in without_samples.items())
        )
    if cut_down:
        warn(
            "lm-evaluation-harness logs: samples files with fewer documents than the harness "
            "evaluated (n-samples.effective; a file cut short or copied in part): "
            + "; ".join(f"{k} ({v['lines']} of {v['effective']})" for k, v in cut_down.items())
        )
    if not_run:
        warn(
            "lm-evaluation-harness logs: tasks asked for that a model never ran (no results "
            "and no samples of it in its logs): "
            + "; ".join(f"{m}: {', '.join(t)}" for m, t in not_run.items())
        )
    if group_means:
        warn(
            "lm-evaluation-harness logs: group means that differ from the harness's: "
            + "; ".join(
                f"{g['group']} for {g['model']}: the harness reports {g['metric']} = "
                f"{g['harness']:.4g} ({g['harness_weighting']}), the mean of its items is "
                f"{g['mean_of_items']:.4g}"
                for g in group_means
            )
            + "; rankci's cluster and overall means weight every item equally"
        )


# ---------------------------------------------------------------------- files
def _find_sample_files(paths: list[Path]) -> list[dict]:
    """One entry per samples file: path, task, date, model name, groups, layout, results."""
    sample_paths: list[Path] = []
    legacy: dict[Path, None] = {}  # results.json of lm-eval <= 0.4.2
    for path in paths:
        if path.is_dir():
            sample_paths.extend(
                p for p in path.rglob("samples_*.json*") if SAMPLES_FILE.match(p.name)
            )
            legacy.update(dict.fromkeys(path.rglob(LEGACY_RESULTS)))
        elif SAMPLES_FILE.match(path.name):
            sample_paths.append(path)
        elif RESULTS_FILE.match(path.name):
            date = RESULTS_FILE.match(path.name)["date"]
            sample_paths.extend(
                p for p in path.parent.glob(f"samples_*_{date}.json*") if SAMPLES_FILE.match(p.name)
            )
        elif path.name == LEGACY_RESULTS:
            legacy[path] = None
        elif path.suffix == ".jsonl" and (path.parent / LEGACY_RESULTS).exists():
            legacy[path.parent / LEGACY_RESULTS] = None
            sample_paths.append(path)  # kept only if it is one of that run's samples files
        else:
            raise ValueError(
                f"{str(path)!r} is not an lm-evaluation-harness log: expected a directory, a "
                "samples_<task>_<date>.jsonl or results_<date>.json file, or (lm-eval <= 0.4.2) "
                "a results.json file or a <model_args>_<task>.jsonl beside one"
            )
    explicit_legacy = {p for p in sample_paths if not SAMPLES_FILE.match(p.name)}
    sample_paths = [p for p in sample_paths if SAMPLES_FILE.match(p.name)]
    results_cache: dict[Path, dict] = {}
    files = []
    for path in sorted(set(sample_paths)):
        match = SAMPLES_FILE.match(path.name)
        info = _results_for(path.parent, match["date"], results_cache)
        files.append(
            {
                "path": path,
                "task": match["task"],
                "date": match["date"],
                "model": info["model"] or path.parent.name,
                "parents": info["parents"],
                "results": info["results"],
                "run": info["path"] if info["results"] else None,
                "layout": "samples_<task>_<date>.jsonl",
            }
        )
    for results_path in sorted(legacy):
        files.extend(_legacy_files(results_path, explicit_legacy))
    if not files:
        lfs = [p for p in sample_paths if p.is_file()]
        for candidate in lfs[:1]:
            check_not_lfs_pointer(candidate)
        raise ValueError(
            "no lm-evaluation-harness samples files (samples_<task>_<date>.jsonl, or "
            "<model_args>_<task>.jsonl beside a results.json) found in "
            + ", ".join(repr(str(p)) for p in paths)
            + "; run lm_eval with --log_samples"
        )
    for f in files:
        f["aliases"] = _ancestors(f["task"], f["parents"])
        f["base_task"] = f["task"]
        results = f["results"] or {}
        args = (results.get("config") or {}).get("model_args") if results else None
        f["model_args"] = _parse_model_args(args) if results else None
        shots = (results.get("n-shot") or {}).get(f["task"])
        if shots is None:
            shots = ((results.get("configs") or {}).get(f["task"]) or {}).get("num_fewshot")
        f["num_fewshot"] = int(shots) if isinstance(shots, (int, float)) else None
        f["task_hash"] = (results.get("task_hashes") or {}).get(f["task"])
    return files


def _parse_model_args(args) -> dict[str, str]:
    """``config.model_args`` as a mapping: lm-eval writes a dict, or (older versions and the
    command line's form) a string ``key=value,key=value``."""
    if isinstance(args, Mapping):
        return {str(k): str(v) for k, v in args.items()}
    if isinstance(args, str):
        out = {}
        for part in args.split(","):
            key, sep, value = part.partition("=")
            if key.strip():
                out[key.strip()] = value.strip() if sep else ""
        return out
    return {}


def _ancestors(task: str, parents: dict) -> list[str]:
    out, seen = [], {task}
    while task in parents and parents[task] not in seen:
        task = parents[task]
        seen.add(task)
        out.append(task)
    return out


def _load_results(path: Path) -> dict:
    check_not_lfs_pointer(path)
    with open(path, encoding="utf-8") as handle:
        try:
            results = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"could not read {str(path)!r}: {error}") from error
    if not isinstance(results, dict):
        raise ValueError(f"{str(path)!r} is not an lm-evaluation-harness results file")
    return results


def _legacy_files(results_path: Path, explicit: set[Path]) -> list[dict]:
    """The samples files of an lm-eval <= 0.4.2 run: ``<model_args>_<task>.jsonl`` arrays named
    after ``config.model_args`` (``/`` and ``=`` replaced by ``__``) and the tasks in
    ``configs``."""
    results = _load_results(results_path)
    configs = results.get("configs") or {}
    if not isinstance(configs, dict) or "results" not in results:
        return []  # some other results.json
    directory = results_path.parent
    args = (results.get("config") or {}).get("model_args")
    prefix = re.sub("/|=", "__", args) if isinstance(args, str) else None
    date = results.get("date")
    if isinstance(date, (int, float)):
        from datetime import datetime, timezone

        date = datetime.fromtimestamp(date, tz=timezone.utc).strftime("%Y-%m-%dT%H-%M-%S.%f")
    date = str(date) if date else ""
    parents = _group_parents(results.get("group_subtasks") or {})
    model = _model_name(results) or directory.name
    files = []
    for task in configs:
        path = directory / f"{prefix}_{task}.jsonl" if prefix is not None else None
        if path is None or not path.exists():
            longer = [o for o in configs if o != task and str(o).endswith(str(task))]
            candidates = [
                p
                for p in directory.glob(f"*_{glob.escape(str(task))}.jsonl")
                if not any(p.name.endswith(f"_{other}.jsonl") for other in longer)
            ]
            if len(candidates) != 1:
                continue  # the task wrote no samples (a group, or --log_samples off)
            path = candidates[0]
        if explicit and directory in {e.parent for e in explicit} and path not in explicit:
            continue
        files.append(
            {
                "path": path,
                "task": str(task),
                "date": date,
                "model": model,
                "parents": parents,
                "results": results,
                "run": str(results_path),
                "layout": "results.json + <model_args>_<task>.jsonl",
            }
        )
    return files


def _results_for(directory: Path, date: str, cache: dict) -> dict:
    """Model name and group structure from the results file of the same run (or the latest)."""
    if directory not in cache:
        runs = {}
        for p in directory.glob("results_*.json"):
            m = RESULTS_FILE.match(p.name)
            if m:
                runs[m["date"]] = p
        cache[directory] = {"runs": runs, "parsed": {}}
    entry = cache[directory]
    runs = entry["runs"]
    if not runs:
        return {"model": None, "parents": {}, "results": {}, "path": None}
    key = date if date in runs else max(runs)
    if key not in entry["parsed"]:
        results = _load_results(runs[key])
        entry["parsed"][key] = {
            "model": _model_name(results),
            "parents": _group_parents(results.get("group_subtasks") or {}),
            "results": results,
            "path": str(runs[key]),
        }
    info = entry["parsed"][key]
    # a samples file without a results file of its own date takes only the model name and the
    # groups from the latest one, not its aggregates or settings
    return info if key == date else {**info, "results": {}, "path": None}


def _model_name(results: dict) -> str | None:
    name = results.get("model_name")
    if name:
        return str(name)
    args = (results.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
            if args.get(key):
                return str(args[key])
    if isinstance(args, str):
        for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
            hit = re.search(rf"(?:^|,){key}=([^,]+)", args)
            if hit:
                return hit.group(1)
    return None


def _group_parents(group_subtasks: dict) -> dict[str, str]:
    """child -> the group listing it."""
    parents: dict[str, str] = {}
    for group, children in group_subtasks.items():
        for child in children or []:
            parents.setdefault(str(child), str(group))
    return parents


#: ``model_args`` that say how a model is run, not which model it is (never tell runs apart)
OPERATIONAL_ARGS = frozenset(
    {
        "batch_size",
        "max_batch_size",
        "device",
        "device_map",
        "parallelize",
        "cache_dir",
        "num_concurrent",
        "max_retries",
        "timeout",
        "trust_remote_code",
        "logits_cache",
    }
)


def _tell_models_apart(files: list[dict]) -> dict[str, list[str]]:
    """Runs under one model name whose ``model_args`` differ (``revision=step1`` and
    ``revision=step2``) are different models: each is named ``<name> (<the differing
    arguments>)``. Returns {model name: [the names given]} for the names split."""
    by_name: dict[str, list[dict]] = {}
    for f in files:
        by_name.setdefault(f["model"], []).append(f)
    split: dict[str, list[str]] = {}
    for name, group in by_name.items():
        known = [f for f in group if f["model_args"] is not None]
        settings = {
            frozenset((k, v) for k, v in f["model_args"].items() if k not in OPERATIONAL_ARGS)
            for f in known
        }
        if len(settings) < 2:
            continue
        dicts = [dict(s) for s in settings]
        keys = sorted(
            {k for d in dicts for k in d if len({d.get(k) for d in dicts}) > 1}
        )
        for f in group:
            if f["model_args"] is None:
                f["model"] = f"{name} (model_args unknown)"
                continue
            args = f["model_args"]
            shown = ", ".join(f"{k}={args.get(k, '<default>')}" for k in keys)
            f["model"] = f"{name} ({shown})"
        split[name] = sorted({f["model"] for f in group})
    return split


def _run_label(f: dict) -> str:
    """A run, as the warnings name it: its results file (else the samples file)."""
    return str(f["run"] or f["path"])


def _latest_runs(files: list[dict], rename) -> tuple[list[dict], list[str], list[str]]:
    """Keep the latest run of each (model, task, num_fewshot); list the superseded files and
    say, one line per pair of runs, which run superseded which.

    A run's identity is its model (with its ``model_args``, :func:`_tell_models_apart`), its
    task and its number of few-shot examples: runs that differ in shots are different tasks
    (:func:`_split_by_fewshot`), never a retry. Runs of one identity whose task hash differs saw
    different documents or prompts (another ``--limit``, a changed dataset or template); the
    newest is read all the same, and the line says so."""
    for f in files:
        f["model"] = rename(f["model"])
    shots: dict[tuple[str, str], set] = {}
    for f in files:
        if f["num_fewshot"] is not None:
            shots.setdefault((f["model"], f["base_task"]), set()).add(f["num_fewshot"])
    latest: dict[tuple, dict] = {}
    superseded: list[str] = []
    pairs: dict[tuple[str, str, str], list[str]] = {}
    for f in sorted(files, key=lambda f: (f["date"], str(f["path"]))):
        several = len(shots.get((f["model"], f["base_task"]), ())) > 1
        key = (f["model"], f["base_task"], f["num_fewshot"] if several else None)
        if key in latest:
            old = latest[key]
            superseded.append(str(old["path"]))
            task = f["base_task"]
            if old["task_hash"] and f["task_hash"] and old["task_hash"] != f["task_hash"]:
                task += " (task hash differs: other documents or prompts)"
            pairs.setdefault((f["model"], _run_label(old), _run_label(f)), []).append(task)
        latest[key] = f
    lines = []
    for (model, old, new), tasks in pairs.items():
        listed = ", ".join(tasks[:5]) + (f", ... ({len(tasks)} tasks)" if len(tasks) > 5 else "")
        lines.append(
            f"lm-evaluation-harness logs: model {model!r}: the run {new} supersedes the older "
            f"run {old} of the same model, model_args and shots, which is set aside, for "
            f"{listed}"
        )
    kept = sorted(latest.values(), key=lambda f: (f["model"], f["task"], f["date"]))
    return kept, superseded, lines


def _split_by_fewshot(files: list[dict]) -> dict[str, dict[str, list[str]]]:
    """A task run with different numbers of few-shot examples is several tasks, never one
    pool: each is named ``<task>:num_fewshot=<n>`` (its items ``<task>:num_fewshot=<n>/<id>``,
    so they are not paired across shots); ``tasks=`` still selects them all by the task's name.
    Returns {task: {shots: [models]}} for the tasks split."""
    by_task: dict[str, set] = {}
    for f in files:
        if f["num_fewshot"] is not None:
            by_task.setdefault(f["base_task"], set()).add(f["num_fewshot"])
    split: dict[str, dict[str, list[str]]] = {}
    for f in files:
        if len(by_task.get(f["base_task"], ())) < 2:
            continue
        if f["num_fewshot"] is None:
            raise ValueError(
                f"task {f['base_task']!r} was run with different numbers of few-shot examples, "
                f"and the run of {str(f['path'])!r} does not say how many (no results file of "
                "its own): read its results file too, or leave it out"
            )
        base = f["base_task"]
        f["task"] = f"{base}:num_fewshot={f['num_fewshot']}"
        f["aliases"] = [base, *f["aliases"]]
        models = split.setdefault(base, {}).setdefault(str(f["num_fewshot"]), [])
        if f["model"] not in models:
            models.append(f["model"])
    return {t: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for t, v in split.items()}


# ---------------------------------------------------------------------- samples
def _cluster_mode(cluster: str | None) -> str | None:
    if cluster is None or cluster == "" or cluster == "none":
        return None
    if not isinstance(cluster, str):
        raise ValueError(f"cluster must be a string or None, got {type(cluster).__name__}")
    if cluster in CLUSTER_CHOICES or "." in cluster or cluster in ("doc", "target"):
        return cluster
    listed = ", ".join(repr(c) for c in CLUSTER_CHOICES)
    raise ValueError(
        f"unknown cluster {cluster!r}; choose one of {listed}, a field of the sample line such "
        "as 'doc.subject', or None"
    )


def _load_lines(path: Path) -> list[dict]:
    """The sample records of a file: JSON lines, or one JSON array (lm-eval <= 0.4.2)."""
    with open(path, "rb") as handle:
        data = handle.read()
    check_not_lfs_pointer(path, data[:64])
    if data.lstrip()[:1] == b"[":
        try:
            records = json.loads(data)
        except ValueError as error:
            raise ValueError(
                f"{str(path)!r}: not a valid JSON array of samples ({error})"
            ) from None
        if not all(isinstance(r, dict) for r in records):
            raise ValueError(f"{str(path)!r}: the JSON array holds entries that are not samples")
        return records
    records = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(_loads(line))
        except ValueError as error:
            raise ValueError(f"{str(path)!r}, line {number}: not valid JSON ({error})") from None
    return records


def _choose(option, task: str, offered: list[str], what: str, default: Sequence[str] = ()):
    """The option for this task: a name, a list of names in order of preference, or a mapping
    task -> name; with no choice, the first of ``default`` offered, else the first offered.
    A task offering a single filter uses it whatever was asked."""
    if isinstance(option, Mapping):
        option = option.get(task)
    if option is None:
        preferred = [o for o in default if o in offered]
        return preferred[0] if preferred else offered[0]
    wanted = [option] if isinstance(option, str) else [str(o) for o in option]
    for name in wanted:
        if name in offered:
            return name
    if what == "filter" and len(offered) == 1:
        return offered[0]
    raise ValueError(
        f"task {task!r} has no {what} "
        + " or ".join(repr(w) for w in wanted)
        + "; it has: "
        + ", ".join(repr(o) for o in offered)
        + f" (give a list of {what}s in order of preference, or a mapping task -> {what})"
    )


def _metrics_of(record: dict) -> list[str]:
    listed = record.get("metrics")
    if isinstance(listed, list) and listed:
        return [str(m) for m in listed]
    return [k for k in record if k not in _NOT_METRICS]


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float))


def _split_metrics(records: list[dict], offered: list[str]) -> tuple[list[str], list[str]]:
    """(per-sample metrics, corpus-level metrics): a metric whose values are lists, strings or
    dicts (bleu's ``[reference, prediction]``, a perplexity's ``[loglikelihood, words]``) is
    aggregated over the whole corpus and has no per-item score."""
    per_sample, corpus = [], []
    for name in offered:
        value = next((r[name] for r in records if r.get(name) is not None), None)
        (per_sample if value is None or _is_number(value) else corpus).append(name)
    return per_sample, corpus


def _filter_names(f: dict) -> list[str]:
    """The task's filters in the order lm-eval applies them (its config's ``filter_list``), else
    as the results file's ``metric,filter`` keys name them."""
    results = f.get("results") or {}
    config = (results.get("configs") or {}).get(f["base_task"]) or {}
    listed = config.get("filter_list")
    if isinstance(listed, list) and listed:
        names = [str(e.get("name")) for e in listed if isinstance(e, dict) and e.get("name")]
        if names:
            return names
    keys = (results.get("results") or {}).get(f["base_task"]) or {}
    names = [k.split(",", 1)[1] for k in keys if "," in k and "_stderr" not in k.split(",")[0]]
    return list(dict.fromkeys(names))


def _blocks_by_filter(f: dict, records: list[dict], filter, metric) -> tuple[list[dict], str]:
    """Sample lines without a ``filter`` key (lm-eval <= 0.4.4): one block of lines per filter,
    in the order of the task's ``filter_list``. Returns the chosen filter's lines."""
    path, task = f["path"], f["base_task"]
    occurrence: dict = {}
    block = np.empty(len(records), dtype=np.int64)
    for k, r in enumerate(records):
        key = r.get("doc_id", k)
        block[k] = occurrence.get(key, 0)
        occurrence[key] = block[k] + 1
    n_blocks = int(block.max()) + 1 if len(records) else 1
    names = _filter_names(f)
    if n_blocks == 1:
        return records, (names[0] if len(names) == 1 else "none")
    listed = ", ".join(repr(n) for n in names) if names else "names unknown"
    if (
        len(names) != n_blocks
        or not (np.diff(block) >= 0).all()
        or len(set(occurrence.values())) != 1
    ):
        raise ValueError(
            f"{str(path)!r}: task {task!r} has {n_blocks} lines per document and no 'filter' key "
            f"(lm-eval <= 0.4.4), and its results file lists the filters {listed}: rankci cannot "
            "tell which lines belong to which filter; rerun with lm-eval >= 0.4.5, which records "
            "the filter of every line"
        )
    wanted = filter.get(task) if isinstance(filter, Mapping) else filter
    if wanted is None:
        raise ValueError(
            f"{str(path)!r}: task {task!r} holds the results of {n_blocks} filters ({listed}) in "
            f"sample lines without a 'filter' key (lm-eval <= 0.4.4); choose one with "
            f"filter={names[0]!r}"
        )
    chosen = _choose(wanted, task, names, "filter")
    index = names.index(chosen)
    kept = [r for r, b in zip(records, block) if b == index]
    _check_block(f, records, block, names, metric)
    return kept, chosen


def _check_block(f: dict, records, block, names, metric) -> None:
    """The blocks' means must equal the harness's aggregates ``<metric>,<filter>`` (when the
    results file has them and they tell the filters apart): the lines are then where lm-eval
    put them."""
    aggregates = ((f.get("results") or {}).get("results") or {}).get(f["base_task"]) or {}
    offered = _metrics_of(records[0])
    wanted = metric.get(f["base_task"]) if isinstance(metric, Mapping) else metric
    candidates = [wanted] if isinstance(wanted, str) else list(wanted or PREFERRED_METRICS)
    for name in [*candidates, *offered]:
        keys = [f"{name},{n}" for n in names]
        if name not in offered or not all(k in aggregates for k in keys):
            continue
        expected = [aggregates[k] for k in keys]
        if len(set(expected)) == 1:
            return
        for j, key in enumerate(keys):
            values = [r.get(name) for r, b in zip(records, block) if b == j]
            values = [float(v) for v in values if _is_number(v)]
            if values and abs(np.mean(values) - float(aggregates[key])) > 1e-9:
                raise ValueError(
                    f"{str(f['path'])!r}: the lines of task {f['task']!r} do not fall into "
                    f"blocks in the order of its filters ({', '.join(names)}): the mean of "
                    f"block {j + 1} is {np.mean(values):.6g}, the harness reports "
                    f"{key} = {float(aggregates[key]):.6g}"
                )
        return


def _type_of(records: list[dict], name: str) -> str:
    return type(next(r[name] for r in records if r.get(name) is not None)).__name__


def _read_samples(
    f: dict, metric, filter, item: str | None, cluster_mode: str | None, repeats: str = "metric"
):
    """The task's scores as a frame, or a string saying why the task is skipped."""
    path, task, base = f["path"], f["task"], f["base_task"]
    records = _load_lines(path)
    if not records:
        raise ValueError(f"{str(path)!r} holds no samples")
    if any("filter" in r for r in records):
        filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in records))
        chosen_filter = _choose(filter, base, filters, "filter")
        records = [r for r in records if str(r.get("filter", "none")) == chosen_filter]
    else:
        records, chosen_filter = _blocks_by_filter(f, records, filter, metric)
    offered = _metrics_of(records[0])
    per_sample, corpus = _split_metrics(records, offered)
    try:
        if not per_sample:
            raise ValueError("no per-sample metric")
        chosen_metric = _choose(metric, base, per_sample, "metric", PREFERRED_METRICS)
    except ValueError:
        wanted = metric.get(base) if isinstance(metric, Mapping) else metric
        wanted = [] if wanted is None else [wanted] if isinstance(wanted, str) else list(wanted)
        hit = [w for w in wanted if w in corpus]
        if not per_sample or hit:
            names = hit or corpus
            return (
                f"task {task!r}: metric " + ", ".join(repr(n) for n in names) + " is aggregated "
                "over the whole corpus (each sample holds "
                f"{_type_of(records, names[0])}"
                " values, not a score), so it has no per-item score"
                + (f"; per-sample metrics: {', '.join(per_sample)}" if per_sample else "")
            )
        raise

    values = np.empty(len(records))
    keep = np.ones(len(records), dtype=bool)
    ids, hashes, clusters = [], [], []
    parents = f["parents"]
    for k, r in enumerate(records):
        value = r.get(chosen_metric)
        if value is None:
            keep[k] = False
            values[k] = np.nan
        elif _is_number(value):
            values[k] = float(value)
        else:
            raise ValueError(
                f"{str(path)!r}, doc_id {r.get('doc_id')!r}: metric {chosen_metric!r} of task "
                f"{task!r} is {type(value).__name__} {str(value)[:60]!r}, not a number"
            )
        ids.append(_item_id(r, item, path))
        hashes.append(r.get("doc_hash"))
        if cluster_mode is not None:
            clusters.append(_cluster_of(r, task, base, cluster_mode, parents, path))
    frame = pd.DataFrame(
        {
            "model": f["model"],
            "item": [f"{task}/{i}" for i in ids],
            "score": values,
            "doc_hash": hashes,
        }
    )
    if cluster_mode is not None:
        frame["cluster"] = clusters
    if repeats == "trial":
        config = ((f.get("results") or {}).get("configs") or {}).get(base)
        per_response = response_scores(
            [r for r, k in zip(records, keep) if k],
            config,
            task=task,
            metric=chosen_metric,
            filter_name=chosen_filter,
            path=str(path),
        )
    frame = frame[keep].reset_index(drop=True)
    duplicated = frame["item"].duplicated()
    if duplicated.any():
        first = frame["item"][duplicated].iloc[0]
        raise ValueError(
            f"{str(path)!r}: item {first!r} appears twice for filter {chosen_filter!r}; "
            "choose a unique item field with item="
        )
    if repeats == "trial":
        counts = [len(scores) for scores in per_response]
        frame = frame.loc[frame.index.repeat(counts)].reset_index(drop=True)
        frame["trial"] = np.concatenate([np.arange(n) for n in counts]).astype(str)
        frame["score"] = np.concatenate(per_response)
    return frame, chosen_metric, chosen_filter, int((~keep).sum()), len(records)


def _irt_tasks(files: list[dict]) -> dict[str, str]:
    """Tasks the harness scores by IRT (tinyBenchmarks): by name, group or aggregation."""
    found: dict[str, str] = {}
    for f in files:
        task = f["task"]
        config = ((f.get("results") or {}).get("configs") or {}).get(f["base_task"]) or {}
        aggregations = " ".join(
            str(m.get("aggregation", ""))
            for m in config.get("metric_list") or []
            if isinstance(m, dict)
        )
        if (
            f["base_task"] in IRT_TASKS
            or "tinyBenchmarks" in f.get("aliases", ())
            or re.search(r"\b(?:agg_)?g?p?irt", aggregations)
        ):
            found[task] = (
                "tinyBenchmarks: the harness's score is an IRT estimate of the full benchmark; "
                "rankci reads the raw per-item scores"
            )
    return dict(sorted(found.items()))


def _item_id(record: dict, item: str | None, path: Path) -> str:
    if item is None:
        if "doc_id" not in record:
            raise ValueError(f"{str(path)!r}: a sample has no 'doc_id'; name the item with item=")
        return str(record["doc_id"])
    try:
        return str(get_field(record, item))
    except KeyError:
        raise ValueError(
            f"{str(path)!r}, doc_id {record.get('doc_id')!r}: no field {item!r} for the item id"
        ) from None


def _cluster_of(
    record: dict, task: str, base: str, mode: str, parents: dict, path: Path
) -> str:
    """The item's cluster; ``task`` is the task as read (``toy:num_fewshot=3`` when runs of the
    task differ in shots), ``base`` the harness's task name."""
    if mode == "task":
        return task
    if mode == "group":
        return parents.get(base, task)
    if mode == "benchmark":
        if base not in parents:
            return task
        top, seen = base, {base}
        while top in parents and parents[top] not in seen:
            top = parents[top]
            seen.add(top)
        return top
    try:
        return str(get_field(record, mode))
    except KeyError:
        raise ValueError(
            f"{str(path)!r}, doc_id {record.get('doc_id')!r}: no field {mode!r} for the cluster"
        ) from None


def _check_same_documents(long: pd.DataFrame) -> None:
    """The same item id must be the same document (same doc_hash) for every model."""
    hashes = long[["item", "doc_hash"]].dropna()
    if hashes.empty:
        return
    per_item = hashes.groupby("item", sort=False)["doc_hash"].nunique()
    bad = per_item[per_item > 1]
    if bad.empty:
        return
    item = bad.index[0]
    rows = long[long["item"] == item].drop_duplicates("doc_hash")
    who = ", ".join(f"{m!r}" for m in rows["model"].head(2))
    raise ValueError(
        f"item {item!r} is a different document for models {who} (doc_hash differs; "
        f"{len(bad)} such items): the models were run on different data (dataset version, "
        "--limit with shuffling, or a changed task); match items by a field with item="
    )


def _metric_and_filter(options: dict) -> dict:
    """lm-eval's ``"metric,filter"`` notation in ``metric=``; ``filter=`` overrides its filters."""
    metric, filter_ = options.pop("metric", None), options.pop("filter", None)
    names = filters = None
    if metric is not None:
        entries = [metric] if isinstance(metric, str) else list(metric)
        names, filters = [], []
        for entry in entries:
            name, _, filter_name = str(entry).partition(",")
            names.append(name.strip())
            if filter_name.strip():
                filters.append(filter_name.strip())
        names = list(dict.fromkeys(names))
        filters = list(dict.fromkeys(filters)) or None
        names = names[0] if len(names) == 1 else names
    if filter_ is not None:
        filters = [filter_] if isinstance(filter_, str) else list(filter_)
    return {**options, "metric": names, "filter": filters}


#: this module's entry in the log-reader registry (:data:`rankci.formats.LOG_READERS`)
READER = LogReader(
    format="lm-eval",
    label="lm-eval",
    read=read_lm_eval,
    takes=frozenset({"metric", "item", "filter", "repeats", "trial_gaps"}),
    score_option="metric",
    benchmark_cluster="benchmark",
    names_a_log=lambda path: bool(
        SAMPLES_FILE.match(path.name) or RESULTS_FILE.match(path.name)
        or path.name == LEGACY_RESULTS
    ),
    marks_directory=lambda path: bool(
        SAMPLES_FILE.match(path.name) or path.name == LEGACY_RESULTS
    ),
    prepare=_metric_and_filter,
)
