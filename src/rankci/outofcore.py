"""Rank intervals from a scores table larger than memory: partitioned Parquet, reduced by parts.

The paired t (and z) tests with Holm's or Bonferroni's procedure need only additive sufficient
statistics of the units x models matrix X (unit = item, complete rows):

* ``n``, the number of items; per model the sum ``s_j = sum_i x_ij`` (the means ``mu = s / n``);
* the centred Gram ``G = sum_i (x_i - mu)(x_i - mu)^T`` (M x M), so ``cov = G / (n - 1)`` and
  ``var(d_jl) = cov_jj + cov_ll - 2 cov_jl``;
* the smallest and largest score (the zero-variance rule and the [0, 1] check).

They are computed a part at a time and added, then passed to the same t arithmetic
(:func:`rankci.evidence.ttest.t_or_z_from_moments`) and the same certification
(:func:`rankci.certify.holm.certify_holm`) as :func:`rankci.rank`.

What the out-of-core path requires (and refuses otherwise, with the counts):

* a long table with columns model, item, score (names configurable), Parquet, a file or a
  directory (a :mod:`pyarrow.dataset`, hive partitions allowed);
* **every item's rows in one file** (fragment): a fragment is pivoted to items x models on its
  own, so an item split across files is an error naming both files;
* **one score per model per item, every cell present and finite**: missing cells, duplicated
  (model, item) rows and NaN scores are counted and reported, and nothing is computed;
* ``unit="item"``, ``missing="complete"``, ``test`` ``"t"`` or ``"z"`` and ``multiplicity``
  ``"holm"`` or ``"bonferroni"``; anything else is an error that says to use the in-memory path.

Bit-identity with :func:`rankci.rank`. The local path reads the files in sorted path order and,
within a file, the items in sorted order; it adds the rows to the column sums one at a time (as
NumPy's ``x.sum(axis=0)`` does) and forms the Gram in blocks of
:data:`rankci.evidence.ttest.GRAM_ROWS` rows carried across files (as
:func:`rankci.evidence.ttest.centred_gram` does in memory). When the files, taken in path order,
hold the items in sorted order (for example a table written sorted by item and cut into files),
the units are in the in-memory order and every number is the same bit for bit. Otherwise the
sums are in another order and agree to rounding. The Dask path adds per-partition sums and Grams
in partition order, so it agrees to rounding (exactly when there is one partition).

Examples
--------
>>> import tempfile, numpy as np, pandas as pd, rankci
>>> from rankci.outofcore import rank_dataset
>>> rng = np.random.default_rng(0)
>>> frame = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 40),
...                       "item": np.tile([f"q{i:02d}" for i in range(40)], 3),
...                       "score": 0.4 * rng.random(120) + np.repeat([0.0, 0.1, 0.6], 40)})
>>> path = tempfile.mkdtemp() + "/board.parquet"
>>> frame.to_parquet(path)
>>> a = rank_dataset(path, test="t", rng=0)
>>> b = rankci.rank(frame, test="t", rng=0)
>>> a.lower.tolist() == b.lower.tolist(), bool((a.pairwise.pvalue == b.pairwise.pvalue)[0, 1])
(True, True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankci.evidence.moments import MIN_CERTIFYING_UNITS
from rankci.evidence.ttest import GRAM_ROWS, t_or_z_from_moments, t_smallest_pvalue

__all__ = ["SufficientStatistics", "dataset_statistics", "dask_statistics", "rank_dataset"]

COLUMNS = ("model", "item", "score")


@dataclass(frozen=True, eq=False)
class SufficientStatistics:
    """The additive statistics of a complete items x models matrix.

    Attributes
    ----------
    models : tuple of str
        Sorted model names (the columns).
    n_units : int
        Items.
    sums : ndarray (M,)
        Column sums.
    gram : ndarray (M, M)
        Centred Gram ``sum_i (x_i - mu)(x_i - mu)^T``, ``mu = sums / n_units``.
    lo, hi : float
        Smallest and largest score.
    files : int
        Files (or partitions) reduced.
    """

    models: tuple
    n_units: int
    sums: np.ndarray
    gram: np.ndarray
    lo: float
    hi: float
    files: int

    @property
    def mean(self) -> np.ndarray:
        return self.sums / self.n_units


def _fragments(source: str | os.PathLike):
    import pyarrow.dataset as ds

    dataset = ds.dataset(os.fspath(source), format="parquet", partitioning="hive")
    return sorted(dataset.get_fragments(), key=lambda f: f.path)


def _check_columns(names, columns: tuple[str, str, str], where: str) -> None:
    absent = [c for c in columns if c not in names]
    if absent:
        raise ValueError(
            f"{where}: no column {absent[0]!r} (columns: {', '.join(map(str, names))}); "
            "name the columns with model=, item=, score="
        )


def _models_of(fragments, model: str) -> tuple:
    import pyarrow.compute as pc

    seen: set = set()
    for fragment in fragments:
        table = fragment.to_table(columns=[model])
        seen.update(str(v) for v in pc.unique(table.column(model)).to_pylist())
    return tuple(sorted(seen))


def _codes(column, where: str, name: str):
    """Integer codes and sorted string labels of an Arrow column, through its dictionary."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        if pa.types.is_dictionary(column.type):
            column = column.unify_dictionaries()
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    if column.null_count:
        raise ValueError(f"{where}: {column.null_count} empty {name} labels")
    labels = np.asarray([str(v) for v in column.dictionary.to_pylist()], dtype=object)
    order, inverse = np.unique(labels, return_inverse=True)
    codes = inverse[column.indices.to_numpy(zero_copy_only=False)]
    used, codes = np.unique(codes, return_inverse=True)  # entries no row uses are dropped
    return codes, order[used]


