"""The Bradley-Terry fit of a vote table: strengths, tie and position parameters, covariates.

The model, on the natural-log-odds scale, for a vote between ``f`` (the first side of the
vote's pattern) and ``g``::

    d = s_f - s_g + gamma' e          (e: the vote's position indicator and covariate differences)
    half:        P(f wins) = sigmoid(d); a tie counts half a win to each side
    davidson:    P(f), P(g), P(tie)  proportional to  exp(d/2), exp(-d/2), nu
    rao-kupper:  P(f wins) = sigmoid(d - eta), P(g wins) = sigmoid(-d - eta), P(tie) = the rest

The strengths are identified by the constraint ``sum_j s_j = 0``: the fit solves the Newton
(Fisher-scoring, IRLS) equations with model 0 as the reference and centres afterwards, so the
covariance is that of the centred strengths, ``C V C'`` with ``C = I - 11'/M``. Without
covariates the fit runs on the votes aggregated by pair (at most M^2 patterns, never a row per
vote); with covariates each vote is its own pattern. Every step is a handful of ``bincount``
passes over the patterns.

Covariances (``covariance=``):

* ``"model"``: the inverse Fisher information.
* ``"sandwich"``: ``H^-1 B H^-1`` with B the outer products of the per-vote scores (HC0, as
  statsmodels' ``cov_type="HC0"``).
* ``"cluster"``: the scores summed within each cluster (``cluster="prompt"`` or ``"voter"``)
  first, times ``G/(G-1) (N-1)/(N-K)`` (CR1, as statsmodels' ``cov_type="cluster"``).
* ``"bootstrap"``: the covariance of the centred estimates over seeded (cluster) bootstrap
  re-fits; replicates whose fit diverges (a resample that separates a model) are dropped and
  counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rankci._base import as_generator, check_choice, check_positive_int
from rankci.votes.table import A_WINS, B_WINS, TIE, Votes

__all__ = [
    "TIES",
    "COVARIANCES",
    "ELO_SCALE",
    "BradleyTerryFit",
    "ConnectivityError",
    "SeparationError",
    "fit_bradley_terry",
    "comparison_pools",
    "separation_report",
]

#: The tie conventions.
TIES = ("half", "davidson", "rao-kupper")
#: The covariance estimators of the strengths.
COVARIANCES = ("model", "sandwich", "cluster", "bootstrap")
#: Elo points per unit of natural log-odds (400 / ln 10).
ELO_SCALE = 400.0 / math.log(10.0)
#: |strength| beyond this (log-odds) after convergence means a separated board.
DIVERGED = 25.0
#: codes up to this many are counted in a dense bincount (M x M pair keys, integer cluster ids);
#: above it, the sorting np.unique (the same codes, in the same order)
_DENSE_KEYS = 1 << 22


def unique_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, by a bincount when ``values`` are
    non-negative integers below :data:`_DENSE_KEYS` (no sort of the votes: O(n + max)).

    Examples
    --------
    >>> unique_codes(np.array([5, 2, 5, 9]))
    (array([2, 5, 9]), array([1, 0, 1, 2]))
    """
    values = np.asarray(values)
    if values.dtype.kind in "iu" and values.size and values.min() >= 0:
        top = int(values.max()) + 1
        if top <= max(_DENSE_KEYS, 2 * values.size):
            present = np.bincount(values, minlength=top) > 0
            uniq = np.flatnonzero(present)
            code = np.cumsum(present) - 1
            return uniq.astype(values.dtype, copy=False), code[values]
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.ravel()


class ConnectivityError(ValueError):
    """The comparison graph is not connected: strengths of different pools are not comparable.

    ``pools`` lists the models of each connected pool, largest first.
    """

    def __init__(self, message: str, pools: Sequence[Sequence[str]] = ()) -> None:
        super().__init__(message)
        self.pools = [list(p) for p in pools]


class SeparationError(ValueError):
    """Some models are separated: the maximum-likelihood strengths are infinite.

    ``supported`` maps each affected model to what the data do support (``"lower bound"``: it
    never lost to the models outside its group; ``"upper bound"``: it never won against them).
    """

    def __init__(self, message: str, supported: dict | None = None) -> None:
        super().__init__(message)
        self.supported = dict(supported or {})


