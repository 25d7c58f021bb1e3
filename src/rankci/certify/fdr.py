"""False-discovery-rate q-values (Benjamini-Hochberg and Benjamini-Yekutieli).

These control the **false discovery rate** (FDR), the expected share of false rejections among
the rejections, not the family-wise error rate (FWER) that every certified dominance, rank
interval and certified order of rankci controls. They are a separate column for users who want
discovery flags beside per-task results; nothing certified is ever derived from them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rankci._base import check_choice

#: The FDR procedures and the error rate each controls, for labelling output columns.
FDR_PROCEDURES: dict[str, str] = {
    "bh": "FDR (Benjamini-Hochberg; independent or positively dependent p-values); not FWER",
    "by": "FDR (Benjamini-Yekutieli; any dependence); not FWER",
}


def fdr_qvalues(pvalues: ArrayLike, method: Literal["bh", "by"] = "bh") -> NDArray[np.float64]:
    r"""BH or BY q-values (FDR-adjusted p-values), in the order given.

    With the :math:`m` p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`,

    .. math::

        q_{(i)} = \min\Bigl(1,\ \min_{j \ge i} \frac{c_m\, m\, p_{(j)}}{j}\Bigr),
        \qquad c_m = 1 \text{ (BH)}, \quad c_m = \sum_{k=1}^{m} 1/k \text{ (BY)}.

    Rejecting every hypothesis with :math:`q \le \alpha` controls the false discovery rate at
    :math:`\alpha`: under independence or positive regression dependence for BH (Benjamini and
    Hochberg 1995), under any dependence for BY (Benjamini and Yekutieli 2001). This is **not**
    family-wise control: no certified dominance, rank interval or order may be read from it.

    Parameters
    ----------
    pvalues : array_like
        The p-values, any shape; each in [0, 1]. NaN entries (a pairwise matrix's diagonal) are
        not part of the family and stay NaN, as in :func:`rankci.certify.adjust_pvalues`.
    method : {"bh", "by"}
        Benjamini-Hochberg or Benjamini-Yekutieli.

    Returns
    -------
    numpy.ndarray
        The q-values, the same shape as ``pvalues``.

    Raises
    ------
    ValueError
        For an unknown method, or p-values outside [0, 1].

    References
    ----------
    Benjamini, Y. and Hochberg, Y. (1995), Controlling the false discovery rate, JRSS B 57(1).
    Benjamini, Y. and Yekutieli, D. (2001), The control of the false discovery rate in multiple
    testing under dependency, Annals of Statistics 29(4).

    Examples
    --------
    >>> fdr_qvalues([0.01, 0.04, 0.03, 0.5]).round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.5]
    >>> fdr_qvalues([0.01, 0.04, 0.03, 0.5], method="by").round(4).tolist()
    [0.0833, 0.1111, 0.1111, 1.0]
    >>> fdr_qvalues([[np.nan, 0.01], [0.04, np.nan]]).tolist()
    [[nan, 0.02], [0.04, nan]]
    """
    check_choice("FDR method", method, FDR_PROCEDURES)
    p = np.asarray(pvalues, dtype=float)
    finite = ~np.isnan(p)
    if (p[finite] < 0).any() or (p[finite] > 1).any():
        raise ValueError("p-values must be in [0, 1]")
    flat = p[finite]
    m = flat.size
    result = np.full(p.shape, np.nan)
    if m == 0:
        return result
    order = np.argsort(flat, kind="stable")
    ranks = np.arange(1, m + 1, dtype=float)
    factor = float(np.sum(1.0 / ranks)) if method == "by" else 1.0
    scaled = factor * m * flat[order] / ranks
    monotone = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(monotone, 1.0)
    result[finite] = out
    return result
