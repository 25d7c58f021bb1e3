"""Post-hoc tests after an omnibus test (Tukey HSD, Nemenyi) on a vectorised studentized range.

* :func:`tukey_hsd` -- Tukey's honestly significant difference on the repeated-measures ANOVA error
  term: exact family-wise error control for a balanced design with i.i.d. (spherical) errors only.
* :func:`nemenyi` -- the Nemenyi test on Friedman mean ranks (Demsar 2006).
* :func:`tukey_pvalues`, :func:`studentized_range_sf`, :func:`studentized_range_isf` -- the
  studentized range, re-exported from :mod:`rankci.evidence.studentized_range` (where the mixed
  model's contrasts read it too).

The studentized range is evaluated for all pairs at once (see that module); ``backend="auto"``
keeps scipy's per-value computation for at most :data:`EXACT_PAIRS` values.

References
----------
Tukey, J. W. (1953). The problem of multiple comparisons. Unpublished manuscript, Princeton.
Demsar, J. (2006). Statistical comparisons of classifiers over multiple data sets. JMLR 7, 1-30.
Lund, R. E. and Lund, J. R. (1983). Algorithm AS 190: probabilities and upper quantiles for the
studentized range. Journal of the Royal Statistical Society C 32(2), 204-210.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rankci._base import check_alpha, check_choice, jsonable
from rankci.analyses.omnibus import Data, friedman, rm_anova
from rankci.evidence.studentized_range import (
    EXACT_PAIRS,
    STUDENTIZED_RANGE_BACKENDS,
    studentized_range_critical,
    studentized_range_isf,
    studentized_range_sf,
    tukey_pvalues,
    use_scipy,
)

__all__ = [
    "EXACT_PAIRS",
    "STUDENTIZED_RANGE_BACKENDS",
    "PostHoc",
    "nemenyi",
    "studentized_range_isf",
    "studentized_range_sf",
    "tukey_hsd",
    "tukey_pvalues",
]


@dataclass(frozen=True, repr=False, eq=False)
class PostHoc:
    """All pairwise comparisons after an omnibus test (Tukey HSD or Nemenyi).

    Attributes
    ----------
    procedure : {"tukey", "nemenyi"}
        Which post-hoc procedure (the word of ``Ranking.procedure``; "method" names the choice
        of an analysis only).
    models : tuple of str
    table : DataFrame
        One row per pair ``first - second``: estimate (difference of means, or of mean ranks),
        se, q (studentized range statistic), p_adjusted, lower, upper (simultaneous interval).
    alpha : float
    df : float
        Degrees of freedom of the studentized range (inf for Nemenyi).
    critical_value : float
        ``q_{1-alpha; k, df} / sqrt(2)``: a pair differs when ``|estimate| / se`` exceeds it.
    n_items : int
    guarantee : str
    excluded : dict
    """

    procedure: str
    models: tuple[str, ...]
    table: pd.DataFrame
    alpha: float
    df: float
    critical_value: float
    n_items: int
    guarantee: str
    excluded: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict:
        return jsonable(
            {
                "procedure": self.procedure,
                "alpha": self.alpha,
                "df": self.df,
                "critical_value": self.critical_value,
                "n_items": self.n_items,
                "pairs": self.table.replace({np.nan: None}).to_dict(orient="records"),
                "guarantee": self.guarantee,
                "excluded": self.excluded,
            }
        )

    def __repr__(self) -> str:
        significant = int((self.table["p_adjusted"] <= self.alpha).sum())
        return (
            f"PostHoc(procedure={self.procedure!r}, {len(self.models)} models, "
            f"{len(self.table)} pairs, {significant} significant at alpha={self.alpha:g})"
        )


def _pair_table(models, estimate_of, se, q_stat, p_adj, half_width) -> pd.DataFrame:
    k = len(models)
    j, l = np.triu_indices(k, 1)
    names = np.asarray(models, dtype=object)
    estimate = estimate_of[j] - estimate_of[l]
    return pd.DataFrame(
        {
            "first": names[j],
            "second": names[l],
            "estimate": estimate,
            "se": se,
            "q": q_stat(estimate),
            "p_adjusted": p_adj(estimate),
            "lower": estimate - half_width,
            "upper": estimate + half_width,
        }
    )


def tukey_hsd(data: Data, alpha: float = 0.05, *, backend: str = "auto") -> PostHoc:
    """Tukey's HSD for the repeated-measures design: every pair of model means.

    ``q = |m_j - m_l| / sqrt(MS_error / n)`` against the studentized range with k means and
    (n-1)(k-1) df; simultaneous intervals ``m_j - m_l +- q_{1-alpha} sqrt(MS_error / n)``.
    The family-wise error rate is exactly alpha for a balanced design with i.i.d. errors
    (sphericity); otherwise it is an approximation -- for clustered or unbalanced data prefer
    mixed-model contrasts with Holm or Bonferroni (:func:`rankci.mixed_model`).

    Parameters
    ----------
    data : Scores, UnitScores, DataFrame or path
        Items scored by every model are used (as in :func:`rankci.rm_anova`).
    alpha : float, default 0.05
        One minus the simultaneous coverage of the intervals.
    backend : {"auto", "scipy", "vectorised"}, default "auto"
        How the studentized range is evaluated (:func:`tukey_pvalues`); with "auto", scipy's
        per-pair integration for at most :data:`EXACT_PAIRS` pairs, the vectorised one beyond.

    Returns
    -------
    PostHoc
        ``table`` has one row per unordered pair: estimate ``m_first - m_second``, its standard
        error, the statistic ``q``, the Tukey-adjusted p-value and the simultaneous interval.

    References
    ----------
    Tukey, J. W. (1953). The Problem of Multiple Comparisons. Unpublished manuscript, Princeton
    University. Reprinted in The Collected Works of John W. Tukey, Vol. VIII (1994), Chapman & Hall.
    Kirk, R. E. (2013). Experimental Design: Procedures for the Behavioral Sciences, 4th ed.,
    Ch. 8 (randomized block designs). SAGE, Thousand Oaks.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> y = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 0], [1, 1, 0]])
    >>> result = tukey_hsd(Scores.from_matrix(y))
    >>> [round(float(p), 6) for p in result.table["p_adjusted"]]
    [0.835661, 0.252095, 0.510161]
    """
    alpha = check_alpha(alpha)
    check_choice("backend", backend, STUDENTIZED_RANGE_BACKENDS)
    anova = rm_anova(data)
    k, n = anova.n_models, anova.n_items
    n_pairs = k * (k - 1) // 2
    # the path is chosen once, for the p-values and the critical value alike
    backend = "scipy" if use_scipy(backend, n_pairs) else "vectorised"
    se_mean = np.sqrt(anova.ms_error / n)
    critical = studentized_range_critical(alpha, k, anova.df_den, backend, n_pairs)
    table = _pair_table(
        anova.models,
        anova.means,
        np.sqrt(2.0) * se_mean,
        lambda est: np.abs(est) / se_mean,
        lambda est: tukey_pvalues(est / (np.sqrt(2.0) * se_mean), k, anova.df_den, backend=backend),
        critical * se_mean,
    )
    return PostHoc(
        procedure="tukey",
        models=anova.models,
        table=table,
        alpha=alpha,
        df=anova.df_den,
        critical_value=critical / np.sqrt(2.0),
        n_items=n,
        guarantee=(
            f"Family-wise error at most {alpha:g} across all {len(table)} pairs if the design is "
            "balanced with i.i.d. (spherical) errors; approximate otherwise (for clustered or "
            "unbalanced data use mixed-model contrasts with Holm or Bonferroni)."
        ),
        excluded=dict(anova.excluded),
    )


def nemenyi(data: Data, alpha: float = 0.05, *, backend: str = "auto") -> PostHoc:
    """Nemenyi's test after Friedman: every pair of mean ranks.

    ``z = (R_j - R_l) / sqrt(k (k + 1) / (6 n))`` with ``R`` the mean ranks;
    ``p = P(Q_{k, inf} >= sqrt(2) |z|)`` and critical difference
    ``CD = q_{1-alpha; k, inf} / sqrt(2) * sqrt(k (k + 1) / (6 n))`` (Demsar 2006, Sec. 3.2.2).
    Asymptotic in the number of items; ties are not corrected for.

    Parameters
    ----------
    data : Scores, UnitScores, DataFrame or path
        Items scored by every model are used (as in :func:`rankci.friedman`).
    alpha : float, default 0.05
        Level of the critical difference.
    backend : {"auto", "scipy", "vectorised"}, default "auto"
        How the studentized range is evaluated (:func:`tukey_pvalues`).

    Returns
    -------
    PostHoc
        ``table`` has one row per unordered pair: the difference of mean ranks, its standard
        error, ``z``, the adjusted p-value and the interval; ``critical_value`` is the critical
        difference in units of the standard error.

    References
    ----------
    Nemenyi, P. B. (1963). Distribution-free Multiple Comparisons. PhD thesis, Princeton University.
    Demsar, J. (2006). Statistical comparisons of classifiers over multiple data sets. Journal of
    Machine Learning Research 7, 1-30.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> y = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 0], [1, 1, 0]])
    >>> result = nemenyi(Scores.from_matrix(y))
    >>> [round(float(p), 6) for p in result.table["p_adjusted"]]
    [0.883389, 0.328971, 0.609411]
    """
    alpha = check_alpha(alpha)
    check_choice("backend", backend, STUDENTIZED_RANGE_BACKENDS)
    result = friedman(data)
    k, n = result.n_models, result.n_items
    n_pairs = k * (k - 1) // 2
    backend = "scipy" if use_scipy(backend, n_pairs) else "vectorised"
    se = np.sqrt(k * (k + 1.0) / (6.0 * n))
    critical = studentized_range_critical(alpha, k, np.inf, backend, n_pairs) / np.sqrt(2.0)
    table = _pair_table(
        result.models,
        result.mean_ranks,
        se,
        lambda est: np.sqrt(2.0) * np.abs(est) / se,
        lambda est: tukey_pvalues(est / se, k, np.inf, backend=backend),
        critical * se,
    )
    return PostHoc(
        procedure="nemenyi",
        models=result.models,
        table=table,
        alpha=alpha,
        df=np.inf,
        critical_value=critical,
        n_items=n,
        guarantee=(
            f"Family-wise error approximately at most {alpha:g} across all {len(table)} pairs of "
            f"mean ranks (large-sample studentized range); critical difference in mean rank "
            f"{critical * se:.4g}."
        ),
        excluded=dict(result.excluded),
    )
