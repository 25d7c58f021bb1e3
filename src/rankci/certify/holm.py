"""Family-wise error control: Holm's step-down and Bonferroni.

Both are valid under any dependence between the p-values, which is what rank intervals built from
pairwise tests on shared items need (the pairwise statistics are strongly correlated).

References
----------
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal of
Statistics 6(2), 65-70.
"""

from __future__ import annotations

import numpy as np

from rankci._base import check_alpha, check_choice

METHODS = ("holm", "bonferroni")

__all__ = ["METHODS", "adjust_pvalues", "reject", "rejections_per_row"]


def adjust_pvalues(pvalues: np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values, as R's ``p.adjust``; NaN entries are not part of the family.

    With K finite p-values sorted as p_(1) <= ... <= p_(K):

    * Bonferroni: ``min(1, K p_(i))``.
    * Holm: ``max_{k <= i} min(1, (K - k + 1) p_(k))``.

    A hypothesis is rejected at level alpha when its adjusted p-value is <= alpha.

    Parameters
    ----------
    pvalues : array_like
        Any shape (for example M x M with NaN on the diagonal).
    method : {"holm", "bonferroni"}

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    check_choice("method", method, METHODS)
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    values = p[finite]
    k = values.size
    if k == 0:
        return out
    if method == "bonferroni":
        out[finite] = np.minimum(1.0, k * values)
        return out
    order = np.argsort(values, kind="stable")
    stepped = np.minimum(1.0, (k - np.arange(k)) * values[order])
    adjusted = np.empty(k)
    adjusted[order] = np.maximum.accumulate(stepped)
    out[finite] = adjusted
    return out


def reject(pvalues: np.ndarray, alpha: float, method: str = "holm") -> np.ndarray:
    """Which hypotheses the procedure rejects at family-wise level ``alpha``.

    Holm rejects ``H_(1), ..., H_(r)`` where r is the largest index with
    ``p_(i) <= alpha / (K - i + 1)`` for every ``i <= r``. Only p-values <= alpha can be rejected,
    so only those are sorted (the family size K still counts every finite p-value); the result is
    the set ``{p <= p_(r)}``.

    Returns
    -------
    ndarray of bool, the shape of ``pvalues``; False where the p-value is NaN.
    """
    check_choice("method", method, METHODS)
    alpha = check_alpha(alpha)
    p = np.asarray(pvalues, dtype=float)
    finite = np.isfinite(p)
    k = int(finite.sum())
    if method == "bonferroni":
        return finite & (p * k <= alpha)
    candidates = np.sort(p[finite & (p <= alpha)])
    if candidates.size == 0:
        return np.zeros(p.shape, dtype=bool)
    passes = candidates <= alpha / (k - np.arange(candidates.size))
    n_rejected = candidates.size if passes.all() else int(np.argmin(passes))
    if n_rejected == 0:
        return np.zeros(p.shape, dtype=bool)
    # Tied p-values get the same decision (a tie with p_(r) passes its later, larger threshold),
    # so the rejected set is exactly {p <= p_(r)}.
    return finite & (p <= candidates[n_rejected - 1])


def rejections_per_row(pvalues: np.ndarray, alpha: float, method: str = "holm") -> np.ndarray:
    """Number of rejections when each row of ``pvalues`` is its own family (NaN excluded).

    Used by the marginal rank intervals, where each model's comparisons form one family. Holm's
    step-down runs on all rows at once: rows are sorted, and the count is the length of the leading
    run of ``p_(i) <= alpha / (K_row - i + 1)``.
    """
    check_choice("method", method, METHODS)
    alpha = check_alpha(alpha)
    p = np.atleast_2d(np.asarray(pvalues, dtype=float))
    sizes = np.isfinite(p).sum(axis=1)
    if method == "bonferroni":
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.isfinite(p) & (p * sizes[:, None] <= alpha)).sum(axis=1)
    ordered = np.sort(np.where(np.isfinite(p), p, np.inf), axis=1)
    steps = sizes[:, None] - np.arange(p.shape[1])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        passes = (ordered <= alpha / steps) & (steps > 0)
    failed = ~passes
    first_failure = np.where(failed.any(axis=1), failed.argmax(axis=1), p.shape[1])
    return first_failure
