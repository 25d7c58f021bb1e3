"""Arenas (issue 27): coverage of the certified rank intervals from votes, the family-wise error
of their dominances, and the error of LMArena's "Rank (UB)" overlap rule, on the same boards.

Every replicate draws a board of votes from a known truth, fits it once with
``rankci.votes.fit_bradley_terry`` (the covariance ``rank_votes`` would choose) and certifies it
with ``max-t`` and with ``holm`` (``rankci.votes.rank.ranking_from_fit``, alpha = 0.05). Measured
per design and method, with Monte-Carlo standard errors ``sqrt(p (1 - p) / R)``:

* ``coverage``: every model's certified rank interval contains its true rank (simultaneously);
* ``fwer``: some certified "j better than l" is false (theta_j <= theta_l);
* ``ub_error``: LMArena's "Rank (UB)" (1 + the number of models whose marginal 95 % interval
  lies wholly above this model's) is worse than some model's true rank, i.e. the overlap rule
  claims a model is beaten by one it is not beaten by (a board-wise error, as ``fwer``).

True rank: ``1 + #{l : theta_l > theta_j}`` (tied models share the better rank). Designs
(M = 8 models, 4,000 votes, except ``crowded``; the strengths have two tied pairs, so the
partial nulls count):

* ``balanced``: every pair equally often, no ties, no clusters (sandwich covariance);
* ``lopsided``: pair (i, j) drawn with probability proportional to ``exp(1.5 (z_i + z_j))``,
  ``z`` from 1 (best) to -1: the top models get most votes, the bottom ones few;
* ``power voters``: five voters cast half the votes, each with its own strengths
  ``theta + N(0, 0.3^2)``; the other half from 2,000 casual voters with the true strengths.
  ``rank_votes`` clusters by ``voter``; the row ``power voters, unclustered`` is the sandwich
  that ignores the voters (what a per-vote covariance claims);
* ``position bias``: the first-shown model gets +0.4 log-odds, position randomised and recorded;
  fitted without the position parameter (default) and with ``position=True``;
* ``ties``: Davidson truth with nu = 1 (about a third of the votes tie); fitted with ties as half
  a win (default) and with ``ties="davidson"``;
* ``crowded``: 24 models in 6 tiers of 4 exactly tied models (tiers 0.15 log-odds apart),
  12,000 votes: many true ties, where an overlap rule has the most chances to err;
* ``intransitive``: ``P(i beats j) = sigmoid(theta_i - theta_j) + c_ij`` with a rock-paper-
  scissors term ``c = +-0.12`` among models 3, 4, 5; the truth is the Bradley-Terry projection
  (the strengths the fit converges to under this design, solved here by scipy on the expected
  counts).

Run:  OMP_NUM_THREADS=1 python validation/arena_coverage.py          (400 replicates per design)
      python validation/arena_coverage.py --quick                    (6 replicates, seconds; the
      results go to a temporary folder, never over validation/results/arena_coverage.json)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import save_record  # noqa: E402

from rankci import RankciWarning  # noqa: E402
from rankci.votes import Votes, fit_bradley_terry  # noqa: E402
from rankci.votes.rank import VotesSpec, ranking_from_fit  # noqa: E402

RECORDED = Path(__file__).resolve().parent / "results" / "arena_coverage.json"
M = 8
THETA = np.array([0.6, 0.35, 0.35, 0.15, 0.0, 0.0, -0.25, -0.6])
ALPHA = 0.05


def true_ranks(theta: np.ndarray) -> np.ndarray:
    return 1 + (theta[None, :] > theta[:, None] + 1e-12).sum(axis=1)


#: The crowded board: 24 models in 6 tiers of 4 exactly tied models, 0.15 log-odds apart.
CROWDED = np.repeat(np.linspace(0.375, -0.375, 6), 4)


def _pairs(rng, n, weights=None, m=M):
    i, j = np.triu_indices(m, 1)
    p = None if weights is None else weights[i, j] / weights[i, j].sum()
    k = rng.choice(i.size, n, p=p)
    swap = rng.random(n) < 0.5
    return np.where(swap, j[k], i[k]), np.where(swap, i[k], j[k])


def _decide(rng, pa):
    return np.where(rng.random(pa.size) < pa, 0, 1)


def intransitive_matrix() -> np.ndarray:
    p = 1 / (1 + np.exp(-(THETA[:, None] - THETA[None, :])))
    for x, y in ((3, 4), (4, 5), (5, 3)):  # 3 beats 4 beats 5 beats 3, a little
        p[x, y] += 0.12
        p[y, x] -= 0.12
    return p


def projection(p: np.ndarray) -> np.ndarray:
    """The Bradley-Terry projection of P under the uniform pair design (scipy, centred)."""
    i, j = np.triu_indices(M, 1)

    def nll(free):
        s = np.concatenate([[0.0], free])
        d = s[i] - s[j]
        return -(p[i, j] * -np.logaddexp(0, -d) + (1 - p[i, j]) * -np.logaddexp(0, d)).sum()

    res = minimize(nll, np.zeros(M - 1), method="BFGS", options={"gtol": 1e-12})
    s = np.concatenate([[0.0], res.x])
    return s - s.mean()


def draw(design: str, rng, n: int) -> Votes:
    columns = {}
    if design == "crowded":
        a, b = _pairs(rng, n, m=CROWDED.size)
        out = _decide(rng, 1 / (1 + np.exp(-(CROWDED[a] - CROWDED[b]))))
        return Votes.from_arrays(a, b, out, models=[f"m{k}" for k in range(CROWDED.size)])
    if design == "lopsided":
        z = np.linspace(1, -1, M)
        a, b = _pairs(rng, n, np.exp(1.5 * (z[:, None] + z[None, :])))
    else:
        a, b = _pairs(rng, n)
    d = THETA[a] - THETA[b]
    if design == "power voters":
        voter = np.where(rng.random(n) < 0.5, rng.integers(0, 5, n), 5 + rng.integers(0, 2000, n))
        dev = np.vstack([rng.normal(0, 0.3, (5, M)), np.zeros((1, M))])
        row = np.minimum(voter, 5)
        d = d + dev[row, a] - dev[row, b]
        columns["voter"] = voter
        out = _decide(rng, 1 / (1 + np.exp(-d)))
    elif design == "position bias":
        b_first = rng.integers(0, 2, n)
        d = d + 0.4 * np.where(b_first == 1, -1, 1)
        columns["position"] = b_first
        out = _decide(rng, 1 / (1 + np.exp(-d)))
    elif design == "ties":
        e = np.stack([d / 2, -d / 2, np.zeros(n)], 1)  # Davidson, nu = 1
        prob = np.exp(e - np.logaddexp.reduce(e, axis=1)[:, None])
        u = rng.random(n)
        out = np.where(u < prob[:, 0], 0, np.where(u < prob[:, 0] + prob[:, 1], 1, 2))
    elif design == "intransitive":
        out = _decide(rng, intransitive_matrix()[a, b])
    else:
        out = _decide(rng, 1 / (1 + np.exp(-d)))
    return Votes.from_arrays(a, b, out, models=[f"m{k}" for k in range(M)], columns=columns)


#: (row label, design, fit keywords)
ROWS = [
    ("balanced", "balanced", {}),
    ("lopsided", "lopsided", {}),
    (
        "power voters (clustered by voter)",
        "power voters",
        {"cluster": "voter", "covariance": "cluster"},
    ),
    ("power voters, unclustered", "power voters", {}),
    ("position bias, no position parameter", "position bias", {}),
    ("position bias, position=True", "position bias", {"position": True}),
    ("ties (Davidson truth), ties='half'", "ties", {}),
    ("ties (Davidson truth), ties='davidson'", "ties", {"ties": "davidson"}),
    ("intransitive (BT projection)", "intransitive", {}),
    ("crowded: 24 models, 6 tiers of 4 tied", "crowded", {}),
]


def replicate(design, fit_kwargs, rng, n, truth):
    votes = draw(design, rng, n)
    kwargs = {"covariance": "sandwich", **fit_kwargs}
    fit = fit_bradley_terry(votes, **kwargs)
    ranks = true_ranks(truth)
    wrong = truth[:, None] <= truth[None, :]  # "j better than l" false
    out = {}
    seed = int(rng.integers(2**31))
    for mult in ("max-t", "holm"):
        spec = VotesSpec(
            multiplicity=mult,
            alpha=ALPHA,
            seed=seed,
            covariance=kwargs["covariance"],
            cluster=kwargs.get("cluster"),
            ties=kwargs.get("ties", "half"),
            position=kwargs.get("position", False),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RankciWarning)
            r = ranking_from_fit(fit, spec, votes)
        out[mult] = (
            bool(((r.lower <= ranks) & (ranks <= r.upper)).all()),
            bool((r.dominance & wrong).any()),
            float((r.upper - r.lower).mean()),
        )
    out["ub"] = bool((fit.rank_ub(0.95) > ranks).any())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--votes", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    reps = 6 if args.quick else args.reps
    n = 1500 if args.quick else args.votes
    truth_projection = projection(intransitive_matrix())
    started = time.time()
    results = []
    print(
        f"{'design':<42} {'method':<6} {'coverage':>14} {'fwer':>14} {'len':>5} "
        f"{'Rank(UB) err':>14}"
    )
    for k, (label, design, fit_kwargs) in enumerate(ROWS):
        rng = np.random.default_rng([args.seed, k])
        truth = {"intransitive": truth_projection, "crowded": CROWDED}.get(design, THETA)
        votes = 3 * n if design == "crowded" else n
        reps_out = [replicate(design, fit_kwargs, rng, votes, truth) for _ in range(reps)]
        ub = np.mean([r["ub"] for r in reps_out])
        for mult in ("max-t", "holm"):
            cov = np.mean([r[mult][0] for r in reps_out])
            fwer = np.mean([r[mult][1] for r in reps_out])
            length = np.mean([r[mult][2] for r in reps_out])
            se = lambda p: float(np.sqrt(p * (1 - p) / reps))  # noqa: E731
            results.append(
                {
                    "design": label,
                    "method": mult,
                    "reps": reps,
                    "votes": votes,
                    "coverage": float(cov),
                    "coverage_se": se(cov),
                    "fwer": float(fwer),
                    "fwer_se": se(fwer),
                    "mean_length": float(length),
                    "rank_ub_error": float(ub),
                    "rank_ub_error_se": se(ub),
                }
            )
            print(
                f"{label:<42} {mult:<6} {cov:>7.3f} ± {se(cov):.3f} {fwer:>7.3f} ± {se(fwer):.3f} "
                f"{length:>5.2f} {ub:>7.3f} ± {se(ub):.3f}"
            )
    record = {
        "study": "arena_coverage",
        "alpha": ALPHA,
        "models": M,
        "theta": THETA.tolist(),
        "intransitive_projection": truth_projection.tolist(),
        "seed": args.seed,
        "seconds": round(time.time() - started, 1),
        "quick": bool(args.quick),
        "results": results,
    }
    save_record(record, RECORDED, args.out, args.quick)
    print(f"{time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
