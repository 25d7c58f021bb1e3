"""The certifier base class and the capped, pooled wealth statistics shared by every certifier.

:mod:`.certify` (e-Bonferroni, shortcut, exact, and the choice by name) and :mod:`.ilp` (the
integer program) both build on this module, so the dependency goes one way:
``certifier <- ilp <- certify`` (:func:`.certify.make_certifier` chooses among all of them).
Every name here is also importable from :mod:`rankci.sequential.certify`.
"""

from __future__ import annotations

import numpy as np

from rankci._base import check_alpha, check_positive_int

__all__ = ["Certifier", "capped_wealth", "certify_shortcut", "shortcut_statistic"]

_SMALL = 48  # up to this M the shortcut's min-plus sum is one (M, M, M) array operation


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
    Rank confidence sequences: anytime-valid leaderboards (the source of :mod:`rankci.sequential`),
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
    log_cap = np.log(cap)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(log_wealth >= log_cap, cap, np.exp(np.minimum(log_wealth, log_cap)))
    np.fill_diagonal(out, 0.0)
    return out


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
    Rank confidence sequences: anytime-valid leaderboards (the source of :mod:`rankci.sequential`),
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
    rows = np.flatnonzero(pairs.any(axis=1))
    if m <= _SMALL and rows.size:
        full = np.minimum(e[rows][:, :, None], e[None, :, :]).sum(axis=1)
        out[rows] = np.where(pairs[rows], e[rows] + full, np.nan)
        return out
    for j in rows:  # a loop over models; each step is vectorised over m and l
        cols = np.flatnonzero(pairs[j])
        out[j, cols] = e[j, cols] + np.minimum(e[j][:, None], e[:, cols]).sum(axis=0)
    return out


def certify_shortcut(log_wealth: np.ndarray, threshold: float, known: np.ndarray) -> np.ndarray:
    """Pairs certified by the shortcut (or e-Bonferroni, or known) at one look.

    A pair is certified when ``E^{jl} >= threshold`` (e-Bonferroni), when it was ``known``, or when
    the pooled statistic ``B^{jl}`` of the capped wealths (:func:`shortcut_statistic`) reaches the
    threshold; ``B`` is evaluated only where the cheap upper bound
    ``E^{jl} + min(sum_m E^{jm}, sum_m E^{ml})`` reaches it.

    Parameters
    ----------
    log_wealth : numpy.ndarray
        M x M pairwise log-wealths.
    threshold : float
        ``M(M-1)/alpha``.
    known : numpy.ndarray
        M x M boolean: pairs certified at earlier looks.

    Returns
    -------
    numpy.ndarray
        M x M boolean: ``[j, l]`` is "j better than l" certified.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards (the source of :mod:`rankci.sequential`),
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
    bound = capped + np.minimum(capped.sum(axis=1)[:, None], capped.sum(axis=0)[None, :])
    todo = ~out & (bound >= threshold * (1.0 - 1e-12))
    np.fill_diagonal(todo, False)
    if todo.any():
        stat = shortcut_statistic(capped, todo)
        out |= todo & (stat >= threshold)
    return out


class Certifier:
    """Base class: ``look(log_wealth, known)`` returns the pairs certified at this look."""

    name = "base"

    def __init__(self, n_models: int, alpha: float) -> None:
        self.n_models = check_positive_int(n_models, "n_models", minimum=2)
        self.alpha = check_alpha(alpha)
        self.threshold = n_models * (n_models - 1) / self.alpha
        self.n_looks = 0

    def look(self, log_wealth: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
        """Certified pairs (M x M bool) at this look; ``known`` are pairs certified before."""
        self.n_looks += 1
        return self._look(np.asarray(log_wealth, dtype=float), _known(known, self.n_models))

    def _look(self, log_wealth: np.ndarray, known: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def details(self) -> dict:
        """Certifier-specific facts for ``Ranking.details`` (JSON-safe)."""
        return {}

    def state(self) -> dict:
        return {"n_looks": np.array([self.n_looks])}

    def load_state(self, arrays: dict) -> None:
        self.n_looks = int(np.asarray(arrays["n_looks"])[0])


def _known(known: np.ndarray | None, m: int) -> np.ndarray:
    if known is None:
        return np.zeros((m, m), dtype=bool)
    known = np.asarray(known, dtype=bool)
    if known.shape != (m, m):
        raise ValueError(f"known must be a {m} x {m} boolean matrix, got shape {known.shape}")
    return known
