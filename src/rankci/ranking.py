"""The Ranking result and the one piece of code that turns certified dominances into it.

Every method in rankci ends in a set D of certified statements "model j is better than model l"
(a strict partial order). From D, after transitive closure (docs/design.md, "Counting"):

* ``L_j = 1 + #{l : (l, j) in D}``   (models certified better than j)
* ``U_j = M - #{l : (j, l) in D}``   (models certified worse than j)
* top-k: certified inside when ``U_j <= k``, certified outside when ``L_j > k``
* ``tier(j) = 1 + max{tier(l) : (l, j) in D}`` (1 when nothing is certified above j); a model in
  tier s has true rank s or worse.

Rank 1 is best; the true rank of j is ``1 + #{l : theta_l > theta_j}``, so tied models share the
better rank. A cycle in D is an error (:class:`DominanceCycleError`), never silently broken.

Builders from pairwise p-values (:func:`rankci.certify.holm.certify_holm`, then
:meth:`~rankci.certify.certification.Certification.ranking`):

* simultaneous coverage (Algorithm 2 of the source): one family of all M(M-1) ordered pairs
  at level alpha; with probability >= 1 - alpha every statement holds at once.
* marginal coverage (Algorithm 1): for each model j, one family of the M - 1 hypotheses
  "l better than j" and one of "j better than l", each at alpha/2; each model's interval covers
  its true rank with probability >= 1 - alpha, but not jointly.

References
----------
Holm, S. (2013). Confidence intervals for ranks. Unpublished manuscript.
Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
ranks with application to ranking institutions. Biometrics 78(1), 238-247.
Neuhof, B. and Benjamini, Y. (2024). Confidence intervals for ranks: theory and practice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rankci._base import Deferred, DeferredField, LazyModule, check_positive_int, jsonable
from rankci.method import COVERAGES, UNIT_SCOPE, MethodSpec

if TYPE_CHECKING:
    from rankci.evidence.pairwise import Pairwise
    from rankci.sequential.spec import MonitorSpec

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

__all__ = [
    "COVERAGES",
    "DominanceCycleError",
    "Ranking",
    "UNIT_SCOPE",
    "observed_ranks",
    "ranking_from_dominance",
    "tiers",
    "transitive_closure",
]


class DominanceCycleError(ValueError):
    """The certified statements contradict each other (j above l above ... above j).

    ``models`` names the models on the cycle.
    """

    def __init__(self, message: str, models: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.models = tuple(models)


@dataclass(frozen=True, repr=False, eq=False)
class Ranking:
    """A leaderboard with rank intervals, certified dominances, top-k status and tiers.

    Attributes
    ----------
    models : tuple of str
        Model labels, in the order of every per-model array.
    score : ndarray (M,)
        Observed score (mean over units).
    rank : ndarray (M,) of int
        Observed rank, ``1 + #{l : score_l > score_j}`` (ties share the better rank).
    lower, upper : ndarray (M,) of int
        Rank interval ``[L_j, U_j]``.
    dominance : ndarray (M, M) of bool or None
        ``dominance[j, l]``: "j is better than l" is certified (transitively closed). None for
        marginal coverage, which makes no joint statements.
    tier : ndarray (M,) of int or None
        Tier of each model (None for marginal coverage); computed on its first read when the
        ranking was counted from dominances (a :class:`~rankci._base.DeferredField`).
    alpha : float
    coverage : str
        ``"simultaneous"``, ``"marginal"`` or ``"anytime"``.
    procedure : dict
        The procedure in brief, as the top of the JSON output shows it (test, unit, delta,
        multiplicity, ... for fixed-sample rankings; sampling, bet, certifier for the monitor).
    n_units : int
    excluded : dict
        What was left out and why (JSON-safe).
    guarantee : str
        The guarantee in plain words.
    pairwise : Pairwise or None
        The evidence behind the ranking, when it came from pairwise tests.
    details : dict
        Method-specific extras (JSON-safe), for example dropped clusters or rank sets.
    spec : MethodSpec, MonitorSpec or None
        The validated specification the ranking was computed with: a
        :class:`~rankci.method.MethodSpec` for the fixed-sample flow (:func:`rankci.rank`;
        ``rankci.rank(data, spec=ranking.spec)`` computes it again), a
        :class:`~rankci.sequential.spec.MonitorSpec` for the anytime-valid flow (the monitor's
        looks and replays; ``replay(scores, ranking.spec, order_seed=S)`` runs it again). None for
        rankings made another way (the mixed model, given dominances). :meth:`to_dict` writes it
        under ``"spec"``; a monitor's carries ``"flow": "anytime"``, and
        :func:`rankci.sequential.spec.spec_from_dict` reads either back.
    early_stopped : dict
        The logs written under early stopping that the scores came from (``"model/task"`` ->
        the stopping record, as ``Scores.notes["early_stopped"]``), empty otherwise. Adaptively
        stopped data void the fixed-sample guarantee; ``guarantee`` then says so and names the
        anytime-valid path (``rankci monitor``).
    model_columns : dict
        Extra per-model columns (name -> array in the order of ``models``) that :meth:`to_frame`
        and the JSON ``models[]`` rows carry after the standard ones, for example an arena's Elo
        ``rating`` and LMArena's ``rank_ub``. Empty for score rankings.
    """

    models: tuple[str, ...]
    score: np.ndarray
    rank: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    dominance: np.ndarray | None
    tier: np.ndarray | None = DeferredField()
    alpha: float
    coverage: str
    procedure: dict
    n_units: int
    excluded: dict
    guarantee: str
    pairwise: Pairwise | None = None
    details: dict = field(default_factory=dict)
    spec: MethodSpec | MonitorSpec | None = None
    early_stopped: dict = field(default_factory=dict)
    model_columns: dict = field(default_factory=dict)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def order(self) -> np.ndarray:
        """Model indices, best observed score first (ties by name)."""
        names = np.asarray(self.models)
        return np.lexsort((names, -np.asarray(self.score, dtype=float)))

    def top_k(self, k: int) -> np.ndarray:
        """Per model: ``"in"`` (certified in the top k), ``"out"`` or ``"undetermined"``."""
        k = check_positive_int(k, "k")
        status = np.full(self.n_models, "undetermined", dtype=object)
        status[self.upper <= k] = "in"
        status[self.lower > k] = "out"
        return status

    def dominance_pairs(self) -> list[tuple[str, str]]:
        """Every certified "first better than second", best first model first."""
        if self.dominance is None:
            return []
        order = self.order()
        names = np.asarray(self.models, dtype=object)[order]
        j, l = np.nonzero(permuted(self.dominance, order))  # row-major: sorted by (j, l)
        return list(zip(names[j].tolist(), names[l].tolist()))

    def dominance_runs(self) -> list[list[list[int]]] | None:
        """The certified relation, compactly: per model, the runs of models certified below it.

        Models are indexed by their position in :meth:`order` (best observed score first, as
        the rows of :meth:`to_frame` and the ``models`` list of the JSON). Entry ``i`` is a list
        of inclusive ranges ``[first, last]``: model ``i`` is certified better than models
        ``first, first + 1, ..., last``. Certified sets are mostly one contiguous tail of the
        board in this order, so this needs a few numbers per model where the pair list needs
        one pair per certified statement. None for marginal coverage.
        """
        if self.dominance is None:
            return None
        return relation_runs(self.dominance, self.order())

    def to_frame(self, k: int | None = None) -> pd.DataFrame:
        """One row per model, best first.

        Columns: model, score, rank, rank_lower, rank_upper, tier (and top_k when k is given).
        """
        idx = self.order()
        frame = pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[idx],
                "score": np.asarray(self.score, dtype=float)[idx],
                "rank": self.rank[idx],
                "rank_lower": self.lower[idx],
                "rank_upper": self.upper[idx],
                "tier": (self.tier[idx] if self.tier is not None else pd.array([None] * len(idx))),
            }
        )
        if k is not None:
            frame[f"top_{k}"] = self.top_k(k)[idx]
        for name, values in self.model_columns.items():
            frame[name] = np.asarray(values)[idx]
        return frame

    def _columns(self, k: int | None = None) -> dict[str, np.ndarray] | None:
        """The columns of :meth:`to_frame` as NumPy arrays (no pandas), in its order; None when a
        column is not one-dimensional text, boolean, integer or float (then the frame is used)."""
        idx = self.order()
        n = len(idx)
        columns = {
            "model": np.asarray(self.models, dtype=object)[idx],
            "score": np.asarray(self.score, dtype=float)[idx],
            "rank": self.rank[idx],
            "rank_lower": self.lower[idx],
            "rank_upper": self.upper[idx],
            "tier": self.tier[idx] if self.tier is not None else np.full(n, None, dtype=object),
        }
        if k is not None:
            columns[f"top_{k}"] = self.top_k(k)[idx]
        for name, values in self.model_columns.items():
            columns[name] = np.asarray(values)[idx]
        for name, values in columns.items():
            values = np.asarray(values)
            if values.ndim != 1 or values.shape[0] != n or values.dtype.kind not in "biufOU":
                return None
            columns[name] = values
        return columns

    def to_dict(self, k: int | None = None, pairs: bool = False) -> dict:
        """JSON-safe summary, following the schema of ``rankci rank --format json``.

        ``dominance`` is the certified relation in the compact form of :meth:`dominance_runs`
        (``{"form": "runs", "n_pairs": ..., "below": [...]}``, indices into ``models``; see
        docs/json.md); with ``pairs=True`` it is the list of ``[better, worse]`` name pairs
        instead (:meth:`dominance_pairs`), one per certified statement. None for marginal
        coverage.
        """
        columns = self._columns(k)
        if columns is None:  # a column of another kind: read through the DataFrame
            frame = self.to_frame(k)
            names, values = list(frame.columns), _json_columns(frame)
        else:
            names, values = list(columns), [_json_values(v) for v in columns.values()]
        rows = [dict(zip(names, row)) for row in zip(*values)]
        if self.dominance is None:
            dominance = None
        elif pairs:
            dominance = [list(pair) for pair in self.dominance_pairs()]
        else:
            dominance = {
                "form": "runs",
                "n_pairs": int(np.count_nonzero(self.dominance)),
                "below": self.dominance_runs(),
            }
        out = {
            "alpha": self.alpha,
            "coverage": self.coverage,
            **{key: jsonable(value) for key, value in self.procedure.items()},
            "n_units": int(self.n_units),
            "excluded": jsonable(self.excluded),
            "models": rows,
            "dominance": dominance,
            "guarantee": self.guarantee,
        }
        if k is not None:
            out["k"] = int(k)
        if self.details:
            out["details"] = jsonable(self.details)
        if self.spec is not None:
            out["spec"] = self.spec.to_dict()
        if self.early_stopped:
            out["early_stopped"] = jsonable(self.early_stopped)
        return out

    def __repr__(self) -> str:
        frame = self.to_frame()
        lines = [
            f"Ranking({self.n_models} models, coverage={self.coverage!r}, alpha={self.alpha:g}, "
            f"n_units={self.n_units})"
        ]
        width = max(len("model"), *(len(m) for m in frame["model"]))
        lines.append(f"  {'model':<{width}}  score   rank  interval   tier")
        for row in frame.itertuples(index=False):
            tier = "-" if row.tier is None or row.tier is pd.NA else str(row.tier)
            interval = f"[{row.rank_lower}, {row.rank_upper}]"
            lines.append(
                f"  {row.model:<{width}}  {row.score:.4f}  {row.rank:>4}  {interval:<9}  {tier:>4}"
            )
        if self.early_stopped:
            lines.append("  early-stopped data: fixed-sample guarantee void (see .guarantee)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter: the table, the guarantee in one sentence and a small rank-interval plot."""
        import html

        frame = self.to_frame()
        frame.insert(3, "rank interval", [f"[{a}, {b}]" for a, b in
                                          zip(frame.pop("rank_lower"), frame.pop("rank_upper"))])
        table = frame.to_html(index=False, border=0, float_format=lambda v: f"{v:.4f}", na_rep="-")
        m, row, width = self.n_models, 14, 160
        step = width / max(m, 1)
        bars = "".join(
            f'<line x1="{(r.rank_lower - 0.5) * step:.1f}" x2="{(r.rank_upper - 0.5) * step:.1f}" '
            f'y1="{(i + 0.5) * row}" y2="{(i + 0.5) * row}" stroke="#3b6ea8" stroke-width="5" '
            f'stroke-linecap="round"><title>{html.escape(str(r.model))}: '
            f"[{r.rank_lower}, {r.rank_upper}]</title></line>"
            for i, r in enumerate(self.to_frame().itertuples(index=False))
        ) if m <= 60 else ""
        plot = (
            f'<svg width="{width}" height="{m * row}" role="img" aria-label="rank intervals">'
            f"{bars}</svg>" if bars else ""
        )
        head = (f"Ranking: {m} models, {self.coverage} coverage, alpha = {self.alpha:g}, "
                f"{self.n_units} units")
        return (
            f'<div><p><b>{html.escape(head)}</b></p><div style="display:flex;gap:1em">'
            f'<div>{table}</div><div style="padding-top:2em">{plot}</div></div>'
            f"<p><small>{html.escape(self.guarantee)}</small></p></div>"
        )


