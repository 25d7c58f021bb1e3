"""The probes a careful analyst runs on an arena, each with its test and its threshold.

:func:`probe_votes` returns one entry per probe (JSON-safe): the test in words, the statistic,
the threshold, ``flagged`` and a message.

* ``connectivity``: the comparison graph's pools; flagged when there is more than one.
* ``separation``: the win graph's strong components; flagged when it is not strongly connected
  (some strength is infinite; says which bound the data support).
* ``position``: the Wald z test of the first-position parameter; flagged when its two-sided
  p-value is below ``alpha``.
* ``intransitivity``: observed cyclic triads of the majority graph against their distribution
  when the fitted Bradley-Terry model is true (a seeded parametric bootstrap of the pair counts);
  flagged when the upper-tail p-value is below ``alpha``.
* ``voters``: the largest voter's share and the effective number of voters ``1 / sum share^2``;
  flagged when one voter cast more than 10 % of the votes or the effective number is below 20;
  the certified statements each of the (up to) three largest voters alone carries (lost when
  that voter's votes are left out).
* ``votes_needed``: for each neighbouring pair (in the observed order) that is not certified,
  the total votes at the present allocation that would make its z reach the critical value,
  ``N (c / z)^2`` (the standard error shrinks like ``1 / sqrt(N)`` at a fixed design).
"""

from __future__ import annotations

import math

import numpy as np

from rankci._base import as_generator, check_alpha
from rankci.votes.bradley_terry import (
    BradleyTerryFit,
    comparison_pools,
    fit_bradley_terry,
    separation_report,
)
from rankci.votes.table import A_WINS, B_WINS, Votes

__all__ = ["probe_votes", "cyclic_triads", "VOTER_SHARE", "MIN_EFFECTIVE_VOTERS"]

#: One voter casting more than this share of the votes is flagged.
VOTER_SHARE = 0.10
#: Fewer effective voters than this is flagged.
MIN_EFFECTIVE_VOTERS = 20


def cyclic_triads(wins: np.ndarray) -> int:
    """Cyclic triads of the strict-majority graph: ``trace(D^3) / 3``.

    ``wins[i, j]`` counts the votes i won against j; ``D[i, j] = wins[i, j] > wins[j, i]``.
    A triad is cyclic when i beats j, j beats k and k beats i by majority (Kendall and Babington
    Smith 1940); pairs that never met, or split evenly, join no triad.

    References
    ----------
    Kendall, M. G. and Babington Smith, B. (1940). On the method of paired comparisons.
    Biometrika 31(3/4), 324-345.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[0, 3, 0], [0, 0, 3], [3, 0, 0]])
    >>> cyclic_triads(w)
    1
    """
    d = (wins > wins.T).astype(float)
    return int(round(np.trace(d @ d @ d) / 3))


def _win_matrix(votes: Votes) -> np.ndarray:
    m = votes.n_models
    o = votes.outcome
    winner = np.concatenate([votes.a[o == A_WINS], votes.b[o == B_WINS]])
    loser = np.concatenate([votes.b[o == A_WINS], votes.a[o == B_WINS]])
    return np.bincount(winner * m + loser, minlength=m * m).reshape(m, m).astype(float)


def _intransitivity(votes: Votes, fit: BradleyTerryFit, alpha: float, reps: int, rng) -> dict:
    wins = _win_matrix(votes)
    observed = cyclic_triads(wins)
    decisive = wins + wins.T
    i, j = np.nonzero(np.triu(decisive > 0, 1))
    n = decisive[i, j].astype(np.int64)
    p = 1 / (1 + np.exp(-(fit.strength[i] - fit.strength[j])))
    gen = as_generator(rng)
    m = votes.n_models
    sims = np.empty(reps)
    for r in range(reps):  # a loop over replicates; each is one matrix product
        w_ij = gen.binomial(n, p)
        sim = np.zeros((m, m))
        sim[i, j] = w_ij
        sim[j, i] = n - w_ij
        sims[r] = cyclic_triads(sim)
    pvalue = (1 + np.count_nonzero(sims >= observed)) / (reps + 1)
    return {
        "test": (
            "cyclic triads of the majority graph against their distribution under the fitted "
            f"Bradley-Terry model ({reps} parametric bootstrap boards of the decisive votes)"
        ),
        "statistic": observed,
        "expected": float(sims.mean()),
        "p_value": float(pvalue),
        "threshold": f"p < {alpha:g}",
        "flagged": bool(pvalue < alpha),
        "message": (
            f"{observed} cyclic triads observed, {sims.mean():.1f} expected under Bradley-Terry "
            f"(p = {pvalue:.3g})"
            + (
                "; the votes are more intransitive than the model allows: the strengths summarise "
                "them with a misfit"
                if pvalue < alpha
                else ""
            )
        ),
    }


