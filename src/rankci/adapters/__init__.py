"""Readers for evaluation-harness logs: lm-evaluation-harness, Inspect AI and HELM.

Each reader returns validated :class:`rankci.Scores` with the model, item, cluster and score
taken from the logs (and overridable), reads several models' logs in one call, matches items by
id across models and reports the items some models lack in ``Scores.notes["missing"]``.

* :func:`read_lm_eval` -- ``lm_eval ... --log_samples`` output (``samples_<task>_<date>.jsonl``)
* :func:`read_inspect` -- Inspect AI ``.eval`` / ``.json`` logs
* :func:`read_helm` -- HELM ``per_instance_stats.json`` (``benchmark_output/runs/<suite>``)
* :func:`read_log` -- any of them by name; :func:`detect_format` tells which a path holds
* :class:`RankEarlyStopping` -- Inspect ``EarlyStopping`` manager backed by the anytime-valid
  monitor (needs inspect-ai)
"""

from __future__ import annotations

import glob
import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from rankci._base import check_choice
from rankci.adapters._common import LogReader, run_identity_notes
from rankci.adapters.helm import read_helm
from rankci.adapters.inspect import read_inspect
from rankci.adapters.inspect_stopping import RankEarlyStopping
from rankci.adapters.lm_eval import read_lm_eval
from rankci.data import Scores
from rankci.formats import LOG_FORMATS, LOG_READERS

__all__ = [
    "LOG_FORMATS",
    "LogReader",
    "READERS",
    "RankEarlyStopping",
    "detect_format",
    "read_helm",
    "read_inspect",
    "read_lm_eval",
    "read_log",
    "run_identity_notes",
]

#: every log reader, by format name (the ``READER`` of each module :data:`LOG_READERS` names)
READERS: Mapping[str, LogReader] = MappingProxyType(
    {name: importlib.import_module(f"rankci.adapters.{module}").READER
     for name, module in LOG_READERS.items()}
)

#: the natural "benchmark" level of each format's clusters (used by ``rankci benchmarks``)
BENCHMARK_CLUSTER = {name: reader.benchmark_cluster for name, reader in READERS.items()}

#: the keywords of :func:`read_log` that only some readers take (:attr:`LogReader.takes`)
_SPECIFIC = (
    "metric",
    "scorer",
    "item",
    "filter",
    "split",
    "trials",
    "epochs",
    "repeats",
    "trial_gaps",
)


