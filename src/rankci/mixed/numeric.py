"""Finite-difference derivatives and a small bounded Newton optimiser (used by the REML fit).

* :func:`numeric_hessian`, :func:`numeric_jacobian`: central differences at steps ``d|x| / 2^k``
  with Richardson extrapolation, the scheme of ``numDeriv`` (Gilbert and Varadhan 2019) that
  lmerTest uses for Satterthwaite's degrees of freedom.
* :func:`minimise`: projected (saddle-free) Newton for a few parameters ``x >= 0``.

References
----------
Gilbert, P. and Varadhan, R. (2019). numDeriv: Accurate Numerical Derivatives. R package 2016.8-1.1.
"""

from __future__ import annotations

import numpy as np

__all__ = ["central_gradient", "minimise", "numeric_hessian", "numeric_jacobian"]


def central_gradient(f, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """Gradient by central differences with steps ``step * max(1, |x_k|)``.

    Parameters
    ----------
    f : callable
        Scalar function of a 1-d array.
    x : numpy.ndarray
        Point (1-d float array).
    step : float, default 1e-6
        Relative step.

    Returns
    -------
    numpy.ndarray
        ``(f(x + h e_k) - f(x - h e_k)) / (2 h)`` for every k.

    References
    ----------
    Nocedal, J. and Wright, S. J. (2006). Numerical Optimization, 2nd ed. Springer, Sec. 8.1
    (finite-difference derivative approximations).

    Examples
    --------
    The gradient of ``x0^2 + 3 x1`` is ``(2 x0, 3)``:

    >>> import numpy as np
    >>> grad = central_gradient(lambda x: x[0] ** 2 + 3 * x[1], np.array([1.0, 2.0]))
    >>> grad.round(6).tolist()
    [2.0, 3.0]
    """
    grad = np.empty(x.size)
    for k in range(x.size):  # a loop over the 1-3 variance parameters
        h = step * max(1.0, abs(x[k]))
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        grad[k] = (f(up) - f(down)) / (2.0 * h)
    return grad


def _extrapolate(table: list) -> object:
    """Richardson extrapolation of estimates at steps h, h/2, h/4, ... (error c2 h^2 + c4 h^4)."""
    for m in range(1, len(table)):
        factor = 4.0**m
        table = [(factor * table[k + 1] - table[k]) / (factor - 1.0) for k in range(len(table) - 1)]
    return table[0]


def _base_steps(x: np.ndarray, d: float) -> np.ndarray:
    return np.abs(d * x) + 1e-4 * (np.abs(x) < 1.78e-5)


def numeric_hessian(f, x: np.ndarray, d: float = 0.1, levels: int = 4) -> np.ndarray:
    """Hessian by central differences at steps ``d|x| / 2^k`` with Richardson extrapolation.

    The scheme of ``numDeriv::genD`` (Gilbert and Varadhan 2019), which lmerTest uses: relatively
    large steps are extrapolated to zero, so that round-off (which grows like 1/h^2) stays small.
    Off-diagonal entries come from ``f(x + h_i + h_j)`` and ``f(x - h_i - h_j)`` corrected by the
    diagonal.

    Parameters
    ----------
    f : callable
        Scalar function of a 1-d array.
    x : numpy.ndarray
        Point (1-d).
    d : float, default 0.1
        Relative base step (``numDeriv``'s ``d``).
    levels : int, default 4
        Number of halvings extrapolated (``numDeriv``'s ``r``).

    Returns
    -------
    numpy.ndarray
        The symmetric m x m Hessian.

    References
    ----------
    Gilbert, P. and Varadhan, R. (2019). numDeriv: Accurate Numerical Derivatives. R package
    version 2016.8-1.1.
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13).

    Examples
    --------
    The Hessian of ``x0^2 x1`` is ``[[2 x1, 2 x0], [2 x0, 0]]``:

    >>> import numpy as np
    >>> hess = numeric_hessian(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]))
    >>> (hess.round(8) + 0.0).tolist()
    [[4.0, 2.0], [2.0, 0.0]]
    """
    x = np.asarray(x, dtype=float)
    m = x.size
    f0 = f(x)
    h0 = _base_steps(x, d)
    hess = np.empty((m, m))
    for a in range(m):  # loops over the 2-4 variance parameters
        table = []
        for k in range(levels):
            e = np.zeros(m)
            e[a] = h0[a] / 2.0**k
            table.append((f(x + e) - 2.0 * f0 + f(x - e)) / e[a] ** 2)
        hess[a, a] = _extrapolate(table)
    for a in range(m):
        for b in range(a):
            table = []
            for k in range(levels):
                h = h0 / 2.0**k
                e = np.zeros(m)
                e[a], e[b] = h[a], h[b]
                value = f(x + e) - 2.0 * f0 + f(x - e)
                value -= hess[a, a] * h[a] ** 2 + hess[b, b] * h[b] ** 2
                table.append(value / (2.0 * h[a] * h[b]))
            hess[a, b] = hess[b, a] = _extrapolate(table)
    return hess


def numeric_jacobian(f, x: np.ndarray, d: float = 1e-4, levels: int = 4) -> np.ndarray:
    """Jacobian of an array-valued function by central differences with Richardson extrapolation.

    Derivatives are stacked along the first axis (``out[a] = df / dx_a``, so the result has shape
    ``(x.size,) + f(x).shape``); the steps are ``numDeriv::jacobian``'s defaults.

    Parameters
    ----------
    f : callable
        Array-valued function of a 1-d array.
    x : numpy.ndarray
        Point (1-d).
    d : float, default 1e-4
        Relative base step.
    levels : int, default 4
        Number of halvings extrapolated.

    Returns
    -------
    numpy.ndarray
        ``(x.size,) + f(x).shape`` derivatives.

    References
    ----------
    Gilbert, P. and Varadhan, R. (2019). numDeriv: Accurate Numerical Derivatives. R package
    version 2016.8-1.1.

    Examples
    --------
    For ``f(x) = (x0 x1, x0^2)``, ``df/dx0 = (x1, 2 x0)`` and ``df/dx1 = (x0, 0)``:

    >>> import numpy as np
    >>> jac = numeric_jacobian(lambda x: np.array([x[0] * x[1], x[0] ** 2]), np.array([2.0, 3.0]))
    >>> (jac.round(8) + 0.0).tolist()
    [[3.0, 4.0], [2.0, 0.0]]
    """
    x = np.asarray(x, dtype=float)
    h0 = _base_steps(x, d)
    out = []
    for a in range(x.size):
        table = []
        for k in range(levels):
            e = np.zeros(x.size)
            e[a] = h0[a] / 2.0**k
            table.append((f(x + e) - f(x - e)) / (2.0 * e[a]))
        out.append(_extrapolate(table))
    return np.stack(out)


def _derivatives(f, x: np.ndarray, fx: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of ``f`` at ``x >= 0`` by finite differences (about 2m + 2m +
    m(m-1)/2 evaluations); one-sided at the bound, where ``f`` may be undefined below zero."""
    m = x.size
    hg = 1e-6 * np.maximum(x, 1e-2)
    hh = 1e-4 * np.maximum(x, 1e-2)
    grad = np.empty(m)
    hess = np.empty((m, m))
    up = np.empty(m)
    for i in range(m):  # loops over the 1-3 variance parameters
        e = np.zeros(m)
        if x[i] >= 2 * hh[i]:
            e[i] = hg[i]
            grad[i] = (f(x + e) - f(x - e)) / (2 * hg[i])
            e[i] = hh[i]
            up[i], down = f(x + e), f(x - e)
            hess[i, i] = (up[i] - 2 * fx + down) / hh[i] ** 2
        else:
            e[i] = hh[i]
            up[i], up2 = f(x + e), f(x + 2 * e)
            grad[i] = (-3 * fx + 4 * up[i] - up2) / (2 * hh[i])
            hess[i, i] = (fx - 2 * up[i] + up2) / hh[i] ** 2
    for i in range(m):
        for j in range(i):
            e = np.zeros(m)
            e[i], e[j] = hh[i], hh[j]
            hess[i, j] = hess[j, i] = (f(x + e) - up[i] - up[j] + fx) / (hh[i] * hh[j])
    return grad, hess


def minimise(f, x0: np.ndarray, max_iter: int = 200) -> tuple[np.ndarray, float, bool, str]:
    """Projected (saddle-free) Newton for a smooth function of a few parameters ``x >= 0``.

    Each step solves ``|H_FF| d_F = -g_F`` on the free set F (parameters off the bound, or on it
    with a negative gradient), where ``|H|`` has the absolute eigenvalues of the finite-difference
    Hessian, then backtracks along the projected path ``max(x + a d, 0)`` (Armijo condition).
    Pure numpy: a few dozen evaluations of a cheap criterion, and no BLAS-threaded optimiser
    overhead.

    Parameters
    ----------
    f : callable
        Scalar function, smooth on ``x >= 0``.
    x0 : numpy.ndarray
        Start (negative entries are set to 0).
    max_iter : int, default 200
        Maximum number of Newton steps.

    Returns
    -------
    (numpy.ndarray, float, bool, str)
        The minimiser, the minimum, whether it converged, and a message.

    References
    ----------
    Bertsekas, D. P. (1982). Projected Newton methods for optimization problems with simple
    constraints. SIAM Journal on Control and Optimization 20(2), 221-246.
    Nocedal, J. and Wright, S. J. (2006). Numerical Optimization, 2nd ed. Springer (Armijo
    backtracking, Ch. 3).

    Examples
    --------
    ``(x0 - 1)^2 + (x1 + 1)^2`` on ``x >= 0`` is smallest at ``(1, 0)``, where it is 1:

    >>> import numpy as np
    >>> x, value, converged, message = minimise(
    ...     lambda x: (x[0] - 1) ** 2 + (x[1] + 1) ** 2, np.array([0.5, 0.5])
    ... )
    >>> x.round(6).tolist(), round(float(value), 6), converged
    ([1.0, 0.0], 1.0, True)
    """
    x = np.maximum(np.asarray(x0, dtype=float), 0.0)
    fx = f(x)
    for _ in range(max_iter):
        grad, hess = _derivatives(f, x, fx)
        free = (x > 0) | (grad < 0)
        if not free.any():
            return x, fx, True, "every parameter on its bound with a non-negative gradient"
        values, vectors = np.linalg.eigh(hess[np.ix_(free, free)])
        values = np.maximum(np.abs(values), 1e-10 * max(np.abs(values).max(), 1e-300))
        step = np.zeros_like(x)
        step[free] = -(vectors @ ((vectors.T @ grad[free]) / values))
        scale = 1.0
        for _ in range(50):
            trial = np.maximum(x + scale * step, 0.0)
            trial_value = f(trial)
            if trial_value <= fx + 1e-4 * float(grad @ (trial - x)):
                break
            scale *= 0.5
        else:
            return x, fx, True, "no further decrease along the Newton direction"
        moved = float(np.max(np.abs(trial - x) / (1.0 + np.abs(x))))
        decrease = fx - trial_value
        x, fx = trial, trial_value
        if moved < 1e-10 or (moved < 1e-7 and decrease <= 1e-15 * (1.0 + abs(fx))):
            return x, fx, True, "converged: relative step and decrease below tolerance"
    return x, fx, False, f"no convergence in {max_iter} Newton steps"