def pivot_part(table, models: tuple, columns: tuple[str, str, str], where: str):
    """Items x models matrix of one part (an Arrow table or pandas frame), items sorted.

    Returns (item labels, matrix). A missing cell, a duplicated (model, item) row or a
    non-finite score is a :class:`ValueError` naming ``where`` with the counts.
    """
    import pyarrow as pa

    model, item, score = columns
    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    names = np.asarray(models, dtype=object)
    local_code, local_models = _codes(table.column(model), where, "model")
    m_code = np.searchsorted(names, local_models)[local_code]
    i_code, items = _codes(table.column(item), where, "item")
    values = table.column(score).to_numpy().astype(float, copy=False)
    cells = i_code.astype(np.int64) * len(models) + m_code
    counts = np.bincount(cells, minlength=len(items) * len(models))
    duplicated = int((counts > 1).sum())
    missing = int((counts == 0).sum())
    bad = int((~np.isfinite(values)).sum())
    if duplicated or missing or bad:
        raise ValueError(
            f"{where}: the out-of-core path needs one finite score per model per item; found "
            f"{missing} missing (model, item) cells, {duplicated} duplicated cells and {bad} "
            "non-finite scores. Use the in-memory path (rankci.rank on read_scores) for "
            "incomplete or repeated scores"
        )
    matrix = np.empty(len(items) * len(models))
    matrix[cells] = values
    return items, matrix.reshape(len(items), len(models))


class _Reducer:
    """Sequential column sums and blocked centred Gram, in the in-memory order."""

    def __init__(self, m: int) -> None:
        self.sums = None
        self.n = 0
        self.gram = np.zeros((m, m))
        self.started = False
        self.buffer: list[np.ndarray] = []
        self.buffered = 0
        self.lo, self.hi = np.inf, -np.inf

    def add_sums(self, x: np.ndarray) -> None:
        stacked = x if self.sums is None else np.vstack([self.sums[None, :], x])
        self.sums = np.add.reduce(stacked, axis=0)
        self.n += x.shape[0]
        self.lo, self.hi = min(self.lo, float(x.min())), max(self.hi, float(x.max()))

    def add_centred(self, centred: np.ndarray) -> None:
        while centred.shape[0]:
            take = GRAM_ROWS - self.buffered
            self.buffer.append(centred[:take])
            self.buffered += self.buffer[-1].shape[0]
            centred = centred[take:]
            if self.buffered == GRAM_ROWS:
                self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        block = self.buffer[0] if len(self.buffer) == 1 else np.vstack(self.buffer)
        if self.started:
            self.gram += block.T @ block
        else:
            self.gram = block.T @ block
            self.started = True
        self.buffer, self.buffered = [], 0

    def finish(self) -> np.ndarray:
        self._flush()
        return self.gram