# ---------------------------------------------------------------------------------- the design
@dataclass(frozen=True, eq=False)
class VoteDesign:
    """Votes as patterns: ``first``, ``second``, extra columns ``extra`` and outcome counts.

    ``counts[:, 0]`` wins of first, ``[:, 1]`` wins of second, ``[:, 2]`` ties; ``pattern`` and
    ``klass`` give each vote's pattern and its outcome class (0, 1, 2) for the clustered scores
    and the bootstrap.
    """

    first: np.ndarray
    second: np.ndarray
    extra: np.ndarray  # (n_patterns, q)
    counts: np.ndarray  # (n_patterns, 3)
    pattern: np.ndarray
    klass: np.ndarray
    n_models: int
    extra_names: tuple[str, ...]

    def recount(self, weights: np.ndarray) -> np.ndarray:
        """Outcome counts per pattern with vote weights (the bootstrap's)."""
        flat = np.bincount(
            self.pattern * 3 + self.klass, weights=weights, minlength=3 * self.first.size
        )
        return flat.reshape(-1, 3)


def _position_sign(votes: Votes) -> np.ndarray:
    """+1 where model ``a`` was shown first, -1 where ``b`` was (``columns["position"]``)."""
    if "position" not in votes.columns:
        return np.ones(votes.n_votes)
    pos = votes.columns["position"]
    if pos.dtype.kind in "biuf":
        bad = ~np.isin(pos, (0, 1))
        first_is_a = pos == 0
    else:
        text = np.char.lower(pos.astype(str))
        first_is_a = np.isin(text, ("a", "model_a"))
        bad = ~(first_is_a | np.isin(text, ("b", "model_b")))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"columns['position'][{k}] = {pos[k]!r}: position must say which model was shown "
            "first: 0 / 'a' / 'model_a' or 1 / 'b' / 'model_b'"
        )
    return np.where(first_is_a, 1.0, -1.0)


def style_features(votes: Votes, covariates: Sequence[str]) -> np.ndarray:
    """Normalised covariate differences ``a - b`` per vote (the LMArena style-control recipe).

    For a name ``x`` with columns ``x_a`` and ``x_b``: ``(x_a - x_b) / (x_a + x_b)`` (0 where
    both are 0), then standardised over the votes; a column ``x`` itself is taken as the
    difference already made and only standardised.

    Parameters
    ----------
    votes : Votes
    covariates : sequence of str

    Returns
    -------
    ndarray, shape (n_votes, len(covariates))

    Examples
    --------
    >>> v = Votes.from_arrays([0, 1], [1, 0], [0, 1], models=["x", "y"],
    ...     columns={"len_a": [30.0, 10.0], "len_b": [10.0, 30.0]})
    >>> style_features(v, ["len"]).round(3).tolist()
    [[1.0], [-1.0]]
    """
    out = np.empty((votes.n_votes, len(covariates)))
    for k, name in enumerate(covariates):
        if f"{name}_a" in votes.columns and f"{name}_b" in votes.columns:
            xa = np.asarray(votes.columns[f"{name}_a"], dtype=float)
            xb = np.asarray(votes.columns[f"{name}_b"], dtype=float)
            total = xa + xb
            diff = np.divide(xa - xb, total, out=np.zeros_like(total), where=total != 0)
        elif name in votes.columns:
            diff = np.asarray(votes.columns[name], dtype=float)
        else:
            raise ValueError(
                f"covariates: no column {name!r} (nor {name}_a and {name}_b) in the votes; "
                f"columns are {sorted(votes.columns)}"
            )
        if not np.isfinite(diff).all():
            raise ValueError(f"covariates: column {name!r} has missing or infinite values")
        sd = diff.std()
        if sd == 0:
            raise ValueError(
                f"covariates: {name!r} is constant over the votes; it has no effect to fit"
            )
        out[:, k] = (diff - diff.mean()) / sd
    return out


def vote_design(votes: Votes, position: bool, covariates: Sequence[str]) -> VoteDesign:
    a, b, outcome = votes.a, votes.b, votes.outcome
    m = votes.n_models
    names: list[str] = []
    cols = []
    if position or covariates:
        sign = _position_sign(votes) if position else np.ones(votes.n_votes)
        flip = sign < 0
        first = np.where(flip, b, a)
        second = np.where(flip, a, b)
        if position:
            names.append("position")
            cols.append(np.ones(votes.n_votes))
        if covariates:
            feats = style_features(votes, covariates)
            cols.extend((np.where(flip, -1.0, 1.0)[:, None] * feats).T)
            names.extend(covariates)
    else:
        flip = a > b
        first, second = np.minimum(a, b), np.maximum(a, b)
    klass = np.where(outcome >= TIE, 2, np.where((outcome == A_WINS) != flip, 0, 1)).astype(np.intp)
    if covariates:  # every vote its own pattern
        pattern = np.arange(votes.n_votes)
        extra = np.stack(cols, axis=1)
        pf, ps = first, second
    else:
        key = first * m + second
        uniq, pattern = unique_codes(key)
        pf, ps = uniq // m, uniq % m
        extra = np.ones((uniq.size, len(cols)))  # the position column, or no column
    counts = np.bincount(pattern * 3 + klass, minlength=3 * pf.size).reshape(-1, 3).astype(float)
    return VoteDesign(pf, ps, extra, counts, pattern, klass, m, tuple(names))


