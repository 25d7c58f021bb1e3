"""Rank intervals from a scores table larger than memory: partitioned Parquet, reduced by parts.

The paired t (and z) tests with Holm's or Bonferroni's procedure need only additive sufficient
statistics of the units x models matrix X (unit = item, complete rows):

* ``n``, the number of items; per model the sum ``s_j = sum_i x_ij`` (the means ``mu = s / n``);
* the centred Gram ``G = sum_i (x_i - mu)(x_i - mu)^T`` (M x M), so ``cov = G / (n - 1)`` and
  ``var(d_jl) = cov_jj + cov_ll - 2 cov_jl``;
* the smallest and largest score (the zero-variance rule and the [0, 1] check).

They are computed a part at a time and added, then passed to the same t arithmetic
(:func:`rankci.evidence.ttest.t_or_z_from_moments`) and the same certification
(:func:`rankci.certify.holm.certify_holm`) as :func:`rankci.rank`. Two passes over the files:
the first pivots each file and adds its rows to the sums (the models are those of the first
file, the items checked to be in one file each), the second adds the centred rows to the Gram;
the pivoted files that fit in :data:`CACHE_BYTES` (in the scores' own dtype: 1 byte a score for
uint8 0/1 scores) are kept for the second pass instead of being read again.

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
:func:`rankci.evidence.ttest.gram_rows` rows (65,536 up to 1,024 models, 6,710 at 10,000)
carried across files (as :func:`rankci.evidence.ttest.centred_gram` does in memory). Scores
stored as uint8, int or float32 are the same numbers as float64. When the files, taken in path
order, hold the items in sorted order (for example a table written sorted by item and cut into
files), the units are in the in-memory order and every number is the same bit for bit.
Otherwise the sums are in another order and agree to rounding. The Dask path adds
per-partition sums and Grams in partition order, :data:`WINDOW` partitions at a time, so it
agrees to rounding (exactly when there is one partition).

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

from rankci.evidence import ttest
from rankci.evidence.moments import MIN_CERTIFYING_UNITS
from rankci.evidence.ttest import t_or_z_from_moments, t_smallest_pvalue

__all__ = [
    "CACHE_BYTES",
    "WINDOW",
    "SufficientStatistics",
    "dataset_statistics",
    "dask_statistics",
    "rank_dataset",
]

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
    """Integer codes and sorted string labels of an Arrow column, through its dictionary.

    Labels no row uses are dropped; the codes index the sorted labels that remain.
    """
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
    indices = column.indices.to_numpy(zero_copy_only=False)
    used = np.bincount(indices, minlength=len(labels)) > 0  # O(rows), no sort of the rows
    order, inverse = np.unique(labels[used], return_inverse=True)
    lookup = np.zeros(len(labels), dtype=np.int64)
    lookup[used] = inverse.ravel()
    return lookup[indices], order


class _ModelsDiffer(Exception):
    """A part's models are not the models of the parts before it (so some cell is missing)."""


def _pivot(table, models, columns, where: str, *, native: bool = False, same: bool = False):
    """(the part's sorted models, its sorted items, its items x models matrix).

    ``models`` None: the part's own models are the columns. ``same``: raise
    :class:`_ModelsDiffer` unless the part's models are exactly ``models``. ``native``: the
    matrix keeps the score column's numeric dtype (uint8, float32, ...) instead of float64.
    """
    import pyarrow as pa

    model, item, score = columns
    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    local_code, local_models = _codes(table.column(model), where, "model")
    if models is None:
        names, m_code = local_models, local_code
    else:
        names = np.asarray(models, dtype=object)
        if len(local_models) == len(names) and (local_models == names).all():
            m_code = local_code
        elif same:
            raise _ModelsDiffer
        else:
            m_code = np.searchsorted(names, local_models)[local_code]
    i_code, items = _codes(table.column(item), where, "item")
    values = table.column(score).to_numpy()
    if values.dtype.kind not in "uif" or not native:
        values = values.astype(float, copy=False)
    m = len(names)
    cells = i_code
    cells *= m
    cells += m_code
    counts = np.bincount(cells, minlength=len(items) * m)
    duplicated = int((counts > 1).sum())
    missing = int((counts == 0).sum())
    bad = int((~np.isfinite(values)).sum()) if values.dtype.kind == "f" else 0
    if duplicated or missing or bad:
        raise ValueError(
            f"{where}: the out-of-core path needs one finite score per model per item; found "
            f"{missing} missing (model, item) cells, {duplicated} duplicated cells and {bad} "
            "non-finite scores. Use the in-memory path (rankci.rank on read_scores) for "
            "incomplete or repeated scores"
        )
    del counts
    matrix = np.empty(len(items) * m, dtype=values.dtype)
    matrix[cells] = values
    return tuple(names.tolist()), items, matrix.reshape(len(items), m)


