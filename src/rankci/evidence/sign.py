"""The exact sign (McNemar) test of every ordered pair, for binary unit scores.

References
----------
McNemar, Q. (1947). Note on the sampling error of the difference between correlated proportions
or percentages. Psychometrika 12(2), 153-157.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from rankci.data import UnitScores
from rankci.evidence.moments import TestArrays, largest_n

__all__ = ["sign_test"]


def sign_test(units: UnitScores, delta: float) -> TestArrays:
    """Exact one-sided sign tests (:func:`rankci.pairwise_tests` with ``test="sign"``).

    Binary unit scores and ``delta = 0`` only: the test targets the median difference, which
    for 0/1 scores is the sign of the discordant units.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0]])
    >>> float(sign_test(Scores.from_matrix(x).units(), 0.0).pvalue[0, 1])  # 3 of 3 discordant
    0.125
    """
    if not units.binary:
        raise ValueError(
            f"the sign (McNemar) test needs binary unit scores, but unit={units.unit!r} "
            "gives scores other than 0 and 1; it targets the median difference, not the mean. "
            "Use test='t' or 'wilcoxon' for non-binary scores"
        )
    if delta != 0:
        raise ValueError("the sign test supports only delta = 0; use test='t' for a margin")
    estimate, statistic, pvalue, n, se, df = _sign(units.values)
    n_max = largest_n(n)
    return TestArrays(estimate, statistic, pvalue, n, se, df, 1.0 if n_max < 2 else 0.5**n_max)


def _sign(x: np.ndarray):
    """Exact one-sided McNemar / sign test: P(Bin(b + c, 1/2) >= b), b = #(x_j=1, x_l=0)."""
    finite = np.isfinite(x)
    ones = np.where(finite, x, 0.0)
    zeros = finite & (x == 0)
    wins = ones.T @ zeros.astype(float)  # wins[j, l] = #units with x_j = 1 and x_l = 0
    n = (finite.astype(float).T @ finite.astype(float)).round().astype(np.int64)
    wins = wins.round().astype(np.int64)
    discordant = wins + wins.T
    pvalue = special.bdtrc(np.maximum(wins - 1, 0), np.maximum(discordant, 1), 0.5)
    pvalue = np.where(wins > 0, pvalue, 1.0)  # P(Bin >= 0) = 1
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = (wins - wins.T) / n
    return estimate, wins.astype(float), pvalue, n, None, None
