"""Post-hoc tests after an omnibus test (Tukey HSD, Nemenyi) on a vectorised studentized range.

* :func:`tukey_hsd` -- Tukey's honestly significant difference on the repeated-measures ANOVA error
  term: exact family-wise error control for a balanced design with i.i.d. (spherical) errors only.
* :func:`nemenyi` -- the Nemenyi test on Friedman mean ranks (Demsar 2006).
* :func:`tukey_pvalues`, :func:`studentized_range_sf`, :func:`studentized_range_isf` -- the
  studentized range, re-exported from :mod:`rankci.evidence.studentized_range` (where the mixed
  model's contrasts read it too).

The studentized range is evaluated for all pairs at once (see that module); ``backend="auto"``
keeps scipy's per-value computation for at most :data:`EXACT_PAIRS` values.

Premises (issue 25). Every :class:`PostHoc` records the omnibus test it follows (``omnibus_p``,
``omnibus_rejected`` at its alpha) and the premises of its procedure (``premises``), with a
``notes`` entry and a :class:`~rankci._base.RankciWarning` when one fails:

* Tukey: sphericity (Mauchly's test from the RM-ANOVA it is built on), balance (a complete
  design: every model scored on every item used), and the pooled standard error of a difference
  ``sqrt(2 MS_error / n)`` beside the range of the paired ones ``sd(y_j - y_l) / sqrt(n)``. It
  warns when Mauchly's p < alpha or when a paired SE is more than :data:`SE_FACTOR` times above
  or below the pooled one; the paired Holm tests (``rankci.rank``, ``rankci rank``) make no
  sphericity assumption.
* Nemenyi: exchangeable ranks. It warns when Friedman's test did not reject.

Both procedures are single-step simultaneous tests: they control the family-wise error on their
own, without the omnibus test as a gate, so the omnibus result is reported, not required.

References
----------
Tukey, J. W. (1953). The problem of multiple comparisons. Unpublished manuscript, Princeton.
Demsar, J. (2006). Statistical comparisons of classifiers over multiple data sets. JMLR 7, 1-30.
Benavoli, A., Corani, G. and Mangili, F. (2016). Should we really use post-hoc tests based on
mean-ranks? JMLR 17(5), 1-10.
Lund, R. E. and Lund, J. R. (1983). Algorithm AS 190: probabilities and upper quantiles for the
studentized range. Journal of the Royal Statistical Society C 32(2), 204-210.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rankci._base import RankciWarning, check_alpha, check_choice, format_pvalue, jsonable
from rankci.analyses.omnibus import Data, complete_units, friedman, rm_anova
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
    "INSTEAD",
    "SE_FACTOR",
    "PostHoc",
    "nemenyi",
    "studentized_range_isf",
    "studentized_range_sf",
    "tukey_hsd",
    "tukey_pvalues",
]

#: Tukey's premise on the standard errors: it warns when the paired SE of some difference
#: (``sd(y_j - y_l) / sqrt(n)``) is more than this factor above or below the pooled SE
#: ``sqrt(2 MS_error / n)`` that it uses for every pair (so its interval for that pair is more
#: than twice too wide, or less than half as wide as the pair's own evidence supports).
SE_FACTOR = 2.0

#: what to use instead when a premise fails
INSTEAD = (
    "for pairwise claims use the paired Holm tests (rankci.rank, `rankci rank`): each pair is "
    "tested with its own paired standard error, with no sphericity or exchangeability assumption"
)


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
    omnibus_p : float
        p-value of the omnibus test the procedure follows: the RM-ANOVA F with the
        Greenhouse-Geisser correction (valid without sphericity) for Tukey, Friedman's
        chi-square for Nemenyi.
    omnibus_rejected : bool
        ``omnibus_p <= alpha``. Informative, not a gate: both procedures control the
        family-wise error on their own (see :func:`tukey_hsd`).
    premises : dict
        What the procedure assumes and what the data say about it (Tukey: ``sphericity`` with
        Mauchly's W and p, ``balanced``, ``pooled_se``, ``paired_se_min`` / ``paired_se_max``,
        ``se_factor``; Nemenyi: ``exchangeability`` and the Iman-Davenport p).
    notes : dict
        One sentence per premise that failed (``sphericity``, ``standard_errors``,
        ``exchangeable``) and on the omnibus test (``omnibus``).
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
    omnibus_p: float = float("nan")
    omnibus_rejected: bool | None = None
    premises: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

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
                "omnibus_p": self.omnibus_p,
                "omnibus_rejected": self.omnibus_rejected,
                "premises": self.premises,
                "notes": self.notes,
            }
        )

    def __repr__(self) -> str:
        significant = int((self.table["p_adjusted"] <= self.alpha).sum())
        return (
            f"PostHoc(procedure={self.procedure!r}, {len(self.models)} models, "
            f"{len(self.table)} pairs, {significant} significant at alpha={self.alpha:g}; "
            f"omnibus p = {self.omnibus_p:.3g}{', premises fail' if self.premise_failed else ''})"
        )

    @property
    def premise_failed(self) -> bool:
        """Whether a premise of the procedure failed (its ``notes`` say which)."""
        return any(key != "omnibus" for key in self.notes)


def _p_words(p: float) -> str:
    """``p = 0.998`` or ``p < 1e-300`` (an underflow to 0)."""
    text = format_pvalue(p)
    return f"p {text}" if p == 0 else f"p = {text}"


def _omnibus_note(test: str, null: str, p: float, alpha: float, single_step: str) -> str:
    """The note on the omnibus test (informative: the procedure does not need it as a gate)."""
    if p <= alpha:
        return f"the omnibus {test} rejected {null} at alpha = {alpha:g} ({_p_words(p)})"
    return (
        f"after an omnibus {test} {_p_words(p)} (not rejected at alpha = {alpha:g}): the "
        f"post-hoc differences are not protected by it, and need not be: {single_step} controls "
        "the family-wise error at alpha on its own (a single-step simultaneous test, under its "
        "premises), so a separated pair stands at that level; the omnibus test pools every "
        "contrast while the post-hoc test looks at each pair, and the two can disagree"
    )


def _paired_se_range(y: np.ndarray) -> tuple[float, float]:
    """Smallest and largest ``sd(y_j - y_l) / sqrt(n)`` over the pairs j != l, from the
    covariance matrix (one matrix product): ``var(y_j - y_l) = S_jj + S_ll - 2 S_jl``."""
    n = y.shape[0]
    centred = y - y.mean(axis=0)
    cov = centred.T @ centred
    diag = np.diag(cov).copy()
    cov *= -2.0
    cov += diag[:, None]
    cov += diag[None, :]
    np.fill_diagonal(cov, np.nan)
    scale = 1.0 / ((n - 1.0) * n)
    low, high = np.nanmin(cov), np.nanmax(cov)
    return float(np.sqrt(max(low, 0.0) * scale)), float(np.sqrt(max(high, 0.0) * scale))


def _tukey_premises(anova, y: np.ndarray, alpha: float) -> tuple[dict, dict]:
    """Tukey's premises (sphericity, balance, one pooled SE) and the notes of those that fail."""
    n = anova.n_items
    pooled = float(np.sqrt(2.0 * anova.ms_error / n))
    low, high = _paired_se_range(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(max(high / pooled, pooled / low)) if pooled > 0 else np.inf
    tested = bool(np.isfinite(anova.mauchly_p))
    spherical = bool(anova.mauchly_p >= alpha) if tested else None
    left_out = anova.excluded.get("observations_excluded", 0)
    premises = {
        "sphericity": {
            "test": "mauchly",
            "W": anova.mauchly_w,
            "p": anova.mauchly_p,
            "holds": spherical,
            "greenhouse_geisser_epsilon": anova.gg_epsilon,
        },
        "balanced": True,
        "balance": (
            f"complete design: every one of the {anova.n_models} models is scored on every one "
            f"of the {n} items used"
            + (f" ({left_out} items not scored by every model were left out)" if left_out else "")
        ),
        "pooled_se": pooled,
        "paired_se_min": low,
        "paired_se_max": high,
        "se_ratio": ratio,
        "se_factor": SE_FACTOR,
        "omnibus_p_uncorrected": anova.p,
    }
    notes = {}
    if spherical is False:
        notes["sphericity"] = (
            f"Mauchly's test rejects sphericity at alpha = {alpha:g} (W = {anova.mauchly_w:.4g}, "
            f"{_p_words(anova.mauchly_p)}; Greenhouse-Geisser epsilon = "
            f"{anova.gg_epsilon:.3g}): Tukey's HSD uses one pooled error for every pair, and its "
            "family-wise error is not guaranteed"
        )
    elif not tested:
        premises["sphericity"]["note"] = anova.notes.get("mauchly", "Mauchly's test not defined")
    if ratio > SE_FACTOR:
        notes["standard_errors"] = (
            f"the paired standard errors of the differences range from {low:.4g} to {high:.4g} "
            f"against the pooled {pooled:.4g} that Tukey uses for every pair (more than a factor "
            f"{SE_FACTOR:g} from it): its intervals are too narrow for some pairs and too wide for "
            "others"
        )
    return premises, notes


def _warn_premises(procedure: str, notes: dict) -> None:
    failed = [text for key, text in notes.items() if key != "omnibus"]
    if failed:
        warnings.warn(
            f"{procedure}: " + "; ".join(failed) + f". {INSTEAD[0].upper()}{INSTEAD[1:]}",
            RankciWarning,
            stacklevel=3,
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

    Its premises are checked and recorded in ``premises``: Mauchly's sphericity test (W, p) of
    the RM-ANOVA it is built on; balance (the design is complete by construction: only items
    scored by every model are used); the pooled standard error of a difference
    ``sqrt(2 MS_error / n)`` (the root mean square of the paired ones) beside the range of the
    paired standard errors ``sd(y_j - y_l) / sqrt(n)``. When Mauchly's p < ``alpha`` or some
    paired SE is more than :data:`SE_FACTOR` times above or below the pooled one, ``notes``
    says so and a :class:`~rankci._base.RankciWarning` names what to use instead: the paired
    Holm tests (:func:`rankci.rank`), which make no sphericity assumption.

    The omnibus F test's p-value (Greenhouse-Geisser corrected) is recorded as ``omnibus_p``,
    with ``omnibus_rejected``. Tukey's HSD is a single-step simultaneous procedure: its
    family-wise error is alpha whether or not the F test rejected, so the omnibus result is
    information (in ``notes["omnibus"]``), not a gate (Kirk 2013).

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
    units = complete_units(data)
    anova = rm_anova(units)
    k, n = anova.n_models, anova.n_items
    n_pairs = k * (k - 1) // 2
    # the path is chosen once, for the p-values and the critical value alike
    backend = "scipy" if use_scipy(backend, n_pairs) else "vectorised"
    se_mean = np.sqrt(anova.ms_error / n)
    critical = studentized_range_critical(alpha, k, anova.df_den, backend, n_pairs)
    premises, notes = _tukey_premises(anova, units.values, alpha)
    notes["omnibus"] = _omnibus_note(
        "F test (Greenhouse-Geisser)", "equal means", anova.p_gg, alpha, "Tukey's HSD"
    )
    _warn_premises("Tukey HSD", notes)
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
        omnibus_p=anova.p_gg,
        omnibus_rejected=bool(anova.p_gg <= alpha),
        premises=premises,
        notes=notes,
    )


def nemenyi(data: Data, alpha: float = 0.05, *, backend: str = "auto") -> PostHoc:
    """Nemenyi's test after Friedman: every pair of mean ranks.

    ``z = (R_j - R_l) / sqrt(k (k + 1) / (6 n))`` with ``R`` the mean ranks;
    ``p = P(Q_{k, inf} >= sqrt(2) |z|)`` and critical difference
    ``CD = q_{1-alpha; k, inf} / sqrt(2) * sqrt(k (k + 1) / (6 n))`` (Demsar 2006, Sec. 3.2.2).
    Asymptotic in the number of items; ties are not corrected for.

    It assumes exchangeable ranks: the critical difference is the range of k mean ranks under
    Friedman's null, and a pair is compared through the ranks of all k models, so its verdict
    depends on the other models in the set (Benavoli et al. 2016). Friedman's p-value is
    recorded as ``omnibus_p`` with ``omnibus_rejected``; when Friedman's test did not reject,
    ``notes["exchangeable"]`` says so and a :class:`~rankci._base.RankciWarning` names the paired
    Holm tests (:func:`rankci.rank`) for pairwise claims.

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
    Benavoli, A., Corani, G. and Mangili, F. (2016). Should we really use post-hoc tests based on
    mean-ranks? Journal of Machine Learning Research 17(5), 1-10.

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
    notes = {"omnibus": _omnibus_note(
            "Friedman test", "exchangeable ranks", result.p, alpha, "Nemenyi's test"
        )}
    if result.p > alpha:
        notes["exchangeable"] = (
            f"Friedman's test did not reject at alpha = {alpha:g} ({_p_words(result.p)}): the "
            "data are consistent with exchangeable ranks, the complete null under which Nemenyi's "
            "critical difference is derived; the usual protocol reads Nemenyi only after "
            "Friedman rejects (Demsar 2006), and a difference of mean ranks depends on the other "
            "models in the set, not on the pair alone (Benavoli et al. 2016)"
        )
    _warn_premises("Nemenyi", notes)
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
        omnibus_p=result.p,
        omnibus_rejected=bool(result.p <= alpha),
        premises={
            "exchangeability": (
                "Nemenyi's critical difference is the range of k exchangeable mean ranks "
                "(Friedman's null); it compares a pair through the ranks of all k models"
            ),
            "balanced": True,
            "omnibus_p_iman_davenport": result.p_iman_davenport,
        },
        notes=notes,
    )