def read_log(
    format: str,
    source,
    *,
    metric: str | Sequence[str] | None = None,
    scorer: str | Sequence[str] | None = None,
    item: str | None = None,
    cluster: str | None = None,
    model=None,
    tasks: str | Sequence[str] | None = None,
    exclude_tasks: str | Sequence[str] | None = None,
    filter: str | Sequence[str] | None = None,
    split: str | None = None,
    trials: str | None = None,
    epochs: str | None = None,
    repeats: str | None = None,
    trial_gaps: str | None = None,
    as_frame: bool = False,
) -> Scores:
    """Read evaluation logs of the given format (``"lm-eval"``, ``"inspect"``, ``"helm"``).

    ``metric`` is the lm-eval metric (``"acc"``; ``"exact_match,strict-match"`` also picks the
    filter, as in lm-eval's results keys) or the HELM stat; ``scorer`` the Inspect scorer. Lists
    give an order of preference. ``cluster`` None keeps each reader's default (the task or
    scenario); pass ``""`` for no cluster. Options that do not apply to the format are an error.

    Parameters
    ----------
    format : {"lm-eval", "inspect", "helm"}
        The log format.
    source : path, glob pattern or list of them
        Files or directories of logs.
    metric : str or sequence of str, optional
        lm-eval metric (optionally ``"metric,filter"``) or HELM stat.
    scorer : str or sequence of str, optional
        Inspect scorer.
    item : str, optional
        Field giving the item id (lm-eval, Inspect).
    cluster : str, optional
        Cluster choice of the reader; ``""`` for none.
    model : str, mapping or callable, optional
        Model names (see the readers).
    tasks, exclude_tasks : str or sequence of str, optional
        The tasks (lm-eval tasks or groups, Inspect tasks, HELM scenarios or benchmarks) to read
        or to leave out; glob patterns allowed.
    filter : str or sequence of str, optional
        lm-eval filter (``strict-match``); wins over a filter given in ``metric``.
    split : str, optional
        HELM split (default: per scenario, ``test`` where its runs have it, else the one split
        they evaluated).
    trials : {"all", "first", "common", "mean"}, optional
        HELM train trials (default ``all``: each trial a prompt variant; see
        :func:`rankci.adapters.read_helm`).
    epochs : {"prompt", "mean", "trial"}, optional
        Inspect epochs: prompt variants (default), averaged per item, or repeated trials of
        the item (:mod:`rankci.trials`; ``Scores.per_item`` then gives pass@K / pass^K).
    repeats : {"metric", "trial"}, optional
        lm-eval tasks run with ``repeats: N``: the harness's one value per document (default),
        or each response a repeated trial of the item (see :func:`rankci.adapters.read_lm_eval`).
    trial_gaps : {"refuse", "allow"}, optional
        Inspect epochs and lm-eval repeats read as trials: an item whose trial ids skip one is
        refused (default) or, with ``"allow"``, read as fewer trials (:mod:`rankci.trials`).
    as_frame : bool, default False
        Return the long table instead of Scores (one model's logs, or logs to combine later).

    Returns
    -------
    Scores or pandas.DataFrame

    Raises
    ------
    ValueError
        For an unknown format or an option that does not apply to it.

    References
    ----------
    EleutherAI lm-evaluation-harness documentation, docs/interface.md (``--log_samples`` output),
    https://github.com/EleutherAI/lm-evaluation-harness.
    Inspect AI documentation (UK AI Security Institute), "Log Files",
    https://inspect.aisi.org.uk/eval-logs.html.
    HELM documentation (Stanford CRFM), https://crfm-helm.readthedocs.io/ (the
    ``benchmark_output/runs/<suite>`` directories).

    Examples
    --------
    >>> import json, os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> for model, acc in [("model-a", [1, 1, 0]), ("model-b", [0, 1, 0])]:
    ...     os.makedirs(os.path.join(folder.name, model))
    ...     name = os.path.join(folder.name, model, "samples_arc_2024-01-01T00-00-00.jsonl")
    ...     with open(name, "w") as handle:
    ...         for doc_id, value in enumerate(acc):
    ...             line = {"doc_id": doc_id, "filter": "none", "acc": value}
    ...             _ = handle.write(json.dumps(line) + chr(10))
    >>> scores = read_log("lm-eval", folder.name, metric="acc,none")
    >>> scores.models, scores.n_items, scores.to_frame()["score"].tolist()
    (('model-a', 'model-b'), 3, [1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    >>> read_log("lm-eval", folder.name, scorer="match")
    Traceback (most recent call last):
    ...
    ValueError: scorer= applies to Inspect logs; lm-eval logs take metric=
    >>> folder.cleanup()
    """
    check_choice("format", format, LOG_FORMATS)
    reader = READERS[format]
    given = {
        "metric": metric,
        "scorer": scorer,
        "item": item,
        "filter": filter,
        "split": split,
        "trials": trials,
        "epochs": epochs,
        "repeats": repeats,
        "trial_gaps": trial_gaps,
    }
    for name in _SPECIFIC:
        if given[name] is not None and name not in reader.takes:
            raise ValueError(_refusal(reader, name))
    options: dict = {"tasks": tasks, "exclude_tasks": exclude_tasks, "as_frame": as_frame}
    if model is not None:
        options["model"] = model
    if cluster is not None:
        options["cluster"] = cluster or None
    options.update({name: given[name] for name in reader.takes if given[name] is not None})
    if reader.prepare is not None:
        options = reader.prepare(options)
    return reader.read(source, **options)


