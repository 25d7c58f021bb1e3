"""The certifier base class and the capped, pooled wealth statistics shared by every certifier.

:mod:`.certify` (e-Bonferroni, shortcut, exact, and the choice by name) and :mod:`.ilp` (the
integer program) both build on this module, so the dependency goes one way:
``certifier <- ilp <- certify`` (:func:`.certify.make_certifier` chooses among all of them).
Every name here is also importable from :mod:`rankci.sequential.certify`.
"""

from __future__ import annotations

import numpy as np

from rankci._base import check_alpha, check_positive_int

__all__ = [
    "Certifier",
    "capped_wealth",
    "certify_shortcut",
    "certify_shortcut_open",
    "frozen_log_wealth",
    "boolean_product",
    "packed_bits",
    "pair_mask",
    "may_reach",
    "shortcut_statistic",
]

_SMALL = 48  # up to this M the shortcut's min-plus sum is one (M, M, M) array operation
_CHUNK = 1 << 16  # elements of one (models x pairs) work array of the pooled statistic


def capped_wealth(log_wealth: np.ndarray, cap: float) -> np.ndarray:
    """``min(E, cap)`` from log-wealths, exactly ``cap`` where ``log E >= log cap``; diagonal 0.

    Parameters
    ----------
    log_wealth : numpy.ndarray
        M x M pairwise log-wealths ``log E^{jl}`` (the diagonal is ignored).
    cap : float
        The cap, the certification threshold ``M(M-1)/alpha``.

    Returns
    -------
    numpy.ndarray
        M x M capped wealths with a zero diagonal.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Section 3.
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
    Statistics 49(3).

    Examples
    --------
    >>> import numpy as np
    >>> capped_wealth(np.log([[1.0, 50.0], [0.5, 1.0]]), 20.0).tolist()
    [[0.0, 20.0], [0.5, 0.0]]
    """
    log_wealth = np.asarray(log_wealth, dtype=float)
    with np.errstate(invalid="ignore"):
        out = _capped(log_wealth, log_wealth >= np.log(cap), cap)
    np.fill_diagonal(out, 0.0)
    return out