# ------------------------------------------------------------------ per-pattern likelihood terms
def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _terms(d: np.ndarray, tau: float, ties: str):
    """Per pattern: log P of each outcome (n, 3), the scores U (n, 3, 2) and Fisher weights.

    ``U[:, k]`` is the derivative of the log-likelihood of one vote of outcome k with respect to
    (d, tau); the Fisher weights are per vote (multiply by the pattern's votes).
    """
    n = d.size
    u = np.zeros((n, 3, 2))
    if ties == "half":
        p = np.exp(_log_sigmoid(d))
        logp = np.stack(
            [_log_sigmoid(d), _log_sigmoid(-d), 0.5 * (_log_sigmoid(d) + _log_sigmoid(-d))], 1
        )
        u[:, 0, 0], u[:, 1, 0], u[:, 2, 0] = 1 - p, -p, 0.5 - p
        fdd = p * (1 - p)
        return logp, u, fdd, np.zeros(n), np.zeros(n)
    if ties == "davidson":
        e = np.stack([d / 2, -d / 2, np.full(n, tau)], 1)
        logp = e - np.logaddexp.reduce(e, axis=1)[:, None]
        prob = np.exp(logp)
        u[:, :, 0] = np.array([0.5, -0.5, 0.0]) - ((prob[:, 0] - prob[:, 1]) / 2)[:, None]
        u[:, :, 1] = np.array([0.0, 0.0, 1.0]) - prob[:, 2:3]
    else:  # rao-kupper, eta = exp(tau) > 0
        eta = math.exp(tau)
        l1, l2 = _log_sigmoid(d - eta), _log_sigmoid(-d - eta)
        l3 = math.log(math.expm1(2 * eta)) + d - np.logaddexp(d, eta) - np.logaddexp(0.0, eta + d)
        logp = np.stack([l1, l2, l3], 1)
        prob = np.exp(logp)
        q1, q2 = prob[:, 0] * (1 - prob[:, 0]), prob[:, 1] * (1 - prob[:, 1])
        grad = np.stack(
            [np.stack([q1, -eta * q1], 1), np.stack([-q2, -eta * q2], 1)], 1
        )  # dP1, dP2 by (d, tau)
        grad = np.concatenate([grad, -(grad[:, :1] + grad[:, 1:2])], axis=1)
        u = grad / prob[:, :, None]
    fisher = np.einsum("nk,nki,nkj->nij", prob, u, u)
    return logp, u, fisher[:, 0, 0], fisher[:, 0, 1], fisher[:, 1, 1]


# ------------------------------------------------------------------------------ assembly
def pattern_gram(des: VoteDesign, wdd, wdt, wtt, has_tau: bool) -> np.ndarray:
    """``sum_patterns x x'`` weighted by the (d, tau) weights, x the pattern's design row."""
    m, q = des.n_models, des.extra.shape[1]
    f, s = des.first, des.second
    size = m + q + int(has_tau)
    out = np.zeros((size, size))
    off = np.bincount(f * m + s, weights=wdd, minlength=m * m).reshape(m, m)
    block = -(off + off.T)
    block[np.diag_indices(m)] = np.bincount(f, wdd, m) + np.bincount(s, wdd, m)
    out[:m, :m] = block
    for k in range(q):
        w = wdd * des.extra[:, k]
        col = np.bincount(f, w, m) - np.bincount(s, w, m)
        out[:m, m + k] = out[m + k, :m] = col
    out[m : m + q, m : m + q] = des.extra.T @ (wdd[:, None] * des.extra)
    if has_tau:
        col = np.bincount(f, wdt, m) - np.bincount(s, wdt, m)
        out[:m, -1] = out[-1, :m] = col
        out[m : m + q, -1] = out[-1, m : m + q] = des.extra.T @ wdt
        out[-1, -1] = wtt.sum()
    return out


