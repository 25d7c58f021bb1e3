"""Small-sample paired tests that are exact for the unit type, for every ordered pair at once.

Groundwork for issue 25, item 3 (a small-sample rule that keeps its power): in place of the
Hoeffding floor ``p = max(p_t, p_Hoeffding)`` for <= 30 units, the test that is exact for the
data at hand.

* **Binary (0/1) units: the exact McNemar test.** For the ordered pair (j, l) let
  ``b = #{i: x_ij = 1, x_il = 0}`` (j wins) and ``c = #{i: x_ij = 0, x_il = 1}`` (l wins). Given
  the ``D = b + c`` discordant units, ``b ~ Binomial(D, pi)`` with
  ``pi = P(10) / (P(10) + P(01))``, and ``theta_j - theta_l = P(10) - P(01) <= 0`` is
  ``pi <= 1/2``. The one-sided p-value is

      ``p_jl = P(Binomial(D, 1/2) >= b) = I_{1/2}(b, D - b + 1)``   (``= 1`` when ``b = 0``),

  the regularized incomplete beta function (``scipy.special.bdtrc(b - 1, D, 1/2)``). It is exact
  conditionally on D, hence unconditionally: ``P(p_jl <= a) <= a`` for every a, every n >= 1 and
  every joint law of the pair (McNemar 1947). All counts for all pairs come from one matrix
  product: ``B = X^T (1 - X)`` (with a mask for missing cells, ``B = (X o F)^T ((1 - X) o F)``,
  F the observed-cell indicator).

  The **mid-p** variant ``P(Bin > b) + P(Bin = b) / 2`` is offered for comparison only: it is
  *not* a valid p-value (its size exceeds the nominal level at some n; Lancaster 1961), and the
  study ``validation/small_sample_rule.py`` measures by how much.

* **Bounded unit means: the sign-flip randomisation test.** With ``d_i = x_ij - x_il - delta``
  and ``T = sum_i d_i``, the p-value is the share of sign vectors ``s`` in ``{-1, +1}^n`` with
  ``T(s) = sum_i s_i d_i >= T``:

      exact (n <= ``exact_max_n``):  ``p = #{s in {-1,1}^n : T(s) >= T} / 2^n``;
      Monte Carlo (larger n):        ``p = (1 + #{b <= B : T(s_b) >= T}) / (B + 1)``,

  with ``s_b`` i.i.d. uniform sign vectors; both are valid in finite samples under the null
  that each ``d_i`` is symmetric about 0 (the two models' scores exchangeable within the unit;
  Fisher 1935, Pitman 1937, Good 2005 Ch. 3). For the composite null
  ``theta_j - theta_l <= delta`` with asymmetric differences it is an approximation, as the t
  is; the validation study measures its level. On 0/1 units it *is* the exact McNemar test:
  only discordant units move T, and ``T(s) = 2 Bin(D, 1/2) - D``. The statistics of all pairs
  are one product of the ``B x n`` sign matrix with the ``n x pairs`` differences.

Ties ``T(s) = T`` count as exceedances (the conservative side), with a tolerance of
``1e-9 * sum_i |d_i|`` for rounding in the sums.

References
----------
McNemar, Q. (1947). Note on the sampling error of the difference between correlated proportions
or percentages. Psychometrika 12(2), 153-157.
Lancaster, H. O. (1961). Significance tests in discrete distributions. Journal of the American
Statistical Association 56(294), 223-234.
Fisher, R. A. (1935). The Design of Experiments, Sec. 21. Oliver and Boyd, Edinburgh.
Pitman, E. J. G. (1937). Significance tests which may be applied to samples from any
populations. Supplement to the Journal of the Royal Statistical Society 4(1), 119-130.
Good, P. I. (2005). Permutation, Parametric and Bootstrap Tests of Hypotheses, 3rd ed.
Springer, New York.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from rankci._base import as_generator, check_nonnegative, check_positive_int

__all__ = [
    "EXACT_MAX_N",
    "mcnemar_counts",
    "mcnemar_pvalue",
    "mcnemar_tests",
    "sign_vectors",
    "signflip_pvalue",
    "signflip_tests",
]

#: up to this many units the sign-flip test enumerates all 2^n sign vectors
EXACT_MAX_N = 16

_CELLS = 8_000_000  # sign vectors x pairs held in memory at once
_TOLERANCE = 1e-9  # relative: T(s) >= T - tol * sum|d| counts as an exceedance


def _matrix(x, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a units x models matrix (2-D), got shape {x.shape}")
    return x


def mcnemar_counts(x) -> tuple[np.ndarray, np.ndarray]:
    """Discordant counts of every ordered pair of models, from a units x models 0/1 matrix.

    Parameters
    ----------
    x : array_like, shape (n_units, n_models)
        0/1 scores; NaN marks a missing cell (each pair uses the units both models have).

    Returns
    -------
    wins : ndarray of int, shape (M, M)
        ``wins[j, l] = #{i: x_ij = 1, x_il = 0}``; ``wins.T`` holds the other discordant cell.
    n : ndarray of int, shape (M, M)
        Units shared by each pair.

    Examples
    --------
    >>> x = [[1, 0], [1, 0], [1, 1], [0, 1], [1, 0]]
    >>> wins, n = mcnemar_counts(x)
    >>> wins.tolist(), int(n[0, 1])
    ([[0, 3], [1, 0]], 5)
    """
    x = _matrix(x, "x")
    finite = np.isfinite(x)
    values = x[finite]
    if not np.all((values == 0) | (values == 1)):
        raise ValueError("x must hold 0/1 scores (NaN for a missing cell) for the McNemar test")
    ones = np.where(finite, x, 0.0)
    zeros = (finite & (x == 0)).astype(float)
    wins = (ones.T @ zeros).round().astype(np.int64)
    observed = finite.astype(float)
    n = (observed.T @ observed).round().astype(np.int64)
    return wins, n


def mcnemar_pvalue(wins, losses, *, mid: bool = False) -> np.ndarray:
    """One-sided exact McNemar (sign) test p-value ``P(Binomial(b + c, 1/2) >= b)``.

    Parameters
    ----------
    wins, losses : array_like of int
        ``b`` (units the first model wins) and ``c`` (units it loses), broadcast together.
    mid : bool, default False
        The mid-p ``P(Bin > b) + P(Bin = b) / 2``. Not a valid p-value (its size can exceed the
        level); for comparison only.

    Returns
    -------
    ndarray of float
        1 where ``b = 0`` (in particular with no discordant unit); the mid-p is then
        ``1 - 2^-(c + 1)`` (and 1 with no discordant unit).

    Examples
    --------
    >>> from scipy import stats
    >>> round(float(mcnemar_pvalue(9, 2)), 12)
    0.03271484375
    >>> round(float(stats.binomtest(9, 11, 0.5, alternative="greater").pvalue), 12)
    0.03271484375
    >>> float(mcnemar_pvalue(0, 0)), float(mcnemar_pvalue(2, 9))
    (1.0, 0.99414...)
    """
    b = np.asarray(wins, dtype=np.int64)
    c = np.asarray(losses, dtype=np.int64)
    if np.any(b < 0) or np.any(c < 0):
        raise ValueError("wins and losses must be counts >= 0")
    total = b + c
    safe = np.maximum(total, 1)
    at_least = np.where(b > 0, special.bdtrc(np.maximum(b - 1, 0), safe, 0.5), 1.0)
    if not mid:
        return np.asarray(at_least, dtype=float)
    above = np.where(total > 0, special.bdtrc(b, safe, 0.5), 0.0)  # P(Bin > b)
    return np.asarray(np.where(total > 0, 0.5 * (at_least + above), 1.0), dtype=float)


def mcnemar_tests(x, *, mid: bool = False) -> np.ndarray:
    """Exact one-sided McNemar p-values of ``H_jl: theta_j <= theta_l`` for every ordered pair.

    ``p[j, l] = P(Binomial(b_jl + b_lj, 1/2) >= b_jl)``, ``b_jl = #{i: x_ij = 1, x_il = 0}``
    (see the module docstring): exact at every n for 0/1 units, with no power cliff.

    Parameters
    ----------
    x : array_like, shape (n_units, n_models)
        0/1 scores; NaN marks a missing cell.
    mid : bool, default False
        The mid-p variant (not valid; for comparison).

    Returns
    -------
    ndarray, shape (M, M)
        Row j, column l; NaN on the diagonal.

    References
    ----------
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12(2), 153-157.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0], [1, 0]])
    >>> mcnemar_tests(x).round(4).tolist()  # 4 wins, 0 losses: 1/2^4; the other way: 1
    [[nan, 0.0625], [1.0, nan]]
    """
    wins, _ = mcnemar_counts(x)
    p = mcnemar_pvalue(wins, wins.T, mid=mid)
    np.fill_diagonal(p, np.nan)
    return p


def sign_vectors(n: int) -> np.ndarray:
    """All ``2^n`` sign vectors of length n, as rows of a ``2^n x n`` matrix of +-1.

    Row r holds ``s_i = +1`` where bit i of r is 0; row 0 is all +1 (the observed labelling).

    Examples
    --------
    >>> sign_vectors(2).tolist()
    [[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]]
    """
    n = check_positive_int(n, "n", minimum=0)
    if n > 24:
        raise ValueError(f"n must be at most 24 to enumerate 2^n sign vectors, got {n}")
    rows = np.arange(2**n, dtype=np.int64)[:, None]
    bits = (rows >> np.arange(n, dtype=np.int64)[None, :]) & 1
    return 1.0 - 2.0 * bits


def signflip_pvalue(
    d,
    delta: float = 0.0,
    *,
    exact_max_n: int = EXACT_MAX_N,
    reps: int = 9999,
    rng: int | np.random.Generator | None = None,
    lower: bool = False,
) -> np.ndarray:
    """Sign-flip randomisation p-value of ``mean(d) <= delta`` against ``> delta``, per column.

    Parameters
    ----------
    d : array_like, shape (n,) or (n, P)
        Paired differences, one column per test (complete: no NaN).
    delta : float, default 0
        The margin: the signs flip ``d_i - delta``.
    exact_max_n : int, default 16
        Up to this many units all ``2^n`` sign vectors are enumerated (exact p); above it,
        ``reps`` random sign vectors give ``(1 + #exceed) / (reps + 1)``.
    reps : int, default 9999
        Monte Carlo sign vectors (the same draws serve every column).
    rng : int, Generator or None
        Seed for the Monte Carlo draws.
    lower : bool, default False
        Also return the p-values of the opposite direction (``mean(d) >= -delta`` against
        ``< -delta``, i.e. the pair read the other way) from the same sign vectors.

    Returns
    -------
    ndarray, shape (P,) (or () for a 1-D ``d``); a pair ``(upper, lower)`` when ``lower``.

    References
    ----------
    Fisher, R. A. (1935). The Design of Experiments, Sec. 21. Oliver and Boyd, Edinburgh.
    Good, P. I. (2005). Permutation, Parametric and Bootstrap Tests of Hypotheses, 3rd ed.,
    Ch. 3. Springer, New York.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([0.2, 0.1, 0.3, -0.1, 0.4])
    >>> p = signflip_pvalue(d)          # 2^5 = 32 sign vectors
    >>> float(p), float(p) * 32         # 3 of 32 reach the observed sum 0.9
    (0.09375, 3.0)
    >>> from itertools import product   # the same count by a direct loop
    >>> int(sum(np.dot(s, d) >= d.sum() - 1e-12 for s in product((-1, 1), repeat=5)))
    3
    """
    delta = check_nonnegative(delta, "delta")
    exact_max_n = check_positive_int(exact_max_n, "exact_max_n", minimum=0)
    reps = check_positive_int(reps, "reps")
    d = np.asarray(d, dtype=float)
    flat = d.ndim == 1
    if flat:
        d = d[:, None]
    if d.ndim != 2:
        raise ValueError(f"d must be 1-D or 2-D (units x tests), got shape {d.shape}")
    if not np.isfinite(d).all():
        raise ValueError("d must be finite: the sign-flip test needs complete pairs (no NaN)")
    n, n_tests = d.shape
    centred = d - delta
    observed = centred.sum(axis=0)
    mirrored = d + delta  # the opposite direction flips -(d) - delta = -(d + delta)
    observed_low = -mirrored.sum(axis=0)
    tol = _TOLERANCE * np.maximum(np.abs(centred).sum(axis=0), np.abs(mirrored).sum(axis=0))
    if n <= exact_max_n:
        signs = sign_vectors(n)
        draws, plus_one = signs.shape[0], 0.0
    else:
        generator = as_generator(rng)
        signs = 1.0 - 2.0 * generator.integers(0, 2, size=(reps, n)).astype(float)
        draws, plus_one = reps, 1.0
    exceed = np.zeros(n_tests)
    exceed_low = np.zeros(n_tests)
    step = max(1, _CELLS // max(n_tests, 1))
    for start in range(0, draws, step):
        s = signs[start : start + step]
        exceed += (s @ centred >= observed - tol).sum(axis=0)
        if lower:
            exceed_low += (-(s @ mirrored) >= observed_low - tol).sum(axis=0)
    upper_p = (plus_one + exceed) / (draws + plus_one)
    lower_p = (plus_one + exceed_low) / (draws + plus_one)
    if n == 0:
        upper_p = lower_p = np.ones(n_tests)
    if flat:
        upper_p, lower_p = upper_p[0], lower_p[0]
    return (upper_p, lower_p) if lower else upper_p


def signflip_tests(
    x,
    delta: float = 0.0,
    *,
    exact_max_n: int = EXACT_MAX_N,
    reps: int = 9999,
    rng: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Sign-flip p-values of ``H_jl: theta_j - theta_l <= delta`` for every ordered pair.

    ``d_i = x_ij - x_il``; the test of :func:`signflip_pvalue` on the M(M-1)/2 unordered pairs,
    both directions from the same sign vectors, so one ``(2^n or reps) x n`` sign matrix times
    one ``n x M(M-1)/2`` matrix of differences.

    Parameters
    ----------
    x : array_like, shape (n_units, n_models)
        Unit scores (complete: no NaN).
    delta, exact_max_n, reps, rng
        As in :func:`signflip_pvalue`.

    Returns
    -------
    ndarray, shape (M, M)
        Row j, column l; NaN on the diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0], [1, 0]])
    >>> signflip_tests(x).round(4).tolist()   # on 0/1 units: the exact McNemar p-values
    [[nan, 0.0625], [1.0, nan]]
    >>> float(mcnemar_tests(x)[0, 1])
    0.0625
    """
    x = _matrix(x, "x")
    if not np.isfinite(x).all():
        raise ValueError("x must be complete (no NaN) for the sign-flip test: use "
                         "Scores.units(missing='complete')")  # fmt: skip
    m = x.shape[1]
    rows, cols = np.triu_indices(m, k=1)
    d = x[:, rows] - x[:, cols]
    upper, lower = signflip_pvalue(
        d, delta, exact_max_n=exact_max_n, reps=reps, rng=rng, lower=True
    )
    p = np.full((m, m), np.nan)
    p[rows, cols] = upper
    p[cols, rows] = lower
    return p