def _capped(log_wealth: np.ndarray, reached: np.ndarray, cap: float) -> np.ndarray:
    """``min(E, cap)`` from log-wealths, exactly ``cap`` where ``reached`` (log E >= log cap)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(reached, cap, np.exp(np.minimum(log_wealth, np.log(cap))))


def shortcut_statistic(capped: np.ndarray, pairs: np.ndarray | None = None) -> np.ndarray:
    """``B^{jl} = E^{jl} + sum_{m != j,l} min(E^{jm}, E^{ml})`` (the pooled statistic).

    ``capped`` has a zero diagonal, which makes the terms m = j and m = l vanish. With ``pairs``
    (boolean M x M) only those entries are computed (the others are NaN): the min-plus sum is
    an O(M^3) reduction done row by row for large M.

    Parameters
    ----------
    capped : numpy.ndarray
        M x M capped wealths with a zero diagonal (:func:`capped_wealth`).
    pairs : numpy.ndarray, optional
        M x M boolean mask of the entries wanted (default: every off-diagonal entry).

    Returns
    -------
    numpy.ndarray
        M x M statistic (only the off-diagonal entries, or those in ``pairs``, are meaningful).

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Algorithm 2.
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
    Statistics 49(3).

    Examples
    --------
    By hand, ``B^{01} = 2 + min(3, 6) = 5``, ``B^{20} = 5 + min(6, 1) = 6`` and
    ``B^{21} = 6 + min(5, 2) = 8``:

    >>> import numpy as np
    >>> e = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 4.0], [5.0, 6.0, 0.0]])
    >>> b = shortcut_statistic(e)
    >>> [float(b[j, l]) for j, l in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]]
    [5.0, 5.0, 5.0, 5.0, 6.0, 8.0]
    """
    e = np.asarray(capped, dtype=float)
    m = e.shape[0]
    if pairs is None and m <= _SMALL:
        return e + np.minimum(e[:, :, None], e[None, :, :]).sum(axis=1)
    if pairs is None:
        pairs = np.ones((m, m), dtype=bool)
        np.fill_diagonal(pairs, False)
    out = np.full((m, m), np.nan)
    jj, ll = np.nonzero(pairs)
    if jj.size:
        out[jj, ll] = _pooled(e, jj, ll)
    return out


def _pooled(e: np.ndarray, jj: np.ndarray, ll: np.ndarray) -> np.ndarray:
    """``e[j, l] + sum_m min(e[j, m], e[m, l])`` for the listed pairs, in chunks of pairs.

    The terms are laid out models x pairs and summed along the models axis, i.e. added in model
    order, the order of the full (M, M, M) reduction: the same bits.
    """
    m = e.shape[0]
    e_t = np.ascontiguousarray(e.T)
    width = max(1, _CHUNK // m)
    out = np.empty(jj.size)
    for p0 in range(0, jj.size, width):
        j, l = jj[p0 : p0 + width], ll[p0 : p0 + width]
        terms = np.minimum(np.take(e_t, j, axis=1), np.take(e, l, axis=1))
        out[p0 : p0 + width] = e[j, l] + terms.sum(axis=0)
    return out


def boolean_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(a @ b) > 0`` for boolean matrices, on bits packed 64 to a word (no BLAS threads).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[True, False], [False, False]]); b = np.array([[False, True], [True, True]])
    >>> boolean_product(a, b).tolist()
    [[False, True], [False, False]]
    """
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    words = max(1, -(-a.shape[1] // 64))
    left, right = packed_bits(a, words), packed_bits(b.T, words)
    acc = np.bitwise_and(left[:, 0, None], right[None, :, 0])
    if words > 1:
        work = np.empty_like(acc)
        for k in range(1, words):  # OR over the words of AND-ed bits
            np.bitwise_and(left[:, k, None], right[None, :, k], out=work)
            acc |= work
    return acc != 0


def packed_bits(rows: np.ndarray, words: int) -> np.ndarray:
    """The rows of a boolean matrix as bits packed into ``words`` uint64 words (zero padded).

    Parameters
    ----------
    rows : numpy.ndarray
        R x C boolean matrix, ``C <= 64 * words``.
    words : int
        Words per row.

    Returns
    -------
    numpy.ndarray
        R x ``words`` uint64: bit b of row r's bytes (numpy's ``packbits`` order) is
        ``rows[r, b]``.

    Examples
    --------
    >>> import numpy as np
    >>> packed = packed_bits(np.array([[True, False, True], [False, False, False]]), 1)
    >>> packed.shape, [int(v) for v in packed[:, 0]]
    ((2, 1), [160, 0])
    """
    out = np.zeros((rows.shape[0], 8 * words), dtype=np.uint8)
    # packbits reads a transposed (strided) matrix about 4x slower than a contiguous copy of it
    packed = np.packbits(np.ascontiguousarray(rows), axis=1)
    out[:, : packed.shape[1]] = packed
    return out.view(np.uint64)


def may_reach(capped: np.ndarray, threshold: float, pairs: np.ndarray) -> np.ndarray:
    """Pairs of ``pairs`` whose pooled statistic may reach ``threshold`` (a cheap upper bound).

    With ``tau = threshold / (4 M)``, every term ``min(E^{jm}, E^{ml})`` is at most ``E^{jm}`` if
    that is below tau, else at most ``E^{ml}`` if that is below tau, else at most the cap. So
    ``B^{jl} <= E^{jl} + s_j + s'_l + cap * n_jl`` with ``s_j`` (``s'_l``) the sum of row j's
    (column l's) capped wealths below tau and ``n_jl = #{m : E^{jm} >= tau, E^{ml} >= tau}``; as
    ``cap * n_jl`` alone reaches the threshold when ``n_jl >= 1``, only whether ``n_jl > 0``
    matters, one boolean matrix product (:func:`boolean_product`). Also
    ``B^{jl} <= E^{jl} + min(sum_m E^{jm}, sum_m E^{ml})``. A pair is dropped only when both
    bounds stay below the threshold by a relative margin of 1e-9 (far above the rounding of a sum
    of M terms), so no pair the statistic certifies is dropped.
    """
    e = np.asarray(capped, dtype=float)
    m = e.shape[0]
    keep = pairs.copy()
    np.fill_diagonal(keep, False)
    rows, cols = np.flatnonzero(keep.any(axis=1)), np.flatnonzero(keep.any(axis=0))
    if rows.size == 0:
        return keep
    level = threshold * (1.0 - 1e-9)
    whole = 2 * rows.size * cols.size > m * m  # most of the matrix: all of it
    if whole:
        rows = cols = np.arange(m)
    sub = np.ix_(rows, cols)
    block = e if whole else e[sub]
    simple = block + np.minimum(e.sum(axis=1)[rows, None], e.sum(axis=0)[None, cols])
    may = simple >= level
    big = e >= threshold / (4.0 * m)
    small = np.where(big, 0.0, e)
    bound = block + small.sum(axis=1)[rows, None]
    bound += small.sum(axis=0)[None, cols]
    open_ = ~(bound >= level) & may  # only these need a third model with both terms big
    n_open = int(np.count_nonzero(open_))
    if n_open and 16 * n_open < m * m:  # few pairs: look for a third model pair by pair
        jo, lo = np.nonzero(open_)
        some = np.zeros_like(open_)
        some[jo, lo] = _some_third(big, rows[jo], cols[lo])
        may &= ~open_ | some
    elif n_open:
        r, c = np.flatnonzero(open_.any(axis=1)), np.flatnonzero(open_.any(axis=0))
        if 2 * r.size * c.size > rows.size * cols.size:  # most of the block: all of it
            some = boolean_product(big if whole else big[rows], big if whole else big[:, cols])
        else:
            some = np.zeros_like(open_)
            some[np.ix_(r, c)] = boolean_product(big[rows[r]], big[:, cols[c]])
        may &= ~open_ | some
    if whole:
        keep &= may
    else:
        keep[sub] &= may
    return keep


def _some_third(big: np.ndarray, jj: np.ndarray, ll: np.ndarray) -> np.ndarray:
    """For each listed pair (j, l), whether some m has ``big[j, m]`` and ``big[m, l]``: the
    rows of ``big`` and of its transpose as packed bits, AND-ed word by word."""
    words = max(1, -(-big.shape[1] // 64))
    left, right = packed_bits(big, words).T.copy(), packed_bits(big.T, words).T.copy()
    found = left[0].take(jj)
    found &= right[0].take(ll)
    for k in range(1, words):
        both = left[k].take(jj)
        both &= right[k].take(ll)
        found |= both
    return found != 0


def certify_shortcut(
    log_wealth: np.ndarray,
    threshold: float,
    known: np.ndarray,
    candidates: np.ndarray | None = None,
) -> np.ndarray:
    """Pairs certified by the shortcut (or e-Bonferroni, or known) at one look.

    A pair is certified when ``E^{jl} >= threshold`` (e-Bonferroni), when it was ``known``, or when
    the pooled statistic ``B^{jl}`` of the capped wealths (:func:`shortcut_statistic`) reaches the
    threshold. Certified pairs are never examined again, and ``B`` is evaluated only for the pairs
    that :func:`may_reach` cannot rule out (and that are ``candidates``, when given).

    Parameters
    ----------
    log_wealth : numpy.ndarray
        M x M pairwise log-wealths.
    threshold : float
        ``M(M-1)/alpha``.
    known : numpy.ndarray
        M x M boolean: pairs certified at earlier looks.
    candidates : numpy.ndarray, optional
        M x M boolean: the only pairs the pooled statistic may add (default: every pair).

    Returns
    -------
    numpy.ndarray
        M x M boolean: ``[j, l]`` is "j better than l" certified.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Algorithm 2.
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
    Statistics 49(3).

    Examples
    --------
    With M = 3 and alpha = 0.05 the threshold is 120. ``E^{01} = 200`` passes alone;
    ``B^{02} = 70 + min(120, 60) = 130`` and ``B^{12} = 60 + min(80, 70) = 130`` pass pooled;
    ``B^{10} = 80 + min(60, 1) = 81`` does not:

    >>> import numpy as np
    >>> wealth = np.array([[1.0, 200.0, 70.0], [80.0, 1.0, 60.0], [1.0, 1.0, 1.0]])
    >>> certify_shortcut(np.log(wealth), 120.0, np.zeros((3, 3), dtype=bool)).tolist()
    [[False, True, True], [False, False, True], [False, False, False]]
    """
    capped = capped_wealth(log_wealth, threshold)
    with np.errstate(invalid="ignore"):
        out = log_wealth >= np.log(threshold)
    np.fill_diagonal(out, False)
    out |= known
    todo = ~out if candidates is None else candidates & ~out
    np.fill_diagonal(todo, False)
    if todo.any():
        todo = may_reach(capped, threshold, todo)
    if todo.any():
        jj, ll = np.nonzero(todo)
        out[jj, ll] = _pooled(capped, jj, ll) >= threshold
    return out


def frozen_log_wealth(values: np.ndarray, open_pairs: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The M x M log-wealths a certifier reads under ``freeze``, from the open pairs' values.

    ``+inf`` (the cap) for the pairs of ``known``, ``values`` at ``open_pairs`` (flat indices
    ``j * M + l``; the monitor lists every pair not in ``known``, the reverses of known pairs
    included), ``-inf`` (wealth 0) for any pair neither known nor listed, and NaN on the
    diagonal: with the monitor's list, the array of
    ``freezing.frozen_view(wealth.log_wealth(~known), known)[0]``, built from the open pairs.

    Parameters
    ----------
    values : numpy.ndarray
        ``log E`` of the open pairs, in the order of ``open_pairs``.
    open_pairs : numpy.ndarray
        Flat indices of the pairs whose wealth is read (none of them in ``known``).
    known : numpy.ndarray
        M x M boolean: the certified pairs (never both ``(j, l)`` and ``(l, j)``).

    Returns
    -------
    numpy.ndarray
        M x M log-wealths.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Section 4 (a stopped e-process is an e-process).

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[False, True, False], [False, False, False], [False, False, False]])
    >>> frozen_log_wealth(np.array([1.0, 2.0, 3.0, 4.0]), np.array([2, 5, 6, 7]), d).tolist()
    [[nan, inf, 1.0], [-inf, nan, 2.0], [3.0, 4.0, nan]]
    """
    m = known.shape[0]
    out = np.full(m * m, -np.inf)
    out[open_pairs] = values
    out = out.reshape(m, m)
    out[known] = np.inf
    np.fill_diagonal(out, np.nan)
    return out


def certify_shortcut_open(
    values: np.ndarray, open_pairs: np.ndarray, threshold: float, known: np.ndarray
) -> np.ndarray:
    """:func:`certify_shortcut` on the frozen view, from the open pairs' log-wealths only.

    Under ``freeze`` (:mod:`.freezing`) the certifier reads the cap for the pairs of ``known``
    and the wealth of the open pairs (the monitor lists every pair not known, reverses
    included; a pair neither known nor listed reads 0), and may add only the open pairs. The
    capped wealths are built from that directly: ``cap`` where ``known``, ``min(E, cap)``
    (exactly ``cap`` where ``log E >= log cap``) at the open pairs, 0 elsewhere; e-Bonferroni
    (``log E >= log cap``) and the bounds of :func:`may_reach` are evaluated on the open pairs
    only, with the same operations on the same numbers, so the result is the dense call's:
    ``certify_shortcut(frozen_log_wealth(values, open_pairs, known), threshold, known,
    candidates)``, ``candidates`` being the open pairs.

    Parameters
    ----------
    values : numpy.ndarray
        ``log E^{jl}`` of the open pairs, in the order of ``open_pairs``.
    open_pairs : numpy.ndarray
        Increasing flat indices ``j * M + l`` of the pairs read and candidates (none known).
    threshold : float
        ``M(M-1)/alpha``.
    known : numpy.ndarray
        M x M boolean: pairs certified at earlier looks (never both ``(j, l)`` and ``(l, j)``).

    Returns
    -------
    numpy.ndarray
        M x M boolean: the certified pairs (``known`` included).

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Algorithm 2.
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
    Statistics 49(3).

    Examples
    --------
    With M = 3 and alpha = 0.05 the threshold is 120; 0 > 1 is known (it reads the cap 120),
    so ``B^{02} = 70 + min(120, 60) = 130`` passes, ``B^{20} = 1 + min(0, 1) = 1`` does not:

    >>> import numpy as np
    >>> known = np.zeros((3, 3), dtype=bool); known[0, 1] = True
    >>> lw = np.log([70.0, 60.0, 1.0, 1.0])  # the open pairs 0 -> 2, 1 -> 2, 2 -> 0, 2 -> 1
    >>> certify_shortcut_open(lw, np.array([2, 5, 6, 7]), 120.0, known).astype(int).tolist()
    [[0, 1, 1], [0, 0, 0], [0, 0, 0]]
    """
    m = known.shape[0]
    out = known.copy()
    if open_pairs.size == 0:
        return out
    with np.errstate(invalid="ignore"):
        passed = values >= np.log(threshold)  # e-Bonferroni
    open_capped = _capped(values, passed, threshold)
    capped = np.multiply(known, threshold).ravel()  # the cap where known, 0 elsewhere
    capped[open_pairs] = open_capped
    capped = capped.reshape(m, m)
    out.ravel()[open_pairs[passed]] = True
    big_open = open_pairs[open_capped >= threshold / (4.0 * m)]
    todo = _may_reach_at(capped, threshold, open_pairs[~passed], known, big_open)
    if todo.size:
        jj, ll = np.divmod(todo, m)
        out.ravel()[todo[_pooled(capped, jj, ll) >= threshold]] = True
    return out


def _may_reach_at(
    capped: np.ndarray, threshold: float, flat: np.ndarray, known: np.ndarray, big_open
) -> np.ndarray:
    """:func:`may_reach` for the open pairs at the increasing flat indices ``flat``: the ones it
    keeps. ``capped`` are the capped wealths of the frozen view (``known`` at the cap, the open
    pairs ``min(E, cap)``, any other pair 0) and ``big_open`` the increasing flat indices of
    the open entries at least ``tau = threshold / (4 M)``.

    The same bounds per pair from the same numbers: the row and column sums of the whole
    ``capped`` matrix, and those of its entries below tau (the same M x M array as
    :func:`may_reach`'s, built from the open entries: every other entry is the cap or 0), and
    the third model with both terms at least tau (``capped >= tau`` is ``known`` plus
    ``big_open``) looked for pair by pair (:func:`_some_third`, the booleans of the product).
    """
    m = capped.shape[0]
    if flat.size == 0:
        return flat
    e = capped.ravel()
    jj, ll = np.divmod(flat, m)
    level = threshold * (1.0 - 1e-9)
    tau = threshold / (4.0 * m)
    block = e.take(flat)
    may = block + np.minimum(capped.sum(axis=1).take(jj), capped.sum(axis=0).take(ll))
    may = may >= level
    small = np.zeros(m * m)  # capped where below tau: the open entries below tau, 0 elsewhere
    small[flat] = np.where(block >= tau, 0.0, block)
    small = small.reshape(m, m)
    bound = block + small.sum(axis=1).take(jj)
    bound += small.sum(axis=0).take(ll)
    open_ = may & ~(bound >= level)  # only these need a third model with both terms big
    if open_.any():
        big = known.copy()
        big.ravel()[big_open] = True  # capped >= tau
        may[open_] = _some_third(big, jj[open_], ll[open_])
    return flat[may]


class Certifier:
    """Base class: ``look(log_wealth, known)`` returns the pairs certified at this look."""

    name = "base"

    def __init__(self, n_models: int, alpha: float) -> None:
        self.n_models = check_positive_int(n_models, "n_models", minimum=2)
        self.alpha = check_alpha(alpha)
        self.threshold = n_models * (n_models - 1) / self.alpha
        self.n_looks = 0

    def look(
        self,
        log_wealth: np.ndarray,
        known: np.ndarray | None = None,
        candidates: np.ndarray | None = None,
    ) -> np.ndarray:
        """Certified pairs (M x M bool) at this look; ``known`` are pairs certified before.

        ``candidates`` (M x M bool, optional) are the only pairs that may be added at this look;
        the monitor's ``freeze`` mode passes the pairs not certified (:mod:`.freezing`).
        The exact enumeration ignores it (it certifies whatever every surviving order agrees on).
        """
        self.n_looks += 1
        known = pair_mask(known, self.n_models)
        if candidates is not None:
            candidates = pair_mask(candidates, self.n_models)
        return self._look(np.asarray(log_wealth, dtype=float), known, candidates)

    def look_frozen(
        self, values: np.ndarray, open_pairs: np.ndarray, known: np.ndarray
    ) -> np.ndarray:
        """A look on the frozen view (:mod:`.freezing`), given the open pairs' log-wealths.

        The result is that of ``look(frozen_log_wealth(values, open_pairs, known), known,
        candidates)``, ``candidates`` being the open pairs: what this default does; the shortcut
        and e-Bonferroni compute it from the open pairs alone.

        Parameters
        ----------
        values : numpy.ndarray
            ``log E^{jl}`` of the open pairs, in the order of ``open_pairs``.
        open_pairs : numpy.ndarray
            Increasing flat indices ``j * M + l`` of the pairs not in ``known`` whose wealths
            are read (the monitor: all of them, the reverses of known pairs included).
        known : numpy.ndarray
            M x M boolean: pairs certified at earlier looks (never both ``(j, l)`` and
            ``(l, j)``; the monitor passes its transitively closed set).

        Returns
        -------
        numpy.ndarray
            M x M boolean: the certified pairs (``known`` included).

        Examples
        --------
        >>> import numpy as np
        >>> from rankci.sequential.certify import make_certifier
        >>> known = np.zeros((3, 3), dtype=bool); known[0, 1] = True
        >>> lw = np.log([70.0, 60.0, 1.0, 1.0])  # the open pairs 0 -> 2, 1 -> 2, 2 -> 0, 2 -> 1
        >>> make_certifier("shortcut", 3, 0.05).look_frozen(lw, np.array([2, 5, 6, 7]), known)[0]
        array([False,  True,  True])
        """
        known = pair_mask(known, self.n_models)
        candidates = np.zeros(self.n_models**2, dtype=bool)
        candidates[open_pairs] = True
        candidates = candidates.reshape(self.n_models, self.n_models)
        return self.look(frozen_log_wealth(values, open_pairs, known), known, candidates)

    def _look(self, log_wealth: np.ndarray, known: np.ndarray, candidates=None) -> np.ndarray:
        raise NotImplementedError

    def details(self) -> dict:
        """Certifier-specific facts for ``Ranking.details`` (JSON-safe)."""
        return {}

    def state(self) -> dict:
        return {"n_looks": np.array([self.n_looks])}

    def load_state(self, arrays: dict) -> None:
        self.n_looks = int(np.asarray(arrays["n_looks"])[0])


def pair_mask(known: np.ndarray | None, m: int) -> np.ndarray:
    """``known`` as an M x M boolean matrix (all False for None); a wrong shape is refused.

    Parameters
    ----------
    known : numpy.ndarray or None
        M x M pairs (``[j, l]``: "j better than l").
    m : int
        The number of models.

    Returns
    -------
    numpy.ndarray
        M x M boolean (``known`` itself when it is one already: not a copy).

    Examples
    --------
    >>> pair_mask(None, 2).tolist()
    [[False, False], [False, False]]
    """
    if known is None:
        return np.zeros((m, m), dtype=bool)
    known = np.asarray(known, dtype=bool)
    if known.shape != (m, m):
        raise ValueError(f"known must be a {m} x {m} boolean matrix, got shape {known.shape}")
    return known
