"""The z test for unmatched samples: each model scored on its own items (no pairing)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats


def unpaired_z(
    samples: Sequence[ArrayLike], delta: float = 0.0
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""All-pairs one-sided z statistics and p-values for unmatched samples.

    Model :math:`a` has :math:`n_a` scores with mean :math:`\bar x_a` and sample variance
    :math:`s_a^2` (divisor :math:`n_a - 1`), on items of its own. For the ordered pair (a, b),

    .. math::

        z_{ab} = \frac{\bar x_a - \bar x_b - \delta}{\sqrt{s_a^2/n_a + s_b^2/n_b}}, \qquad
        p_{ab} = 1 - \Phi(z_{ab}),

    the one-sided test of :math:`H_0: \theta_a - \theta_b \le \delta`, asymptotically valid as
    both samples grow ("for non-matched samples, tests like the z-test are appropriate",
    *Quantifying ranking uncertainty*, Section 5). Where the items are shared, the paired tests
    are the right ones: they use the correlation this one ignores.

    Parameters
    ----------
    samples : sequence of array_like
        One 1-D array of scores per model, of any lengths, each with at least 2 finite values.
    delta : float
        The indifference margin δ.

    Returns
    -------
    z, p : numpy.ndarray
        (M, M) arrays; the diagonal is NaN. A pair whose both variances are 0 gets z = ±inf by
        the sign of the gap (NaN when the gap is 0, with p = NaN).

    Raises
    ------
    ValueError
        For a model with fewer than 2 scores or a non-finite score (its position named).

    References
    ----------
    Quantifying ranking uncertainty (source document), Section 5.

    Examples
    --------
    >>> z, p = unpaired_z([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    >>> round(float(z[0, 1]), 4), round(float(p[0, 1]), 4)
    (1.0, 0.1587)
    """
    arrays = [np.asarray(s, dtype=float).ravel() for s in samples]
    for i, x in enumerate(arrays):
        if x.size < 2:
            raise ValueError(f"model {i} has {x.size} score(s); the z test needs at least 2")
        if not np.isfinite(x).all():
            raise ValueError(f"model {i} has a non-finite score")
    n = np.array([x.size for x in arrays], dtype=float)
    mean = np.array([x.mean() for x in arrays])
    var = np.array([x.var(ddof=1) for x in arrays])
    se = np.sqrt(var[:, None] / n[:, None] + var[None, :] / n[None, :])
    gap = mean[:, None] - mean[None, :] - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        z = gap / se
        z = np.where(se == 0, np.sign(gap) * np.inf, z)
    z = np.where((se == 0) & (gap == 0), np.nan, z)
    np.fill_diagonal(z, np.nan)
    p = stats.norm.sf(z)
    return z, p
