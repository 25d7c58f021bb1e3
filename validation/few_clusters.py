"""Few clusters (issue 16): coverage of the clustered score intervals and family-wise error of the
clustered paired verdict at G = 2, 3, 5, 10 and 20 clusters, with rankci's defaults.

Every call is the public one with its defaults: ``rankci.score_intervals(scores, "cluster")``
(``small_sample="auto"``: CR2 with Satterthwaite df below 50 clusters) and
``rankci.score_intervals(scores, "cluster-bootstrap")`` (1,000 resamples of whole clusters;
it warns below 50 clusters). Only ``rng`` is passed, a seed drawn from the study's generator, so
that the run is reproducible. The paired verdict of both calls is the clustered paired test with
the same default correction and Holm over the M(M-1) ordered pairs (``result.separated``); the
two calls give the same verdict (checked in every replicate). For contrast, the former default
``small_sample=False`` (plain HC0 variance, normal quantile) is also run; it is *not* the default.

Data (the hard case of the issue: a model's per-cluster means are nearly equal across clusters,
so the variance of the mean comes mostly from the items inside each cluster). M = 4 models,
binary scores, ``P(x_ij = 1) = expit(beta_j + u_c + v_jc + w_i)`` for item i of cluster c:

* ``beta = (0, 0, 0, -0.4)``: three tied models and one lower (true pass rates below);
* ``w_i ~ N(0, 1)`` item difficulty, shared by the models (it cancels in paired differences);
* ``u_c ~ N(0, sigma_u^2)`` cluster effect shared by the models;
* ``v_jc ~ N(0, sigma_v^2)`` model x cluster effect, one per model and cluster (not shared).

Designs (cluster sizes ``n_g``):

* ``no cluster effect``: sigma_u = sigma_v = 0, 40 items per cluster (per-cluster means equal in
  expectation; only the items vary);
* ``small shared effect``: sigma_u = 0.2, sigma_v = 0, 40 items per cluster;
* ``small shared + model-specific, unequal sizes``: sigma_u = 0.2, sigma_v = 0.1, sizes
  ``round(20 * 4^(g / (G - 1)))``, g = 0 .. G - 1 (geometric from 20 to 80 items).

On the probability scale sigma_u = 0.2 moves a cluster's pass rate by about 0.05 and sigma_v =
0.1 by 0.025, against a sampling sd of a 40-item cluster mean of about 0.07: the per-cluster
means are nearly equal. The estimand is each model's pass rate over the population of clusters
and items, ``theta_j = E expit(beta_j + s Z)``, ``s^2 = 1 + sigma_u^2 + sigma_v^2`` (Gauss-Hermite).
An interval covers when it contains theta_j; coverage is pooled over the 4 models, its standard
error computed from the replicate means (the models of one replicate are dependent). A model whose
per-cluster means are all exactly equal would get se = 0 and a zero-width interval; rankci refuses
those (NaN, with a warning). A refused interval states nothing, so it counts as covering; the
share refused and the coverage of the intervals actually given are reported beside it, with the
share of zero-width intervals (0 unless the refusal is broken). A verdict
errs when it separates a pair "j better than l" with theta_j <= theta_l (family-wise error).

Also checked: with G = 1 every cluster-robust procedure raises ValueError (both interval methods,
the clustered paired verdict, max-t with cluster covariance).

Run:  OMP_NUM_THREADS=1 python validation/few_clusters.py   (2,500 replicates per cell: any
      proportion's SE <= 0.01; 10 minutes on 2 cores, far longer
      on a loaded machine: the G = 2 and 3 cells alone took 13 minutes on one worker at load 10)
      OMP_NUM_THREADS=1 python validation/few_clusters.py --clusters 2 3 --out FILE
                                                             (only those cells, with the seeds
                                                             of the full study)
      python validation/few_clusters.py --quick              (8 replicates per cell, seconds; the
      results go to a temporary folder, never over validation/results/few_clusters.json)
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from scipy import special

import rankci
from rankci.analyses.verdicts import paired_verdict

RESULTS = Path(__file__).resolve().parent / "results" / "few_clusters.json"
CLUSTERS = (2, 3, 5, 10, 20)
BETA = np.array([0.0, 0.0, 0.0, -0.4])
DESIGNS = {
    "no cluster effect": dict(sigma_u=0.0, sigma_v=0.0, unequal=False),
    "small shared effect": dict(sigma_u=0.2, sigma_v=0.0, unequal=False),
    "small shared + model-specific, unequal sizes": dict(sigma_u=0.2, sigma_v=0.1, unequal=True),
}
SIZE = 40
METHODS = ("cluster (default: auto = CR2)", "cluster-bootstrap (default)", "cluster, HC0 z")
FULL_REPS = 2500
QUICK_REPS = 8


def true_rates(beta: np.ndarray, scale: float) -> np.ndarray:
    nodes, weights = np.polynomial.hermite_e.hermegauss(100)
    values = special.expit(beta[:, None] + scale * nodes[None, :])
    return (values * weights).sum(axis=1) / weights.sum()


def sizes_of(n_clusters: int, unequal: bool) -> np.ndarray:
    if not unequal:
        return np.full(n_clusters, SIZE)
    g = np.arange(n_clusters)
    return np.round(20 * 4.0 ** (g / (n_clusters - 1))).astype(int)


def simulate(rng, n_clusters, sigma_u, sigma_v, unequal):
    sizes = sizes_of(n_clusters, unequal)
    cluster = np.repeat(np.arange(n_clusters), sizes)
    logit = BETA[None, :] + rng.standard_normal(cluster.size)[:, None]
    logit = logit + (sigma_u * rng.standard_normal(n_clusters))[cluster][:, None]
    logit = logit + (sigma_v * rng.standard_normal((n_clusters, BETA.size)))[cluster]
    x = (rng.random(logit.shape) < special.expit(logit)).astype(float)
    return rankci.Scores.from_matrix(x, clusters=[f"c{c:02d}" for c in cluster])


def run_cell(task) -> dict:
    design, n_clusters, reps, seed = task
    spec = DESIGNS[design]
    theta = true_rates(BETA, np.sqrt(1 + spec["sigma_u"] ** 2 + spec["sigma_v"] ** 2))
    false_pair = theta[:, None] <= theta[None, :] + 1e-12
    rng = np.random.default_rng(seed)
    covered = {name: np.zeros(reps) for name in METHODS}
    model_cover = {name: np.zeros(BETA.size) for name in METHODS}
    width = {name: 0.0 for name in METHODS}
    zero_width = {name: 0 for name in METHODS}
    refused = {name: 0 for name in METHODS}
    hits_given = {name: 0 for name in METHODS}
    width_reps = {name: 0 for name in METHODS}
    verdict_wrong = np.zeros(reps)
    separated = 0
    options = {}
    for r in range(reps):
        scores = simulate(rng, n_clusters, **spec)
        seed_r = int(rng.integers(2**31))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rankci.RankciWarning)  # the few-clusters warning
            results = {
                METHODS[0]: rankci.score_intervals(scores, "cluster", rng=seed_r),
                METHODS[1]: rankci.score_intervals(scores, "cluster-bootstrap", rng=seed_r),
                METHODS[2]: rankci.score_intervals(
                    scores, "cluster", small_sample=False, verdict=False
                ),
            }
        for name, res in results.items():
            lower, upper = np.asarray(res.lower), np.asarray(res.upper)
            none = np.isnan(lower) | np.isnan(upper)  # refused (NaN): no claim, nothing false
            given = (lower <= theta) & (theta <= upper)
            hit = given | none
            covered[name][r] = hit.mean()
            model_cover[name] += hit
            refused[name] += int(none.sum())
            hits_given[name] += int(given.sum())
            if not none.all():
                width[name] += float(np.mean((upper - lower)[~none]))
                width_reps[name] += 1
            zero_width[name] += int((upper - lower <= 1e-9).sum())
        default, boot = results[METHODS[0]], results[METHODS[1]]
        if not np.array_equal(default.separated, boot.separated):
            raise AssertionError("the two cluster methods gave different paired verdicts")
        verdict_wrong[r] = bool((default.separated & false_pair).any())
        separated += int(default.separated.sum())
        options = {"cluster": dict(default.options), "verdict": default.verdict_procedure}
    return {
        "design": design,
        "G": n_clusters,
        "reps": reps,
        "seed": seed,
        "theta": theta.round(6).tolist(),
        "sizes": sizes_of(n_clusters, spec["unequal"]).tolist(),
        "coverage": {
            name: {
                "mean": float(covered[name].mean()),
                "se": float(covered[name].std(ddof=1) / np.sqrt(reps)),
                "min_model": float(model_cover[name].min() / reps),
                "width": width[name] / max(width_reps[name], 1),
                "zero_width": zero_width[name] / (reps * BETA.size),
                "refused": refused[name] / (reps * BETA.size),
                "coverage_given": hits_given[name] / max(reps * BETA.size - refused[name], 1),
            }
            for name in METHODS
        },
        "verdict_fwer": float(verdict_wrong.mean()),
        "verdict_fwer_se": float(
            np.sqrt(max(verdict_wrong.mean() * (1 - verdict_wrong.mean()), 0.0) / reps)
        ),
        "separated_pairs_per_replicate": separated / reps,
        "defaults_used": options,
    }


def one_cluster_refused() -> dict:
    """With G = 1 every cluster-robust procedure must raise ValueError."""
    rng = np.random.default_rng(1)
    x = (rng.random((40, 3)) < 0.5).astype(float)
    scores = rankci.Scores.from_matrix(x, clusters=["only"] * 40)
    units = scores.units("item", missing="complete")
    calls = {
        "score_intervals(method='cluster')": lambda: rankci.score_intervals(scores, "cluster"),
        "score_intervals(method='cluster-bootstrap')": lambda: rankci.score_intervals(
            scores, "cluster-bootstrap", rng=0
        ),
        "clustered paired verdict": lambda: paired_verdict(units, 0.05, np.zeros(40, int)),
        "rank(multiplicity='max-t', covariance='cluster')": lambda: rankci.rank(
            scores, multiplicity="max-t", covariance="cluster"
        ),
    }
    out = {}
    for name, call in calls.items():
        try:
            call()
        except ValueError:
            out[name] = "ValueError"
        else:
            out[name] = "NOT REFUSED"
    return out


def table(cells: list[dict]) -> str:
    lines = [
        "| design | G | "
        + " | ".join(f"{m}: coverage ± SE (min model)" for m in METHODS)
        + " | verdict FWER ± SE | refused (NaN): cluster / cluster-bootstrap"
        " | coverage of the intervals given: cluster / cluster-bootstrap"
        " | zero-width: cluster / cluster-bootstrap |",
        "|---|---:|" + "---|" * len(METHODS) + "---|---|---|---|",
    ]
    for c in cells:
        cov = c["coverage"]
        parts = [
            f"{cov[m]['mean']:.3f} ± {cov[m]['se']:.3f} ({cov[m]['min_model']:.3f})"
            for m in METHODS
        ]
        a, b = cov[METHODS[0]], cov[METHODS[1]]
        lines.append(
            f"| {c['design']} | {c['G']} | "
            + " | ".join(parts)
            + f" | {c['verdict_fwer']:.3f} ± {c['verdict_fwer_se']:.3f}"
            f" | {a['refused']:.3f} / {b['refused']:.3f}"
            f" | {a['coverage_given']:.3f} / {b['coverage_given']:.3f}"
            f" | {a['zero_width']:.3f} / {b['zero_width']:.3f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=FULL_REPS)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--out", help=f"JSON of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument(
        "--clusters",
        type=int,
        nargs="+",
        choices=CLUSTERS,
        default=list(CLUSTERS),
        metavar="G",
        help="run only these numbers of clusters (default: all of %(choices)s); a cell's seed "
        "does not depend on which others run, so a subset reproduces the full study's cells",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates per cell (CI smoke run)"
    )
    args = parser.parse_args(argv)
    if sorted(args.clusters) != list(CLUSTERS) and args.out is None and not args.quick:
        parser.error("--clusters with a subset needs --out (the default file holds the full study)")
    if args.quick:
        args.reps, args.workers = QUICK_REPS, 1
    start = time.perf_counter()
    refused = one_cluster_refused()
    print("G = 1: " + "; ".join(f"{k} -> {v}" for k, v in refused.items()))
    if any(v != "ValueError" for v in refused.values()):
        print("ERROR: one cluster was not refused")
        return 1
    tasks = [
        (design, g, args.reps, args.seed + 100 * d + g)
        for d, design in enumerate(DESIGNS)
        for g in CLUSTERS
        if g in args.clusters
    ]
    if args.workers > 1:
        with Pool(args.workers) as pool:
            cells = pool.map(run_cell, tasks, chunksize=1)
    else:
        cells = [run_cell(task) for task in tasks]
    elapsed = time.perf_counter() - start
    print(f"\n{args.reps} replicates per cell, alpha = 0.05 ({elapsed:.0f} s)\n")
    print(table(cells))
    print("\ntrue pass rates: " + json.dumps({c["design"]: c["theta"] for c in cells}))
    record = {
        "reps": args.reps,
        "seed": args.seed,
        "seconds": round(elapsed),
        "clusters": sorted(args.clusters),
        "one_cluster": refused,
        "cells": cells,
    }
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