def pivot_part(table, models: tuple, columns: tuple[str, str, str], where: str):
    """Items x models matrix of one part (an Arrow table or pandas frame), items sorted.

    Returns (item labels, matrix). A missing cell, a duplicated (model, item) row or a
    non-finite score is a :class:`ValueError` naming ``where`` with the counts.
    """
    _, items, matrix = _pivot(table, models, columns, where)
    return items, matrix


def _check_items_once(item_arrays: list, place) -> None:
    """Every item in one part: the first item (in reading order) seen in an earlier part is an
    error naming both parts (``place(k)`` names part k). Vectorised over all the labels."""
    sizes = [len(a) for a in item_arrays]
    if sum(sizes) == 0:
        return
    labels = np.concatenate([np.asarray(a, dtype=object) for a in item_arrays])
    order, first = np.unique(labels, return_index=True)
    if len(order) == len(labels):
        return
    part = np.repeat(np.arange(len(item_arrays)), sizes)
    repeated = np.ones(len(labels), dtype=bool)
    repeated[first] = False
    row = int(np.flatnonzero(repeated)[0])
    label = labels[row]
    earlier = int(part[first[np.searchsorted(order, label)]])
    raise ValueError(
        f"item {label!r} has rows in {place(earlier)} and in {place(int(part[row]))}: the "
        "out-of-core path needs every item's rows in one file (partition the table by item)"
    )


class _Reducer:
    """Sequential column sums and blocked centred Gram, in the in-memory order.

    The centred rows go straight into one preallocated block of ``gram_rows(M)`` rows (no
    copies of the parts); a full block adds ``block.T @ block`` to the Gram, exactly as
    :func:`rankci.evidence.ttest.centred_gram` does on the in-memory matrix.
    """

    def __init__(self, m: int) -> None:
        self.m = m
        self.sums: np.ndarray | None = None
        self.n = 0
        self.gram: np.ndarray | None = None
        self.block: np.ndarray | None = None
        self.filled = 0
        self.lo, self.hi = np.inf, -np.inf

    def add_sums(self, x: np.ndarray) -> None:
        x = x.astype(float, copy=False)
        stacked = x if self.sums is None else np.vstack([self.sums[None, :], x])
        self.sums = np.add.reduce(stacked, axis=0)
        self.n += x.shape[0]
        self.lo, self.hi = min(self.lo, float(x.min())), max(self.hi, float(x.max()))

    def add_centred(self, x: np.ndarray, mu: np.ndarray) -> None:
        """Add the rows ``x - mu`` (``x`` of any numeric dtype: the difference is float64)."""
        rows = ttest.gram_rows(self.m)
        if self.block is None:
            self.block = np.empty((rows, self.m))
        start = 0
        while start < x.shape[0]:
            take = min(rows - self.filled, x.shape[0] - start)
            target = self.block[self.filled : self.filled + take]
            np.subtract(x[start : start + take], mu, out=target)
            self.filled += take
            start += take
            if self.filled == rows:
                self._flush()

    def _flush(self) -> None:
        if not self.filled:
            return
        block = self.block[: self.filled]
        if self.gram is None:
            self.gram = block.T @ block
        else:
            self.gram += block.T @ block
        self.filled = 0

    def finish(self) -> np.ndarray:
        self._flush()
        self.block = None
        return np.zeros((self.m, self.m)) if self.gram is None else self.gram


#: Bytes of pivoted parts (in the score column's own dtype: 1 byte a score for uint8) kept
#: between the two passes, so that the second pass does not read those files again.
CACHE_BYTES = 1 << 31


def _read(fragment, columns):
    return fragment.to_table(columns=list(columns))


