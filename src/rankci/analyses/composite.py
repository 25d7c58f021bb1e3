"""Composite scores from several dimensions, with intervals that respect their correlation.

A composite (say 0.5 quality + 0.3 adherence + 0.2 diversity) is, per model, the weighted sum of
its dimension means: ``C_j = sum_d w_d mean_i x_ijd = mean_i c_ij`` with ``c_ij = sum_d w_d x_ijd``.
Its interval must not be assembled from the component intervals (the source's "weighted combination
of the component intervals" is wrong whenever the dimensions are correlated): rankci resamples
items *jointly* for every dimension (one weights matrix for the stacked
``[c | x_1 | ... | x_D]`` items x columns matrix), so the bootstrap composite of every resample is
exactly the weighted sum of that resample's component means. The normal and cluster methods use the
per-item composite ``c_ij``, whose variance ``sum_{d,e} w_d w_e cov(x_d, x_e)`` includes the
covariances between dimensions.

Input: a long table with a ``dimension`` column (model, item, dimension, score[, cluster]), or a
table with one score column per dimension (``dimensions=["quality", "adherence", ...]``). A (model,
item) cell enters only when every dimension is scored for it; the component intervals use the same
cells, so the composite equals the weighted sum of the component scores. Cells with some but not
all dimensions are counted in ``excluded``.

References
----------
Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, Ch. 6 and 13.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rankci._base import (
    check_alpha,
    check_choice,
    check_positive_int,
    jsonable,
    seeded_generator,
)
from rankci.analyses.intervals import (
    CLUSTER_METHODS,
    SPREAD_METHODS,
    ScoreIntervals,
    build_intervals,
    interval_arrays,
    resampling_options,
)
from rankci.data import MISSING, UnitScores
from rankci.evidence.covariance import resolve_small_sample
from rankci.io import read_scores, read_table

__all__ = ["CompositeScores", "composite_scores"]


@dataclass(frozen=True, repr=False, eq=False)
class CompositeScores:
    """A weighted composite score with its interval, and every component's interval.

    Attributes
    ----------
    composite : ScoreIntervals
        The composite's intervals, overlap flags and paired verdict (on the per-item composite).
    components : dict of str to ScoreIntervals
        One per dimension, from the same resamples and the same (model, item) cells.
    weights : dict of str to float
    excluded : dict
        Cells left out (a dimension missing for that model and item), and why.
    """

    composite: ScoreIntervals
    components: dict
    weights: dict
    excluded: dict = field(default_factory=dict)

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(self.components)

    def to_frame(self) -> pd.DataFrame:
        """Long table: model, component ("composite" or a dimension), weight, score, se, lower,
        upper, n; models in composite order."""
        order = list(self.composite.to_frame()["model"])
        parts = [self.composite.to_frame().assign(component="composite", weight=np.nan)]
        for name, result in self.components.items():
            frame = result.to_frame().set_index("model").loc[order].reset_index()
            parts.append(frame.assign(component=name, weight=self.weights[name]))
        frame = pd.concat(parts, ignore_index=True)
        frame["model"] = pd.Categorical(frame["model"], categories=order, ordered=True)
        frame = frame.sort_values(["model"], kind="stable").reset_index(drop=True)
        frame["model"] = frame["model"].astype(str)
        columns = ["model", "component", "weight", "score", "se", "lower", "upper", "n"]
        return frame[columns]

    def to_dict(self) -> dict:
        components = {}
        for name, result in self.components.items():
            entry = result.to_dict()
            components[name] = {"weight": self.weights[name], "models": entry["models"]}
        return {
            "composite": self.composite.to_dict(),
            "weights": jsonable(self.weights),
            "components": components,
            "excluded": jsonable(self.excluded),
        }

    def __repr__(self) -> str:
        weights = ", ".join(f"{k}={v:g}" for k, v in self.weights.items())
        return (
            f"CompositeScores({self.composite.n_models} models, {weights}; "
            f"method={self.composite.method!r})\n"
            + self.composite.to_frame().head(10).to_string(index=False)
        )


def _frame(data) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, (str, os.PathLike)):
        return read_table(Path(data), "auto")
    raise ValueError(f"expected a DataFrame or a file path, got {type(data).__name__}")


def _per_dimension(
    frame: pd.DataFrame,
    dimensions: Sequence[str] | None,
    dimension: str,
    columns: dict,
    bounds,
) -> dict:
    """One validated Scores per dimension."""
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    tables: dict[str, pd.DataFrame] = {}
    if dimensions is not None:
        dimensions = [str(d) for d in dimensions]
        missing = [d for d in dimensions if d not in frame.columns]
        if missing:
            raise ValueError(
                f"dimension column {missing[0]!r} is not in the table; columns are: "
                + ", ".join(repr(c) for c in frame.columns)
            )
        for d in dimensions:
            others = [e for e in dimensions if e != d]
            part = frame.drop(columns=others)
            tables[d] = part[part[d].notna()].rename(columns={d: "__score__"})
        columns = {**columns, "score": "__score__"}
    else:
        if dimension not in frame.columns:
            raise ValueError(
                f"the dimension column {dimension!r} is not in the table; pass dimension= or "
                "dimensions=[score columns]"
            )
        labels = frame[dimension]
        if labels.isna().any():
            row = int(np.flatnonzero(labels.isna().to_numpy())[0])
            raise ValueError(f"column {dimension!r} is empty at row {row}")
        codes, names = pd.factorize(labels.astype(str), sort=True)
        rest = frame.drop(columns=[dimension])
        for k, d in enumerate(names):
            tables[str(d)] = rest[codes == k]
    if len(tables) < 1:
        raise ValueError("a composite needs at least one dimension")
    out = {}
    for d, table in tables.items():
        try:
            out[d] = read_scores(table, layout="long", bounds=bounds, **columns)
        except ValueError as error:
            raise ValueError(f"dimension {d!r}: {error}") from None
    return out


def _weights(weights: Mapping[str, float] | None, names: Sequence[str]) -> dict:
    if weights is None:
        return {d: 1.0 / len(names) for d in names}
    if not isinstance(weights, Mapping):
        raise ValueError(f"weights must map dimension names to numbers, got {weights!r}")
    unknown = [k for k in weights if str(k) not in names]
    if unknown:
        raise ValueError(
            f"weight given for unknown dimension {unknown[0]!r}; dimensions are: "
            + ", ".join(repr(n) for n in names)
        )
    absent = [d for d in names if d not in {str(k) for k in weights}]
    if absent:
        raise ValueError(f"no weight given for dimension {absent[0]!r}")
    out = {}
    for key, value in weights.items():
        value = float(value)
        if not np.isfinite(value):
            raise ValueError(f"the weight of dimension {key!r} is not finite: {value}")
        out[str(key)] = value
    if all(v == 0 for v in out.values()):
        raise ValueError("every weight is zero")
    return {d: out[d] for d in names}


def _align(per_dim: dict, missing: str):
    """items x models x D array (NaN = not scored), models, item labels, item clusters."""
    units = {d: s.units("item", "pairwise") for d, s in per_dim.items()}
    models = tuple(sorted(set().union(*(u.models for u in units.values()))))
    items = tuple(sorted(set().union(*(u.labels for u in units.values()))))
    cube = np.full((len(items), len(models), len(units)), np.nan)
    model_index, item_index = pd.Index(models), pd.Index(items)
    cluster_of = np.full(len(items), None, dtype=object)
    for k, (d, u) in enumerate(units.items()):
        rows = item_index.get_indexer(list(u.labels))
        cols = model_index.get_indexer(list(u.models))
        cube[np.ix_(rows, cols, [k])] = u.values[:, :, None]
        scores = per_dim[d]
        if scores.clusters is not None:
            got = np.asarray(scores.clusters, dtype=object)[
                scores.item_cluster[pd.Index(scores.items).get_indexer(list(u.labels))]
            ]
            known = cluster_of[rows]
            clash = np.flatnonzero((known != None) & (known != got))  # noqa: E711
            if clash.size:
                i = rows[clash[0]]
                raise ValueError(
                    f"item {items[i]!r} is in cluster {known[clash[0]]!r} in one dimension and "
                    f"{got[clash[0]]!r} in dimension {d!r}"
                )
            cluster_of[rows] = got
    complete_cell = np.isfinite(cube).all(axis=2)
    partial = np.isfinite(cube).any(axis=2) & ~complete_cell
    excluded = {
        "cells_excluded": int(partial.sum()),
        "reason": "a (model, item) cell enters only when every dimension is scored",
        "missing": missing,
    }
    if missing == "complete":
        keep = complete_cell.all(axis=1)
        excluded["items_excluded"] = int((~keep).sum())
        cube, complete_cell, cluster_of = cube[keep], complete_cell[keep], cluster_of[keep]
        items = tuple(np.asarray(items, dtype=object)[keep])
    cube = np.where(complete_cell[:, :, None], cube, np.nan)
    return cube, models, items, cluster_of, excluded


def composite_scores(
    data: pd.DataFrame | str | os.PathLike,
    weights: Mapping[str, float] | None = None,
    *,
    dimensions: Sequence[str] | None = None,
    dimension: str = "dimension",
    model: str | None = None,
    item: str | None = None,
    score: str | None = None,
    cluster: str | None = None,
    method: str = "bootstrap",
    alpha: float = 0.05,
    reps: int = 1000,
    rng: int | np.random.Generator | None = None,
    small_sample: bool | str = "auto",
    missing: str = "complete",
    bounds: tuple[float, float] | None = None,
    verdict: bool = True,
) -> CompositeScores:
    """A weighted composite of several score dimensions, with a jointly resampled interval.

    Parameters
    ----------
    data : DataFrame or path
        Long with a dimension column (``model, item, dimension, score[, cluster]``), or one score
        column per dimension (then pass ``dimensions``).
    weights : mapping of dimension to weight, optional
        ``composite = sum_d weight_d * score_d``; default equal weights 1/D. Weights are used as
        given (not normalised); negative weights are allowed (a penalty dimension).
    dimensions : list of str, optional
        The score columns, one per dimension (wide-by-dimension input).
    dimension : str, default "dimension"
        The dimension column of the long input.
    model, item, score, cluster : str, optional
        Column names (found by alias when not given, as :func:`rankci.read_scores`).
    method, alpha, reps, rng, small_sample, missing, verdict
        As :func:`rankci.analyses.intervals.score_intervals`. Items are resampled jointly across
        models and dimensions; the cluster methods need a cluster column. The method is one of
        ``"bootstrap"`` (default), ``"bca"``, ``"normal"``, ``"cluster"``, ``"cluster-bootstrap"``:
        a weighted composite is no count of 0/1 successes, so the binomial methods (and
        ``"auto"``) are not offered.
    bounds : (float, float) or None, default None
        Allowed range of every dimension's scores (None: any finite score).

    Returns
    -------
    CompositeScores

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
    New York (Ch. 6 and 13).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({
    ...     "model": ["a"] * 4 + ["b"] * 4, "item": ["q1", "q2"] * 4,
    ...     "dimension": (["quality"] * 2 + ["adherence"] * 2) * 2,
    ...     "score": [0.9, 0.7, 0.8, 0.6, 0.5, 0.6, 0.9, 0.8]})
    >>> result = composite_scores(table, {"quality": 0.5, "adherence": 0.5}, method="normal")
    >>> result.composite.to_frame()[["model", "score"]].round(3).values.tolist()
    [['a', 0.75], ['b', 0.7]]
    """
    check_choice("method", method, SPREAD_METHODS)
    alpha = check_alpha(alpha)
    check_choice("missing", missing, MISSING)
    reps = check_positive_int(reps, "reps", minimum=2)
    seed, generator = seeded_generator(rng)
    columns = {"model": model, "item": item, "score": score, "cluster": cluster}
    per_dim = _per_dimension(_frame(data), dimensions, dimension, columns, bounds)
    names = list(per_dim)
    w = _weights(weights, names)
    cube, models, items, cluster_of, excluded = _align(per_dim, missing)
    n_items, n_models, n_dims = cube.shape
    composite = np.einsum("imd,d->im", cube, np.array([w[d] for d in names]))
    stacked = np.concatenate([composite, cube.transpose(0, 2, 1).reshape(n_items, -1)], axis=1)
    codes = None
    if method in CLUSTER_METHODS:
        if any(c is None for c in cluster_of):
            raise ValueError(f"method={method!r} needs a cluster column for every item")
        _, codes = np.unique(cluster_of.astype(str), return_inverse=True)
    arrays = interval_arrays(
        stacked,
        method,
        alpha,
        reps=reps,
        generator=generator,
        cluster=codes,
        small_sample=small_sample,
    )
    options: dict = {"weights": w}
    if method in ("bootstrap", "bca", "cluster-bootstrap"):
        options.update(resampling_options(reps, seed))
    if codes is not None:
        options.update(
            n_clusters=int(codes.max() + 1),
            small_sample=resolve_small_sample(small_sample),
        )

    def block(k: int) -> dict:
        cols = slice(k * n_models, (k + 1) * n_models)
        return {key: value[cols] for key, value in arrays.items()}

    def unit_scores(values: np.ndarray, note: dict) -> UnitScores:
        finite = values[np.isfinite(values)]
        return UnitScores(
            values=values,
            models=models,
            labels=items,
            unit="item",
            missing=missing,
            excluded=note,
            binary=bool(np.all((finite == 0) | (finite == 1))),
        )

    result = build_intervals(
        unit_scores(composite, excluded),
        block(0),
        method,
        alpha,
        options,
        verdict,
        codes,
        small_sample,
    )
    components = {}
    for k, d in enumerate(names):
        components[d] = build_intervals(
            unit_scores(cube[:, :, k], excluded),
            block(k + 1),
            method,
            alpha,
            {key: v for key, v in options.items() if key != "weights"},
            False,
            None,
            False,
        )
    return CompositeScores(composite=result, components=components, weights=w, excluded=excluded)
