"""Anytime-valid score intervals: a confidence sequence for each model's mean score.

A live leaderboard is read again and again while the scores arrive, so the interval beside each
score must hold at every look at once, like the monitor's rank statements. This module gives
confidence sequences (CS) for the mean of a [0, 1]-bounded score, for both of the monitor's
sampling models:

* ``finite`` (model F): the N items of a fixed benchmark are revealed in one uniformly random
  order (sampling *without replacement*); the target is the mean ``mu`` over all N items;
* ``iid`` (model S): the items are i.i.d. draws; the target is the expected score.

Construction (Waudby-Smith and Ramdas 2020, 2024). Let ``X_1, X_2, ...`` be a model's scores in
evaluation order, ``S_{i-1} = X_1 + ... + X_{i-1}``, and under model F let
``mu_i = (N mu - S_{i-1}) / (N - i + 1)``, the mean of the items not yet seen (under model S
``mu_i = mu``): given the past, ``X_i`` lies in [0, 1] with mean ``mu_i``. For predictable bets
``lambda_i`` and penalties ``p_i``,

    M_t(mu) = prod_{i <= t} exp(lambda_i (X_i - mu_i) - p_i)

and its mirror (``-(X_i - mu_i)``) are nonnegative supermartingales, with

* ``bound="bernstein"`` (default, empirical Bernstein): ``p_i = (X_i - m_{i-1})^2 psi(lambda_i)``,
  ``psi(l) = -log(1 - l) - l``, ``lambda_i`` in [0, 1), where ``m_{i-1}`` is a predictable
  estimate in [0, 1]. (Fan, Grama and Liu 2015: ``exp(l xi - xi^2 psi(l)) <= 1 + l xi`` for
  ``xi = X_i - m_{i-1} >= -1``; multiplying by ``exp(l (m_{i-1} - mu_i))`` and taking the
  conditional mean gives at most ``exp(l d)(1 - l d) <= 1``, ``d = m_{i-1} - mu_i``.) It adapts
  to the scores' variance: much narrower than Hoeffding for accuracies near 0 or 1 and for judge
  scores that vary little.
* ``bound="hoeffding"``: ``p_i = lambda_i^2 / 8`` (Hoeffding's lemma), any real ``lambda_i``.

By Ville's inequality each exceeds ``2/alpha`` with probability at most ``alpha/2``, ever.
``mu_i`` is linear in ``mu``, so the means not rejected at time t form the interval

    [(A_t - B_t) / C_t, (A_t + B_t) / C_t],   A_t = sum_i lambda_i (X_i + S_{i-1} / (N - i + 1)),
    C_t = sum_i lambda_i N / (N - i + 1),    B_t = log(2/alpha) + sum_i p_i

(model S: ``A_t = sum lambda_i X_i``, ``C_t = sum lambda_i``). Bets (predictable plug-ins of
Waudby-Smith and Ramdas 2024): Bernstein ``lambda_i = min(1/2, sqrt(2 log(2/alpha) /
(v_{i-1} i log(i + 1))))`` with ``m_i = (1/2 + S_i) / (i + 1)``,
``v_i = (1/4 + sum_{s <= i} (X_s - m_s)^2) / (i + 1)``; Hoeffding
``lambda_i = min(1, sqrt(8 log(2/alpha) / (i log(i + 1))))``. Under model F the mean also lies in
``[S_t / N, (S_t + N - t) / N]`` (the unseen items score between 0 and 1), which pins it exactly
once all N items are seen. The reported interval is the running intersection over ``i = 1..t`` of
all these intervals and [0, 1]; it holds at every t simultaneously, and at any stopping time (a
model retired early), with probability at least ``1 - alpha`` (for each model on its own).

References
----------
Waudby-Smith, I. and Ramdas, A. (2020). Confidence sequences for sampling without replacement.
NeurIPS 33.
Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
JRSS-B 86(1), 1-27.
Fan, X., Grama, I. and Liu, Q. (2015). Exponential inequalities for martingales with applications.
Electronic Journal of Probability 20, 1-22.
Howard, S. R., Ramdas, A., McAuliffe, J. and Sekhon, J. (2021). Time-uniform, nonparametric,
nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055-1080.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankci._base import check_alpha, check_choice
from rankci.sequential.wealth import SAMPLINGS

__all__ = ["BOUNDS", "MeanCS", "mean_confidence_sequence"]

BOUNDS = ("bernstein", "hoeffding")
BERNSTEIN_CAP = 0.5
_CARRIES = ("s", "d", "a", "c", "q")  # sum X, sum (X - m)^2, A, C, sum of penalties


def _carried(start: np.ndarray, increments: np.ndarray) -> np.ndarray:
    """Running sums continuing ``start``, added in item order (so that splitting the rows into
    blocks never changes a bit)."""
    return np.cumsum(np.concatenate([start[None, :], increments]), axis=0)[1:]


def _rows(values, used, i, carry, n_items, log_term, bound):
    """Per-row intervals (B x K, before the running intersection) and the running sums."""
    s = _carried(carry["s"], values)
    s_prev = s - values
    if bound == "bernstein":
        m_now = (0.5 + s) / (i + 1.0)  # m_i
        m_prev = (0.5 + s_prev) / i  # m_{i-1}
        d = _carried(carry["d"], np.where(used, (values - m_now) ** 2, 0.0))
        var_prev = (0.25 + d - np.where(used, (values - m_now) ** 2, 0.0)) / i  # v_{i-1}
        lam = np.minimum(BERNSTEIN_CAP, np.sqrt(2.0 * log_term / (var_prev * i * np.log1p(i))))
        lam = np.where(used, lam, 0.0)
        penalty = (values - m_prev) ** 2 * (-np.log1p(-lam) - lam)
    else:
        d = _carried(carry["d"], np.zeros_like(values))
        lam = np.where(used, np.minimum(1.0, np.sqrt(8.0 * log_term / (i * np.log1p(i)))), 0.0)
        penalty = lam**2 / 8.0
    if n_items is not None:
        left = np.maximum(n_items - i + 1.0, 1.0)  # N - i + 1 (rows past N are not used)
        a = _carried(carry["a"], lam * (values + s_prev / left))
        c = _carried(carry["c"], lam * n_items / left)
    else:
        a = _carried(carry["a"], lam * values)
        c = _carried(carry["c"], lam)
    q = _carried(carry["q"], np.where(used, penalty, 0.0))
    bound_t = log_term + q
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(used, (a - bound_t) / c, 0.0)
        upper = np.where(used, (a + bound_t) / c, 1.0)
    sure_lo = sure_hi = None
    if n_items is not None:
        sure_lo = np.where(used, s / n_items, 0.0)  # S_t / N
        sure_hi = np.where(used, (s + n_items - np.where(used, i, 0.0)) / n_items, 1.0)
        lower, upper = np.maximum(lower, sure_lo), np.minimum(upper, sure_hi)
    sums = {"s": s, "d": d, "a": a, "c": c, "q": q}
    return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0), sure_lo, sure_hi, sums


class MeanCS:
    """The confidence sequences of K columns, fed block by block (rows in evaluation order).

    Running sums are carried between blocks by prepending them to each block's cumulative sums,
    so the intervals are bit-for-bit those of all the rows at once, however the rows were split.

    Parameters
    ----------
    n_columns : int
    alpha : float
    sampling : {"finite", "iid"}
    n_items : int or array (K,), optional
        N (one, or one per column), required under model F.
    bound : {"bernstein", "hoeffding"}
    """

    def __init__(
        self,
        n_columns: int,
        *,
        alpha: float = 0.05,
        sampling: str = "finite",
        n_items: int | Sequence[int] | np.ndarray | None = None,
        bound: str = "bernstein",
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.sampling = check_choice("sampling", sampling, SAMPLINGS)
        self.bound = check_choice("bound", bound, BOUNDS)
        k = int(n_columns)
        if sampling == "finite":
            if n_items is None:
                raise ValueError("sampling='finite' needs n_items, the number N of items")
            self.n_items = np.broadcast_to(np.asarray(n_items, dtype=float), (k,)).copy()
        else:
            self.n_items = None
        self.count = np.zeros(k, dtype=np.int64)
        self._carry = {key: np.zeros(k) for key in _CARRIES}
        self._lo = np.zeros(k)
        self._hi = np.ones(k)
        self._log_term = np.log(2.0 / self.alpha)

    @property
    def total(self) -> np.ndarray:
        """Sum of the scores consumed, per column."""
        return self._carry["s"].copy()

    def _prepare(self, rows, use):
        rows = np.asarray(rows, dtype=float)
        if rows.ndim != 2 or rows.shape[1] != len(self.count):
            raise ValueError(f"rows must be (B, {len(self.count)}), got shape {rows.shape}")
        b, k = rows.shape
        use = np.full(k, b, dtype=np.int64) if use is None else np.asarray(use, dtype=np.int64)
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
        big_n = None if self.n_items is None else self.n_items[None, :]
        return values, used, i, big_n, use

    def update(self, rows: np.ndarray, use: Sequence[int] | np.ndarray | None = None) -> None:
        """Consume ``use[j]`` leading rows of ``rows`` (B x K) for column j (default all B)."""
        values, used, i, big_n, use = self._prepare(rows, use)
        if values.shape[0] == 0 or not use.any():
            return
        lower, upper, _, _, sums = _rows(
            values, used, i, self._carry, big_n, self._log_term, self.bound
        )
        self._lo = np.maximum(self._lo, lower.max(axis=0))
        self._hi = np.minimum(self._hi, upper.min(axis=0))
        last, cols, moved = np.maximum(use - 1, 0), np.arange(len(use)), use > 0
        for key in _CARRIES:
            self._carry[key][moved] = sums[key][last, cols][moved]
        self.count += use

    def path(self, rows: np.ndarray, use=None) -> tuple[np.ndarray, np.ndarray]:
        """Consume rows like :meth:`update` and return the running intervals after each row."""
        values, used, i, big_n, use = self._prepare(rows, use)
        lower, upper, sure_lo, sure_hi, _ = _rows(
            values, used, i, self._carry, big_n, self._log_term, self.bound
        )
        lower = np.maximum.accumulate(np.vstack([self._lo[None], lower]), axis=0)[1:]
        upper = np.minimum.accumulate(np.vstack([self._hi[None], upper]), axis=0)[1:]
        empty = lower > upper  # an error event: the sure range (model F) or a point
        if sure_lo is not None:
            lower, upper = np.where(empty, sure_lo, lower), np.where(empty, sure_hi, upper)
        else:
            mid = (lower + upper) / 2.0
            lower, upper = np.where(empty, mid, lower), np.where(empty, mid, upper)
        self.update(rows, use)
        return lower, upper

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """The current intervals (lower, upper); [0, 1] for a column with no row yet."""
        lo, hi = self._lo.copy(), self._hi.copy()
        empty = lo > hi  # an empty intersection (an error event): the sure range, or a point
        if empty.any():
            s = self._carry["s"]
            if self.n_items is not None:
                fall_lo = s / self.n_items
                fall_hi = (s + self.n_items - self.count) / self.n_items
            else:
                fall_lo = fall_hi = (lo + hi) / 2.0
            lo, hi = np.where(empty, fall_lo, lo), np.where(empty, fall_hi, hi)
        return lo, hi


def mean_confidence_sequence(
    x: np.ndarray,
    *,
    alpha: float = 0.05,
    sampling: str = "finite",
    n_items: int | Sequence[int] | np.ndarray | None = None,
    counts: Sequence[int] | np.ndarray | None = None,
    bound: str = "bernstein",
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
    bound : {"bernstein", "hoeffding"}
        Empirical Bernstein (adapts to the variance; default) or Hoeffding.
    path : bool
        Return the running intervals after every row (arrays T x K) instead of the last one.

    Returns
    -------
    lower, upper : arrays (K,) (or (T, K) with ``path=True``)
        The interval after each column's ``counts`` rows ([0, 1] when the count is 0).

    References
    ----------
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by
    betting. Journal of the Royal Statistical Society Series B 86(1), 1-27.
    Howard, S. R., Ramdas, A., McAuliffe, J. and Sekhon, J. (2021). Time-uniform, nonparametric,
    nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055-1080.

    Examples
    --------
    >>> x = np.array([[1.0], [0.0], [1.0], [1.0]])
    >>> lo, hi = mean_confidence_sequence(x, sampling="finite", n_items=4)
    >>> float(lo[0]), float(hi[0])          # all N items seen: the mean itself
    (0.75, 0.75)
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"x must be a (T, K) array of scores, got shape {x.shape}")
    running = MeanCS(x.shape[1], alpha=alpha, sampling=sampling, n_items=n_items, bound=bound)
    if path:
        return running.path(x, counts)
    running.update(x, counts)
    return running.interval()