def _tables(fragments, columns, which):
    """(index, table) of ``fragments[k]`` for k in ``which``, in order; the next file is read in
    a thread (pyarrow releases the GIL) while the caller pivots and reduces this one."""
    from concurrent.futures import ThreadPoolExecutor

    which = list(which)
    if not which:
        return
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(_read, fragments[which[0]], columns)
        for k, index in enumerate(which):
            table = future.result()
            if k + 1 < len(which):
                future = pool.submit(_read, fragments[which[k + 1]], columns)
            yield index, table
            del table


def _refuse_incomplete(fragments, columns) -> None:
    """Some part lacks a model another part has: find the first such file against all the
    models (a pass over the model column) and raise its missing-cells error."""
    models = _models_of(fragments, columns[0])
    for fragment in fragments:
        pivot_part(_read(fragment, columns), models, columns, fragment.path)
    raise AssertionError("a part's models differ, yet every file is complete")  # unreachable


def dataset_statistics(
    source: str | os.PathLike,
    *,
    model: str = "model",
    item: str = "item",
    score: str = "score",
    cache_bytes: int | None = None,
) -> SufficientStatistics:
    """Sufficient statistics of a partitioned Parquet scores table, one file at a time.

    Two passes over the files. The first pivots each file to items x models (the models of
    the first file are the columns: in a complete table every file has every model, and a file
    with other models is refused with the counts of its missing cells), adds its rows to the
    column sums and checks that no item is in two files; the second adds the centred rows
    ``x_i - mu`` to the Gram. Files whose pivoted matrices fit in ``cache_bytes`` (in the score
    column's dtype: 1 byte a score for uint8) are kept from the first pass for the second;
    the others are read again. Peak memory: two files' rows (the next one is read while this
    one is reduced), one Gram block of :func:`rankci.evidence.ttest.gram_rows` rows, the
    M x M Gram, and at most ``cache_bytes``, whatever the number of files. See the module
    docstring for what the table must satisfy.

    Parameters
    ----------
    source : path
        A Parquet file or a directory of them.
    model, item, score : str
        Column names.
    cache_bytes : int, optional
        Bytes of pivoted files kept between the passes (default :data:`CACHE_BYTES`, 2 GiB;
        0 reads every file twice).

    Returns
    -------
    SufficientStatistics
    """
    columns = (model, item, score)
    budget = CACHE_BYTES if cache_bytes is None else int(cache_bytes)
    fragments = _fragments(source)
    if not fragments:
        raise ValueError(f"{os.fspath(source)}: no Parquet file")
    for fragment in fragments:
        _check_columns(fragment.physical_schema.names, columns, fragment.path)
    models = None
    reducer = None
    cache: dict = {}
    cached = 0
    item_arrays = []
    for index, table in _tables(fragments, columns, range(len(fragments))):
        path = fragments[index].path
        if table.num_rows == 0:
            item_arrays.append(np.empty(0, dtype=object))
            continue
        try:
            local, items, x = _pivot(table, models, columns, path, native=True, same=True)
        except _ModelsDiffer:
            _refuse_incomplete(fragments, columns)
        del table
        if models is None:
            models, reducer = local, _Reducer(len(local))
        reducer.add_sums(x)
        item_arrays.append(items)
        if cached + x.nbytes <= budget:
            cache[index] = x
            cached += x.nbytes
        del x
    if models is None or len(models) < 2:
        count = 0 if models is None else len(models)
        raise ValueError(f"{os.fspath(source)}: fewer than two models ({count})")
    _check_items_once(item_arrays, lambda k: fragments[k].path)
    mu = reducer.sums / reducer.n
    again = [k for k in range(len(fragments)) if k not in cache]
    tables = _tables(fragments, columns, again)
    for index in range(len(fragments)):
        if index in cache:
            x = cache.pop(index)
        else:
            _, table = next(tables)
            if table.num_rows == 0:
                continue
            _, _, x = _pivot(table, models, columns, fragments[index].path, native=True)
            del table
        reducer.add_centred(x, mu)
        del x
    gram = reducer.finish()
    return SufficientStatistics(
        models, reducer.n, reducer.sums, gram, reducer.lo, reducer.hi, len(fragments)
    )


#: Partition results (an M x M Gram each) the Dask path holds at a time: tasks are submitted
#: this many ahead of the one being added, in partition order.
WINDOW = 4


def _partition_sums(frame, columns):
    if len(frame) == 0:
        return None, np.empty(0, dtype=object), 0, None, np.inf, -np.inf
    models, items, x = _pivot(frame, None, columns, "a Dask partition")
    return models, items, x.shape[0], x.sum(axis=0), float(x.min()), float(x.max())


