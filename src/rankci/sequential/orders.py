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
Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
:mod:`rankci.sequential`; docs/references.md), Algorithm 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np

from rankci._base import check_positive_int

__all__ = ["MAX_EXACT_MODELS", "OrderTable", "order_table", "ordered_bell", "weak_orders"]

MAX_EXACT_MODELS = 8
GROUP = 7  # unordered pairs packed into one base-3 code
RANK_GROUP = 4  # models whose ranks are packed into one base-M code


def ordered_bell(m: int) -> int:
    """Number of weak orders of m labelled items (ordered Bell / Fubini number), exactly.

    Computed by the recurrence ``a(n) = sum_{k=1}^{n} C(n, k) a(n - k)``, ``a(0) = 1``.

    Parameters
    ----------
    m : int
        Number of items (m >= 0).

    Returns
    -------
    int

    References
    ----------
    Sloane, N. J. A. The On-Line Encyclopedia of Integer Sequences, A000670 (Fubini numbers:
    number of weak orders on n labeled elements).
    Gross, O. A. (1962). Preferential arrangements. The American Mathematical Monthly 69(1), 4-8.

    Examples
    --------
    >>> [ordered_bell(m) for m in range(1, 9)]
    [1, 3, 13, 75, 541, 4683, 47293, 545835]

    By brute force: a weak order is a map to levels 0..k-1 that uses every level.

    >>> import itertools
    >>> sum(set(f) == set(range(max(f) + 1)) for f in itertools.product(range(4), repeat=4))
    75
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

    Parameters
    ----------
    m : int
        Number of models (m >= 1).

    Returns
    -------
    numpy.ndarray
        ``ordered_bell(m) x m`` int8 levels, each row a distinct weak order.

    References
    ----------
    Sloane, N. J. A. The On-Line Encyclopedia of Integer Sequences, A000670 (Fubini numbers:
    number of weak orders on n labeled elements).
    Gross, O. A. (1962). Preferential arrangements. The American Mathematical Monthly 69(1), 4-8.
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Algorithm 1.

    Examples
    --------
    >>> import itertools
    >>> levels = weak_orders(3)
    >>> levels.shape
    (13, 3)
    >>> maps = itertools.product(range(3), repeat=3)
    >>> brute = {f for f in maps if set(f) == set(range(max(f) + 1))}
    >>> {tuple(int(v) for v in row) for row in levels} == brute
    True
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
    codes : ndarray (G, n) intp
        Base-3 code of the states of each group of seven pairs (0 = a above b, 1 = tie,
        2 = b above a).
    rank_codes : ndarray (H, n) intp
        Base-M code of ``rank - 1`` of each group of four models.
    packed : ndarray (G + H, n) intp
        ``codes`` stacked on ``rank_codes`` (both are views of it).
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
    codes: np.ndarray
    rank_codes: np.ndarray
    packed: np.ndarray
    state_counts: np.ndarray
    rank_counts: np.ndarray
    _decoders: tuple = ()

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

    def summarize(self, codes: np.ndarray, rank_codes: np.ndarray) -> tuple:
        """(state counts (P, 3), rank counts (M, M + 1)) over the orders with these codes.

        One histogram of the codes per group, decoded by a small matrix product, so the cost is
        a pass over the codes, not over the pairs and models of every order.
        """
        state_decoders, rank_decoders = self._decoders
        m = self.n_models
        states = np.zeros((len(self.pair_a), 3), dtype=np.int64)
        for g, decoder in enumerate(state_decoders):
            hist = np.bincount(codes[g], minlength=decoder.shape[0])
            first = g * GROUP
            states[first : first + decoder.shape[1] // 3] = (hist @ decoder).reshape(-1, 3)
        ranks = np.zeros((m, m + 1), dtype=np.int64)
        for h, decoder in enumerate(rank_decoders):
            hist = np.bincount(rank_codes[h], minlength=decoder.shape[0])
            first = h * RANK_GROUP
            ranks[first : first + decoder.shape[1] // m, 1:] = (hist @ decoder).reshape(-1, m)
        return states, ranks

    def states(self, rows: np.ndarray | None = None) -> np.ndarray:
        """State of every unordered pair (n, P) uint8: 0 = a above b, 1 = tie, 2 = b above a."""
        levels = self.levels if rows is None else self.levels[rows]
        diff = levels[:, self.pair_a].astype(np.int16) - levels[:, self.pair_b]
        return (np.sign(diff) + 1).astype(np.uint8)

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
    n_pairs = len(pair_a)
    columns = np.ascontiguousarray(levels.T)  # (m, n): one contiguous row per model
    small = np.zeros((-(-n_pairs // GROUP), n), dtype=np.int16)  # 3^7 < 2^15
    for p in range(n_pairs):  # state 0: a above b (level_a < level_b); 1: tie; 2: b above a
        la, lb = columns[pair_a[p]], columns[pair_b[p]]
        state = (la >= lb).view(np.int8) + (la > lb).view(np.int8)
        small[p // GROUP] += state * np.int16(3 ** (p % GROUP))
    codes = small.astype(np.intp)
    # rank of j = 1 + number of models on levels above j's: from the level sizes of each order
    above = np.zeros((m, n), dtype=np.intp)  # above[v] = models on levels < v
    for v in range(1, m):
        above[v] = above[v - 1] + (columns == v - 1).sum(axis=0)
    flat, offset = above.ravel(), np.arange(n)
    ranks = np.empty((n, m), dtype=np.int8)
    rank_codes = np.zeros((-(-m // RANK_GROUP), n), dtype=np.intp)
    for j in range(m):
        above_j = flat[columns[j].astype(np.intp) * n + offset]
        ranks[:, j] = 1 + above_j
        rank_codes[j // RANK_GROUP] += above_j * m ** (j % RANK_GROUP)
    packed = np.vstack([codes, rank_codes])
    codes, rank_codes = packed[: len(codes)], packed[len(codes) :]
    state_dec = [_decoder(3, min(GROUP, n_pairs - g * GROUP)) for g in range(codes.shape[0])]
    rank_dec = [_decoder(m, min(RANK_GROUP, m - h * RANK_GROUP)) for h in range(len(rank_codes))]
    table = OrderTable(
        n_models=m,
        levels=levels,
        ranks=ranks,
        pair_a=pair_a,
        pair_b=pair_b,
        codes=codes,
        rank_codes=rank_codes,
        packed=packed,
        state_counts=np.zeros((n_pairs, 3), dtype=np.int64),
        rank_counts=np.zeros((m, m + 1), dtype=np.int64),
        _decoders=(state_dec, rank_dec),
    )
    counts_s, counts_r = table.summarize(codes, rank_codes)
    table.state_counts[...] = counts_s
    table.rank_counts[...] = counts_r
    for array in (levels, table.ranks, packed, table.state_counts, table.rank_counts):
        array.setflags(write=False)
    return table


def _decoder(base: int, digits: int) -> np.ndarray:
    """One-hot digits of every code: (base^digits, digits * base) int64."""
    codes = np.arange(base**digits)
    digit = (codes[:, None] // base ** np.arange(digits)[None, :]) % base
    return (digit[:, :, None] == np.arange(base)).reshape(len(codes), -1).astype(np.int64)
