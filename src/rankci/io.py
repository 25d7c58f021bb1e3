"""Reading per-item scores: CSV, TSV, Parquet, JSONL and DataFrames, long or wide.

Long form has one row per (model, item[, prompt]) with a score, and optionally a cluster and a
prompt column. Wide form has one row per item and one column per model (plus optional item,
cluster and prompt columns). Column names are configurable; when a role is not named, the first
of its common aliases found in the table (case-insensitive) is used.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from rankci._base import check_choice
from rankci.data import Scores

__all__ = ["read_scores", "read_table", "as_scores", "ALIASES", "FORMATS", "LAYOUTS"]

from rankci.formats import FORMATS, LAYOUTS  # noqa: E402

ALIASES: dict[str, tuple[str, ...]] = {
    "model": ("model", "model_name", "system", "llm", "model_id"),
    "item": ("item", "item_id", "question", "question_id", "doc_id", "sample_id", "id"),
    "score": ("score", "correct", "is_correct", "acc", "accuracy", "value"),
    "cluster": ("cluster", "subject", "category", "task", "topic", "domain"),
    "prompt": ("prompt", "prompt_variant", "variant", "template", "prompt_id"),
}

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


def read_scores(
    source: str | os.PathLike | pd.DataFrame,
    *,
    model: str | None = None,
    item: str | None = None,
    score: str | None = None,
    cluster: str | None = None,
    prompt: str | None = None,
    layout: str = "auto",
    format: str = "auto",
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> Scores:
    """Read and validate per-item scores.

    Parameters
    ----------
    source : path or DataFrame
        A ``.csv``, ``.tsv``, ``.parquet`` or ``.jsonl`` file (optionally ``.gz``/``.bz2``/``.zst``
        compressed for the text formats), or a pandas DataFrame.
    model, item, score, cluster, prompt : str, optional
        Column names. Unnamed roles are looked up among the aliases in :data:`ALIASES`
        (``subject``/``category``/``task`` for the cluster, ``question``/``doc_id`` for the
        item, ...).
        Pass ``cluster=""`` or ``prompt=""`` to ignore a column that matches an alias.
    layout : {"auto", "long", "wide"}
        ``auto`` reads long form when a model and a score column are present, wide form otherwise.
        In wide form every column other than item, cluster and prompt is a model, and an empty
        cell means "not scored".
    format : {"auto", "csv", "tsv", "parquet", "jsonl"}
        File format; ``auto`` uses the file extension.
    bounds : (float, float) or None, default (0, 1)
        Allowed score range; None accepts any finite score.

    Returns
    -------
    Scores

    Raises
    ------
    ValueError
        For an unknown option, an unreadable file, a missing or ambiguous column, or any of the
        validation errors of :meth:`Scores.from_frame` (which name the row, model or item).

    References
    ----------
    Wickham, H. (2014). Tidy data. Journal of Statistical Software 59(10), 1-23 (long and wide
    layouts).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model": ["a", "a", "b", "b"], "question": ["q1", "q2", "q1", "q2"],
    ...                       "correct": [1, 0, 1, 1]})
    >>> read_scores(table)
    Scores(2 models, 2 items, 4 scores)
    """
    check_choice("layout", layout, LAYOUTS)
    check_choice("format", format, FORMATS)
    frame = source if isinstance(source, pd.DataFrame) else read_table(Path(source), format)
    if frame.empty:
        raise ValueError("the table has no rows")
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    given = {"model": model, "item": item, "score": score, "cluster": cluster, "prompt": prompt}
    if layout == "auto":
        found_model = model or _alias(frame, "model", exclude=())
        found_score = score or _alias(frame, "score", exclude=())
        layout = "long" if found_model and found_score else "wide"
    if layout == "long":
        return _read_long(frame, given, bounds)
    return _read_wide(frame, given, bounds)


def read_table(path: Path, format: str) -> pd.DataFrame:
    if not path.exists():
        raise ValueError(f"no such file: {str(path)!r}")
    if format == "auto":
        suffixes = [s.lower() for s in path.suffixes]
        if suffixes and suffixes[-1] in (".gz", ".bz2", ".xz", ".zst", ".zip"):
            suffixes = suffixes[:-1]
        format = _EXTENSIONS.get(suffixes[-1] if suffixes else "", "")
        if not format:
            raise ValueError(
                f"cannot tell the format of {path.name!r} from its extension; pass format= one of "
                "'csv', 'tsv', 'parquet', 'jsonl'"
            )
    try:
        if format == "parquet":
            return pd.read_parquet(path, engine="pyarrow")
        if format == "jsonl":
            return pd.read_json(path, lines=True, dtype=False)
        return pd.read_csv(path, sep="\t" if format == "tsv" else ",", low_memory=False)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise ValueError(f"could not read {str(path)!r} as {format}: {error}") from error


def _alias(frame: pd.DataFrame, role: str, exclude: tuple[str, ...]) -> str | None:
    """The first column (case-insensitive) among the role's aliases; None if there is none."""
    lowered = {c.lower(): c for c in frame.columns if c not in exclude}
    for name in ALIASES[role]:
        if name in lowered:
            return lowered[name]
    return None