def pattern_vector(des: VoteDesign, gd, gt, has_tau: bool) -> np.ndarray:
    """``sum_patterns x g``: per-pattern (d, tau) scores ``gd``, ``gt`` to the parameter scale."""
    m = des.n_models
    parts = [np.bincount(des.first, gd, m) - np.bincount(des.second, gd, m), des.extra.T @ gd]
    if has_tau:
        parts.append([gt.sum()])
    return np.concatenate(parts)


def pattern_predictor(des: VoteDesign, theta: np.ndarray) -> tuple[np.ndarray, float]:
    """The linear predictor ``d`` of every pattern and the tie parameter ``tau`` at ``theta``."""
    m, q = des.n_models, des.extra.shape[1]
    d = theta[des.first] - theta[des.second] + des.extra @ theta[m : m + q]
    tau = float(theta[m + q]) if theta.size > m + q else 0.0
    return d, tau


def newton_scoring(
    des: VoteDesign,
    counts: np.ndarray,
    ties: str,
    theta: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-10,
):
    """Fisher scoring with step halving; model 0 fixed at 0. Returns theta, loglik, iterations."""
    has_tau = ties != "half"
    free = np.arange(1, theta.size)
    n = counts.sum(axis=1)

    def loglik(th):
        d, tau = pattern_predictor(des, th)
        return float((counts * _terms(d, tau, ties)[0]).sum())

    current = loglik(theta)
    for it in range(1, max_iter + 1):
        d, tau = pattern_predictor(des, theta)
        _, u, fdd, fdt, ftt = _terms(d, tau, ties)
        grad = pattern_vector(
            des, (counts * u[:, :, 0]).sum(1), (counts * u[:, :, 1]).sum(1), has_tau
        )
        info = pattern_gram(des, n * fdd, n * fdt, n * ftt, has_tau)
        step = np.zeros_like(theta)
        try:
            step[free] = np.linalg.solve(info[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            return theta, current, it, False
        scale = 1.0
        while True:
            trial = theta + scale * step
            value = loglik(trial)
            if value >= current - 1e-12 * abs(current) or scale < 1e-8:
                break
            scale /= 2
        theta, current = trial, value
        if np.max(np.abs(scale * step)) < tol:
            return theta, current, it, True
    return theta, current, max_iter, False


def _scores_by_vote(des: VoteDesign, u: np.ndarray):
    """Per-vote scores on (d, tau): the rows of u at each vote's pattern and outcome class."""
    return u[des.pattern, des.klass]  # (n_votes, 2)


def _cluster_meat(des: VoteDesign, u: np.ndarray, groups: np.ndarray, has_tau: bool) -> np.ndarray:
    """``sum_g S_g S_g'`` with ``S_g`` the score of cluster g (a sparse G x P product)."""
    from scipy import sparse

    m, q = des.n_models, des.extra.shape[1]
    size = m + q + int(has_tau)
    sv = _scores_by_vote(des, u)
    ud = sv[:, 0]
    p = des.pattern
    rows = [groups, groups]
    cols = [des.first[p], des.second[p]]
    vals = [ud, -ud]
    for k in range(q):
        rows.append(groups)
        cols.append(np.full(groups.size, m + k))
        vals.append(ud * des.extra[p, k])
    if has_tau:
        rows.append(groups)
        cols.append(np.full(groups.size, size - 1))
        vals.append(sv[:, 1])
    n_groups = int(groups.max()) + 1
    s = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_groups, size),
    )
    return np.asarray((s.T @ s).toarray())


# ---------------------------------------------------------------------------------- probes first
def comparison_pools(votes: Votes) -> list[list[str]]:
    """The connected pools of the comparison graph (models joined when they met), largest first.

    Examples
    --------
    >>> v = Votes.from_arrays([0, 2], [1, 3], [0, 0], models=["a", "b", "c", "d"])
    >>> comparison_pools(v)
    [['a', 'b'], ['c', 'd']]
    """
    from scipy.sparse import coo_matrix, csr_matrix
    from scipy.sparse.csgraph import connected_components

    m = votes.n_models
    if m * m <= _DENSE_KEYS:  # the pairs that met, without a sparse sort of every vote
        met = np.bincount(votes.a * m + votes.b, minlength=m * m).reshape(m, m) > 0
        graph = csr_matrix(met)
    else:
        graph = coo_matrix((np.ones(votes.n_votes), (votes.a, votes.b)), shape=(m, m))
    n, label = connected_components(graph, directed=False)
    pools = [[votes.models[k] for k in np.flatnonzero(label == c)] for c in range(n)]
    return sorted(pools, key=lambda p: (-len(p), p))


