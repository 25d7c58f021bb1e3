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

__all__ = ["MeanCS", "hoeffding_lambdas", "mean_confidence_sequence"]


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
    if not path:
        running = MeanCS(k, alpha=alpha, sampling=sampling, n_items=n_items)
        running.update(x, counts_arr)
        return running.interval()
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
        sure_lo = np.where(used, s_now / big_n, 0.0)  # S_t / N
        sure_hi = np.where(used, (s_now + big_n - seen) / big_n, 1.0)  # (S_t + N - t) / N
        lower, upper = np.maximum(lower, sure_lo), np.minimum(upper, sure_hi)
    lower, upper = np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
    lower = np.maximum.accumulate(lower, axis=0)
    upper = np.minimum.accumulate(upper, axis=0)
    empty = lower > upper
    if sampling == "finite":
        # an empty running intersection (an error event) falls back to the sure range
        lower = np.where(empty, sure_lo, lower)
        upper = np.where(empty, sure_hi, upper)
    else:
        mid = (lower + upper) / 2.0
        lower, upper = np.where(empty, mid, lower), np.where(empty, mid, upper)
    return lower, upper


class MeanCS:
    """The confidence sequences of K columns, fed block by block (rows in evaluation order).

    Running sums are carried between blocks by prepending them to each block's cumulative sums,
    so the intervals are bit-for-bit those of :func:`mean_confidence_sequence` on all the rows
    at once, however the rows were split into blocks.

    Parameters
    ----------
    n_columns : int
    alpha, sampling, n_items
        As for :func:`mean_confidence_sequence` (``n_items``: one N, or one per column).
    """

    def __init__(
        self,
        n_columns: int,
        *,
        alpha: float = 0.05,
        sampling: str = "finite",
        n_items: int | Sequence[int] | np.ndarray | None = None,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.sampling = check_choice("sampling", sampling, SAMPLINGS)
        k = int(n_columns)
        if sampling == "finite":
            if n_items is None:
                raise ValueError("sampling='finite' needs n_items, the number N of items")
            self.n_items = np.broadcast_to(np.asarray(n_items, dtype=float), (k,)).copy()
        else:
            self.n_items = None
        self.count = np.zeros(k, dtype=np.int64)
        self._s = np.zeros(k)  # S: sum of the scores seen
        self._a = np.zeros(k)  # A
        self._c = np.zeros(k)  # C
        self._q = np.zeros(k)  # sum of lambda^2
        self._lo = np.zeros(k)
        self._hi = np.ones(k)
        self._log_term = np.log(2.0 / self.alpha)

    def update(self, rows: np.ndarray, use: Sequence[int] | np.ndarray | None = None) -> None:
        """Consume ``use[j]`` leading rows of ``rows`` (B x K) for column j (default all B)."""
        rows = np.asarray(rows, dtype=float)
        b, k = rows.shape
        use = np.full(k, b, dtype=np.int64) if use is None else np.asarray(use, dtype=np.int64)
        if b == 0 or not use.any():
            return
        if use.shape != (k,) or (use < 0).any() or (use > b).any():
            raise ValueError(f"use must hold {k} integers in 0..{b}")
        if self.n_items is not None and (self.count + use > self.n_items).any():
            raise ValueError("a column has more rows than its n_items")
        r = np.arange(b)[:, None]
        used = r < use[None, :]
        values = np.where(used, rows, 0.0)
        if (values < 0.0).any() or (values > 1.0).any() or not np.isfinite(values).all():
            raise ValueError("scores must be finite and lie in [0, 1]")
        i = (self.count[None, :] + r + 1).astype(float)
        lam = np.minimum(1.0, np.sqrt(8.0 * self._log_term / (i * np.log1p(i))))
        lam = np.where(used, lam, 0.0)

        def carried(start, increments):
            return np.cumsum(np.concatenate([start[None, :], increments]), axis=0)[1:]

        s_now = carried(self._s, values)
        if self.sampling == "finite":
            big_n = self.n_items[None, :]
            left = np.maximum(big_n - i + 1.0, 1.0)  # N - i + 1 (rows past N are not used)
            a = carried(self._a, lam * (values + (s_now - values) / left))
            c = carried(self._c, lam * big_n / left)
        else:
            a = carried(self._a, lam * values)
            c = carried(self._c, lam)
        q = carried(self._q, lam**2)
        bound = self._log_term + q / 8.0
        with np.errstate(invalid="ignore", divide="ignore"):
            lower = np.where(used, (a - bound) / c, 0.0)
            upper = np.where(used, (a + bound) / c, 1.0)
        if self.sampling == "finite":
            sure_lo = np.where(used, s_now / big_n, 0.0)
            sure_hi = np.where(used, (s_now + big_n - np.where(used, i, 0.0)) / big_n, 1.0)
            lower, upper = np.maximum(lower, sure_lo), np.minimum(upper, sure_hi)
        lower, upper = np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
        self._lo = np.maximum(self._lo, lower.max(axis=0))
        self._hi = np.minimum(self._hi, upper.min(axis=0))
        last = np.maximum(use - 1, 0)
        cols = np.arange(k)
        moved = use > 0
        for carry, path in ((self._s, s_now), (self._a, a), (self._c, c), (self._q, q)):
            carry[moved] = path[last, cols][moved]
        self.count += use

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """The current intervals (lower, upper); [0, 1] for a column with no row yet."""
        lo, hi = self._lo.copy(), self._hi.copy()
        empty = lo > hi  # an empty intersection (an error event): the sure range, or a point
        if empty.any():
            if self.sampling == "finite":
                fall_lo = self._s / self.n_items
                fall_hi = (self._s + self.n_items - self.count) / self.n_items
            else:
                fall_lo = fall_hi = (lo + hi) / 2.0
            lo, hi = np.where(empty, fall_lo, lo), np.where(empty, fall_hi, hi)
        return lo, hi
