"""Shared pieces of the log readers: finding files, renaming models, reporting missing items.

Every reader collects one record per (model, item[, prompt]) into a long DataFrame and hands it to
:func:`build_scores`, which reports what some models lack (never dropping it) and validates the
table with :meth:`rankci.Scores.from_frame`.
"""

from __future__ import annotations

import glob
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rankci._base import RankciWarning
from rankci.data import Scores

Source = str | os.PathLike | Iterable[str | os.PathLike]
ModelNames = str | Mapping[str, str] | Callable[[str], str] | None

# how many item ids to quote per model in the missing-items report
_EXAMPLES = 5


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


def select_tasks(records: list[dict], tasks: Iterable[str] | None) -> tuple[list[dict], list[str]]:
    """Keep the records whose ``"task"`` is one of ``tasks`` (all when None).

    Returns ``(kept, skipped task names)``; a wanted task that is not in the logs is an error
    naming the tasks that are.
    """
    if tasks is None:
        return records, []
    wanted = {str(t) for t in tasks}
    present = {record["task"] for record in records}
    absent = sorted(wanted - present)
    if absent:
        raise ValueError(
            f"task {absent[0]!r} is not in the logs; tasks found: "
            + ", ".join(repr(t) for t in sorted(present))
        )
    return [record for record in records if record["task"] in wanted], sorted(present - wanted)


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
) -> Scores:
    """Validate the collected long table into Scores, reporting missing items.

    ``frame`` has columns model, item, score, and cluster / prompt when the flags say so. Items
    that some models lack stay in the table (the analysis decides what to do with them, and
    counts it); they are listed in ``notes["missing"]`` and announced with a RankciWarning.
    """
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
    return Scores.from_frame(
        frame,
        model="model",
        item="item",
        score="score",
        cluster="cluster" if cluster else None,
        prompt="prompt" if prompt else None,
        bounds=bounds,
        notes=notes,
    )


def epoch_labels(epochs: np.ndarray) -> np.ndarray:
    """Zero-padded labels ``epoch01``, ... so that they sort in epoch order."""
    epochs = np.asarray(epochs, dtype=np.int64)
    width = len(str(int(epochs.max()))) if epochs.size else 1
    return np.asarray([f"epoch{e:0{width}d}" for e in epochs], dtype=object)