def separation_report(votes: Votes) -> dict:
    """What the data support for models the win graph separates (empty when none is).

    The maximum-likelihood strengths are finite exactly when the directed graph "j won (or
    tied) a vote against l" is strongly connected (Zermelo 1929; Ford 1957; Hunter 2004). When
    it is not, a group of models that never lost to anyone outside it can only be given a lower
    bound relative to the rest, and a group that never won against anyone outside an upper
    bound.

    Returns
    -------
    dict
        model -> ``"lower bound"``, ``"upper bound"`` or ``"bounded in between"`` (a group with
        both kinds of neighbours: only its relation to the groups above and below is
        separated).

    References
    ----------
    Zermelo, E. (1929). Die Berechnung der Turnier-Ergebnisse als ein Maximumproblem der
    Wahrscheinlichkeitsrechnung. Mathematische Zeitschrift 29, 436-460.
    Ford, L. R. (1957). Solution of a ranking problem from binary comparisons. The American
    Mathematical Monthly 64(8), 28-33.
    Hunter, D. R. (2004). MM algorithms for generalized Bradley-Terry models. The Annals of
    Statistics 32(1), 384-406.

    Examples
    --------
    >>> v = Votes.from_arrays([0, 0, 1, 2], [1, 2, 2, 1], [0, 0, 0, 0], models=["m", "x", "y"])
    >>> separation_report(v)
    {'m': 'lower bound', 'x': 'upper bound', 'y': 'upper bound'}
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = votes.n_models
    o = votes.outcome
    if m * m <= _DENSE_KEYS:  # the same graph from M x M counts by outcome: no sort of votes
        return _separation_dense(votes)
    winner = np.concatenate(
        [votes.a[o == A_WINS], votes.b[o == B_WINS], votes.a[o >= TIE], votes.b[o >= TIE]]
    )
    loser = np.concatenate(
        [votes.b[o == A_WINS], votes.a[o == B_WINS], votes.b[o >= TIE], votes.a[o >= TIE]]
    )
    graph = coo_matrix((np.ones(winner.size), (winner, loser)), shape=(m, m)).tocsr()
    n, label = connected_components(graph, directed=True, connection="strong")
    if n == 1:
        return {}
    cross = label[winner] != label[loser]
    beats_out = np.bincount(label[winner[cross]], minlength=n) > 0
    loses_out = np.bincount(label[loser[cross]], minlength=n) > 0
    word = np.where(
        ~loses_out & beats_out,
        "lower bound",
        np.where(loses_out & ~beats_out, "upper bound", "bounded in between"),
    )
    return {votes.models[k]: str(word[label[k]]) for k in range(m)}


def _separation_dense(votes: Votes) -> dict:
    """:func:`separation_report` from the M x M counts of "j won or tied against l"."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    m, o = votes.n_models, votes.outcome
    klass = np.where(o >= TIE, 2, np.where(o == A_WINS, 0, 1))
    c = np.bincount((votes.a * m + votes.b) * 3 + klass, minlength=3 * m * m).reshape(m, m, 3)
    edge = (c[:, :, 0] + c[:, :, 2] > 0) | (c[:, :, 1] + c[:, :, 2] > 0).T  # winner -> loser
    n, label = connected_components(csr_matrix(edge), directed=True, connection="strong")
    if n == 1:
        return {}
    win, lose = np.nonzero(edge & (label[:, None] != label[None, :]))
    beats_out = np.bincount(label[win], minlength=n) > 0
    loses_out = np.bincount(label[lose], minlength=n) > 0
    word = np.where(
        ~loses_out & beats_out,
        "lower bound",
        np.where(loses_out & ~beats_out, "upper bound", "bounded in between"),
    )
    return {votes.models[k]: str(word[label[k]]) for k in range(m)}