def dataset_statistics(
    source: str | os.PathLike,
    *,
    model: str = "model",
    item: str = "item",
    score: str = "score",
) -> SufficientStatistics:
    """Sufficient statistics of a partitioned Parquet scores table, one file at a time.

    Three passes over the files (models; sums; centred Gram), each holding one file's rows:
    peak memory is one file plus M x M, whatever the number of files. See the module docstring
    for what the table must satisfy.

    Parameters
    ----------
    source : path
        A Parquet file or a directory of them.
    model, item, score : str
        Column names.

    Returns
    -------
    SufficientStatistics
    """
    columns = (model, item, score)
    fragments = _fragments(source)
    if not fragments:
        raise ValueError(f"{os.fspath(source)}: no Parquet file")
    for fragment in fragments:
        _check_columns(fragment.physical_schema.names, columns, fragment.path)
    models = _models_of(fragments, model)
    if len(models) < 2:
        raise ValueError(f"{os.fspath(source)}: fewer than two models ({len(models)})")
    reducer = _Reducer(len(models))
    owner: dict = {}

    def parts():
        for fragment in fragments:
            table = fragment.to_table(columns=list(columns))
            yield fragment.path, pivot_part(table, models, columns, fragment.path)

    for path, (items, x) in parts():
        for label in items.tolist():
            first = owner.setdefault(label, path)
            if first != path:
                raise ValueError(
                    f"item {label!r} has rows in {first} and in {path}: the out-of-core path "
                    "needs every item's rows in one file (partition the table by item)"
                )
        reducer.add_sums(x)
    mu = reducer.sums / reducer.n
    for _, (_, x) in parts():
        reducer.add_centred(x - mu)
    gram = reducer.finish()
    return SufficientStatistics(
        models, reducer.n, reducer.sums, gram, reducer.lo, reducer.hi, len(fragments)
    )


def _partition_sums(frame, models, columns):
    _, x = pivot_part(frame, models, columns, "a Dask partition")
    return x.shape[0], x.sum(axis=0), float(x.min()), float(x.max())


def _partition_gram(frame, models, columns, mu):
    _, x = pivot_part(frame, models, columns, "a Dask partition")
    centred = x - mu
    return centred.T @ centred


def dask_statistics(
    source: str | os.PathLike,
    client: Any = None,
    *,
    model: str = "model",
    item: str = "item",
    score: str = "score",
) -> SufficientStatistics:
    """:func:`dataset_statistics` on a Dask cluster (``pip install rankci[dask]``).

    Each partition of ``dask.dataframe.read_parquet(source)`` (one per file) is pivoted and
    reduced on a worker; the per-partition sums and Grams come back (M + M^2 numbers each) and
    are added in partition order. Items must not span partitions: the item labels of each
    partition are compared. ``client`` is a ``distributed.Client`` (default: the current one).
    """
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as error:  # pragma: no cover - the extra is installed in the tests
        raise ImportError("the Dask path needs dask: pip install 'rankci[dask]'") from error
    columns = (model, item, score)
    frame = dd.read_parquet(os.fspath(source), columns=list(columns))
    _check_columns(list(frame.columns), columns, os.fspath(source))
    parts = frame.to_delayed()
    compute = client.compute if client is not None else None

    def run(tasks):
        if compute is None:
            return dask.compute(*tasks)
        return [f.result() for f in compute(tasks)]

    models = tuple(sorted(set().union(*run([dask.delayed(_labels)(p, model) for p in parts]))))
    item_sets = run([dask.delayed(_labels)(p, item) for p in parts])
    seen: dict = {}
    for index, labels in enumerate(item_sets):
        for label in labels:
            if seen.setdefault(label, index) != index:
                raise ValueError(
                    f"item {label!r} has rows in partitions {seen[label]} and {index}: the "
                    "out-of-core path needs every item's rows in one partition"
                )
    sums_parts = run([dask.delayed(_partition_sums)(p, models, columns) for p in parts])
    n = sum(part[0] for part in sums_parts)
    sums = sums_parts[0][1].copy()
    for part in sums_parts[1:]:
        sums += part[1]
    mu = sums / n
    grams = run([dask.delayed(_partition_gram)(p, models, columns, mu) for p in parts])
    gram = grams[0].copy()
    for part in grams[1:]:
        gram += part
    lo = min(part[2] for part in sums_parts)
    hi = max(part[3] for part in sums_parts)
    return SufficientStatistics(models, n, sums, gram, lo, hi, len(parts))


def _labels(frame, column: str) -> set:
    return set(frame[column].astype(str).unique().tolist())


