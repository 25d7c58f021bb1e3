"""Shared pieces of the log readers: finding files, renaming models, reporting missing items.

Every reader collects one record per (model, item[, prompt]) into a long DataFrame and hands it to
:func:`build_scores`, which reports what some models lack (never dropping it) and validates the
table with :meth:`rankci.Scores.from_frame`.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rankci._base import RankciWarning
from rankci.data import Scores

Source = str | os.PathLike | Iterable[str | os.PathLike]
ModelNames = str | Mapping[str, str] | Callable[[str], str] | None



def _never(path: Path) -> bool:
    return False


@dataclass(frozen=True)
class LogReader:
    """One evaluation-log format: how :func:`rankci.adapters.read_log` finds and reads it.

    Each reader module defines one, as ``READER``, and :data:`rankci.formats.LOG_READERS` names
    the module; :func:`rankci.adapters.read_log`, :func:`rankci.adapters.detect_format` and the
    command line take everything format-specific from it.

    Attributes
    ----------
    format : str
        The name given to ``read_log(format, ...)`` and ``--from``.
    label : str
        The harness's name in messages ("lm-eval", "Inspect", "HELM").
    read : callable
        ``read(source, **options) -> Scores`` (or a DataFrame with ``as_frame=True``).
    takes : frozenset of str
        The keywords of :func:`rankci.adapters.read_log` beyond those every reader takes
        (``model``, ``cluster``, ``tasks``, ``exclude_tasks``, ``as_frame``) that apply here:
        some of ``metric``, ``scorer``, ``item``, ``filter``, ``split``, ``epochs``.
    score_option : {"metric", "scorer"}
        The keyword that chooses the score.
    benchmark_cluster : str
        The reader's cluster level that is a whole benchmark (``rankci benchmarks``).
    names_a_log : callable
        ``path -> bool``: the file's name says it is a log of this format.
    marks_directory : callable
        ``path -> bool``: a file found in a directory that makes it a log directory of this format.
    holds_a_log : callable
        ``path -> bool``: a file whose content says it is a log of this format (tried after every
        reader's name test; for a directory, only when no file marked it).
    refusals : mapping
        A message for a keyword this format does not take, where the generic one would mislead.
    prepare : callable or None
        ``options -> options``: the reader's own reading of the shared keywords.
    """

    format: str
    label: str
    read: Callable
    takes: frozenset = frozenset()
    score_option: str = "metric"
    benchmark_cluster: str = "benchmark"
    names_a_log: Callable[[Path], bool] = _never
    marks_directory: Callable[[Path], bool] = _never
    holds_a_log: Callable[[Path], bool] = _never
    refusals: Mapping[str, str] = field(default_factory=dict)
    prepare: Callable[[dict], dict] | None = None


# how many item ids to quote per model in the missing-items report
_EXAMPLES = 5
#: the first line of a Git LFS pointer file (what a clone without ``git lfs pull`` holds)
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


def check_not_lfs_pointer(path: str | os.PathLike, head: bytes | None = None) -> None:
    """Refuse a Git LFS pointer file, naming it as such, instead of a confusing parse error.

    A repository cloned without Git LFS holds, in place of each large file, a three-line text file
    whose first line is ``version https://git-lfs.github.com/spec/v1``.
    """
    if head is None:
        with open(path, "rb") as handle:
            head = handle.read(len(LFS_POINTER) + 8)
    if head.lstrip(b"\xef\xbb\xbf").startswith(LFS_POINTER):
        raise ValueError(
            f"{os.fspath(path)!r} is a Git LFS pointer file, not the log itself (its first line "
            "is 'version https://git-lfs.github.com/spec/v1'): fetch the content with "
            "'git lfs pull' in that repository (or download the file) and read it again"
        )


def expand_sources(source: Source, what: str) -> list[Path]:
    """Paths named by ``source``: a path, a glob pattern, or a list of either (sorted, unique).

    A pattern that matches nothing, or a path that does not exist, is an error naming it.
    """
    if isinstance(source, (str, os.PathLike)):
        items = [source]
    else:
        try:
            items = list(source)
        except TypeError:
            raise ValueError(
                f"expected a path, a glob pattern or a list of paths to {what}, got "
                f"{type(source).__name__}"
            ) from None
    if not items:
        raise ValueError(f"no paths given to read {what} from")
    found: list[Path] = []
    for entry in items:
        text = os.fspath(entry)
        if glob.has_magic(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise ValueError(f"the pattern {text!r} matches no file or directory")
            found.extend(Path(m) for m in matches)
        else:
            path = Path(text)
            if not path.exists():
                raise ValueError(f"no such file or directory: {text!r}")
            found.append(path)
    unique: dict[Path, None] = {}
    for path in found:
        unique.setdefault(path.resolve(), None)
    return list(unique)


def get_field(record: Mapping, path: str):
    """``record["a"]["b"]`` for ``path="a.b"``; KeyError naming the missing part."""
    value = record
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(part)
        value = value[part]
    return value


def model_namer(model: ModelNames, found: list[str], option: str = "model") -> Callable:
    """A function from the name found in the logs to the name to report.

    ``model`` may be None (keep), a string (only when the logs hold one model), a mapping from
    found names to new ones (names not in it are kept) or a callable.
    """
    if model is None:
        return lambda name: name
    if isinstance(model, str):
        distinct = sorted(set(found))
        if len(distinct) > 1:
            raise ValueError(
                f"{option}={model!r} names one model, but the logs hold {len(distinct)}: "
                + ", ".join(repr(m) for m in distinct)
                + "; pass a mapping {found name: new name} instead"
            )
        return lambda name: model
    if isinstance(model, Mapping):
        unknown = sorted(set(map(str, model)) - set(found))
        if unknown:
            raise ValueError(
                f"{option} renames {unknown[0]!r}, which is not in the logs; models found: "
                + ", ".join(repr(m) for m in sorted(set(found)))
            )
        mapping = {str(k): str(v) for k, v in model.items()}
        return lambda name: mapping.get(name, name)
    if callable(model):
        return lambda name: str(model(name))
    raise ValueError(
        f"{option} must be None, a name, a mapping or a callable, got {type(model).__name__}"
    )


def matches_task(record: dict, pattern: str) -> bool:
    """Whether a task record (its name and aliases) matches a ``--tasks`` name or glob pattern."""
    names = [record["task"], *record.get("aliases", ())]
    # a name matches itself even when it reads as a pattern (an Inspect task 'quiz[subset=easy]')
    return any(str(name) == pattern or fnmatch.fnmatchcase(str(name), pattern) for name in names)


def task_names(option: Iterable[str] | str | None) -> list[str] | None:
    """The names (or patterns) of a ``tasks=`` / ``exclude_tasks=`` option: a string, or a list
    of them, each possibly comma-separated; None when the option is not given."""
    if option is None:
        return None
    listed = [option] if isinstance(option, str) else list(option)
    return [n.strip() for entry in listed for n in str(entry).split(",") if n.strip()]


def task_wanted(record: dict, wanted: list[str] | None, unwanted: list[str] | None) -> bool:
    """Whether the task selection (names from :func:`task_names`) keeps ``record``."""
    return (wanted is None or any(matches_task(record, n) for n in wanted)) and not any(
        matches_task(record, n) for n in unwanted or ()
    )


def tasks_not_run(records: list[dict], wanted: list[str] | None) -> dict[str, list[str]]:
    """{model: [names]}: the names of the task selection (:func:`task_names`) that match none of
    a model's records (its tasks, with their ``"aliases"``): tasks the model never ran."""
    if not wanted:
        return {}
    by_model: dict[str, list[dict]] = {}
    for record in records:
        by_model.setdefault(record["model"], []).append(record)
    out = {}
    for model, mine in sorted(by_model.items()):
        missing = [n for n in wanted if not any(matches_task(r, n) for r in mine)]
        if missing:
            out[model] = missing
    return out


def select_tasks(
    records: list[dict],
    tasks: Iterable[str] | str | None,
    exclude: Iterable[str] | str | None = None,
) -> tuple[list[dict], list[str]]:
    """Keep the records whose ``"task"`` is wanted: one of ``tasks`` (all when None) and none of
    ``exclude``.

    Names may be glob patterns (``mmlu_*``) and match the task or one of the record's
    ``"aliases"`` (the groups holding an lm-eval task, the benchmark of a HELM scenario).
    Returns ``(kept, skipped task names)``; a name that matches no task is an error naming the
    tasks that are in the logs.
    """
    present = sorted({record["task"] for record in records})

    def names(option, what):
        out = task_names(option)
        for name in out or ():
            if not any(matches_task(record, name) for record in records):
                raise ValueError(
                    f"{what} {name!r} is not in the logs; tasks found: "
                    + ", ".join(repr(t) for t in present)
                )
        return out

    wanted, unwanted = names(tasks, "task"), names(exclude, "excluded task")
    kept = [record for record in records if task_wanted(record, wanted, unwanted)]
    if not kept:
        raise ValueError(
            "no task is left to read after the task selection (tasks=, exclude_tasks=); tasks "
            "found: " + ", ".join(repr(t) for t in present)
        )
    left = {record["task"] for record in kept}
    return kept, [t for t in present if t not in left]


def missing_report(frame: pd.DataFrame) -> dict:
    """Items (and observations) that some models have and others lack, counted per model.

    ``frame`` has columns model, item and optionally prompt. The report is JSON-safe.
    """
    model_code, models = pd.factorize(frame["model"], sort=True)
    item_code, items = pd.factorize(frame["item"], sort=True)
    n_models, n_items = len(models), len(items)
    present = np.zeros((n_items, n_models), dtype=bool)
    present[item_code, model_code] = True
    per_model = (~present).sum(axis=0)
    report: dict = {
        "items": int(n_items),
        "items_scored_by_every_model": int(present.all(axis=1).sum()),
        "items_missing_by_model": {str(m): int(c) for m, c in zip(models, per_model) if c > 0},
    }
    if per_model.any():
        report["examples"] = {
            str(models[j]): [str(items[i]) for i in np.flatnonzero(~present[:, j])[:_EXAMPLES]]
            for j in np.flatnonzero(per_model)
        }
    if "prompt" in frame.columns:
        obs = pd.MultiIndex.from_arrays([item_code, frame["prompt"].to_numpy()])
        obs_code, obs_uniques = pd.factorize(obs)
        seen = np.zeros((len(obs_uniques), n_models), dtype=bool)
        seen[obs_code, model_code] = True
        missing_obs = (~seen).sum(axis=0)
        report["observations"] = int(len(obs_uniques))
        report["observations_missing_by_model"] = {
            str(m): int(c) for m, c in zip(models, missing_obs) if c > 0
        }
    return report


def build_scores(
    frame: pd.DataFrame,
    *,
    cluster: bool,
    prompt: bool,
    bounds: tuple[float, float] | None,
    notes: dict,
    source: str,
    models_found: Iterable[str] = (),
    as_frame: bool = False,
    reasons: Mapping[str, str] | None = None,
    trial: bool = False,
    trial_gaps: str = "refuse",
) -> Scores | pd.DataFrame:
    """Validate the collected long table into Scores, reporting missing items.

    ``frame`` has columns model, item, score, and cluster / prompt when the flags say so. Items
    that some models lack stay in the table (the analysis decides what to do with them, and
    counts it); they are listed in ``notes["missing"]`` and announced with a RankciWarning.
    A model of ``models_found`` (the models the logs name) that has no score left is never
    dropped silently: it is listed in ``notes["models_without_scores"]`` with a warning (giving
    the reader's reason for the model, from ``reasons``, when it knows one).

    With ``as_frame`` the long table itself is returned (columns model, item, [cluster],
    [prompt], score; ``frame.attrs["notes"]``): one model's logs, or logs to combine with others
    later (``rankci.read_scores(pandas.concat(frames))``).
    """
    present = set(frame["model"]) if not frame.empty else set()
    vanished = [m for m in dict.fromkeys(models_found) if m not in present]
    if vanished:
        notes = {**notes, "models_without_scores": vanished}
        reasons = reasons or {}
        plain = [m for m in vanished if m not in reasons]
        if plain:
            warnings.warn(
                f"{source} logs: "
                + ", ".join(repr(m) for m in plain)
                + (" has" if len(plain) == 1 else " have")
                + " no score in the logs read (no samples, or none scored); "
                + ("it is" if len(plain) == 1 else "they are")
                + " not in the table",
                RankciWarning,
                stacklevel=3,
            )
        for m in vanished:
            if m in reasons:
                warnings.warn(
                    f"{source} logs: {m!r} has no score in the logs read ({reasons[m]}); it is "
                    "not in the table",
                    RankciWarning,
                    stacklevel=3,
                )
    if frame.empty:
        raise ValueError(f"the {source} logs hold no scores")
    report = missing_report(frame)
    notes = {**notes, "missing": report}
    lacking = report["items_missing_by_model"]
    if lacking:
        listed = ", ".join(f"{m!r} lacks {c}" for m, c in lacking.items())
        warnings.warn(
            f"{source} logs: {report['items'] - report['items_scored_by_every_model']} of "
            f"{report['items']} items are not scored by every model ({listed}); they are kept, "
            "and the analysis counts what it leaves out (see Scores.notes['missing'])",
            RankciWarning,
            stacklevel=3,
        )
    columns = ["model", "item", *(["cluster"] if cluster else []), *(["prompt"] if prompt else [])]
    columns += ["trial"] if trial else []
    if as_frame:
        table = frame[[*columns, "score"]].reset_index(drop=True)
        table.attrs["notes"] = notes
        return table
    if len(present) == 1:
        raise ValueError(
            f"the {source} logs read hold only one model, {next(iter(present))!r}, and rankci "
            "compares two or more: add the other models' logs, or read this one as a table "
            "with as_frame=True and combine it later (rankci.read_scores(pandas.concat(...)))"
        )
    return Scores.from_frame(
        frame,
        model="model",
        item="item",
        score="score",
        cluster="cluster" if cluster else None,
        prompt="prompt" if prompt else None,
        bounds=bounds,
        notes=notes,
        trial="trial" if trial else None,
        trial_gaps=trial_gaps,
    )


def warn(message: str) -> None:
    """A RankciWarning about the logs (shown by the command line as ``rankci: warning: ...``)."""
    warnings.warn(message, RankciWarning, stacklevel=3)


def epoch_labels(epochs: np.ndarray) -> np.ndarray:
    """Zero-padded labels ``epoch01``, ... so that they sort in epoch order."""
    epochs = np.asarray(epochs, dtype=np.int64)
    width = len(str(int(epochs.max()))) if epochs.size else 1
    return np.asarray([f"epoch{e:0{width}d}" for e in epochs], dtype=object)


def _listed(names, limit: int = 4) -> str:
    names = list(names)
    return ", ".join(map(str, names[:limit])) + (", ..." if len(names) > limit else "")


def _per_model(mapping: dict) -> str:
    return "; ".join(f"{m}: {_listed(t)}" for m, t in list(mapping.items())[:4]) + (
        "; ..." if len(mapping) > 4 else ""
    )


def run_identity_notes(notes: dict) -> list[str]:
    """What the lm-eval and HELM readers told apart, set aside or found lacking, one phrase
    each (for the command line's reading summary and the HTML report)."""
    parts = []
    split = notes.get("split")
    if isinstance(split, dict):
        other = {s: [k for k, v in split.items() if v == s] for s in set(split.values()) - {"test"}}
        for name, scenarios in sorted(other.items()):
            parts.append(
                f"split {name} for {_listed(scenarios)}"
                + (" (--split)" if str(notes.get("split_rule", "")).startswith("forced") else
                   " (not every run of it has a test split)")
            )
    if notes.get("trials_lacking"):
        parts.append(
            "trials some models lack, left out for every model: "
            + "; ".join(f"{t} (lacking: {_listed(m)})" for t, m in notes["trials_lacking"].items())
            + ": --trials decides"
        )
    if notes.get("trials_set_aside"):
        parts.append(
            f"trials set aside (--trials {notes.get('trials')}): "
            + _per_model(notes["trials_set_aside"])
        )
    averaged = notes.get("trials_averaged")
    if averaged and len(set(averaged.values())) > 1:
        parts.append("trials averaged, unequal numbers per run: " + _per_model(
            {k: [v] for k, v in averaged.items()}
        ))
    if notes.get("models_told_apart"):
        parts.append(
            "models told apart by model_args: "
            + _listed(n for names in notes["models_told_apart"].values() for n in names)
        )
    if notes.get("tasks_split_by_fewshot"):
        parts.append(
            "tasks split by number of shots (not paired): "
            + ", ".join(
                f"{t} ({', '.join(f'{n}-shot' for n in shots)})"
                for t, shots in notes["tasks_split_by_fewshot"].items()
            )
        )
    if notes.get("tasks_without_samples"):
        parts.append("tasks without a samples file: " + _per_model(notes["tasks_without_samples"]))
    if notes.get("samples_cut_down"):
        parts.append(
            "samples files cut short: "
            + _listed(f"{k} ({v['lines']} of {v['effective']})"
                      for k, v in notes["samples_cut_down"].items())
        )
    if notes.get("tasks_not_run"):
        parts.append("tasks a model never ran: " + _per_model(notes["tasks_not_run"]))
    if notes.get("group_means_differ"):
        parts.append(
            "group means differ from the harness's (rankci weights items equally): "
            + _listed(
                f"{g['group']} for {g['model']} (harness {g['harness']:.4g}, items "
                f"{g['mean_of_items']:.4g})"
                for g in notes["group_means_differ"]
            )
        )
    return parts
