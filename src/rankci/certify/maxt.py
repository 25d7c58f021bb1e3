"""Max-t step-down rank intervals (Romano and Wolf 2005; Mogstad, Romano, Shaikh and Wilhelm 2024).

For models with means ``x`` and estimated covariance ``Sigma`` of those means, every ordered pair
(j, l) has the studentized statistic

``T_jl = (x_j - x_l - delta) / s_jl``,   ``s_jl = sqrt(Sigma_jj + Sigma_ll - 2 Sigma_jl)``,

for ``H_jl: theta_j - theta_l <= delta``. Instead of a Bonferroni-type bound (Holm), the critical
value is the ``1 - alpha`` quantile of the maximum of the null statistics over the family, taken
from their estimated joint law:

* ``resampling="gaussian"``: ``T*_jl = (Z_j - Z_l) / s_jl`` with ``Z ~ N(0, Sigma)`` (multiplier
  draws ``Z = G Sigma^(1/2)``, G standard normal);
* ``resampling="bootstrap"``: ``Z = xbar* - xbar``, the means recomputed on units (or whole
  clusters) drawn with replacement.

Step-down: reject every hypothesis in the remaining family K whose ``T_jl > c(K)``, remove them,
recompute ``c`` over what remains and repeat until nothing new is rejected. ``c(K)`` shrinks with
K, so the family-wise error rate stays at alpha (asymptotically; Romano and Wolf 2005, Thm. 3)
and every hypothesis rejected by the single-step version is rejected here.

Small samples. From data (:func:`certify_maxt`, ``small_sample=True``) Sigma carries the factor
``G / (G - 1)`` and the statistics take the null-restricted form
``T~ = T sqrt(G / (G - 1 + T^2))`` (:func:`restricted`; McNemar's statistic for 0/1 scores): the
plain Wald max-t over-rejects with tens of items. Given (x, Sigma)
(:func:`maxt_ranking_from_cov`) the statistics are used as they are, as in csranks.

Rank intervals. Simultaneous: one family of all M(M-1) ordered pairs; the rejections are the
certified dominances D, counted by :func:`rankci.ranking.ranking_from_dominance`. Marginal (as
csranks' ``simul = FALSE``): for each model j its own family of the 2(M-1) hypotheses
``{H_jl, H_lj : l != j}`` at level alpha, ``L_j = 1 + #{l : H_lj rejected}``,
``U_j = M - #{l : H_jl rejected}``; each interval covers its model's rank with probability
``>= 1 - alpha`` but the intervals make no joint statement.

Fast step-down (:mod:`rankci.certify.stepdown`): the rejected set is always a prefix of the pairs
sorted by ``T`` (decreasing), so each draw's maximum over any remaining family is a suffix
maximum of its statistics in that order. One pass over the draws stores block maxima of that
order; every step then recomputes one block instead of ``draws x pairs`` statistics.

References
----------
Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple hypothesis
testing. Journal of the American Statistical Association 100(469), 94-108.
Mogstad, M., Romano, J. P., Shaikh, A. M. and Wilhelm, D. (2024). Inference for ranks with
applications to mobility across neighbourhoods and academic achievement across countries.
Review of Economic Studies 91(1), 476-518.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rankci._base import (
    RankciWarning,
    check_alpha,
    check_choice,
    check_nonnegative,
)
from rankci.certify.certification import Certification
from rankci.certify.holm import nothing_certified_message, units_needed
from rankci.certify.stepdown import (
    bootstrap_draws,
    check_covariance,
    critical_value,
    gaussian_draws,
    stepdown_maxt,
)
from rankci.data import UnitScores
from rankci.evidence.covariance import MeansCovariance, unit_clusters, units_covariance
from rankci.evidence.moments import (
    MIN_CERTIFYING_UNITS,
    bounded_pvalue,
    is_bounded,
    score_width,
    variance_is_zero,
)
from rankci.method import COVARIANCES, COVERAGES, RESAMPLINGS, UNIT_SCOPE
from rankci.ranking import Ranking
from rankci.registry import MULTIPLICITY_REGISTRY

if TYPE_CHECKING:
    from rankci.data import Scores
    from rankci.method import MethodSpec

__all__ = [
    "COVARIANCES",
    "RESAMPLINGS",
    "bootstrap_draws",
    "certify_maxt",
    "certify_spec",
    "critical_value",
    "gaussian_draws",
    "maxt_ranking_from_cov",
    "restricted",
    "stepdown_maxt",
]

#: The registry entry of max-t: its options' checks are the one place of truth.
_MAXT = MULTIPLICITY_REGISTRY["max-t"]


# ---------------------------------------------------------------------- rankings
def _pair_statistics(
    mean: np.ndarray,
    cov: np.ndarray,
    delta: float,
    n_independent=None,
    *,
    width: float | None = None,
    exact_ok: np.ndarray | None = None,
):
    """M x M studentized statistics ``T_jl`` and scales ``1 / s_jl`` (0 when s_jl = 0).

    With ``n_independent = G`` the statistics take the null-restricted (score) form
    ``T~ = T sqrt(G / (G - 1 + T^2))``, see :func:`restricted`.

    A zero variance is never evidence (:func:`rankci.evidence.moments.variance_is_zero` on
    ``s_jl**2`` against the scores' ``width``, by default that of the means): its null draws
    are all 0, so any positive statistic would exceed the critical value. Such a pair's
    statistic is NaN (never rejected), except where ``exact_ok`` (from the data: the pair's
    exact bound, Hoeffding's, is below the Bonferroni threshold of the family) lets it stand at
    ``+-inf``.
    """
    var_j = np.diag(cov)
    var = np.maximum(var_j[:, None] + var_j[None, :] - 2.0 * cov, 0.0)
    zero = variance_is_zero(var, score_width(mean) if width is None else width)
    sd = np.sqrt(var)
    shift = mean[:, None] - mean[None, :] - delta
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(zero, np.sign(shift) * np.inf, shift / sd)
        scale = np.where(zero, 0.0, 1.0 / sd)
    stat[zero & (shift == 0)] = 0.0
    unsupported = zero & (stat > 0)
    if exact_ok is not None:
        unsupported &= ~exact_ok
    stat[unsupported] = np.nan
    if n_independent is not None:
        stat = restricted(stat, n_independent)
    np.fill_diagonal(stat, np.nan)
    return stat, scale


def _exact_support(units: UnitScores, estimates: MeansCovariance, alpha: float, delta: float):
    """Pairs whose exact bound (scores in [0, 1]) is at most alpha / M(M-1), or None.

    Where the variance across the G units (or clusters) is zero, every unit has the same mean
    difference, so the item mean difference is the mean of G equal differences in [-1, 1] and
    :func:`rankci.evidence.moments.bounded_pvalue` with n = G is a valid p-value for it.
    """
    if not is_bounded(units.values) or abs(delta) >= 1:
        return None
    m = estimates.mean.size
    diff = estimates.mean[:, None] - estimates.mean[None, :]
    bound = bounded_pvalue(diff, delta, np.full(diff.shape, int(estimates.n_groups)))
    return bound <= alpha / max(m * (m - 1), 1)


def restricted(stat: np.ndarray, n_independent: int) -> np.ndarray:
    """The null-restricted (score) form of studentized differences: ``T sqrt(G / (G - 1 + T^2))``.

    For G independent units with differences ``d_i``, ``T = (dbar - delta) / (sd(d) / sqrt(G))``
    and ``T~ = sum_i (d_i - delta) / sqrt(sum_i (d_i - delta)^2)``: the variance is estimated
    around the null value instead of around ``dbar`` (for 0/1 scores and delta = 0 this is
    McNemar's ``(b - c) / sqrt(b + c)``). The map is increasing and bounded by ``sqrt(G)``, so
    rejecting ``T~ > c`` is rejecting ``T > c sqrt((G - 1) / (G - c^2))``: a larger critical
    value when ``c^2 / G`` is not small. It removes the liberal tail of the plain (Wald) t
    statistic, whose denominator shrinks exactly when ``|dbar|`` is large; with G = 30-100 units
    the Wald max-t over-rejected at 6-11 % for a nominal 5 % (validation/README.md). G is the
    number of independent units or clusters behind Sigma; with missing cells
    (``missing="pairwise"``) it is the total, an approximation for pairs seen on fewer units.
    """
    g = float(n_independent)
    with np.errstate(invalid="ignore", over="ignore"):
        out = stat * np.sqrt(g / (g - 1.0 + stat**2))
    return np.where(np.isinf(stat), np.sign(stat) * np.sqrt(g), out)


def _simultaneous(stat, scale, null, alpha, stepdown):
    m = stat.shape[0]
    first, second = np.triu_indices(m, 1)
    reject_f, reject_b, crits = stepdown_maxt(
        first,
        second,
        stat[first, second],
        stat[second, first],
        scale[first, second],
        null,
        alpha,
        stepdown,
    )
    dominance = np.zeros((m, m), dtype=bool)
    dominance[first[reject_f], second[reject_f]] = True
    dominance[second[reject_b], first[reject_b]] = True
    return dominance, crits


def _marginal(stat, scale, null, alpha, stepdown):
    """Model j's family: the 2(M - 1) hypotheses H_jl and H_lj, at level alpha."""
    m = stat.shape[0]
    lower = np.ones(m, dtype=np.int64)
    upper = np.full(m, m, dtype=np.int64)
    crits = []
    for j in range(m):
        others = np.delete(np.arange(m), j)
        mine = np.full(m - 1, j)
        above_others, below_others, c = stepdown_maxt(
            mine,
            others,
            stat[j, others],
            stat[others, j],
            scale[j, others],
            null,
            alpha,
            stepdown,
        )
        upper[j] = m - int(above_others.sum())
        lower[j] = 1 + int(below_others.sum())
        crits.append(c)
    return lower, upper, crits


def _certify(
    estimates: MeansCovariance,
    null: np.ndarray,
    *,
    alpha: float,
    coverage: str,
    delta: float,
    stepdown: bool,
    procedure: dict,
    details: dict,
    width: float,
    exact_ok: np.ndarray | None = None,
) -> Certification:
    n_independent = estimates.n_groups if estimates.small_sample != "none" else None
    stat, scale = _pair_statistics(
        estimates.mean, estimates.cov, delta, n_independent, width=width, exact_ok=exact_ok
    )
    if 0 < estimates.n_groups < MIN_CERTIFYING_UNITS:  # two units never certify anything
        stat[:] = np.nan
    name = "step-down" if stepdown else "single-step"
    where = f"{estimates.n_units} {estimates.unit} units" if estimates.unit else "the given means"
    scope = f"; inference extends to {UNIT_SCOPE[estimates.unit]}" if estimates.unit else ""
    if estimates.kind == "cluster":
        scope = f" with a cluster-robust covariance over {estimates.n_groups} clusters" + (
            "; inference extends to new clusters (subjects) like these"
        )
    margin = f" with indifference margin {delta:g}" if delta > 0 else ""
    words = (
        f"max-t {name} over studentized mean differences{margin} on {where}, critical "
        f"values from {details['draws']} {procedure['resampling']} draws{scope}; the level is "
        "asymptotic"
    )
    common = dict(
        models=estimates.models,
        score=np.asarray(estimates.mean, dtype=float),
        coverage=coverage,
        alpha=alpha,
        evidence=words,
        procedure=procedure,
        n_units=estimates.n_units,
        excluded=dict(estimates.excluded),
    )
    if coverage == "simultaneous":
        dominance, crits = _simultaneous(stat, scale, null, alpha, stepdown)
        details = {**details, "critical_values": crits}
        if not dominance.any():
            _explain_nothing_certified(estimates, stat, crits, alpha, details)
        return Certification(
            dominance=dominance, lower=None, upper=None, details=details, **common
        )
    lower, upper, crits = _marginal(stat, scale, null, alpha, stepdown)
    details = {**details, "critical_values": dict(zip(estimates.models, crits, strict=True))}
    if (lower == 1).all() and (upper == len(lower)).all():  # every interval is [1, M]
        _explain_nothing_certified(
            estimates, stat, [min(float(np.ravel(c)[0]) for c in crits)], alpha, details
        )
    return Certification(dominance=None, lower=lower, upper=upper, details=details, **common)


def _explain_nothing_certified(estimates, stat, crits, alpha, details) -> None:
    """The largest |t| against the first critical value, what would be needed (warned, noted)."""
    if 0 < estimates.n_groups < MIN_CERTIFYING_UNITS or not len(crits):
        return  # announced by certify_maxt before testing
    crit = float(np.ravel(crits)[0])
    finite = stat[np.isfinite(stat)]
    t_max = float(finite.max()) if finite.size else float("nan")
    what = "clusters" if estimates.kind == "cluster" else f"{estimates.unit or 'given'} units"
    n = estimates.n_groups or estimates.n_units
    need = "larger differences or more units"
    if n and t_max > 0 and np.isfinite(crit):  # the statistic grows like sqrt(n)
        more = int(np.ceil(n * (crit / t_max) ** 2)) + 1
        if more > n:
            need = units_needed(more, n, what)
    message = nothing_certified_message(
        n,
        "cluster" if estimates.kind == "cluster" else (estimates.unit or "given"),
        f"the largest |t| of the max-t statistics, {t_max:.3g}",
        f"{crit:.3g}, the first critical value at alpha = {alpha:g}",
        need,
        alpha=alpha,
    )
    details["nothing_certified"] = message
    warnings.warn(message, RankciWarning, stacklevel=4)


FEW_UNITS = 50


def _warn_few_units(estimates: MeansCovariance) -> None:
    what = "clusters" if estimates.kind == "cluster" else "units"
    g = estimates.n_groups
    warnings.warn(
        f"max-t with only {g} independent {what}: its small-sample form keeps the level but is "
        f"conservative here, and no statistic can exceed sqrt({g}) = {np.sqrt(g):.2f}; Holm with "
        f"the paired t test on these {what} (multiplicity='holm'"
        + (", unit='cluster'" if what == "clusters" else "")
        + ") may certify more",
        RankciWarning,
        stacklevel=3,
    )


def _procedure(unit, missing, delta, stepdown, resampling, covariance, draws, small_sample) -> dict:
    return {
        "test": "t",
        "unit": unit,
        "delta": delta,
        "multiplicity": "max-t" if stepdown else "max-t single-step",
        "missing": missing,
        "resampling": resampling,
        "draws": draws,
        "covariance": covariance,
        "small_sample": small_sample,
    }


def maxt_ranking_from_cov(
    mean: Sequence[float] | np.ndarray,
    cov: np.ndarray,
    *,
    models: Sequence[str] | None = None,
    alpha: float = 0.05,
    coverage: str = "simultaneous",
    delta: float = 0.0,
    stepdown: bool = True,
    draws: int = 1000,
    rng: int | np.random.Generator | None = None,
) -> Ranking:
    """Max-t rank intervals from given means and their covariance (Gaussian critical values).

    This is csranks' ``csranks(x, Sigma, cstype = "two-sided", simul, stepdown, R = draws)``;
    with ``stepdown=False`` and many draws it is the single-step construction with the exact
    quantile of the maximum (multcomp's ``glht(..., "single-step")``).

    Parameters
    ----------
    mean : array_like (M,)
        Estimated model scores x (higher is better).
    cov : array_like (M, M)
        Estimated covariance Sigma of ``mean``.
    models : sequence of str, optional
        Labels (default ``m0, m1, ...``).
    alpha : float, default 0.05
    coverage : {"simultaneous", "marginal"}
    delta : float, default 0
        Indifference margin.
    stepdown : bool, default True
    draws : int, default 1000
        Gaussian draws for the critical values (their Monte-Carlo error shrinks like
        ``1.4 / sqrt(draws)`` for c near 3).
    rng : int, Generator or None

    Returns
    -------
    Ranking

    Examples
    --------
    >>> import numpy as np
    >>> r = maxt_ranking_from_cov([0.5, 0.6, 0.9], np.diag([1e-3, 1e-3, 1e-3]), rng=1)
    >>> r.lower.tolist(), r.upper.tolist()
    ([3, 2, 1], [3, 2, 1])
    """
    mean = np.asarray(mean, dtype=float)
    if mean.ndim != 1 or mean.size < 2 or not np.isfinite(mean).all():
        raise ValueError("mean must be a finite vector with at least two models")
    cov = check_covariance(cov)
    if cov.shape != (mean.size, mean.size):
        raise ValueError(f"cov has shape {cov.shape} but there are {mean.size} means")
    names = (
        tuple(f"m{k:0{len(str(mean.size - 1))}d}" for k in range(mean.size))
        if models is None
        else tuple(str(m) for m in models)
    )
    if len(names) != mean.size or len(set(names)) != len(names):
        raise ValueError(f"models must be {mean.size} distinct labels")
    alpha = check_alpha(alpha)
    check_choice("coverage", coverage, COVERAGES)
    delta = check_nonnegative(delta, "delta")
    draws = _MAXT.option("draws").check(draws)
    estimates = MeansCovariance(
        models=names,
        mean=mean,
        cov=cov,
        n=np.zeros(mean.size, dtype=np.int64),
        kind="item",
        small_sample="none",
        n_groups=0,
        unit=None,
        missing=None,
    )
    null = gaussian_draws(cov, draws, rng)
    procedure = _procedure(None, None, delta, bool(stepdown), "gaussian", "given", draws, None)
    return _certify(
        estimates,
        null,
        alpha=alpha,
        coverage=coverage,
        delta=delta,
        stepdown=bool(stepdown),
        procedure=procedure,
        details={"draws": draws},
        width=score_width(mean),
    ).ranking()


def certify_maxt(
    units: UnitScores,
    *,
    groups: Sequence | np.ndarray | None = None,
    alpha: float = 0.05,
    coverage: str = "simultaneous",
    delta: float = 0.0,
    resampling: str = "gaussian",
    draws: int = 1000,
    stepdown: bool = True,
    small_sample: bool = True,
    rng: int | np.random.Generator | None = None,
) -> Certification:
    """Max-t step-down certification from a units x models matrix.

    :meth:`Certification.ranking` counts it into the rank intervals (the whole flow with a
    :class:`~rankci.method.MethodSpec` is ``rankci.rank(data, multiplicity="max-t")``).

    Parameters
    ----------
    units : UnitScores
    groups : array_like, optional
        A cluster label per unit (``UnitScores.unit_cluster``): cluster-robust covariance
        and, with ``resampling="bootstrap"``, whole clusters resampled.
    alpha : float, default 0.05
    coverage : {"simultaneous", "marginal"}
    delta : float, default 0
    resampling : {"gaussian", "bootstrap"}
        Where the critical values come from: ``N(0, Sigma)`` multiplier draws, or the
        nonparametric bootstrap of the means over units (or clusters).
    draws : int, default 1000
    stepdown : bool, default True
    small_sample : bool, default True
        Small-sample corrections: the ``G / (G - 1)`` factor on Sigma
        (:func:`rankci.evidence.covariance.units_covariance`) and the null-restricted (score) form
        of the statistics (:func:`restricted`), which keep the family-wise level with few units.
        False gives the plain HC0 Wald statistics, as csranks on the same Sigma.
    rng : int, Generator or None

    Returns
    -------
    Certification
        ``details`` holds the critical values of the steps (per model for marginal coverage).

    References
    ----------
    Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple
    hypothesis testing. Journal of the American Statistical Association 100(469), 94-108.
    Mogstad, M., Romano, J. P., Shaikh, A. M. and Wilhelm, D. (2024). Inference for ranks with
    applications to mobility across neighbourhoods and academic achievement across countries.
    Review of Economic Studies 91(1), 476-518.

    Examples
    --------
    >>> import rankci
    >>> units = rankci.datasets.load_chembench().units("item", "complete")
    >>> r = certify_maxt(units, rng=1).ranking()
    >>> r.procedure["multiplicity"], r.n_models
    ('max-t', 35)
    """
    alpha = check_alpha(alpha)
    check_choice("coverage", coverage, COVERAGES)
    delta = check_nonnegative(delta, "delta")
    resampling, draws, stepdown, small_sample = (
        _MAXT.option(name).check(value)
        for name, value in (
            ("resampling", resampling),
            ("draws", draws),
            ("stepdown", stepdown),
            ("small_sample", small_sample),
        )
    )
    estimates = units_covariance(units, groups, small_sample="cadjust" if small_sample else False)
    if estimates.n_groups < MIN_CERTIFYING_UNITS:
        what = "clusters" if estimates.kind == "cluster" else "units"
        warnings.warn(
            f"max-t with only {estimates.n_groups} independent {what} certifies nothing: two "
            f"{what} never certify anything, at least {MIN_CERTIFYING_UNITS} are needed",
            RankciWarning,
            stacklevel=2,
        )
    elif small_sample and estimates.n_groups < FEW_UNITS:
        _warn_few_units(estimates)
    details: dict = {"draws": draws}
    if estimates.kind == "cluster":
        details["n_clusters"] = estimates.n_groups
    if resampling == "gaussian":
        null = gaussian_draws(estimates.cov, draws, rng)
    else:
        null, empty = bootstrap_draws(units, groups, draws, rng)
        if empty:
            details["bootstrap_empty_cells"] = empty
    procedure = _procedure(
        units.unit,
        units.missing,
        delta,
        bool(stepdown),
        resampling,
        "cluster" if estimates.kind == "cluster" else "independent",
        draws,
        bool(small_sample),
    )
    return _certify(
        estimates,
        null,
        alpha=alpha,
        coverage=coverage,
        delta=delta,
        stepdown=bool(stepdown),
        procedure=procedure,
        details=details,
        width=score_width(units.values),
        exact_ok=_exact_support(units, estimates, alpha, delta),
    )


def certify_spec(
    scores: Scores, spec: MethodSpec, rng: int | np.random.Generator | None = None
) -> Certification:
    """The certifier of ``multiplicity="max-t"`` in the registry: :func:`certify_maxt` on the
    units of ``scores`` as ``spec`` says (``covariance="cluster"``: clustered over the cluster
    column).

    Examples
    --------
    >>> import rankci
    >>> from rankci.method import MethodSpec
    >>> spec = MethodSpec(multiplicity="max-t", multiplicity_options={"draws": 200})
    >>> certify_spec(rankci.datasets.load_chembench(), spec, rng=0).procedure["draws"]
    200
    """
    units = scores.units(spec.unit, spec.missing)
    options = dict(spec.multiplicity_options)
    covariance = options.pop("covariance", _MAXT.option("covariance").default)
    groups = unit_clusters(scores, units) if covariance == "cluster" else None
    return certify_maxt(
        units,
        groups=groups,
        alpha=spec.alpha,
        coverage=spec.coverage,
        delta=spec.delta,
        rng=rng,
        **options,
    )

