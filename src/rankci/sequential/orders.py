"""Weak orders (rankings with ties) of M models, tabulated for the exact certifier.

A weak order W puts the models on levels 0, 1, ..., k-1 (0 = top; several models may share a
level). Its set of true null hypotheses is ``T(W) = {(j, l): j != l, j not strictly above l}``:
``|T(W)| = M(M-1)/2 + #tied pairs``. The number of weak orders of M models is the ordered Bell
(Fubini) number ``a(M) = sum_{k=1}^{M} C(M, k) a(M - k)``, ``a(0) = 1``:
1, 3, 13, 75, 541, 4683, 47293, 545835 for M = 1..8.

The table stores, for every weak order, the state of each unordered pair ``{a, b}`` (a < b):
0 = a above b, 1 = tied, 2 = b above a; and the rank of every model,
``1 + #{models strictly above it}`` (the true-rank convention of rankci). For fast sums over
``T(W)`` the pairs are cut into groups of seven and each group's states are packed into one base-3
code, so that ``sum_{(a,b) in T(W)} w_ab`` is a sum of a few table look-ups (the table of a group
lists its 3^7 = 2187 partial sums).

References
----------
Sloane, N. J. A. OEIS A000670 (Fubini numbers: number of weak orders on n labeled elements).
Rank confidence sequences (the source of :mod:`rankci.sequential`), Algorithm 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np

from .._checks import check_positive_int

__all__ = ["MAX_EXACT_MODELS", "OrderTable", "order_table", "ordered_bell", "weak_orders"]

MAX_EXACT_MODELS = 8
GROUP = 7  # unordered pairs packed into one base-3 code


def ordered_bell(m: int) -> int:
    """Number of weak orders of m labelled items (ordered Bell / Fubini number), exactly.

    >>> [ordered_bell(m) for m in range(1, 9)]
    [1, 3, 13, 75, 541, 4683, 47293, 545835]
    """
    m = check_positive_int(m, "m", minimum=0)
    a = [1]
    for n in range(1, m + 1):
        a.append(sum(comb(n, k) * a[n - k] for k in range(1, n + 1)))
    return a[m]


def weak_orders(m: int) -> np.ndarray:
    """Every weak order of m models as levels (n_orders x m, int8; 0 = top, levels 0..k-1 used).

    Built by inserting one model at a time, vectorised over all weak orders of the models placed
    so far: the new model joins one of the k existing levels, or opens a new level at one of the
    k + 1 positions (the levels below it move down by one).
    """
    m = check_positive_int(m, "m")
    levels = np.zeros((1, 1), dtype=np.int8)
    n_levels = np.ones(1, dtype=np.int8)
    for _ in range(1, m):
        parts, counts = [], []
        for k in range(1, int(n_levels.max()) + 1):
            old = levels[n_levels == k]
            if old.size == 0:
                continue
            for c in range(k):  # join level c
                parts.append(np.column_stack([old, np.full(len(old), c, np.int8)]))
                counts.append(np.full(len(old), k, np.int8))
            for c in range(k + 1):  # new level at position c
                shifted = old + (old >= c).astype(np.int8)
                parts.append(np.column_stack([shifted, np.full(len(old), c, np.int8)]))
                counts.append(np.full(len(old), k + 1, np.int8))
        levels = np.vstack(parts)
        n_levels = np.concatenate(counts)
    return levels


@dataclass(frozen=True, repr=False, eq=False)
class OrderTable:
    """All weak orders of M models with what the exact certifier needs (see module docstring).

    Attributes
    ----------
    n_models : int
    levels : ndarray (n, M) int8
    ranks : ndarray (n, M) int8
        ``1 + #{l : l strictly above j}``.
    pair_a, pair_b : ndarray (P,)
        The unordered pairs (a < b), P = M(M-1)/2.
    state : ndarray (n, P) uint8
        0 = a above b, 1 = tie, 2 = b above a.
    codes : ndarray (G, n) intp
        Base-3 code of each group of seven pairs.
    state_counts : ndarray (P, 3) int64
        How many weak orders put each pair in each state.
    rank_counts : ndarray (M, M + 1) int64
        How many weak orders give model j rank r.
    """

    n_models: int
    levels: np.ndarray
    ranks: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    state: np.ndarray
    codes: np.ndarray
    state_counts: np.ndarray
    rank_counts: np.ndarray

    @property
    def n_orders(self) -> int:
        return self.levels.shape[0]

    def __repr__(self) -> str:
        return f"OrderTable(n_models={self.n_models}, n_orders={self.n_orders})"

    def group_tables(self, w: np.ndarray) -> list[np.ndarray]:
        """Per group, the sum over its pairs of ``w`` restricted to T(W), for every code.

        ``w`` is an M x M matrix (row j, column l for the hypothesis "j not above l"); the value
        of pair {a, b} in state 0 (a above b) is ``w[b, a]``, in state 1 (tie)
        ``w[a, b] + w[b, a]``, in state 2 ``w[a, b]``.
        """
        a, b = self.pair_a, self.pair_b
        wab, wba = w[a, b], w[b, a]
        values = np.stack([wba, wab + wba, wab], axis=1)  # (P, 3)
        tables = []
        for g in range(self.codes.shape[0]):
            pairs = range(g * GROUP, min(len(a), (g + 1) * GROUP))
            table = np.zeros(1)
            for i, p in enumerate(pairs):  # code = sum_i state_i 3^i
                table = (values[p][:, None] + table[None, :]).ravel() if i else values[p].copy()
            tables.append(table)
        return tables

    def t_sums(self, w: np.ndarray, rows: np.ndarray | None = None, codes=None) -> np.ndarray:
        """``sum_{(j,l) in T(W)} w[j, l]`` for every weak order (or the given rows / codes)."""
        if codes is None:
            codes = self.codes if rows is None else self.codes[:, rows]
        tables = self.group_tables(np.asarray(w, dtype=float))
        total = tables[0][codes[0]]
        for g in range(1, len(tables)):
            total += tables[g][codes[g]]
        return total

    def membership(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Boolean (n, M, M): ``[w, j, l]`` is True when (j, l) is in T(W) (j not above l)."""
        levels = self.levels if rows is None else self.levels[rows]
        out = levels[:, :, None] >= levels[:, None, :]
        idx = np.arange(self.n_models)
        out[:, idx, idx] = False
        return out


