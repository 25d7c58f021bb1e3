"""Read Inspect AI evaluation logs (``.eval`` and ``.json``) into :class:`rankci.Scores`.

An Inspect log holds one task run on one model: the header (``eval.task``, ``eval.model``,
``eval.created``, the scorers, ``config.epochs``) and one sample per (dataset id, epoch) with its
``scores`` (scorer name -> ``{"value": ...}``), ``metadata`` and ``error``. ``.eval`` logs are zip
archives (``header.json``, ``summaries.json``, ``samples/*.json``); rankci reads the header and the
sample summaries, which carry the scores without the transcripts. Recent Inspect versions compress
them with Zstandard, which Python < 3.14 reads through the ``zipfile-zstd`` package (installed with
inspect-ai, or ``pip install rankci[inspect]``). ``.json`` logs are read with the standard library.

What rankci takes from them, and how to change it:

=========  ===================================================  ==================================
role       default                                              override
=========  ===================================================  ==================================
model      ``eval.model`` (``openai/gpt-4o``)                   ``model=`` (name, mapping)
item       ``<task>/<sample id>``                               ``item="metadata.X"``
cluster    the task                                             ``cluster="metadata.subject"``,
                                                                None
prompt     the epoch (``epoch1``, ``epoch2``, ...), when any    ``epochs="mean"`` averages them
           log has several epochs
score      the first scorer of the task                         ``scorer=``; ``score_key=`` for
                                                                scorers whose value is a dict
=========  ===================================================  ==================================

Score values are converted as Inspect's ``value_to_float`` does (``"C"`` 1, ``"P"`` 0.5, ``"I"``
and ``"N"`` 0, booleans, numbers, numeric strings, ``yes``/``no``/``true``/``false``), except that
a value it cannot convert is an error here instead of a silent 0. Samples that ended in an error,
or that the chosen scorer did not score, have no score: they are counted per model in
``notes["samples_errored"]`` / ``notes["samples_unscored"]`` and the items they leave missing are
reported in ``notes["missing"]``.

A run's identity is its model, its task and the settings that change the questions or their
scoring: the task arguments (``eval.task_args``, defaults included), the dataset's name
(``eval.dataset.name``), the task version (``eval.task_version``) and the scorers' options
(``eval.scorers``). Runs of one task whose settings differ are different tasks, named
``<task>[<the settings that differ>]`` (``quiz[subset=easy]``, ``quiz[subset=hard]``; the
dataset, version and scorers only where the arguments do not tell them apart), listed in
``notes["task_variants"]``; a task whose runs share their settings keeps its plain name. When
several logs hold the same run, a log whose samples carry
scores is preferred over one whose samples carry none (``score=False``), then a completed
(``success``) log with samples over a cancelled, errored or unfinished one, then the most recently
created (``eval.created`` compared as instants, time-zone offsets applied); the others are set
aside, listed in ``notes["set_aside"]`` (path, status, samples, scored, why) and
``notes["superseded"]``, and announced with a warning. A log without samples is reported
(``notes["logs_without_samples"]``), and so is a model left with no score. In a directory, a
``.json`` file that is not an Inspect log (no ``eval.model`` / ``eval.task``) is skipped and
listed in ``notes["files_skipped"]``. Models run with different numbers of epochs are reported in
``notes["epochs_differ"]``: as prompt variants, an epoch not every model has is left out for every
model (``epochs="mean"`` keeps them, averaged per item).

Logs written under an early-stopping manager (``results.early_stopping`` with stopped samples)
hold adaptively stopped data: fixed-sample tests do not keep their guarantee on them. They are
listed in ``notes["early_stopped"]`` with a warning that points to the anytime-valid path (the
stopping manager's own record, ``rankci monitor``).
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from rankci.adapters._common import (
    LFS_POINTER,
    LogReader,
    ModelNames,
    Source,
    build_scores,
    check_not_lfs_pointer,
    epoch_labels,
    expand_sources,
    get_field,
    model_namer,
    select_tasks,
    warn,
)
from rankci.data import Scores

__all__ = ["read_inspect", "inspect_value_to_float", "EPOCHS"]

EPOCHS = ("prompt", "mean", "trial")
_ZSTD = 93  # zip compression method of Zstandard


def read_inspect(
    source: Source,
    *,
    scorer: str | Sequence[str] | None = None,
    score_key: str | None = None,
    model: ModelNames = None,
    item: str | None = None,
    cluster: str | None = "task",
    epochs: str = "prompt",
    tasks: Sequence[str] | str | None = None,
    exclude_tasks: Sequence[str] | str | None = None,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    as_frame: bool = False,
    trial_gaps: str = "refuse",
) -> Scores | pd.DataFrame:
    """Read Inspect AI eval logs of several models (and tasks) into Scores.

    Parameters
    ----------
    source : path, glob pattern, or list of them
        ``.eval`` or ``.json`` log files, or directories searched recursively for them (an
        Inspect ``log_dir``).
    scorer : str or list of str, optional
        The scorer whose value is the score; a list gives an order of preference. Default: the
        task's first scorer. Recorded per task in ``notes["scorer"]``.
    score_key : str, optional
        For scorers whose value is a dict (several metrics at once): the key to read.
    model : str, mapping or callable, optional
        Rename the models found (``{"openai/gpt-4o": "gpt-4o"}``).
    item : str, optional
        A field of the sample naming the item (``"metadata.question_id"``); default the sample
        id. Ids are prefixed with the task: ``"<task>/<id>"``.
    cluster : "task", a field such as ``"metadata.subject"``, or None
    epochs : {"prompt", "mean"}
        ``prompt``: each epoch is a repeat (the prompt column, ``epoch1``, ``epoch2``, ...), so
        ``unit="item"`` averages the epochs and ``unit="prompt"`` compares epochs. ``mean``:
        average each item's epochs here into one score. ``trial``: each epoch is a repeated
        trial of the item (the trial column, :mod:`rankci.trials`): the item's score is the mean
        over its epochs, or pass@K / pass^K by ``Scores.per_item``; models with different
        numbers of epochs keep them all (unequal counts, in ``notes["repeated_trials"]``).
    tasks : sequence of str, optional
        Read only these tasks (glob patterns allowed).
    exclude_tasks : sequence of str, optional
        Leave these tasks out.
    bounds : (float, float) or None, default (0, 1)
    as_frame : bool, default False
        Return the long table (model, item, [cluster], [prompt], score; notes in
        ``.attrs["notes"]``) instead of Scores: one model's logs, or logs to combine later.

    Returns
    -------
    Scores
        ``notes`` records the logs read, their status, the scorer per task, errored and unscored
        samples, superseded logs, the tasks told apart by their settings
        (``notes["task_variants"]``), files skipped, epochs that differ between models and the
        items some models lack (``notes["missing"]``).

    References
    ----------
    Inspect AI documentation (UK AI Security Institute), "Log Files" (the ``.eval`` and
    ``.json`` log formats, ``EvalLog.samples`` and ``Score.value``),
    https://inspect.aisi.org.uk/eval-logs.html.

    Examples
    --------
    Two minimal ``.json`` logs of one task (scores ``C``/``I``/``P`` map to 1/0/0.5):

    >>> import json, os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> for model, values in [("openai/gpt-a", ["C", "C", "I"]), ("openai/gpt-b", ["I", "C", "P"])]:
    ...     samples = [{"id": i + 1, "epoch": 1, "scores": {"match": {"value": v}}}
    ...                for i, v in enumerate(values)]
    ...     log = {"version": 2, "status": "success", "eval": {"task": "quiz", "model": model},
    ...            "samples": samples}
    ...     with open(os.path.join(folder.name, model[-5:] + ".json"), "w") as handle:
    ...         json.dump(log, handle)
    >>> scores = read_inspect(folder.name, scorer="match")
    >>> scores.models
    ('openai/gpt-a', 'openai/gpt-b')
    >>> [row[1:] for row in scores.to_frame().values.tolist()][3:]
    [['quiz/1', 'quiz', 0.0], ['quiz/2', 'quiz', 1.0], ['quiz/3', 'quiz', 0.5]]
    >>> folder.cleanup()
    """
    if epochs not in EPOCHS:
        raise ValueError(f"unknown epochs {epochs!r}; choose one of 'prompt', 'mean', 'trial'")
    logs, not_logs = [], {}
    for path, scanned in _find_logs(expand_sources(source, "Inspect logs")):
        try:
            logs.append(_read_log(path))
        except _NotALog:
            if not scanned:  # a file named on its own must be a log
                raise
            not_logs[str(path)] = "a .json file without eval.model / eval.task"
    if not_logs:
        warn(
            "Inspect logs: skipped "
            + ", ".join(repr(p) for p in not_logs)
            + " (found in the directory, but not an Inspect log: no eval.model / eval.task)"
        )
    if not logs:
        raise ValueError(
            "no Inspect logs found: the .json files read are not Inspect logs ("
            + ", ".join(repr(p) for p in not_logs)
            + ")"
        )
    rename = model_namer(model, sorted({log["model"] for log in logs}))
    for log in logs:
        log["model"] = rename(log["model"])
    models_found = sorted({log["model"] for log in logs})
    variants = _label_variants(logs)
    if variants:
        warn(
            "Inspect logs: "
            + "; ".join(
                f"task {task!r} was run with different settings, read as the separate tasks "
                + ", ".join(repr(label) for label in labels)
                for task, labels in variants.items()
            )
            + " (their items are never paired with each other, and one is never a retry of "
            "another)"
        )
    logs, set_aside = _latest(logs)
    logs, skipped = select_tasks(logs, tasks, exclude_tasks)
    if set_aside:
        warn(
            "Inspect logs: "
            + "; ".join(
                f"set aside {a['path']!r} ({a['status']}, {a['samples']} samples) for "
                f"{a['model']}/{a['task']}: read {a['kept']!r} ({a['kept_status']}, "
                f"{a['kept_samples']} samples), {a['reason']}"
                for a in set_aside
            )
        )
    without = {str(log["path"]): log["status"] for log in logs if not log["samples"]}
    if without:
        warn(
            "Inspect logs without samples (nothing to score; written with --no-log-samples, or "
            "stopped before any sample finished): "
            + ", ".join(f"{path!r} ({status})" for path, status in without.items())
        )
    unfinished = {
        str(log["path"]): log["status"]
        for log in logs
        if log["status"] != "success" and log["samples"]
    }
    if unfinished:
        warn(
            "Inspect logs that did not complete are read as they are (their missing samples are "
            "reported): " + ", ".join(f"{path!r} ({status})" for path, status in unfinished.items())
        )
    stopped = {
        f"{log['model']}/{log['task']}": log["early_stopping"]
        for log in logs
        if log["early_stopping"] and log["early_stopping"]["samples_stopped"]
    }
    if stopped:
        warn(
            "Inspect logs written under early stopping ("
            + ", ".join(f"{k}: {v['samples_stopped']} samples stopped" for k, v in stopped.items())
            + "): the items each model answered were chosen adaptively, so the fixed-sample "
            "guarantees of rank, scores and omnibus do not hold for these data. The anytime-valid "
            "statements are the stopping manager's (results.early_stopping.metadata in the log); "
            "run the evaluation through the anytime-valid monitor (rankci monitor, "
            "RankEarlyStopping) for rankings that stay valid under stopping"
        )
    if cluster is not None and cluster not in ("", "none", "task") and "." not in cluster:
        raise ValueError(
            f"unknown cluster {cluster!r}; choose 'task', a sample field such as "
            "'metadata.subject', or None"
        )
    cluster = None if cluster in ("", "none") else cluster

    frames = []
    scorer_used: dict[str, str] = {}
    errored: dict[str, int] = {}
    unscored: dict[str, int] = {}
    for log in logs:
        if not log["samples"]:
            continue
        chosen = _choose_scorer(log, scorer)
        if scorer_used.setdefault(log["task"], chosen) != chosen:
            raise ValueError(
                f"task {log['task']!r} is scored by {scorer_used[log['task']]!r} in one log and "
                f"{chosen!r} in another; name the scorer with scorer="
            )
        frame, n_error, n_unscored = _samples_frame(log, chosen, score_key, item, cluster)
        key = f"{log['model']}/{log['task']}"
        if n_error:
            errored[key] = n_error
        if n_unscored:
            unscored[key] = n_unscored
        frames.append(frame)
    if not frames:
        raise ValueError(
            "the Inspect logs read hold no samples: "
            + ", ".join(f"{path!r} ({status})" for path, status in without.items())
        )
    long = pd.concat(frames, ignore_index=True)
    with_epochs = bool((long["epoch"] > 1).any()) if len(long) else False
    epochs_differ = _epochs_differ(logs)
    if epochs_differ and epochs == "prompt":
        warn(
            "Inspect logs: the models were run with different numbers of epochs ("
            + "; ".join(
                f"{task}: " + ", ".join(f"{m} {n}" for m, n in counts.items())
                for task, counts in epochs_differ.items()
            )
            + "); read as prompt variants, an epoch that not every model has is left out for "
            "every model (and counted); epochs='mean' averages each item's epochs instead"
        )
    if epochs == "mean":
        keys = ["model", "item"] + (["cluster"] if cluster is not None else [])
        long = long.groupby(keys, sort=False, as_index=False)["score"].mean()
    elif epochs == "trial":
        long["trial"] = long["epoch"].astype(str)
    elif with_epochs:
        long["prompt"] = epoch_labels(long["epoch"].to_numpy())
    notes = {
        "source": "inspect",
        "files": [str(log["path"]) for log in logs],
        "status": {str(log["path"]): log["status"] for log in logs},
        "scorer": scorer_used,
        "epochs": {f"{log['model']}/{log['task']}": log["epochs"] for log in logs},
        "cluster": cluster,
    }
    if epochs == "mean":
        notes["epochs_averaged"] = True
    if epochs_differ:
        notes["epochs_differ"] = epochs_differ
    if variants:
        notes["task_variants"] = {
            task: {label: _jsonable_settings(setting) for label, setting in labels.items()}
            for task, labels in variants.items()
        }
    if not_logs:
        notes["files_skipped"] = not_logs
    for name, counts in (("samples_errored", errored), ("samples_unscored", unscored)):
        if counts:
            notes[name] = counts
    if set_aside:
        notes["set_aside"] = set_aside
        notes["superseded"] = [a["path"] for a in set_aside]
    if skipped:
        notes["tasks_skipped"] = skipped
    if without:
        notes["logs_without_samples"] = without
    if stopped:
        notes["early_stopped"] = stopped
    return build_scores(
        long.drop(columns=["epoch"], errors="ignore"),
        cluster=cluster is not None,
        prompt=epochs == "prompt" and with_epochs,
        trial=epochs == "trial",
        trial_gaps=trial_gaps,
        bounds=bounds,
        notes=notes,
        source="Inspect",
        models_found=models_found,
        as_frame=as_frame,
    )


# ---------------------------------------------------------------------- values
def inspect_value_to_float(value, where: str = "") -> float:
    """An Inspect score value as a float, as ``inspect_ai.scorer.value_to_float()`` maps it.

    ``"C"`` -> 1, ``"P"`` -> 0.5, ``"I"`` and ``"N"`` -> 0, booleans and numbers as floats,
    ``yes``/``true`` -> 1, ``no``/``false`` -> 0, numeric strings parsed. Anything else (lists,
    dicts, other strings) is a ValueError instead of Inspect's silent 0.

    Parameters
    ----------
    value : object
        A ``Score.value``.
    where : str
        Prefix of the error message (which log and sample).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a value that is not a number, ``C``/``I``/``P``/``N`` or yes/no.

    References
    ----------
    Inspect AI documentation (UK AI Security Institute), "Scorers" (``CORRECT``, ``INCORRECT``,
    ``PARTIAL``, ``NOANSWER`` and ``value_to_float``), https://inspect.aisi.org.uk/scorers.html.

    Examples
    --------
    >>> [inspect_value_to_float(v) for v in ["C", "P", "I", "N", True, 3, "yes", "No", "0.25"]]
    [1.0, 0.5, 0.0, 0.0, 1.0, 3.0, 1.0, 0.0, 0.25]
    >>> inspect_value_to_float([1, 0], where="log.json sample 3: ")
    Traceback (most recent call last):
    ...
    ValueError: log.json sample 3: score value [1, 0] is not a number, 'C'/'I'/'P'/'N' or yes/no
    """
    if value == "C":
        return 1.0
    if value == "P":
        return 0.5
    if value == "I" or value == "N":
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("yes", "true"):
            return 1.0
        if lowered in ("no", "false"):
            return 0.0
        try:
            number = float(lowered)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    raise ValueError(
        f"{where}score value {value!r} is not a number, 'C'/'I'/'P'/'N' or yes/no"
        + ("; for a dict value name the key with score_key=" if isinstance(value, dict) else "")
    )


# ---------------------------------------------------------------------- files
class _NotALog(ValueError):
    """A file that is not an Inspect log (a directory scan skips a .json file of this kind)."""


def _find_logs(paths: list[Path]) -> list[tuple[Path, bool]]:
    """The log files named or found, each with whether a directory scan found it."""
    found: list[tuple[Path, bool]] = []
    for path in paths:
        if path.is_dir():
            hits = [
                p
                for p in path.rglob("*")
                if p.suffix in (".eval", ".json") and p.is_file() and looks_like_log(p)
            ]
            found.extend((hit, True) for hit in sorted(hits))
        elif path.suffix in (".eval", ".json"):
            found.append((path, False))
        else:
            raise ValueError(f"{str(path)!r} is not an Inspect log (expected .eval or .json)")
    if not found:
        raise ValueError(
            "no Inspect logs (.eval or .json) found in " + ", ".join(repr(str(p)) for p in paths)
        )
    return found


def looks_like_log(path: Path) -> bool:
    """.eval files always; .json files only when they start like an Inspect log."""
    if path.suffix == ".eval":
        return True
    if path.name in ("logs.json", "listing.json"):  # Inspect's log-directory listing
        return False
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(LFS_POINTER):  # read, so that the reader names it as such
        return True
    return head.lstrip()[:1] == b"{" and b'"eval"' in head and b'"version"' in head


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise ValueError(f"could not open {str(path)!r} as an Inspect .eval log: {error}") from None
    if any(info.compress_type == _ZSTD for info in archive.infolist()):
        try:
            import zipfile_zstd  # noqa: F401  (teaches zipfile to read Zstandard members)
        except ImportError:
            if not _stdlib_zstd():
                raise ValueError(
                    f"{str(path)!r} is compressed with Zstandard, which this Python's zipfile "
                    "cannot read; install inspect-ai or zipfile-zstd "
                    "(pip install 'rankci[inspect]')"
                ) from None
    return archive


def _instant(created: str) -> float:
    """``eval.created`` as seconds since the epoch, compared as instants (time-zone offsets
    applied; a time without an offset is read as UTC); -inf when absent or unreadable."""
    if not created:
        return -math.inf
    try:
        moment = datetime.fromisoformat(created.strip())
    except ValueError:
        return -math.inf
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _stdlib_zstd() -> bool:
    return getattr(zipfile, "ZIP_ZSTANDARD", None) == _ZSTD


def _read_log(path: Path) -> dict:
    check_not_lfs_pointer(path)
    if path.suffix == ".eval":
        with _open_zip(path) as archive:
            names = set(archive.namelist())
            if "header.json" in names:
                header = json.loads(archive.read("header.json"))
            elif "_journal/start.json" in names:
                header = json.loads(archive.read("_journal/start.json"))
                header.setdefault("status", "started")
            else:
                raise ValueError(f"{str(path)!r} has no header.json: not an Inspect .eval log")
            samples = _eval_samples(archive, names)
    else:
        with open(path, encoding="utf-8") as handle:
            try:
                header = json.load(handle)
            except json.JSONDecodeError as error:
                raise ValueError(f"could not read {str(path)!r} as JSON: {error}") from None
        samples = header.pop("samples", None) or []
    spec = header.get("eval")
    if not isinstance(spec, dict) or "model" not in spec or "task" not in spec:
        raise _NotALog(f"{str(path)!r} is not an Inspect log: no eval.model / eval.task")
    config = spec.get("config") or {}
    epochs = config.get("epochs") or 1
    scorers = [s.get("name") for s in spec.get("scorers") or [] if s.get("name")]
    for score in (header.get("results") or {}).get("scores") or []:
        name = score.get("scorer") or score.get("name")
        if name and name not in scorers:
            scorers.append(name)
    stopping = (header.get("results") or {}).get("early_stopping")
    if isinstance(stopping, dict):
        stopping = {
            "manager": str(stopping.get("manager", "")),
            "samples_stopped": len(stopping.get("early_stops") or []),
        }
    else:
        stopping = None
    dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
    created = str(spec.get("created", "") or "")
    return {
        "path": path,
        "task": str(spec["task"]),
        "task_name": str(spec["task"]),
        "settings": {
            "task_args": dict(spec.get("task_args") or {}),
            "dataset": dataset.get("name"),
            "task_version": spec.get("task_version", 0),
            # the scorers' options (their names choose the score: scorer=)
            "scorers": {
                str(entry.get("name")): dict(entry["options"])
                for entry in spec.get("scorers") or []
                if isinstance(entry, dict) and entry.get("options")
            },
        },
        "model": str(spec["model"]),
        "created": created,
        "instant": _instant(created),
        "scored": any(sample.get("scores") and not sample.get("error") for sample in samples),
        "status": str(header.get("status", "unknown")),
        "epochs": int(epochs),
        "scorers": scorers,
        "samples": samples,
        "early_stopping": stopping,
    }


def _eval_samples(archive: zipfile.ZipFile, names: set[str]) -> list[dict]:
    """Sample summaries (scores without transcripts), else the full samples."""
    if "summaries.json" in names:
        return json.loads(archive.read("summaries.json"))
    journal = sorted(
        (n for n in names if n.startswith("_journal/summaries/") and n.endswith(".json")),
        key=lambda n: int(Path(n).stem) if Path(n).stem.isdigit() else 0,
    )
    if journal:
        out: list[dict] = []
        for name in journal:
            out.extend(json.loads(archive.read(name)))
        return out
    return [
        json.loads(archive.read(n))
        for n in sorted(names)
        if n.startswith("samples/") and n.endswith(".json")
    ]


def _latest(logs: list[dict]) -> tuple[list[dict], list[dict]]:
    """One log per run identity (model, task and its settings): a log whose samples carry
    scores first, then one with samples, then a completed one, then the newest (``eval.created``
    compared as instants).

    Returns the logs kept and a record of every log set aside (path, status, samples, the log
    kept instead and why)."""

    def priority(log):
        return (
            log["scored"],
            bool(log["samples"]),
            log["status"] == "success",
            log["instant"],
            str(log["path"]),
        )

    groups: dict[tuple[str, str], list[dict]] = {}
    for log in logs:
        groups.setdefault((log["model"], log["task"]), []).append(log)
    kept, set_aside = [], []
    for key in sorted(groups):
        ranked = sorted(groups[key], key=priority, reverse=True)
        best = ranked[0]
        kept.append(best)
        for other in ranked[1:]:
            newer = other["instant"] > best["instant"]
            if bool(other["samples"]) != bool(best["samples"]):
                reason = "a log with samples is preferred over one without"
            elif other["scored"] != best["scored"]:
                reason = (
                    "a log whose samples carry scores is preferred over "
                    + ("a newer one" if newer else "one")
                    + " whose samples carry none (run without scoring, score=False)"
                )
            elif (other["status"] == "success") != (best["status"] == "success"):
                reason = (
                    "a completed log is preferred over a newer unfinished one"
                    if newer
                    else "a completed log is preferred over an unfinished one"
                )
            else:
                reason = "the newest log is read"
            set_aside.append(
                {
                    "path": str(other["path"]),
                    "model": key[0],
                    "task": key[1],
                    "status": other["status"],
                    "samples": len(other["samples"]),
                    "scored": other["scored"],
                    "created": other["created"],
                    "kept": str(best["path"]),
                    "kept_status": best["status"],
                    "kept_samples": len(best["samples"]),
                    "kept_created": best["created"],
                    "reason": reason,
                }
            )
    return kept, set_aside


#: the settings of a run that change its questions or their scoring, as named in task labels
_SETTING_NAMES = {"dataset": "dataset", "task_version": "version", "scorers": "scorer"}


def _label_variants(logs: list[dict]) -> dict[str, dict[str, dict]]:
    """Name apart the runs of one task with different settings (in place).

    A run's identity is its model, its task and the settings that change the questions or their
    scoring: the task arguments (``eval.task_args``, defaults included), the dataset's name
    (``eval.dataset.name``), the task version (``eval.task_version``) and the scorers with their
    options (``eval.scorers``). Runs of one task whose settings differ are different tasks: each
    is labelled with the task name and the settings in which it differs from the others,
    ``quiz[subset=easy]``, and that label is the task everywhere (items
    ``quiz[subset=easy]/<id>``, the cluster, the benchmark). A task whose runs all share their
    settings keeps its plain name. Returns ``{task: {label: settings}}`` for the tasks told
    apart.
    """
    by_task: dict[str, dict[str, dict]] = {}
    for log in logs:
        by_task.setdefault(log["task_name"], {})[_settings_key(log["settings"])] = log["settings"]
    told_apart: dict[str, dict[str, dict]] = {}
    labels: dict[tuple[str, str], str] = {}
    for task, variants in by_task.items():
        if len(variants) < 2:
            continue
        settings = list(variants.values())
        arg_names = sorted({name for s in settings for name in s["task_args"]})
        differing_args = [
            name
            for name in arg_names
            if len({_show(s["task_args"].get(name, _ABSENT)) for s in settings}) > 1
        ]
        differing = [k for k in _SETTING_NAMES if len({_show(s[k]) for s in settings}) > 1]
        # the task arguments name a variant; the dataset, version and scorers only where needed
        by_args = {key: _shown(setting, differing_args, ()) for key, setting in variants.items()}
        others = differing if len(set(by_args.values())) < len(by_args) else ()
        named: dict[str, dict] = {}
        for key, setting in variants.items():
            label = f"{task}[{_shown(setting, differing_args, others)}]"
            if label in named:  # the shown values coincide (1 and "1"): show everything
                label = f"{task}[{key}]"
            named[label] = setting
            labels[(task, key)] = label
        told_apart[task] = dict(sorted(named.items()))
    for log in logs:
        label = labels.get((log["task_name"], _settings_key(log["settings"])))
        if label is not None:
            log["task"] = label
            log["aliases"] = [log["task_name"]]
    return told_apart


_ABSENT = object()


def _shown(setting: dict, arg_names: Sequence[str], others: Sequence[str]) -> str:
    """``name=value,...`` of the named task arguments, then of the other named settings."""
    shown = [
        f"{name}={_show(setting['task_args'][name])}"
        for name in arg_names
        if name in setting["task_args"]
    ]
    shown += [
        f"{_SETTING_NAMES[k]}="
        + (_show_scorers(setting[k]) if k == "scorers" else _show(setting[k]))
        for k in others
    ]
    return ",".join(shown)


def _show_scorers(scorers: dict) -> str:
    """``match(location=end)`` for ``{"match": {"location": "end"}}``; ``default`` for none."""
    if not scorers:
        return "default"
    return "+".join(
        name
        + (
            "(" + ",".join(f"{k}={_show(v)}" for k, v in sorted(options.items())) + ")"
            if options
            else ""
        )
        for name, options in scorers.items()
    )


def _show(value) -> str:
    if value is _ABSENT:
        return "(absent)"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _epochs_differ(logs: list[dict]) -> dict[str, dict[str, int]]:
    """``{task: {model: epochs}}`` for the tasks whose logs read have different epochs."""
    by_task: dict[str, dict[str, int]] = {}
    for log in logs:
        if log["samples"]:
            by_task.setdefault(log["task"], {})[log["model"]] = log["epochs"]
    return {
        task: dict(sorted(counts.items()))
        for task, counts in sorted(by_task.items())
        if len(set(counts.values())) > 1
    }


def _jsonable_settings(settings: dict) -> dict:
    """The settings of a run as JSON-safe values (for ``notes["task_variants"]``)."""
    return json.loads(_settings_key(settings))


def _settings_key(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True, default=str)


def _choose_scorer(log: dict, scorer) -> str:
    offered = list(log["scorers"])
    if not offered:
        for sample in log["samples"]:
            for name in sample.get("scores") or {}:
                if name not in offered:
                    offered.append(name)
    if not offered:
        raise ValueError(f"{str(log['path'])!r}: the log has no scorer and no scores")
    if scorer is None:
        return offered[0]
    wanted = [scorer] if isinstance(scorer, str) else [str(s) for s in scorer]
    for name in wanted:
        if name in offered:
            return name
    raise ValueError(
        f"task {log['task']!r} ({str(log['path'])!r}) has no scorer "
        + " or ".join(repr(w) for w in wanted)
        + "; it has: "
        + ", ".join(repr(o) for o in offered)
    )


def _samples_frame(log: dict, scorer: str, score_key, item, cluster):
    path, task = log["path"], log["task"]
    rows_item, rows_epoch, rows_score, rows_cluster = [], [], [], []
    n_error = n_unscored = 0
    for sample in log["samples"]:
        where = f"{str(path)!r}, sample {sample.get('id')!r} epoch {sample.get('epoch', 1)}: "
        if sample.get("error"):
            n_error += 1
            continue
        entry = (sample.get("scores") or {}).get(scorer)
        value = entry.get("value") if isinstance(entry, dict) else None
        if value is None:
            n_unscored += 1
            continue
        if isinstance(value, dict):
            if score_key is None:
                raise ValueError(
                    f"{where}scorer {scorer!r} gives a dict ({', '.join(map(str, value))}); "
                    "name the key with score_key="
                )
            if score_key not in value:
                raise ValueError(f"{where}scorer {scorer!r} has no key {score_key!r}")
            value = value[score_key]
        rows_score.append(inspect_value_to_float(value, where))
        rows_epoch.append(int(sample.get("epoch", 1)))
        rows_item.append(f"{task}/{_field(sample, item, 'id', where)}")
        if cluster == "task":
            rows_cluster.append(task)
        elif cluster is not None:
            rows_cluster.append(str(_field(sample, cluster, None, where)))
    frame = pd.DataFrame(
        {
            "model": log["model"],
            "item": np.asarray(rows_item, dtype=object),
            "epoch": np.asarray(rows_epoch, dtype=np.int64),
            "score": np.asarray(rows_score, dtype=float),
        }
    )
    if cluster is not None:
        frame["cluster"] = np.asarray(rows_cluster, dtype=object)
    repeated = frame.duplicated(["item", "epoch"])
    if repeated.any():
        first = frame[repeated].iloc[0]
        raise ValueError(
            f"{str(path)!r}: item {first['item']!r} epoch {first['epoch']} appears twice; "
            "name a unique item field with item="
        )
    return frame, n_error, n_unscored


def _field(sample: Mapping, name: str | None, default: str | None, where: str):
    try:
        return get_field(sample, name or default)
    except KeyError:
        raise ValueError(f"{where}no field {name or default!r}") from None


#: this module's entry in the log-reader registry (:data:`rankci.formats.LOG_READERS`)
READER = LogReader(
    format="inspect",
    label="Inspect",
    read=read_inspect,
    takes=frozenset({"scorer", "item", "epochs", "trial_gaps"}),
    score_option="scorer",
    benchmark_cluster="task",
    names_a_log=lambda path: path.suffix == ".eval",
    marks_directory=lambda path: path.suffix == ".eval",
    holds_a_log=lambda path: path.suffix == ".json" and path.is_file() and looks_like_log(path),
    refusals={"metric": "Inspect logs are scored by scorers: use scorer=, not metric="},
)