def check_fittable(votes: Votes, ties: str) -> None:
    if votes.n_votes < 2:
        raise ValueError(
            f"votes: {votes.n_votes} vote(s); a Bradley-Terry fit needs votes in both directions "
            "between every pair of groups of models"
        )
    if votes.n_models < 2:
        raise ValueError("votes: fewer than two models")
    met = np.zeros(votes.n_models, dtype=bool)
    met[votes.a] = met[votes.b] = True
    if not met.all():
        raise ValueError(
            "votes: model(s) "
            + ", ".join(repr(votes.models[k]) for k in np.flatnonzero(~met)[:5])
            + " have no votes; drop them from models"
        )
    if (votes.outcome >= TIE).all():
        raise ValueError(
            f"votes: all {votes.n_votes} votes are ties; they say nothing about which model is "
            "better (every strength would be equal by construction, not by evidence)"
        )
    pools = comparison_pools(votes)
    if len(pools) > 1:
        shown = "; ".join(
            "{" + ", ".join(p[:6]) + (", ..." if len(p) > 6 else "") + f"}} ({len(p)} models)"
            for p in pools[:5]
        )
        raise ConnectivityError(
            f"votes: the comparison graph has {len(pools)} disconnected pools: {shown}; "
            "strengths in different pools are not comparable. Rank each pool separately or "
            "collect votes between the pools",
            pools,
        )
    if ties != "half" and not (votes.outcome >= TIE).any():
        raise ValueError(
            f"ties={ties!r} fits a tie parameter, but no vote is a tie; use ties='half'"
        )
    supported = separation_report(votes)
    if supported:
        top = [k for k, v in supported.items() if v == "lower bound"]
        bottom = [k for k, v in supported.items() if v == "upper bound"]
        parts = []
        if top:
            parts.append(
                ", ".join(map(repr, top[:6]))
                + (
                    " never lost to a model outside their group"
                    if len(top) > 1
                    else " beat everyone it met"
                )
                + ": only a lower bound on "
                + ("their" if len(top) > 1 else "its")
                + " strength is supported"
            )
        if bottom:
            parts.append(
                ", ".join(map(repr, bottom[:6]))
                + (
                    " never won against a model outside their group"
                    if len(bottom) > 1
                    else " lost to everyone it met"
                )
                + ": only an upper bound is supported"
            )
        raise SeparationError(
            "votes: the maximum-likelihood strengths are infinite (the win graph is not strongly "
            "connected): "
            + "; ".join(parts or ["some groups are separated"])
            + ". No finite rating is given; collect votes in the missing direction",
            supported,
        )


# ---------------------------------------------------------------------------------- the fit
@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """A Bradley-Terry fit: centred strengths and their covariance.

    Attributes
    ----------
    models : tuple of str
    strength : ndarray (M,)
        Strengths on the natural-log-odds scale, centred to mean 0.
    cov : ndarray (M, M)
        Covariance of ``strength`` (``covariance``), on the centred scale (rows sum to 0).
    cov_model : ndarray (M, M)
        The inverse-Fisher covariance (always computed, for comparison).
    coef : dict
        Position and covariate coefficients (log-odds per unit) with ``se``.
    tie_parameter : dict or None
        ``{"name": "nu" | "theta", "value": ..., "log_se": ...}``: Davidson's nu or Rao-Kupper's
        theta on their natural scale, and the standard error on the scale it is fitted on
        (log nu; log log theta); None for ``ties="half"``.
    ties, covariance, cluster : str, str, str or None
    n_clusters : int or None
    n_votes : int
    loglik : float
    iterations : int
    params_cov : ndarray
        Covariance of all the parameters (centred strengths, then position and covariates,
        then log nu or log theta).
    details : dict
        Bootstrap reps used and failed, and similar.
    """

    models: tuple[str, ...]
    strength: np.ndarray
    cov: np.ndarray
    cov_model: np.ndarray
    coef: dict
    tie_parameter: dict | None
    ties: str
    covariance: str
    cluster: str | None
    n_clusters: int | None
    n_votes: int
    loglik: float
    iterations: int
    params: np.ndarray = field(repr=False, default=None)
    params_cov: np.ndarray = field(repr=False, default=None)
    details: dict = field(default_factory=dict)

    @property
    def se(self) -> np.ndarray:
        """Standard errors of the centred strengths."""
        return np.sqrt(np.clip(np.diag(self.cov), 0, None))

    def ratings(self, anchor: str | None = None, rating: float = 1000.0) -> np.ndarray:
        """Elo-scale display ``rating + 400/ln(10) (s_j - s_anchor)`` (anchor None: the mean)."""
        base = 0.0
        if anchor is not None:
            if anchor not in self.models:
                raise ValueError(f"elo_anchor {anchor!r} is not a model of the votes")
            base = self.strength[self.models.index(anchor)]
        return rating + ELO_SCALE * (self.strength - base)

    def rank_ub(self, level: float = 0.95) -> np.ndarray:
        """LMArena's "Rank (UB)": ``1 + #{l : lower_l > upper_j}`` from marginal intervals.

        The intervals are ``s_j +- z se_j`` at the given level; it is an overlap rule, not a
        simultaneous (or even a marginal) rank interval.
        """
        from scipy.stats import norm

        z = norm.ppf(0.5 + level / 2)
        lo, hi = self.strength - z * self.se, self.strength + z * self.se
        return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def centring_matrix(m: int, q: int, has_tau: bool) -> np.ndarray:
    """J: free parameters (model 0 dropped) -> centred strengths and the other parameters."""
    size = m + q + int(has_tau)
    j = np.zeros((size, size - 1))
    c = np.eye(m) - 1.0 / m
    j[:m, : m - 1] = c[:, 1:]
    j[m:, m - 1 :] = np.eye(size - m)
    return j