def _resolve(frame: pd.DataFrame, given: dict, roles: tuple[str, ...]) -> dict:
    """Column name for each role: as given, else by alias; '' means "none"."""
    chosen: dict[str, str | None] = {}
    taken: list[str] = []
    for role in roles:
        name = given.get(role)
        if name == "":
            chosen[role] = None
            continue
        if name is None:
            name = _alias(frame, role, exclude=tuple(taken))
        elif name not in frame.columns:
            available = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(
                f"the {role} column {name!r} is not in the table; columns are: {available}"
            )
        chosen[role] = name
        if name is not None:
            taken.append(name)
    return chosen


def _read_long(frame: pd.DataFrame, given: dict, bounds) -> Scores:
    columns = _resolve(frame, given, ("model", "item", "score", "cluster", "prompt"))
    for role in ("model", "item", "score"):
        if columns[role] is None:
            available = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(
                f"no {role} column found (looked for {', '.join(ALIASES[role])}); name it with "
                f"{role}=... ; columns are: {available}"
            )
    return Scores.from_frame(
        frame,
        model=columns["model"],
        item=columns["item"],
        score=columns["score"],
        cluster=columns["cluster"],
        prompt=columns["prompt"],
        bounds=bounds,
        notes={"layout": "long", "columns": columns},
    )


def _read_wide(frame: pd.DataFrame, given: dict, bounds) -> Scores:
    if given.get("model") or given.get("score"):
        raise ValueError(
            "model= and score= name columns of the long form; in wide form every other column "
            "is a model (pass layout='long' if the table is long)"
        )
    columns = _resolve(frame, given, ("item", "cluster", "prompt"))
    id_columns = [c for c in columns.values() if c is not None]
    model_columns = [c for c in frame.columns if c not in id_columns]
    if not model_columns:
        raise ValueError("wide form needs one column per model, but no model columns were found")
    for name in model_columns:
        column = frame[name]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)):
            coerced = pd.to_numeric(column, errors="coerce")
            bad = coerced.isna() & column.notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise ValueError(
                    f"column {name!r} is not numeric at row {row}: {column.iloc[row]!r}; in wide "
                    "form every column other than the item, cluster and prompt columns is a model "
                    "(name them with item=, cluster=, prompt=)"
                )
        if column.isna().all():
            raise ValueError(f"model {name!r} has no scores (its column is empty)")
    if columns["item"] is None:
        frame = frame.assign(item=[f"row{k}" for k in range(len(frame))])
        columns["item"] = "item"
    long = frame.melt(
        id_vars=[c for c in columns.values() if c is not None],
        value_vars=model_columns,
        var_name="__model__",
        value_name="__score__",
    )
    empty = long["__score__"].isna().to_numpy()
    long = long[~empty]
    return Scores.from_frame(
        long,
        model="__model__",
        item=columns["item"],
        score="__score__",
        cluster=columns["cluster"],
        prompt=columns["prompt"],
        bounds=bounds,
        notes={"layout": "wide", "columns": columns, "empty_cells": int(empty.sum())},
    )


def as_scores(data: Scores | pd.DataFrame | str | os.PathLike) -> Scores:
    """Scores as they are, or read from a DataFrame or a file by :func:`read_scores`.

    Every analysis that takes "Scores, a DataFrame or a path" calls this, so the three kinds of
    input are read by one rule.

    Parameters
    ----------
    data : Scores, DataFrame, str or path-like
        Returned unchanged when already :class:`~rankci.Scores`; otherwise read by
        :func:`read_scores` with its defaults.

    Returns
    -------
    Scores

    References
    ----------
    Wickham, H. (2014). Tidy data. Journal of Statistical Software 59(10), 1-23.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": ["1", "2", "1", "2"],
    ...                       "score": [1.0, 0.0, 1.0, 1.0]})
    >>> as_scores(frame).models
    ('a', 'b')
    """
    if isinstance(data, Scores):
        return data
    if isinstance(data, (pd.DataFrame, str, os.PathLike)):
        return read_scores(data)
    raise ValueError(f"expected Scores, a DataFrame or a file path, got {type(data).__name__}")

