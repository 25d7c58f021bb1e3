"""The resampling tests of every ordered pair: the paired bootstrap and the sign-flip test.

Both compare ``mean(d) - delta`` with its resampled law, for all pairs at once as matrix
products of resampling weights with the units x models matrix; the p-value is
``(1 + #exceed) / (reps + 1)``.

References
----------
Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
New York (Sec. 16.4).
"""

from __future__ import annotations

import warnings

import numpy as np

from rankci._base import RankciWarning, as_generator
from rankci._progress import Progress
from rankci.data import UnitScores
from rankci.evidence.bootstrap import resample_counts
from rankci.evidence.moments import TestArrays, paired_moments, score_width, variance_is_zero
from rankci.evidence.ttest import exact_floor

__all__ = [
    "DEFAULT_REPS",
    "bootstrap_test",
    "default_reps",
    "permutation_test",
    "warn_resolution",
]

#: Resamples of the bootstrap and permutation tests when none are asked for (at least).
DEFAULT_REPS = 9999


def default_reps(n_models: int, alpha: float, coverage: str = "simultaneous") -> int:
    """Resamples enough for the smallest p-value, ``1 / (reps + 1)``, to pass Holm's first bar.

    Holm's first threshold is ``alpha / (M (M - 1))`` (simultaneous) or ``alpha / (2 (M - 1))``
    (marginal); a resampling p-value is at least ``1 / (reps + 1)``, so fewer resamples than
    ``ceil(K / alpha) - 1`` can certify nothing. The default is the larger of
    :data:`DEFAULT_REPS` and that minimum, rounded up to end in 9 (so that ``reps + 1`` is round).

    Examples
    --------
    >>> default_reps(5, 0.05), default_reps(32, 0.05)
    (9999, 19839)
    """
    family = n_models * (n_models - 1) if coverage == "simultaneous" else 2 * (n_models - 1)
    needed = int(np.ceil(family / alpha))  # reps + 1 >= K / alpha
    return max(DEFAULT_REPS, -(-needed // 10) * 10 - 1)


def bootstrap_test(
    units: UnitScores,
    delta: float,
    *,
    reps: int = DEFAULT_REPS,
    rng: int | np.random.Generator | None = None,
) -> TestArrays:
    """Centred paired bootstrap tests (:func:`rankci.pairwise_tests`, ``"bootstrap"``).

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.random.default_rng(0).normal(size=(30, 2)) + [1.0, 0.0]
    >>> units = Scores.from_matrix(x, bounds=None).units()
    >>> float(bootstrap_test(units, 0.0, reps=99, rng=0).pvalue[0, 1])
    0.01
    """
    out = _bootstrap(units.values, delta, int(reps), as_generator(rng))
    return TestArrays(*out, smallest_pvalue=1.0 / (reps + 1))


def permutation_test(
    units: UnitScores,
    delta: float,
    *,
    reps: int = DEFAULT_REPS,
    rng: int | np.random.Generator | None = None,
) -> TestArrays:
    """Sign-flip tests of mean(d - delta) (:func:`rankci.pairwise_tests`, ``"permutation"``)."""
    out = _permutation(units.values, delta, int(reps), as_generator(rng))
    return TestArrays(*out, smallest_pvalue=1.0 / (reps + 1))


#: Cells of one block of resamples, each a bound on its own (issue 30: peak memory independent
#: of reps and bounded by the answer): resamples x pairs of the resampled statistics (32 MB of
#: float64 per temporary), and resamples x units of the weights (and of their draws).
_CHUNK_CELLS = 4_000_000
_CHUNK_WEIGHT_CELLS = 4_000_000


def _block_rows(reps: int, n_models: int, n_units: int) -> int:
    """Resamples per block: ``reps`` or fewer, so that neither bound of a block is passed.

    The draws of consecutive blocks are consecutive rows of one stream, so the p-values do not
    depend on the block size (tests/evidence/test_resampling_blocks.py)."""
    by_pairs = _CHUNK_CELLS // max(n_models * n_models, 1)
    by_units = _CHUNK_WEIGHT_CELLS // max(n_units, 1)
    return max(1, min(reps, by_pairs, by_units))


def warn_resolution(reps: int, n_models: int, stacklevel: int = 5) -> None:
    """Warn when ``M (M - 1) / (reps + 1)`` exceeds 0.05 (Holm can then certify nothing).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_resolution(99, 5)
    >>> "reps=99" in str(caught[0].message)
    True
    """
    smallest = 1.0 / (reps + 1)
    family = n_models * (n_models - 1)
    if smallest * family > 0.05:
        warnings.warn(
            f"with reps={reps} the smallest attainable p-value is {smallest:.2g}, so Holm or "
            f"Bonferroni over all {family} ordered pairs can certify nothing at an alpha below "
            f"{smallest * family:.2g}; use reps >= {int(np.ceil(family / 0.05))} for alpha = 0.05",
            RankciWarning,
            stacklevel=stacklevel,
        )


def _resampled_exceedances(
    x: np.ndarray, delta: float, reps: int, weights_for_chunk, offset: float, centred: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shared machinery of the bootstrap and permutation tests.

    ``weights_for_chunk(b)`` returns a (b, n_units) matrix of resampling weights w. For every pair
    the resampled statistic is ``T*_b = sum_i w_bi (d_i - offset) / sum_i |w_bi| - c`` over the
    units the pair shares, with ``c = mean(d)`` when ``centred`` and 0 otherwise; it is compared
    with the observed ``mean(d) - delta``. Returns (mean(d), n, #{b: T*_b >= observed}); a resample
    in which a pair shares no unit counts as exceeding (conservative).
    """
    n_models = x.shape[1]
    finite = np.isfinite(x)
    n, mean, _, _ = paired_moments(x)
    observed = mean - delta
    centre = mean if centred else np.zeros_like(mean)
    exceed = np.zeros((n_models, n_models))
    chunk = _block_rows(reps, n_models, x.shape[0])
    x0 = np.where(finite, x, 0.0)
    done = 0
    bar = Progress(reps, "resampling", min_interval=0.5)
    while done < reps:
        b = min(chunk, reps - done)
        w = weights_for_chunk(b)
        if finite.all():
            size = np.abs(w).sum(axis=1)[:, None, None]
            means = w @ x0
            total = w.sum(axis=1)[:, None, None]
            stat = (means[:, :, None] - means[:, None, :] - offset * total) / size - centre
            exceed += (stat >= observed).sum(axis=0)
        else:
            for j in range(n_models):
                common = (finite[:, [j]] & finite).astype(float)
                d = (x0[:, [j]] - x0 - offset) * common
                with np.errstate(invalid="ignore", divide="ignore"):
                    stat = (w @ d) / (np.abs(w) @ common) - centre[j]
                exceed[j] += np.where(np.isfinite(stat), stat >= observed[j], True).sum(axis=0)
        done += b
        bar.update(b)
    bar.close()
    return mean, n, exceed


def _bootstrap(x: np.ndarray, delta: float, reps: int, generator: np.random.Generator):
    """Centred paired bootstrap: p = (1 + #{mean*(d) - mean(d) >= mean(d) - delta}) / (reps + 1).

    Units are resampled jointly for all models (pairing kept); the bootstrap law of
    ``mean*(d) - mean(d)`` stands in for that of ``mean(d) - theta_d`` (Efron and Tibshirani 1993,
    Sec. 16.4).

    A zero variance is never evidence: where the differences do not vary
    (:func:`rankci.evidence.moments.variance_is_zero`), every resample gives the observed mean,
    so p would be ``1 / (reps + 1)``; there, as for the t test, the p-value is the exact bound
    (scores in [0, 1]) or 1 (:func:`rankci.evidence.ttest.exact_floor`), and so with fewer than
    three units.
    """
    warn_resolution(reps, x.shape[1])
    n_units = x.shape[0]
    mean, n, exceed = _resampled_exceedances(
        x,
        delta,
        reps,
        lambda b: resample_counts(generator, b, n_units),
        offset=0.0,
        centred=True,
    )
    mean, stat, pvalue, n, se, df = _resampling_result(mean, n, exceed, reps)
    _, _, var, _ = paired_moments(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        zero = variance_is_zero(var / n, score_width(x))
    pvalue = np.where(n >= 2, exact_floor(x, pvalue, mean, delta, n, zero, 0), 1.0)
    return mean, stat, pvalue, n, se, df


def _permutation(x: np.ndarray, delta: float, reps: int, generator: np.random.Generator):
    """Sign-flip test of mean(d - delta): each unit's two scores are swapped with probability 1/2.

    Exact for delta = 0 when the two models' scores are exchangeable within units under the null;
    for delta > 0 it assumes ``d - delta`` is symmetric at the null boundary.
    """
    warn_resolution(reps, x.shape[1])
    n_units = x.shape[0]
    mean, n, exceed = _resampled_exceedances(
        x,
        delta,
        reps,
        lambda b: generator.choice(np.array([-1.0, 1.0]), size=(b, n_units)),
        offset=delta,
        centred=False,
    )
    return _resampling_result(mean, n, exceed, reps)


def _resampling_result(mean, n, exceed, reps):
    pvalue = (1.0 + exceed) / (reps + 1.0)
    pvalue = np.where(n >= 2, pvalue, 1.0)
    return mean, mean.copy(), pvalue, n, None, None