def fit_bradley_terry(
    votes: Votes,
    *,
    ties: str = "half",
    position: bool = False,
    covariates: Sequence[str] = (),
    covariance: str = "sandwich",
    cluster: str | None = None,
    bootstrap_reps: int = 200,
    rng: int | np.random.Generator | None = None,
    max_iter: int = 100,
) -> BradleyTerryFit:
    """Fit the Bradley-Terry model to a vote table by Newton (Fisher scoring) on pattern counts.

    The log-likelihood ``sum_patterns sum_k n_pk log P_k(d_p, tau)`` (module docstring) is
    maximised with model 0 fixed at 0, by ``theta <- theta + I(theta)^-1 U(theta)`` with step
    halving; the strengths are then centred, ``s = C theta``, ``Cov(s) = C V C'``.

    Parameters
    ----------
    votes : Votes
    ties : {"half", "davidson", "rao-kupper"}, default "half"
        ``"half"`` counts a tie as half a win to each side (LMArena); ``"davidson"`` (Davidson
        1970) and ``"rao-kupper"`` (Rao and Kupper 1967) model ties with one parameter.
    position : bool, default False
        Fit a first-position effect (``columns["position"]`` says which model was shown first;
        without it ``a`` is taken as first).
    covariates : sequence of str
        Style-control covariates (:func:`style_features`).
    covariance : {"model", "sandwich", "cluster", "bootstrap"}, default "sandwich"
    cluster : str, optional
        The column whose values are the clusters (``"prompt"``, ``"voter"``) of the clustered
        sandwich and of the cluster bootstrap.
    bootstrap_reps : int, default 200
    rng : int, Generator or None
        The bootstrap's seed.
    max_iter : int, default 100

    Returns
    -------
    BradleyTerryFit

    Raises
    ------
    ConnectivityError, SeparationError, ValueError
        A board of disconnected pools, separated models, one vote, all ties.

    References
    ----------
    Bradley, R. A. and Terry, M. E. (1952). Rank analysis of incomplete block designs: I. The
    method of paired comparisons. Biometrika 39(3/4), 324-345.
    Davidson, R. R. (1970). On extending the Bradley-Terry model to accommodate ties in paired
    comparison experiments. Journal of the American Statistical Association 65(329), 317-328.
    Rao, P. V. and Kupper, L. L. (1967). Ties in paired-comparison experiments: a generalization
    of the Bradley-Terry model. Journal of the American Statistical Association 62(317), 194-204.
    Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
    Journal of Human Resources 50(2), 317-372.
    Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
    preference. Proceedings of ICML 2024.

    Examples
    --------
    Each pair won 2 : 1 by the better side (the winner is always model ``a``):

    >>> v = Votes.from_arrays([0, 1, 0, 1, 2, 1, 0, 2, 0], [1, 0, 1, 2, 1, 2, 2, 0, 2], [0] * 9,
    ...                       models=["x", "y", "z"])
    >>> fit = fit_bradley_terry(v, covariance="model")
    >>> fit.strength.round(3).tolist()
    [0.468, -0.0, -0.468]
    """
    check_choice("ties", ties, TIES)
    check_choice("covariance", covariance, COVARIANCES)
    covariates = tuple(covariates)
    if covariance == "cluster" and cluster is None:
        raise ValueError(
            "covariance='cluster' needs cluster= (a column such as 'prompt' or 'voter')"
        )
    groups = None
    if cluster is not None:
        if cluster not in votes.columns:
            raise ValueError(
                f"cluster={cluster!r} is not a column of the votes; columns are "
                f"{sorted(votes.columns)}"
            )
        _, groups = unique_codes(votes.columns[cluster])
    check_fittable(votes, ties)
    des = vote_design(votes, position, covariates)
    has_tau = ties != "half"
    m, q = votes.n_models, des.extra.shape[1]
    theta0 = np.zeros(m + q + int(has_tau))
    if has_tau:
        share = float(np.clip((votes.outcome >= TIE).mean(), 0.01, 0.99))
        theta0[-1] = math.log(share / (1 - share)) if ties == "davidson" else math.log(share)
    theta, loglik, iterations, converged = newton_scoring(des, des.counts, ties, theta0, max_iter)
    if not converged or not np.isfinite(theta).all() or np.abs(theta[:m]).max() > DIVERGED:
        raise SeparationError(
            "votes: the Newton iterations did not converge to finite strengths (the covariates or "
            "the position effect separate the votes); no finite rating is given"
        )
    d, tau = pattern_predictor(des, theta)
    _, u, fdd, fdt, ftt = _terms(d, tau, ties)
    n = des.counts.sum(axis=1)
    free = np.arange(1, theta.size)
    info = pattern_gram(des, n * fdd, n * fdt, n * ftt, has_tau)[np.ix_(free, free)]
    bread = np.linalg.inv(info)
    jac = centring_matrix(m, q, has_tau)
    centred = jac @ theta[free]
    params_model = jac @ bread @ jac.T
    details: dict = {"converged": bool(converged)}
    n_clusters = None
    if covariance == "model":
        params_cov = params_model
    elif covariance == "sandwich":
        c = des.counts
        meat = pattern_gram(
            des,
            (c * u[:, :, 0] ** 2).sum(1),
            (c * u[:, :, 0] * u[:, :, 1]).sum(1),
            (c * u[:, :, 1] ** 2).sum(1),
            has_tau,
        )[np.ix_(free, free)]
        params_cov = jac @ bread @ meat @ bread @ jac.T
    elif covariance == "cluster":
        meat = _cluster_meat(des, u, groups, has_tau)[np.ix_(free, free)]
        n_clusters = int(groups.max()) + 1
        if n_clusters < 2:
            raise ValueError(
                f"cluster={cluster!r} has a single cluster; a clustered covariance needs >= 2"
            )
        k = free.size
        factor = n_clusters / (n_clusters - 1) * (votes.n_votes - 1) / (votes.n_votes - k)
        params_cov = factor * (jac @ bread @ meat @ bread @ jac.T)
        details["small_sample"] = "CR1: G/(G-1) (N-1)/(N-K)"
    else:
        params_cov, used, failed, n_clusters = _bootstrap(
            des, ties, theta, groups, votes.n_votes, bootstrap_reps, rng, jac, free
        )
        details.update(
            bootstrap_reps=int(bootstrap_reps), bootstrap_used=used, bootstrap_failed=failed
        )
    if cluster is not None and n_clusters is None:
        n_clusters = int(groups.max()) + 1
    se = np.sqrt(np.clip(np.diag(params_cov), 0, None))
    coef = {
        name: {"estimate": float(centred[m + k]), "se": float(se[m + k])}
        for k, name in enumerate(des.extra_names)
    }
    tie_parameter = None
    if has_tau:
        value = math.exp(centred[-1])
        tie_parameter = {
            "name": "nu" if ties == "davidson" else "theta",
            "value": value if ties == "davidson" else math.exp(value),
            "log_se": float(se[-1]),
        }
    return BradleyTerryFit(
        models=votes.models,
        strength=centred[:m],
        cov=params_cov[:m, :m],
        cov_model=params_model[:m, :m],
        coef=coef,
        tie_parameter=tie_parameter,
        ties=ties,
        covariance=covariance,
        cluster=cluster,
        n_clusters=n_clusters,
        n_votes=votes.n_votes,
        loglik=loglik,
        iterations=iterations,
        params=centred,
        params_cov=params_cov,
        details=details,
    )


def _bootstrap(des, ties, theta, groups, n_votes, reps, rng, jac, free):
    """Covariance of the centred estimates over (cluster) bootstrap re-fits, seeded."""
    reps = check_positive_int(reps, "bootstrap_reps", minimum=2)
    gen = as_generator(rng)
    m = des.n_models
    if groups is None:
        groups = np.arange(n_votes)
    n_groups = int(groups.max()) + 1
    draws, failed = [], 0
    for _ in range(reps):  # a loop over replicates; each re-fit is vectorised
        weight = np.bincount(gen.integers(0, n_groups, n_groups), minlength=n_groups)[groups]
        counts = des.recount(weight.astype(float))
        th, _, _, ok = newton_scoring(des, counts, ties, theta.copy(), max_iter=50, tol=1e-8)
        if not ok or not np.isfinite(th).all() or np.abs(th[:m]).max() > DIVERGED:
            failed += 1
            continue
        draws.append(jac @ th[free])
    if len(draws) < 2:
        raise ValueError(f"bootstrap: {failed} of {reps} re-fits diverged; no covariance")
    return np.cov(np.asarray(draws), rowvar=False), len(draws), failed, n_groups