def _refusal(reader: LogReader, name: str) -> str:
    """Why ``name=`` does not apply to ``reader``'s logs, and what does."""
    if name in reader.refusals:
        return reader.refusals[name]
    owners = " and ".join(r.label for r in READERS.values() if name in r.takes)
    if name in ("metric", "scorer"):
        return f"{name}= applies to {owners} logs; {reader.format} logs take {reader.score_option}="
    return f"{name}= applies to {owners} logs, not to {reader.format} logs"


def detect_format(source: str | os.PathLike) -> str:
    """Which kind of scores a path holds: ``"lm-eval"``, ``"inspect"``, ``"helm"`` or ``"table"``.

    A file is recognised by its name (``samples_*.jsonl``, ``results_*.json``, ``*.eval``,
    ``per_instance_stats.json``) or, for ``.json``, by its first bytes (an Inspect log); any other
    file is a table. A directory or glob pattern is searched for those files; finding logs of
    more than one kind, or none, is an error.

    Parameters
    ----------
    source : str or os.PathLike
        A file, a directory or a glob pattern.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If nothing, or more than one kind of log, is found.

    References
    ----------
    EleutherAI lm-evaluation-harness documentation, docs/interface.md (``--log_samples`` output),
    https://github.com/EleutherAI/lm-evaluation-harness.
    Inspect AI documentation (UK AI Security Institute), "Log Files",
    https://inspect.aisi.org.uk/eval-logs.html.
    HELM documentation (Stanford CRFM), https://crfm-helm.readthedocs.io/ (the
    ``benchmark_output/runs/<suite>`` directories).

    Examples
    --------
    >>> import json, os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> for model, acc in [("model-a", [1, 1, 0]), ("model-b", [0, 1, 0])]:
    ...     os.makedirs(os.path.join(folder.name, model))
    ...     name = os.path.join(folder.name, model, "samples_arc_2024-01-01T00-00-00.jsonl")
    ...     with open(name, "w") as handle:
    ...         for doc_id, value in enumerate(acc):
    ...             line = {"doc_id": doc_id, "filter": "none", "acc": value}
    ...             _ = handle.write(json.dumps(line) + chr(10))
    >>> detect_format(folder.name), detect_format(os.path.join(folder.name, "scores.csv"))
    ('lm-eval', 'table')
    >>> detect_format(os.path.join(folder.name, "logs", "run.eval"))
    'inspect'
    >>> folder.cleanup()
    """
    text = os.fspath(source)
    if glob.has_magic(text):
        paths = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
        if not paths:
            raise ValueError(f"the pattern {text!r} matches no file or directory")
    else:
        paths = [Path(text)]
    kinds: set[str] = set()
    for path in paths:
        if path.is_dir():
            kinds |= _kinds_in(path)
        else:
            kinds.add(_kind_of_file(path))
    if len(kinds) == 1:
        return kinds.pop()
    if not kinds:
        raise ValueError(
            f"found no scores in {text!r}: no table, lm-eval samples_*.jsonl, Inspect .eval/.json "
            "log or HELM per_instance_stats.json"
        )
    raise ValueError(
        f"{text!r} holds more than one kind of scores ({', '.join(sorted(kinds))}); name one "
        "with --from (format=)"
    )


def _named(path: Path) -> str | None:
    """The format whose reader recognises the file by its name, if any."""
    return next((r.format for r in READERS.values() if r.names_a_log(path)), None)


def _sniffed(path: Path) -> str | None:
    """The format whose reader recognises the file by its content, if any."""
    return next((r.format for r in READERS.values() if r.holds_a_log(path)), None)


def _kind_of_file(path: Path) -> str:
    return _named(path) or _sniffed(path) or "table"


def _kinds_in(directory: Path) -> set[str]:
    kinds = {reader.format for path in directory.rglob("*") for reader in READERS.values()
             if reader.marks_directory(path)}
    if not kinds:  # no file named like a log: look inside the .json files not named like one
        kinds = {kind for path in directory.rglob("*.json")
                 if _named(path) is None and (kind := _sniffed(path)) is not None}
    return kinds