def relation_runs(
    relation: np.ndarray, order: np.ndarray, *, upper: bool = False
) -> list[list[list[int]]]:
    """A relation between models as runs of indices: the compact JSON form of docs/json.md.

    Models are indexed by their place in ``order``. Entry ``i`` lists the inclusive ranges
    ``[first, last]`` of the places ``c`` with ``relation[order[i], order[c]]``; ranges are
    increasing, disjoint and maximal, so the form is unique. ``upper=True`` reads only the places
    after ``i`` (``c > i``): the form of a symmetric relation, each unordered pair once. Done by
    row blocks of int8 differences (no Python loop over pairs).

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0, 1, 1, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]], dtype=bool)
    >>> relation_runs(d, np.arange(4))
    [[[1, 2]], [[3, 3]], [[3, 3]], []]
    >>> relation_runs(d | d.T, np.arange(4), upper=True)
    [[[1, 2]], [[3, 3]], [[3, 3]], []]
    """
    order = np.asarray(order, dtype=np.intp)
    m = order.size
    starts, ends, counts = [], [], np.zeros(m, dtype=np.int64)
    for r0 in range(0, m, 1024):  # row blocks: the int8 differences stay small
        block = permuted(np.asarray(relation, dtype=bool), order[r0 : r0 + 1024], order)
        if upper:  # keep the places c > i of row i
            block &= np.arange(m)[None, :] > np.arange(r0, r0 + block.shape[0])[:, None]
        edges = np.diff(block.view(np.int8), axis=1, prepend=np.int8(0), append=np.int8(0))
        rows, first = np.nonzero(edges == 1)
        _, stop = np.nonzero(edges == -1)  # same rows, same order: runs are closed
        starts.append(first)
        ends.append(stop - 1)
        counts[r0 : r0 + block.shape[0]] = np.bincount(rows, minlength=block.shape[0])
    if not starts:
        return []
    runs = np.stack([np.concatenate(starts), np.concatenate(ends)], axis=1).tolist()
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return [runs[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _json_columns(frame: pd.DataFrame) -> list[list]:
    """Each column of ``frame`` as a JSON-safe list (None for missing values), column by column.

    The same values as :func:`rankci._base.jsonable` of each cell, without a call per cell.
    """
    columns = []
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object or not pd.api.types.is_numeric_dtype(column.dtype):
            values = [
                None if value is None or value is pd.NA else jsonable(value)
                for value in column.tolist()
            ]
        elif pd.api.types.is_float_dtype(column.dtype):
            array = column.to_numpy(dtype=float)
            values = [v if np.isfinite(v) else None for v in array.tolist()]
        else:
            values = jsonable(column.to_numpy())
        columns.append(values)
    return columns


def _json_values(values: np.ndarray) -> list:
    """One column as :func:`_json_columns` writes it, from a NumPy array (text, boolean,
    integer or float): floats non-finite as None, text and objects by :func:`jsonable` with
    None (and pandas' NA) as None."""
    kind = values.dtype.kind
    if kind == "f":
        return [v if np.isfinite(v) else None for v in values.astype(float).tolist()]
    if kind in "biu":
        return jsonable(values)
    import sys

    pandas = sys.modules.get("pandas")
    missing = (None,) if pandas is None else (None, pandas.NA)
    return [
        None if any(value is m for m in missing) else jsonable(value)
        for value in values.astype(object).tolist()
    ]


# ---------------------------------------------------------------------- counting
def permuted(matrix: np.ndarray, rows: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
    """``matrix[np.ix_(rows, columns)]`` (``columns`` defaults to ``rows``), by two
    :func:`numpy.take` calls: the same array, made two to three times as fast.

    Examples
    --------
    >>> import numpy as np
    >>> permuted(np.arange(9).reshape(3, 3), np.array([2, 0, 1])).tolist()
    [[8, 6, 7], [2, 0, 1], [5, 3, 4]]
    """
    return np.take(np.take(matrix, rows, axis=0), rows if columns is None else columns, axis=1)


def transitive_closure(
    dominance: np.ndarray,
    models: Sequence[str] | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """The transitive closure of a strict order given as an M x M boolean matrix.

    Paths are composed by boolean matrix products (``R <- R or R @ R``) until nothing changes,
    so a closure needs about log2(longest chain) products, and a relation that is already closed
    costs one. Raises :class:`DominanceCycleError` naming the models on a cycle.

    ``order`` (optional, for example the models by observed score, best first) is a hint: when
    every certified pair goes down that order, the relation is acyclic and the products run on
    blocks of the triangle only, skipping blocks that are already all certified or that no path
    can cross (:func:`_closure_in_order`). The result is the same closure.
    """
    closed = np.asarray(dominance, dtype=bool)
    if closed.ndim != 2 or closed.shape[0] != closed.shape[1]:
        raise ValueError(f"dominance must be a square matrix, got shape {closed.shape}")
    if order is not None and closed.shape[0] >= 2 * CLOSURE_BLOCK:
        fast = _closure_in_order(closed, np.asarray(order))  # a new array (or None)
        if fast is not None:
            return fast
    closed = closed.copy()
    pairs = np.count_nonzero(closed)
    while True:
        middle = np.flatnonzero(closed.any(axis=0) & closed.any(axis=1))
        if middle.size == 0:
            break
        a = closed[:, middle].astype(np.float32)
        b = closed[middle, :].astype(np.float32)
        grown = closed | (a @ b > 0.5)
        grown_pairs = np.count_nonzero(grown)  # grown holds closed: equal when as many pairs
        if grown_pairs == pairs:
            break
        closed, pairs = grown, grown_pairs
    on_cycle = np.flatnonzero(closed.diagonal())
    if on_cycle.size:
        names = models if models is not None else [str(i) for i in range(closed.shape[0])]
        first = on_cycle[0]
        members = [names[i] for i in on_cycle if closed[first, i] and closed[i, first]]
        raise DominanceCycleError(
            "the certified statements form a cycle among models "
            + ", ".join(repr(m) for m in members)
            + "; at least one of them is false (this happens with probability at most alpha), "
            "so no ranking can be reported from them",
            members,
        )
    return closed


#: Block size of :func:`_closure_in_order` (and the board size, twice this, from which it is used).
CLOSURE_BLOCK = 512


def _closure_in_order(relation: np.ndarray, order: np.ndarray) -> np.ndarray | None:
    """Transitive closure of a relation whose pairs all go down ``order``; None if one does not.

    First :func:`_close_reachable_holes`: a certified board is usually closed already, which
    two passes over its rows show. Otherwise, in that order the relation is strictly upper
    triangular, so a path from block I to block K only passes through blocks I..K, and the
    closure of block (I, K) needs only the products of blocks (I, J) (J, K) for I <= J <= K: a
    sixth of the full product. A block already fully certified needs none, and a product with
    an empty block is skipped. Repeated until nothing changes, like the general product loop;
    the closure of a relation is unique, so the result is the same.
    """
    m = relation.shape[0]
    if order.shape != (m,) or not np.array_equal(np.sort(order), np.arange(m)):
        return None
    place = np.empty(m, dtype=np.int32)
    place[order] = np.arange(m, dtype=np.int32)
    closed = relation.copy()
    done = _close_reachable_holes(closed, place)
    if done is None:
        return None
    if done:
        return closed
    relation = closed  # what was added is part of the closure: the blocks go on from it
    s = CLOSURE_BLOCK
    cuts = list(range(0, m, s)) + [m]
    blocks = len(cuts) - 1
    ordered = permuted(relation, order)
    while True:
        changed = False
        values = ordered.astype(np.float32)
        block = [[None] * blocks for _ in range(blocks)]
        full = np.zeros((blocks, blocks), dtype=bool)
        empty = np.zeros((blocks, blocks), dtype=bool)
        for i in range(blocks):
            for k in range(i, blocks):
                view = ordered[cuts[i] : cuts[i + 1], cuts[k] : cuts[k + 1]]
                full[i, k] = view.all() if k > i else False
                empty[i, k] = not view.any()
                block[i][k] = values[cuts[i] : cuts[i + 1], cuts[k] : cuts[k + 1]]
        for i in range(blocks):
            for k in range(i, blocks):
                if full[i, k]:
                    continue
                paths = None
                for j in range(i, k + 1):
                    if empty[i, j] or empty[j, k]:
                        continue
                    product = block[i][j] @ block[j][k]
                    paths = product if paths is None else paths + product
                if paths is None:
                    continue
                target = ordered[cuts[i] : cuts[i + 1], cuts[k] : cuts[k + 1]]
                grown = target | (paths > 0.5)
                if not np.array_equal(grown, target):
                    target[...] = grown
                    changed = True
        if not changed:
            break
    return _unorder(ordered, order)


def _unorder(ordered: np.ndarray, order: np.ndarray) -> np.ndarray:
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return permuted(ordered, inverse)


#: The most elements (rows plus columns, times M) of the exact products of
#: :func:`_close_reachable_holes`; beyond it the block products are cheaper.
HOLE_PRODUCT_ELEMENTS = 1 << 26


def _close_reachable_holes(relation: np.ndarray, place: np.ndarray) -> bool | None:
    """Close ``relation`` in place by products over the few pairs two steps can reach.

    ``place[j]`` is model j's place in the order. None when a pair does not go down it;
    False when the pairs to compute are too many (:data:`HOLE_PRODUCT_ELEMENTS`; what was added
    is part of the closure), True when ``relation`` is closed.

    With ``f_j`` the first place row j reaches and ``F_i = min{f_j : (i, j) in R}``, a pair
    ``(i, h)`` of ``R^2`` has ``place[h] >= f_j >= F_i`` for its middle model j. So ``R^2 \\ R``
    lies in the candidates ``{(i, h) not in R : place[h] >= F_i}``, found by two passes over
    the rows (the first also checks that every pair goes down the order: ``f_i > place[i]``).
    A certified board is usually closed already and has none. Otherwise ``R^2`` is computed on
    the rows and columns of the candidates (one product) and added, until nothing changes: the
    iteration ``R <- R or R^2`` of :func:`transitive_closure`, so the same closure.
    """
    m = relation.shape[0]
    none = np.int32(m)
    check = True
    while True:
        first = np.empty(m, dtype=np.int32)
        for r0 in range(0, m, CLOSURE_BLOCK):  # row blocks: the temporaries stay small
            block = relation[r0 : r0 + CLOSURE_BLOCK]
            first[r0 : r0 + block.shape[0]] = np.where(block, place[None, :], none).min(axis=1)
        if check and not (first > place).all():
            return None
        check = False
        rows = np.zeros(m, dtype=bool)
        columns = np.zeros(m, dtype=bool)
        for r0 in range(0, m, CLOSURE_BLOCK):
            block = relation[r0 : r0 + CLOSURE_BLOCK]
            reach = np.where(block, first[None, :], none).min(axis=1)
            candidates = (place[None, :] >= reach[:, None]) & ~block
            if candidates.any():
                rows[r0 : r0 + block.shape[0]] = candidates.any(axis=1)
                columns |= candidates.any(axis=0)
        if not rows.any():
            return True
        rows, columns = np.flatnonzero(rows), np.flatnonzero(columns)
        if (rows.size + columns.size) * m > HOLE_PRODUCT_ELEMENTS:
            return False
        paths = relation[rows].astype(np.float32) @ relation[:, columns].astype(np.float32)
        target = relation[np.ix_(rows, columns)]
        grown = target | (paths > 0.5)
        if np.array_equal(grown, target):
            return True
        relation[np.ix_(rows, columns)] = grown


def tiers(closed: np.ndarray) -> np.ndarray:
    """Longest chain of certified dominances ending at each model, plus one.

    ``closed`` must be transitively closed and acyclic (:func:`transitive_closure`); anything
    else raises :class:`DominanceCycleError` naming the models (by index) where it fails.

    In a closed acyclic relation, l above j implies that l has strictly fewer models above it
    than j, so models are processed in batches of equal in-degree: in the order of their
    in-degree the relation is upper triangular, and a batch's tiers need only the rows before
    it (``tier(j) = 1 + max{tier(l) : l above j}``, 1 when nothing is above).

    Examples
    --------
    >>> import numpy as np
    >>> d = np.zeros((4, 4), dtype=bool); d[0, [1, 2, 3]] = True; d[1, 3] = True
    >>> tiers(d).tolist()
    [1, 2, 2, 3]
    """
    closed = np.asarray(closed, dtype=bool)
    m = closed.shape[0]
    above = closed.sum(axis=0)
    order = np.argsort(above, kind="stable")
    counts = above[order]
    # in the order of ``order``: 1 + the largest tier of the models above, pushed down from
    # each batch, once its tiers are final, to the models after it (reading rows, not columns)
    tier = np.ones(m, dtype=np.int64)
    starts = np.flatnonzero(np.diff(counts, prepend=-1)).tolist() + [m]
    if m and (counts[0] != 0 or closed.diagonal().any()):  # an acyclic relation has a top
        _not_a_closed_order(np.flatnonzero(closed.diagonal() | (above > 0)))
    ordered = permuted(closed, order) if len(starts) > 2 else None
    for a, b in zip(starts[:-1], starts[1:]):
        if b == m:
            break
        if ordered[a:b, a:b].any():  # closed and acyclic: no pair within a batch
            _not_a_closed_order(order[a:b][ordered[a:b, a:b].any(axis=0)])
        for r0 in range(a, b, 256):  # the models above the next batches all come before them
            r1 = min(r0 + 256, b)
            pushed = np.where(ordered[r0:r1, b:], tier[r0:r1, None] + 1, 0).max(axis=0)
            np.maximum(tier[b:], pushed, out=tier[b:])
    if len(starts) > 2 and ordered[starts[-2] :, starts[-2] :].any():  # the last batch
        _not_a_closed_order(order[starts[-2] :][ordered[starts[-2] :, starts[-2] :].any(axis=0)])
    out = np.empty(m, dtype=np.int64)
    out[order] = tier
    return out


def _not_a_closed_order(models: np.ndarray) -> None:
    raise DominanceCycleError(
        "tiers need a transitively closed acyclic dominance relation (transitive_closure "
        "gives one, or raises on a cycle); this one has a cycle or is not closed among models "
        + ", ".join(str(int(j)) for j in models[:10])
        + (" ..." if models.size > 10 else ""),
        [str(int(j)) for j in models],
    )


class _Tiers(Deferred):
    """The tiers of a closed relation, computed when first read (:attr:`Ranking.tier`); a class,
    not a closure, so that a Ranking pickles before its tiers are read."""

    def __init__(self, closed: np.ndarray) -> None:
        super().__init__()
        self.closed = closed

    def compute(self) -> np.ndarray:
        return tiers(self.closed)


def observed_ranks(score: np.ndarray) -> np.ndarray:
    """``1 + #{l : score_l > score_j}``: tied scores share the better rank."""
    score = np.asarray(score, dtype=float)
    ordered = np.sort(score)
    return 1 + (score.size - np.searchsorted(ordered, score, side="right"))


def ranking_from_dominance(
    models: Sequence[str],
    score: np.ndarray,
    dominance: np.ndarray,
    *,
    alpha: float,
    coverage: str,
    procedure: dict | None = None,
    n_units: int,
    excluded: dict,
    guarantee: str,
    pairwise: Pairwise | None = None,
    details: dict | None = None,
    spec: MethodSpec | MonitorSpec | None = None,
) -> Ranking:
    """The shared counting step: closure of D, then rank intervals and tiers.

    Parameters
    ----------
    models : sequence of str
    score : array_like (M,)
        Observed scores (their order gives the observed ranks).
    dominance : array_like (M, M) of bool
        ``dominance[j, l]``: "j is better than l" is certified. It is closed transitively here.
    alpha, coverage, procedure, n_units, excluded, guarantee, pairwise, details, spec
        Stored on the :class:`Ranking` as they are.

    Returns
    -------
    Ranking
        ``L_j = 1 + #{l : (l, j) in D}``, ``U_j = M - #{l : (j, l) in D}`` and the tiers.

    Raises
    ------
    DominanceCycleError
        When D holds a cycle.

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals
    for ranks with application to ranking institutions. Biometrics 78(1), 238-247.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.zeros((3, 3), dtype=bool); d[0, 1] = d[1, 2] = True
    >>> r = ranking_from_dominance(["a", "b", "c"], [0.9, 0.5, 0.1], d, alpha=0.05,
    ...                            coverage="simultaneous", procedure={}, n_units=10,
    ...                            excluded={}, guarantee="")
    >>> r.lower.tolist(), r.upper.tolist(), r.tier.tolist()
    ([1, 2, 3], [1, 2, 3], [1, 2, 3])
    """
    models = tuple(models)
    score = np.asarray(score, dtype=float)
    by_score = None  # the hint of the closure in blocks, for boards large enough to use it
    if len(models) >= 2 * CLOSURE_BLOCK:
        by_score = np.lexsort((np.asarray(models), -score))
    closed = transitive_closure(dominance, models, order=by_score)
    frozen = closed.copy()  # the tiers, computed when first read, of this relation
    m = len(models)
    return Ranking(
        models=models,
        score=np.asarray(score, dtype=float),
        rank=observed_ranks(score),
        lower=1 + closed.sum(axis=0),
        upper=m - closed.sum(axis=1),
        dominance=closed,
        tier=_Tiers(frozen),
        alpha=alpha,
        coverage=coverage,
        procedure=dict(procedure or {}),
        n_units=n_units,
        excluded=dict(excluded),
        guarantee=guarantee,
        pairwise=pairwise,
        details=dict(details or {}),
        spec=spec,
    )
