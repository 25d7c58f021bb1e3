"""Anytime-valid score intervals: a confidence sequence for each model's mean score.

A live leaderboard is read again and again while the scores arrive, so the interval beside each
score must hold at every look at once, like the monitor's rank statements. This module gives the
Hoeffding-type confidence sequence (CS) for the mean of a [0, 1]-bounded quantity, for both of
the monitor's sampling models:

* ``finite`` (model F): the N items of a fixed benchmark are revealed in one uniformly random
  order (sampling *without replacement*); the target is the mean ``mu`` over all N items;
* ``iid`` (model S): the items are i.i.d. draws; the target is the expected score.

Construction (Waudby-Smith and Ramdas 2020, Hoeffding-type CS; Waudby-Smith and Ramdas 2024,
predictable plug-in). Let ``X_1, X_2, ...`` be a model's scores in evaluation order,
``S_{i-1} = X_1 + ... + X_{i-1}``, and under model F let
``mu_i = (N mu - S_{i-1}) / (N - i + 1)`` be the mean of the items not yet seen (under model S
``mu_i = mu``). Given the past, ``X_i`` lies in [0, 1] with mean ``mu_i``, so by Hoeffding's lemma

    M_t(mu) = prod_{i <= t} exp(lambda_i (X_i - mu_i) - lambda_i^2 / 8)

is a nonnegative supermartingale for every predictable ``lambda_i``, and so is its mirror with
``-lambda_i``. By Ville's inequality each exceeds ``2/alpha`` with probability at most
``alpha/2``, ever. ``mu_i`` is linear in ``mu``, so the set of ``mu`` not rejected at time t is the
interval

    [(A_t - B_t) / C_t, (A_t + B_t) / C_t],   A_t = sum_i lambda_i (X_i + S_{i-1} / (N - i + 1)),
    C_t = sum_i lambda_i N / (N - i + 1),    B_t = log(2/alpha) + sum_i lambda_i^2 / 8

(model S: ``A_t = sum lambda_i X_i``, ``C_t = sum lambda_i``), with
``lambda_i = min(1, sqrt(8 log(2/alpha) / (i log(i + 1))))``. Under model F the mean is also known
to lie in ``[S_t / N, (S_t + N - t) / N]`` (the unseen items score between 0 and 1), which pins it
exactly once all N items are seen. The reported interval is the running intersection over
``i = 1..t`` of all these intervals and [0, 1]; it holds at every t simultaneously, and at any
stopping time (a model retired early), with probability at least ``1 - alpha`` (for each model on
its own).

References
----------
Waudby-Smith, I. and Ramdas, A. (2020). Confidence sequences for sampling without replacement.
NeurIPS 33.
Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
JRSS-B 86(1), 1-27.
Howard, S. R., Ramdas, A., McAuliffe, J. and Sekhon, J. (2021). Time-uniform, nonparametric,
nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055-1080.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._checks import check_alpha, check_choice
from .wealth import SAMPLINGS

__all__ = ["hoeffding_lambdas", "mean_confidence_sequence"]


def hoeffding_lambdas(n: int, alpha: float) -> np.ndarray:
    """The predictable bets ``lambda_i = min(1, sqrt(8 log(2/alpha) / (i log(i + 1))))``."""
    i = np.arange(1, n + 1, dtype=float)
    return np.minimum(1.0, np.sqrt(8.0 * np.log(2.0 / alpha) / (i * np.log1p(i))))


def mean_confidence_sequence(
    x: np.ndarray,
    *,
    alpha: float = 0.05,
    sampling: str = "finite",
    n_items: int | Sequence[int] | np.ndarray | None = None,
    counts: Sequence[int] | np.ndarray | None = None,
    path: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Anytime-valid interval for the mean of each column, from its scores in evaluation order.

    Parameters
    ----------
    x : array (T, K)
        Scores in [0, 1], rows in evaluation order, one column per model (or model x cluster).
    alpha : float
        Each column's interval sequence covers its mean at every t with probability >= 1 - alpha.
    sampling : {"finite", "iid"}
        Model F (sampling without replacement from ``n_items`` items) or model S (i.i.d.).
    n_items : int or array (K,), optional
        N of each column under model F (required there).
    counts : array (K,), optional
        How many leading rows of each column to use (a retired model's count stops early);
        default all T rows. Rows past a column's count are ignored and may hold NaN.
    path : bool
        Return the running intervals at every t (arrays T x K) instead of the last one.

    Returns
    -------
    lower, upper : arrays (K,) (or (T, K) with ``path=True``)
        The interval after each column's ``counts`` rows ([0, 1] when the count is 0).

    Examples
    --------
    >>> x = np.array([[1.0], [0.0], [1.0], [1.0]])
    >>> lo, hi = mean_confidence_sequence(x, sampling="finite", n_items=4)
    >>> float(lo[0]), float(hi[0])          # all N items seen: the mean itself
    (0.75, 0.75)
    """
    alpha = check_alpha(alpha)
    check_choice("sampling", sampling, SAMPLINGS)
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"x must be a (T, K) array of scores, got shape {x.shape}")
    t_max, k = x.shape
    counts_arr = np.full(k, t_max, dtype=np.int64) if counts is None else np.asarray(counts)
    if counts_arr.shape != (k,) or (counts_arr < 0).any() or (counts_arr > t_max).any():
        raise ValueError(f"counts must hold {k} integers in 0..{t_max}")
    i = np.arange(1, t_max + 1, dtype=float)[:, None]
    used = i <= counts_arr[None, :]
    values = np.where(used, x, 0.0)
    if (values < 0.0).any() or (values > 1.0).any() or not np.isfinite(values).all():
        raise ValueError("scores must be finite and lie in [0, 1]")
    lam = hoeffding_lambdas(t_max, alpha)[:, None]
    s_now = np.cumsum(values, axis=0)
    if sampling == "finite":
        if n_items is None:
            raise ValueError("sampling='finite' needs n_items, the number N of items")
        big_n = np.broadcast_to(np.asarray(n_items, dtype=float), (k,))[None, :]
        if (counts_arr > big_n[0]).any():
            raise ValueError("a column has more rows than its n_items")
        left = np.maximum(big_n - i + 1.0, 1.0)  # N - i + 1 (rows past N are not used)
        s_prev = s_now - values
        a = np.cumsum(np.where(used, lam * (values + s_prev / left), 0.0), axis=0)
        c = np.cumsum(np.where(used, lam * big_n / left, 0.0), axis=0)
    else:
        a = np.cumsum(np.where(used, lam * values, 0.0), axis=0)
        c = np.cumsum(np.where(used, lam, 0.0), axis=0)
    b = np.log(2.0 / alpha) + np.cumsum(np.where(used, lam**2, 0.0), axis=0) / 8.0
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(used, (a - b) / c, 0.0)
        upper = np.where(used, (a + b) / c, 1.0)
    if sampling == "finite":
        seen = np.where(used, i, 0.0)
        lower = np.maximum(lower, np.where(used, s_now / big_n, 0.0))
        upper = np.minimum(upper, np.where(used, (s_now + big_n - seen) / big_n, 1.0))
    lower = np.maximum.accumulate(np.clip(lower, 0.0, 1.0), axis=0)
    upper = np.minimum.accumulate(np.clip(upper, 0.0, 1.0), axis=0)
    if sampling == "finite":
        # an empty running intersection (an error event) falls back to the sure range
        sure_lo = np.where(used, s_now / big_n, 0.0)
        sure_hi = np.where(used, (s_now + big_n - np.where(used, i, 0.0)) / big_n, 1.0)
        empty = lower > upper
        lower = np.where(empty, np.maximum.accumulate(sure_lo, axis=0), lower)
        upper = np.where(empty, np.minimum.accumulate(sure_hi, axis=0), upper)
    else:
        empty = lower > upper
        mid = (lower + upper) / 2.0
        lower, upper = np.where(empty, mid, lower), np.where(empty, mid, upper)
    if path:
        return lower, upper
    if t_max == 0:
        return np.zeros(k), np.ones(k)
    last = np.maximum(counts_arr - 1, 0)
    cols = np.arange(k)
    lo, hi = lower[last, cols], upper[last, cols]
    none = counts_arr == 0
    return np.where(none, 0.0, lo), np.where(none, 1.0, hi)