def rank_dataset(
    source: str | os.PathLike | SufficientStatistics,
    *,
    test: str = "t",
    coverage: str = "simultaneous",
    alpha: float = 0.05,
    delta: float = 0.0,
    multiplicity: str = "holm",
    unit: str = "item",
    missing: str = "complete",
    rng: int | None = None,
    dask: Any = None,
    model: str = "model",
    item: str = "item",
    score: str = "score",
):
    """Rank intervals of a partitioned Parquet scores table through the out-of-core path.

    The paired t (or z) of every ordered pair from :class:`SufficientStatistics`, then Holm's (or
    Bonferroni's) procedure, exactly as :func:`rankci.rank` with ``unit="item"``,
    ``missing="complete"`` and the same ``test``; see the module docstring for the
    requirements and for when the two agree bit for bit.

    Parameters
    ----------
    source : path or SufficientStatistics
    test : {"t", "z"}
    coverage, alpha, delta, multiplicity, rng
        As in :func:`rankci.rank` (``rng`` is recorded; nothing here is random).
    unit, missing : "item", "complete"
        The only values the out-of-core path takes.
    dask : None, "local", a scheduler address or a ``distributed.Client``
        Reduce on a Dask cluster (:func:`dask_statistics`); ``"local"`` starts a
        ``distributed.LocalCluster`` for the call.
    model, item, score : str
        Column names.

    Returns
    -------
    Ranking
    """
    from rankci.certify.holm import certify_holm
    from rankci.evidence.pairwise import Pairwise
    from rankci.leaderboard import resolve_spec

    if unit != "item" or missing != "complete":
        raise ValueError(
            f"the out-of-core path takes unit='item' and missing='complete' (got unit={unit!r}, "
            f"missing={missing!r}); read the table with rankci.read_scores for the others"
        )
    if test not in ("t", "z") or multiplicity not in ("holm", "bonferroni"):
        raise ValueError(
            f"the out-of-core path runs test 't' or 'z' with multiplicity 'holm' or "
            f"'bonferroni' (got test={test!r}, multiplicity={multiplicity!r}); use the in-memory "
            "path (rankci.rank) for the others"
        )
    keywords = dict(
        unit=unit,
        test=test,
        coverage=coverage,
        alpha=alpha,
        delta=delta,
        missing=missing,
        multiplicity=multiplicity,
    )
    spec, _ = resolve_spec(None, rng, keywords, {}, "rank")
    if isinstance(source, SufficientStatistics):
        stats = source
    elif dask is None:
        stats = dataset_statistics(source, model=model, item=item, score=score)
    else:
        stats = _with_dask(source, dask, model=model, item=item, score=score)
    n = stats.n_units
    if n < MIN_CERTIFYING_UNITS:
        raise ValueError(f"{n} items: the out-of-core path needs at least {MIN_CERTIFYING_UNITS}")
    bounded = bool(stats.lo >= 0.0 and stats.hi <= 1.0)
    width = max(stats.hi - stats.lo, max(abs(stats.lo), abs(stats.hi)))
    width = width if width > 0 else 1.0
    mu = stats.sums / n
    cov = stats.gram / (n - 1)
    normal = test == "z"
    estimate, statistic, pvalue, n_pairs, se, df = t_or_z_from_moments(
        n, mu, cov, bounded, width, spec.delta, normal
    )
    for matrix in (estimate, statistic, pvalue):
        np.fill_diagonal(matrix, np.nan)
    excluded = {
        "missing": "complete",
        "observations": int(n),
        "observations_excluded": 0,
        "rows_excluded": 0,
        "missing_cells_by_model": {},
    }
    pairwise = Pairwise(
        models=stats.models,
        test=test,
        delta=spec.delta,
        estimate=estimate,
        statistic=statistic,
        pvalue=pvalue,
        n=n_pairs,
        se=se,
        df=df,
        unit="item",
        missing="complete",
        options={"exact_bound_n": 0},
        excluded=excluded,
        score=stats.sums / n,
        n_units=int(n),
        smallest_pvalue=t_smallest_pvalue(n, 0, spec.delta, bounded),
    )
    return certify_holm(pairwise, spec.alpha, spec.coverage, spec.multiplicity).ranking(spec)


def _with_dask(source, dask, **columns) -> SufficientStatistics:
    from distributed import Client, LocalCluster

    if not isinstance(dask, str):
        return dask_statistics(source, dask, **columns)
    if dask == "local":
        # no dashboard: a second local cluster (or any program on port 8787) would collide
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster:
            with Client(cluster) as client:
                return dask_statistics(source, client, **columns)
    with Client(dask) as client:
        return dask_statistics(source, client, **columns)