def _position(votes: Votes, fit_kwargs: dict, alpha: float) -> dict:
    from scipy.stats import norm

    fit = fit_bradley_terry(votes, position=True, **fit_kwargs)
    c = fit.coef["position"]
    z = c["estimate"] / c["se"] if c["se"] > 0 else float("nan")
    pvalue = float(2 * norm.sf(abs(z)))
    source = (
        "columns['position']" if "position" in votes.columns else "model_a taken as shown first"
    )
    return {
        "test": f"Wald z test of the first-position log-odds parameter ({source})",
        "statistic": float(z),
        "estimate": c["estimate"],
        "se": c["se"],
        "p_value": pvalue,
        "threshold": f"p < {alpha:g}",
        "flagged": bool(pvalue < alpha),
        "message": (
            f"first-position effect {c['estimate']:+.3f} log-odds (se {c['se']:.3f}, p = "
            f"{pvalue:.3g})" + ("; fit with position=True" if pvalue < alpha else "")
        ),
    }


def _voters(votes: Votes, ranking, spec, top: int = 3) -> dict:
    from rankci.votes.rank import rank_votes

    _, inverse, counts = np.unique(votes.columns["voter"], return_inverse=True, return_counts=True)
    share = counts / counts.sum()
    effective = 1.0 / float((share**2).sum())
    labels = np.unique(votes.columns["voter"])
    order = np.argsort(-counts, kind="stable")[:top]
    influence = []
    if ranking is not None and ranking.dominance is not None:
        for g in order:
            keep = inverse.ravel() != g
            sub = Votes.from_arrays(
                votes.a[keep],
                votes.b[keep],
                votes.outcome[keep],
                models=votes.models,
                columns={k: v[keep] for k, v in votes.columns.items()},
            )
            try:
                without = rank_votes(sub, spec=spec)
                lost = ranking.dominance & ~without.dominance
                pairs = [[ranking.models[a], ranking.models[b]] for a, b in zip(*np.nonzero(lost))]
                influence.append({"voter": str(labels[g]), "votes": int(counts[g]), "lost": pairs})
            except ValueError as err:  # without this voter the board cannot be fitted
                influence.append(
                    {"voter": str(labels[g]), "votes": int(counts[g]), "error": str(err)}
                )
    flagged = bool(share.max() > VOTER_SHARE or effective < MIN_EFFECTIVE_VOTERS)
    return {
        "test": "largest voter's share and effective number of voters (1 / sum share^2)",
        "statistic": {
            "largest_share": float(share.max()),
            "effective_voters": effective,
            "voters": int(counts.size),
        },
        "threshold": f"share > {VOTER_SHARE:g} or effective voters < {MIN_EFFECTIVE_VOTERS}",
        "flagged": flagged,
        "influence": influence,
        "message": (
            f"{counts.size} voters, the largest cast {share.max():.1%} of the votes, "
            f"{effective:.1f} effective voters"
            + ("; cluster by voter (cluster='voter')" if flagged else "")
        ),
    }


def _votes_needed(fit: BradleyTerryFit, ranking, spec) -> dict:
    from scipy.stats import norm

    m = len(fit.models)
    order = np.argsort(-fit.strength, kind="stable")
    crit = ranking.details.get("critical_values") if ranking is not None else None
    if spec is not None and spec.multiplicity == "max-t" and crit:
        c = float(np.max(np.ravel(crit)))
        rule = "the first max-t critical value"
    else:
        alpha = spec.alpha if spec is not None else 0.05
        c = float(norm.isf(alpha / (m * (m - 1))))
        rule = (
            "the Bonferroni bound alpha / (M(M-1)), which Holm's and max-t's thresholds "
            "never exceed"
        )
    delta = spec.delta if spec is not None else 0.0
    rows = []
    for hi, lo in zip(order[:-1], order[1:]):
        if ranking is not None and ranking.dominance is not None and ranking.dominance[hi, lo]:
            continue
        diff = fit.strength[hi] - fit.strength[lo] - delta
        se = math.sqrt(max(fit.cov[hi, hi] + fit.cov[lo, lo] - 2 * fit.cov[hi, lo], 0.0))
        z = diff / se if se > 0 else float("nan")
        row = {"better": fit.models[hi], "worse": fit.models[lo], "z": float(z)}
        if not z > 0:
            row["votes_needed"] = None
            row["note"] = (
                "the estimated difference is zero: no number of votes at this design separates them"
            )
        else:
            row["votes_needed"] = int(math.ceil(fit.n_votes * (c / z) ** 2))
        rows.append(row)
    return {
        "test": (
            f"total votes N (c / z)^2 at the present allocation for z to reach c = {c:.3f} ({rule})"
        ),
        "critical_value": c,
        "threshold": "any neighbouring pair not certified",
        "pairs": rows,
        "flagged": bool(rows),
        "message": f"{len(rows)} neighbouring pair(s) not certified",
    }