@lru_cache(maxsize=MAX_EXACT_MODELS + 1)
def order_table(m: int) -> OrderTable:
    """The (cached) :class:`OrderTable` of m models, 2 <= m <= 8 (545,835 orders at m = 8)."""
    m = check_positive_int(m, "m", minimum=2)
    if m > MAX_EXACT_MODELS:
        raise ValueError(
            f"enumerating weak orders is limited to {MAX_EXACT_MODELS} models "
            f"({ordered_bell(MAX_EXACT_MODELS):,} orders); {m} models have {ordered_bell(m):,}. "
            "Use the integer-program certifier ('ilp') or the shortcut"
        )
    levels = weak_orders(m)
    n = levels.shape[0]
    pair_a, pair_b = np.triu_indices(m, 1)
    # state 0: a above b (level_a < level_b); 1: tie; 2: b above a
    diff = levels[:, pair_a].astype(np.int16) - levels[:, pair_b]
    state = (np.sign(diff) + 1).astype(np.uint8)
    n_groups = -(-len(pair_a) // GROUP)
    codes = np.zeros((n_groups, n), dtype=np.intp)
    for p in range(len(pair_a)):
        codes[p // GROUP] += state[:, p].astype(np.intp) * 3 ** (p % GROUP)
    # rank of level v = 1 + number of models on levels above v
    per_level = np.zeros((n, m), dtype=np.int16)
    for v in range(m):
        per_level[:, v] = (levels == v).sum(axis=1)
    rank_of_level = 1 + np.cumsum(per_level, axis=1) - per_level
    ranks = np.take_along_axis(rank_of_level, levels.astype(np.intp), axis=1).astype(np.int8)
    counts_s, counts_r = state_counts(state), rank_counts(ranks, m)
    for array in (levels, ranks, state, codes, counts_s, counts_r):
        array.setflags(write=False)
    return OrderTable(
        n_models=m,
        levels=levels,
        ranks=ranks,
        pair_a=pair_a,
        pair_b=pair_b,
        state=state,
        codes=codes,
        state_counts=counts_s,
        rank_counts=counts_r,
    )


def state_counts(state: np.ndarray) -> np.ndarray:
    """(P, 3) counts of each pair state over the given rows of ``state``."""
    return np.stack([(state == s).sum(axis=0) for s in range(3)], axis=1).astype(np.int64)


def rank_counts(ranks: np.ndarray, m: int) -> np.ndarray:
    """(M, M + 1) counts of (model, rank) over the given rows of ``ranks``."""
    keys = (np.arange(m)[None, :] * (m + 1) + ranks.astype(np.int64)).ravel()
    return np.bincount(keys, minlength=m * (m + 1)).reshape(m, m + 1)
