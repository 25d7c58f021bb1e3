"""Romano-Wolf max-t step-down machinery: null draws of the means and the fast step-down.

Used by :mod:`rankci.certify.maxt` (rank intervals); see there for the statistics and references.

Null draws (``B x M`` matrices of centred means):

* :func:`gaussian_draws`: ``Z ~ N(0, Sigma)``, multiplier draws ``Z = G Sigma^(1/2)``;
* :func:`bootstrap_draws`: ``xbar* - xbar`` with units (or whole clusters) drawn with replacement.

:func:`stepdown_maxt` runs the step-down over a family of pair hypotheses closed under reversal
(both directions of every pair), which is what rank intervals need; :func:`critical_value` is the
exact Monte-Carlo order statistic.

References
----------
Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple hypothesis
testing. Journal of the American Statistical Association 100(469), 94-108.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankci._base import as_generator, check_alpha, check_positive_int
from rankci.data import UnitScores
from rankci.evidence import bootstrap as boot

__all__ = ["bootstrap_draws", "critical_value", "gaussian_draws", "stepdown_maxt"]

_CHUNK_CELLS = 4_000_000  # pairs x draws held in memory at once


def check_covariance(cov) -> np.ndarray:
    cov = np.asarray(cov, dtype=float)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"the covariance must be a square matrix, got shape {cov.shape}")
    if not np.isfinite(cov).all():
        raise ValueError("the covariance has non-finite entries")
    if not np.allclose(cov, cov.T, rtol=1e-8, atol=1e-14 * max(np.abs(cov).max(), 1e-300)):
        raise ValueError("the covariance must be symmetric")
    return (cov + cov.T) / 2.0


# ---------------------------------------------------------------------- null draws
def gaussian_draws(
    cov: np.ndarray, draws: int = 1000, rng: int | np.random.Generator | None = None
) -> np.ndarray:
    """``draws`` x M matrix of ``Z ~ N(0, Sigma)``, via ``Z = G V diag(sqrt(lambda))  V'``.

    The symmetric square root from ``eigh`` handles a singular Sigma (more models than units, or
    two identical models); eigenvalues below zero from rounding are set to zero.
    """
    cov = check_covariance(cov)
    draws = check_positive_int(draws, "draws")
    generator = as_generator(rng)
    values, vectors = np.linalg.eigh(cov)
    root = (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
    return generator.standard_normal((draws, cov.shape[0])) @ root


def bootstrap_draws(
    units: UnitScores,
    groups: Sequence | np.ndarray | None = None,
    draws: int = 1000,
    rng: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, int]:
    """``draws`` x M matrix of ``xbar* - xbar``: means on units or clusters drawn with replacement.

    ``xbar*_j = sum_g w_g S_gj / sum_g w_g n_gj``, with w the bootstrap counts of the G units (or
    clusters), ``S_gj`` the sum of model j's scores in g and ``n_gj`` their number. Returns the
    draws and the number of (draw, model) cells in which a model had no scored unit; those cells
    are NaN and are treated as exceeding every critical value (conservative).
    """
    draws = check_positive_int(draws, "draws")
    generator = as_generator(rng)
    x = units.values
    finite = np.isfinite(x)
    mean = np.where(finite, x, 0.0).sum(axis=0) / finite.sum(axis=0)
    if groups is None:
        resampled = boot.bootstrap_means(x, draws, generator)
    else:
        _, codes = np.unique(np.asarray(groups), return_inverse=True)
        resampled = boot.cluster_bootstrap_means(x, codes, int(codes.max()) + 1, draws, generator)
    out = resampled - mean
    empty = int(np.isnan(out).sum())
    return out, empty


# ---------------------------------------------------------------------- step-down
_BLOCK = 256  # positions per block of the suffix maxima


def stepdown_maxt(
    first: np.ndarray,
    second: np.ndarray,
    forward: np.ndarray,
    backward: np.ndarray,
    scale: np.ndarray,
    null: np.ndarray,
    alpha: float = 0.05,
    stepdown: bool = True,
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Romano-Wolf max-t step-down over a family closed under reversal.

    The family holds, for each of P pairs p, the two hypotheses ``H: theta_first - theta_second
    <= delta`` (statistic ``forward[p]``) and ``H: theta_second - theta_first <= delta``
    (``backward[p]``). Their null statistics are ``v*_p = (Z_first - Z_second) * scale[p]`` and
    ``-v*_p``, Z a row of ``null``. At each step, with K the hypotheses not yet rejected,
    ``c(K) = max(0, (1 - alpha) quantile of max_{h in K} T*_h)`` and every h in K with
    ``T_h > c(K)`` is rejected; the procedure stops when a step rejects nothing.

    Parameters
    ----------
    first, second : ndarray (P,) of int
        The models of each pair (columns of ``null``).
    forward, backward : ndarray (P,)
        Observed statistics of the two hypotheses of each pair (NaN is never rejected).
    scale : ndarray (P,)
        ``1 / s_p`` (0 for a pair estimated without error).
    null : ndarray (B, M)
        Centred null draws of the means (:func:`gaussian_draws`, :func:`bootstrap_draws`). A draw
        with a NaN counts as exceeding every critical value.
    alpha : float
    stepdown : bool, default True
        False gives the single-step procedure (one critical value for the whole family).

    Returns
    -------
    reject_forward, reject_backward : ndarray (P,) of bool
    critical_values : list of float
        ``c`` at each step; the last one decided the hypotheses left standing.

    Notes
    -----
    With ``delta >= 0``, ``min(forward, backward) <= 0 <= c``, so only the larger statistic of a
    pair can be rejected and the smaller one stays in every K. Sorting the larger statistics in
    decreasing order, every K is "the sorted positions from r on, plus all the smaller ones", and
    ``max_{h in K} T*_h = max(suffix maximum of v* from r, max_p (-v*_p oriented))``. One pass
    over the draws stores block maxima of v* and that tail maximum; a step then recomputes only
    the block that contains r. Cost ``O(B P)`` for the pass, ``O(B * 256)`` per step.
    """
    alpha = check_alpha(alpha)
    forward = np.where(np.isnan(forward), -np.inf, np.asarray(forward, dtype=float))
    backward = np.where(np.isnan(backward), -np.inf, np.asarray(backward, dtype=float))
    size = forward.size
    reject_f = np.zeros(size, dtype=bool)
    reject_b = np.zeros(size, dtype=bool)
    if size == 0:
        return reject_f, reject_b, []
    swap = backward > forward
    top = np.where(swap, backward, forward)
    hi = np.where(swap, second, first)  # orient each pair so that the larger statistic is hi - lo
    lo = np.where(swap, first, second)
    order = np.argsort(-top, kind="stable")
    top, hi, lo = top[order], hi[order], lo[order]
    scale = np.asarray(scale, dtype=float)[order]
    block = min(_BLOCK, size)
    n_blocks = -(-size // block)
    pad = n_blocks * block - size  # padded positions hold the pair (hi[0], hi[0]): v* = 0
    hi_p = np.concatenate([hi, np.full(pad, hi[0])])
    lo_p = np.concatenate([lo, np.full(pad, hi[0])])
    scale_p = np.concatenate([scale, np.zeros(pad)])
    null = np.asarray(null, dtype=float)
    broken = np.isnan(null).any(axis=1)
    null_t = np.ascontiguousarray(np.where(broken[:, None], 0.0, null).T)
    n_draws = null_t.shape[1]

    block_max = np.empty((n_blocks + 1, n_draws))
    block_max[-1] = -np.inf
    tail = np.empty(n_draws)
    chunk = max(1, _CHUNK_CELLS // (n_blocks * block))
    for start in range(0, n_draws, chunk):
        cols = slice(start, start + chunk)
        values = _null_values(null_t[:, cols], hi_p, lo_p, scale_p)
        tail[cols] = -values.min(axis=0)
        block_max[:-1, cols] = values.reshape(n_blocks, block, -1).max(axis=1)
    suffix = np.maximum.accumulate(block_max[::-1], axis=0)[::-1]
    suffix[:, broken] = np.inf

    def maxima(r: int) -> np.ndarray:
        q, end = divmod(r, block)[0], (r // block + 1) * block
        out = np.maximum(suffix[q + 1], tail)
        if r % block:
            part = _null_values(null_t, hi_p[r:end], lo_p[r:end], scale_p[r:end])
            np.maximum(out, part.max(axis=0), out=out)
        else:
            np.maximum(out, suffix[q], out=out)
        return out

    done, crits = 0, []
    while done < size:
        crit = max(0.0, critical_value(maxima(done), alpha))
        crits.append(crit)
        now = int(np.count_nonzero(top > crit))
        if now <= done or not stepdown:
            done = max(done, now)
            break
        done = now
    rejected = np.zeros(size, dtype=bool)
    rejected[order[:done]] = True
    reject_f[rejected & ~swap] = True
    reject_b[rejected & swap] = True
    return reject_f, reject_b, crits


def critical_value(maxima: np.ndarray, alpha: float) -> float:
    """The ``k``-th smallest of B simulated maxima, ``k = ceil((1 - alpha) (B + 1))``.

    With the observed maximum exchangeable with the B draws, ``P(T_max > c) <= alpha`` holds
    exactly for the simulation step (the same ``+1`` as in a Monte-Carlo p-value,
    ``(1 + #exceed) / (B + 1)``); ``+inf`` when B is too small for that (B < 1/alpha - 1).
    """
    maxima = np.asarray(maxima, dtype=float)
    k = int(np.ceil((1.0 - alpha) * (maxima.size + 1) - 1e-9))
    if k > maxima.size:
        return float("inf")
    return float(np.partition(maxima, k - 1)[k - 1])


def _null_values(null_t: np.ndarray, hi: np.ndarray, lo: np.ndarray, scale: np.ndarray):
    """``(Z_hi - Z_lo) * scale`` for every listed pair (rows) and draw (columns)."""
    values = null_t[hi]
    values -= null_t[lo]
    values *= scale[:, None]
    return values