def probe_votes(
    votes: Votes,
    *,
    fit: BradleyTerryFit | None = None,
    ranking=None,
    alpha: float = 0.05,
    reps: int = 200,
    rng: int | np.random.Generator | None = None,
) -> dict:
    """Run every probe on a vote table (module docstring: the tests and their thresholds).

    Parameters
    ----------
    votes : Votes
    fit : BradleyTerryFit, optional
        The fit to probe (default: the fit of ``ranking.spec``, or the default fit).
    ranking : Ranking, optional
        A :func:`~rankci.votes.rank_votes` result: its certified statements for the voters'
        influence and the votes needed.
    alpha : float, default 0.05
        The level of the position and intransitivity tests.
    reps : int, default 200
        Parametric bootstrap boards of the intransitivity probe.
    rng : int, Generator or None

    Returns
    -------
    dict
        probe name -> its result. The fit-based probes are absent when the board is
        disconnected or separated (their entries say so).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 4, 2000); b = (a + rng.integers(1, 4, 2000)) % 4
    >>> out = (rng.random(2000) < 0.5).astype(int)
    >>> p = probe_votes(Votes.from_arrays(a, b, out, models=list("wxyz")), rng=1)
    >>> p["connectivity"]["flagged"], p["separation"]["flagged"], p["position"]["flagged"]
    (False, False, False)
    """
    alpha = check_alpha(alpha)
    pools = comparison_pools(votes)
    out: dict = {
        "connectivity": {
            "test": "connected components of the comparison graph (models joined when they met)",
            "statistic": len(pools),
            "threshold": "more than 1 pool",
            "flagged": len(pools) > 1,
            "pools": pools,
            "message": f"{len(pools)} pool(s)"
            + ("" if len(pools) == 1 else ": strengths across pools are not comparable"),
        }
    }
    supported = separation_report(votes)
    out["separation"] = {
        "test": "strong connectivity of the win graph (a tie counts both ways)",
        "statistic": len(set(supported.values())) if supported else 0,
        "threshold": "not strongly connected",
        "flagged": bool(supported),
        "supported": supported,
        "message": "every strength is finite"
        if not supported
        else (
            "some strengths are infinite: "
            + ", ".join(f"{k}: {v}" for k, v in list(supported.items())[:8])
        ),
    }
    if len(pools) > 1 or supported:
        out["fit"] = "not run: the board cannot be fitted (see connectivity and separation)"
        return out
    spec = ranking.spec if ranking is not None else None
    fit_kwargs = {}
    if spec is not None:
        fit_kwargs = dict(
            ties=spec.ties,
            covariance=spec.covariance,
            cluster=spec.cluster,
            covariates=spec.covariates,
            bootstrap_reps=spec.bootstrap_reps,
            rng=spec.seed,
        )
        if spec.covariance == "bootstrap":  # the probes use the cluster sandwich for speed
            fit_kwargs["covariance"] = "cluster" if spec.cluster else "sandwich"
    if fit is None:
        fit = fit_bradley_terry(votes, position=bool(spec and spec.position), **fit_kwargs)
    gen = as_generator(rng)
    out["position"] = _position(votes, fit_kwargs, alpha)
    out["intransitivity"] = _intransitivity(votes, fit, alpha, reps, gen)
    if "voter" in votes.columns:
        out["voters"] = _voters(votes, ranking, spec)
    out["votes_needed"] = _votes_needed(fit, ranking, spec)
    return out
