r"""The weighted E^W: e-values and e-processes combined by a weighted average (seed 004).

The exact certifier eliminates a weak order W when :math:`E^W = \operatorname{mean}_{(j,l)\in
T(W)} E^{jl} \ge 1/\alpha` (docs/design.md, "Anytime-valid rank confidence sequences"). The
weighted form replaces the mean by weights fixed before the data,

.. math::

    E^W_w = \frac{\sum_{(j,l) \in T(W)} w_{jl} E^{jl}}{\sum_{(j,l) \in T(W)} w_{jl}},
    \qquad w_{jl} \ge 0,

which is the mean for equal weights. A weighted average of e-values with nonnegative weights
summing to at most 1 is an e-value, whatever their dependence, since
:math:`E[\sum_i w_i E_i] = \sum_i w_i E[E_i] \le \sum_i w_i \le 1` (Vovk and Wang 2021). For
e-processes of one filtration that are test supermartingales (as the betting wealths of
:class:`rankci.sequential.PairWealth` are), the weighted average is again a nonnegative
supermartingale starting at most at 1, so Ville's inequality gives
:math:`P(\sup_t E^W_{w,t} \ge 1/\alpha) \le \alpha` under :math:`H_W`. Boards that grow use the
same primitive with weights fixed when a pair joins (docs/design.md, "Boards that grow").

References
----------
Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
Statistics 49(3), 1736-1754.
Ville, J. (1939). Etude critique de la notion de collectif. Gauthier-Villars, Paris.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

__all__ = ["log_weighted_evalue", "order_weighted_evalue", "weighted_evalue"]

_TOLERANCE = 1e-12  # rounding allowed in the sum of the weights


def _weights(weights: ArrayLike, size: int | None = None) -> NDArray[np.float64]:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or (size is not None and w.size != size):
        raise ValueError(
            f"weights must be one weight per e-value ({size}), got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError("weights must be finite and >= 0")
    if w.sum() > 1.0 + _TOLERANCE:
        raise ValueError(
            f"weights must sum to at most 1 (a weighted average of e-values), got {w.sum():.6g}"
        )
    return w


def weighted_evalue(
    evalues: ArrayLike, weights: ArrayLike, *, axis: int = -1
) -> NDArray[np.float64]:
    r"""The weighted average :math:`E^w = \sum_i w_i E_i` of e-values, along ``axis``.

    With :math:`w_i \ge 0` and :math:`\sum_i w_i \le 1` it is an e-value under any dependence
    between the :math:`E_i` (:math:`E[E^w] \le 1`); over time, a weighted average of test
    supermartingales is one, so :math:`P(\sup_t E^w_t \ge 1/\alpha) \le \alpha` (Ville).

    Parameters
    ----------
    evalues : array_like
        Nonnegative e-values; ``axis`` runs over the ones combined (any other axis: looks,
        replicates).
    weights : array_like, shape (k,)
        Fixed before the data: nonnegative, summing to at most 1.
    axis : int
        The axis of ``evalues`` that the weights run over.

    Returns
    -------
    numpy.ndarray
        ``evalues`` with ``axis`` summed out.

    References
    ----------
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals
    of Statistics 49(3), 1736-1754.

    Examples
    --------
    >>> float(weighted_evalue([4.0, 0.5, 0.0], [0.5, 0.25, 0.25]))
    2.125
    >>> weighted_evalue([[1.0, 3.0], [2.0, 2.0]], [0.5, 0.5]).tolist()
    [2.0, 2.0]
    """
    e = np.moveaxis(np.asarray(evalues, dtype=float), axis, -1)
    if (e < 0).any() or np.isnan(e).any():
        raise ValueError("e-values must be >= 0 (and not NaN)")
    return e @ _weights(weights, e.shape[-1])


def log_weighted_evalue(
    log_evalues: ArrayLike, weights: ArrayLike, *, axis: int = -1
) -> NDArray[np.float64]:
    r""":math:`\log \sum_i w_i E_i` from :math:`\log E_i` (log-wealths), without overflow.

    :func:`weighted_evalue` in log space, as the monitor stores its wealth: computed as
    ``logsumexp(log_evalues, b=weights)``; a weight 0 drops its e-value, and the result is
    ``-inf`` when every weight is 0.

    Examples
    --------
    >>> import numpy as np
    >>> float(np.exp(log_weighted_evalue(np.log([4.0, 0.5]), [0.5, 0.5])))
    2.25
    >>> round(float(log_weighted_evalue([2000.0, 0.0], [0.5, 0.5]) - 2000.0 + np.log(2.0)), 9)
    0.0
    """
    x = np.moveaxis(np.asarray(log_evalues, dtype=float), axis, -1)
    if np.isnan(x).any():
        raise ValueError("log e-values must not be NaN")
    w = _weights(weights, x.shape[-1])
    if not w.any():
        return np.full(x.shape[:-1], -np.inf)
    return special.logsumexp(x, axis=-1, b=w)


def order_weighted_evalue(
    log_wealth: ArrayLike, levels: ArrayLike, weights: ArrayLike | None = None
) -> NDArray[np.float64]:
    r""":math:`\log E^W_w` of weak orders W: the weighted mean over T(W) of the pairs' e-values.

    .. math::

        E^W_w = \frac{\sum_{(j,l) \in T(W)} w_{jl} E^{jl}}{\sum_{(j,l) \in T(W)} w_{jl}},
        \qquad T(W) = \{(j, l) : j \ne l,\ j \text{ not strictly above } l \text{ in } W\}.

    The normalised weights of each W are nonnegative and sum to 1, so for each W fixed in
    advance :math:`E^W_w` is an e-value (an e-process over looks) under :math:`H_W`, and
    eliminating W once :math:`E^W_w \ge 1/\alpha` keeps the exact certifier's guarantee. Equal
    weights (``weights=None``) give the design's :math:`E^W`, the mean.

    Parameters
    ----------
    log_wealth : array_like, shape (M, M)
        :math:`\log E^{jl}` of every ordered pair (row j, column l; the diagonal is ignored).
    levels : array_like of int, shape (M,) or (n_orders, M)
        Weak orders as levels (0 = top, equal levels tied), as
        :attr:`rankci.sequential.OrderTable.levels`.
    weights : array_like, shape (M, M), optional
        :math:`w_{jl} \ge 0`, fixed before the data (the diagonal is ignored); default equal.

    Returns
    -------
    numpy.ndarray
        :math:`\log E^W_w` per order (a 0-d array for one order); ``-inf`` where every weight
        of T(W) is 0.

    References
    ----------
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals
    of Statistics 49(3), 1736-1754.

    Examples
    --------
    >>> import numpy as np
    >>> log_e = np.log([[1.0, 8.0, 2.0], [1.0, 1.0, 4.0], [0.5, 0.5, 1.0]])
    >>> # W: 2 above 1 above 0, so T(W) = {(0, 1), (0, 2), (1, 2)}: (8 + 2 + 4) / 3
    >>> round(float(np.exp(order_weighted_evalue(log_e, [2, 1, 0]))), 12)
    4.666666666667
    >>> w = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)
    >>> round(float(np.exp(order_weighted_evalue(log_e, [2, 1, 0], w))), 12)  # (8 + 4) / 2
    6.0
    """
    log_e = np.asarray(log_wealth, dtype=float)
    m = log_e.shape[0]
    if log_e.shape != (m, m):
        raise ValueError(f"log_wealth must be M x M, got shape {log_e.shape}")
    lv = np.asarray(levels)
    single = lv.ndim == 1
    lv = np.atleast_2d(lv)
    if lv.shape[1] != m:
        raise ValueError(f"levels must give a level to each of the {m} models, got {lv.shape}")
    w = np.ones((m, m)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (m, m) or not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError("weights must be an M x M array of finite numbers >= 0")
    off = ~np.eye(m, dtype=bool)
    member = (lv[:, :, None] >= lv[:, None, :]) & off  # (orders, M, M): (j, l) in T(W)
    wt = np.where(member, w, 0.0).reshape(lv.shape[0], -1)
    total = wt.sum(axis=1)
    x = np.where(off, log_e, 0.0).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(
            total > 0,
            special.logsumexp(np.broadcast_to(x, wt.shape), axis=1, b=wt) - np.log(total),
            -np.inf,
        )
    return out[0] if single else out