def _partition_gram(frame, models, columns, mu):
    if len(frame) == 0:
        return None
    _, _, x = _pivot(frame, models, columns, "a Dask partition", native=True)
    centred = x - mu
    del x
    return centred.T @ centred


def _in_order(tasks, client, add) -> None:
    """Compute the delayed ``tasks`` and ``add`` their results in order, with at most
    :data:`WINDOW` of them submitted and not yet added (their results released once added)."""
    import dask

    if client is None:
        for lo in range(0, len(tasks), WINDOW):
            for result in dask.compute(*tasks[lo : lo + WINDOW]):
                add(result)
            del result
        return
    futures = {k: client.compute(tasks[k]) for k in range(min(WINDOW, len(tasks)))}
    for k in range(len(tasks)):
        future = futures.pop(k)
        result = future.result()
        del future
        if k + WINDOW < len(tasks):
            futures[k + WINDOW] = client.compute(tasks[k + WINDOW])
        add(result)
        del result


def dask_statistics(
    source: str | os.PathLike,
    client: Any = None,
    *,
    model: str = "model",
    item: str = "item",
    score: str = "score",
) -> SufficientStatistics:
    """:func:`dataset_statistics` on a Dask cluster (``pip install rankci[dask]``).

    Each partition of ``dask.dataframe.read_parquet(source, split_row_groups=False)`` (one per
    file) is pivoted and reduced on a worker, in two passes: its models, items, sums, smallest
    and largest score (every partition must have the same models, and no item may be in two
    partitions), then its centred Gram (M x M). The results are added in partition order, with
    at most :data:`WINDOW` partition results held at a time. ``client`` is a
    ``distributed.Client`` (default: the current one, else dask's own scheduler).
    """
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as error:  # pragma: no cover - the extra is installed in the tests
        raise ImportError("the Dask path needs dask: pip install 'rankci[dask]'") from error
    columns = (model, item, score)
    frame = dd.read_parquet(os.fspath(source), columns=list(columns), split_row_groups=False)
    _check_columns(list(frame.columns), columns, os.fspath(source))
    parts = frame.to_delayed()
    firsts = []
    _in_order([dask.delayed(_partition_sums)(p, columns) for p in parts], client, firsts.append)
    present = [r[0] for r in firsts if r[0] is not None]
    models = tuple(sorted(set().union(*present))) if present else ()
    if len(models) < 2:
        raise ValueError(f"{os.fspath(source)}: fewer than two models ({len(models)})")
    for index, result in enumerate(firsts):
        if result[0] is not None and result[0] != models:  # raises its missing-cells error
            check = dask.delayed(pivot_part)(parts[index], models, columns, "a Dask partition")
            _in_order([check], client, lambda _: None)
    _check_items_once([r[1] for r in firsts], lambda k: f"partition {k}")
    kept = [r for r in firsts if r[2]]
    n = sum(r[2] for r in kept)
    sums = kept[0][3].copy()
    for result in kept[1:]:
        sums += result[3]
    mu = sums / n
    gram = np.zeros((len(models), len(models)))

    def add(part) -> None:
        if part is not None:
            np.add(gram, part, out=gram)

    _in_order([dask.delayed(_partition_gram)(p, models, columns, mu) for p in parts], client, add)
    lo = min(r[4] for r in kept)
    hi = max(r[5] for r in kept)
    return SufficientStatistics(models, n, sums, gram, lo, hi, len(parts))


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
    models, sums, lo, hi, gram = stats.models, stats.sums, stats.lo, stats.hi, stats.gram
    bounded = bool(lo >= 0.0 and hi <= 1.0)
    width = max(hi - lo, max(abs(lo), abs(hi)))
    width = width if width > 0 else 1.0
    mu = sums / n
    if stats is source:
        cov = gram / (n - 1)
    else:  # the Gram is this call's own: it becomes the covariance in place (M^2 less memory)
        del stats
        cov = np.divide(gram, n - 1, out=gram)
    del gram
    normal = test == "z"
    estimate, statistic, pvalue, n_pairs, se, df = t_or_z_from_moments(
        n, mu, cov, bounded, width, spec.delta, normal
    )
    del cov
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
        models=models,
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
        score=sums / n,
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
