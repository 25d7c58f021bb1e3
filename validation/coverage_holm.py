"""Monte-Carlo coverage of the paired-test + Holm rank intervals (issue 2).

For each design, leaderboards are drawn from the logistic random-effects model of
:mod:`rankci.simulate` (true ranks = ranks of the abilities) and ranked by several methods. A
replicate "covers" when every model's interval contains its whole true rank set
``{1 + #{l: theta_l > theta_j}, ..., #{l: theta_l >= theta_j}}`` (for tied models the set of ranks
they could take; stricter than containing the better rank alone). For delta > 0 designs a replicate
is also wrong when a certified "j better than l" has ``theta_j - theta_l <= delta``.

Reported per design and method: simultaneous coverage (all models at once) with its Monte-Carlo
standard error, the smallest per-model (marginal) coverage, and the mean interval width U - L.

Run:  python validation/coverage_holm.py            (1,000 replicates per design, 2-4 minutes)
      python validation/coverage_holm.py --reps 200 (a quick look)
      python validation/coverage_holm.py --quick    (20 replicates: the CI smoke run, seconds)
      python validation/coverage_holm.py --scheduler tcp://host:8786   (on a Dask cluster)

Replicates run on local worker processes (``--executor serial`` runs them here, ``--scheduler``
on a Dask cluster); replicate i of design k draws from the i-th child of
``SeedSequence(seed + k)`` (:func:`rankci.parallel.map_replicates`), so the table is the same on
any executor and any number of workers.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np

import rankci
from rankci.parallel import (
    add_executor_arguments,
    executor_from_arguments,
    executor_scope,
    map_replicates,
)
from rankci.simulate import simulate_scores


@dataclass
class Design:
    name: str
    ability: list
    n_items: int
    methods: list
    unit: str = "item"
    delta: float = 0.0
    simulation: dict = field(default_factory=dict)
    note: str = ""


DESIGNS = [
    Design(
        "exact ties (10 tied models)",
        [0.3] * 10,
        500,
        [
            ("t", "simultaneous"),
            ("t", "marginal"),
            ("wilcoxon", "simultaneous"),
            ("sign", "simultaneous"),
            ("z", "simultaneous"),
            ("yuen", "simultaneous"),
        ],
    ),
    Design(
        "near ties",
        [1.00, 0.98, 0.62, 0.60, 0.22, 0.20],
        2000,
        [
            ("t", "simultaneous"),
            ("t", "marginal"),
            ("wilcoxon", "simultaneous"),
            ("sign", "marginal"),
        ],
    ),
    Design(
        "clustered items, cluster units",
        [0.6, 0.3, 0.3, 0.0, -0.3, -0.3, -0.6, -0.9],
        1000,
        [("t", "simultaneous"), ("t", "marginal"), ("wilcoxon", "simultaneous")],
        unit="cluster",
        simulation=dict(n_clusters=40, sigma_cluster=0.7, sigma_item=1.2, sigma_model_cluster=0.3),
        note="40 clusters x 25 items; model x cluster interaction sd 0.3",
    ),
    Design(
        "clustered items, item units (ignores clustering)",
        [0.6, 0.3, 0.3, 0.0, -0.3, -0.3, -0.6, -0.9],
        1000,
        [("t", "simultaneous"), ("t", "marginal")],
        unit="item",
        simulation=dict(n_clusters=40, sigma_cluster=0.7, sigma_item=1.2, sigma_model_cluster=0.3),
        note="the wrong unit for inference to new subjects: shown to make the point",
    ),
    Design(
        "strong model x cluster interaction, cluster units",
        [0.6, 0.3, 0.3, 0.0, -0.3, -0.3, -0.6, -0.9],
        1000,
        [("t", "simultaneous"), ("t", "marginal")],
        unit="cluster",
        simulation=dict(n_clusters=20, sigma_cluster=0.7, sigma_item=1.2, sigma_model_cluster=0.6),
        note="20 clusters x 50 items; model x cluster interaction sd 0.6",
    ),
    Design(
        "strong model x cluster interaction, item units (ignores clustering)",
        [0.6, 0.3, 0.3, 0.0, -0.3, -0.3, -0.6, -0.9],
        1000,
        [("t", "simultaneous"), ("t", "marginal")],
        unit="item",
        simulation=dict(n_clusters=20, sigma_cluster=0.7, sigma_item=1.2, sigma_model_cluster=0.6),
        note="the wrong unit for inference to new subjects",
    ),
    Design(
        "indifference margin delta = 0.02",
        [0.40, 0.36, 0.30, 0.22, 0.0],
        3000,
        [("t", "simultaneous"), ("t", "marginal"), ("wilcoxon", "simultaneous")],
        delta=0.02,
        note="true accuracy gaps 0.008, 0.012, 0.016, 0.045",
    ),
]


QUICK_REPS = 20


def true_rank_sets(theta: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    above = (theta[None, :] > theta[:, None] + tol).sum(axis=1)
    at_least = (theta[None, :] >= theta[:, None] - tol).sum(axis=1)
    return 1 + above, at_least


def replicate(design: Design, rng: np.random.Generator) -> dict:
    """One simulated leaderboard ranked by every method of ``design``."""
    sim = simulate_scores(design.ability, design.n_items, rng=rng, **design.simulation)
    best, worst = true_rank_sets(sim.theta)
    gaps = sim.theta[:, None] - sim.theta[None, :]
    units = sim.scores.units(design.unit)
    out = {}
    for test, coverage in design.methods:
        pw = rankci.pairwise_tests(units, test, delta=design.delta)
        r = rankci.certify_holm(pw, 0.05, coverage).ranking()
        covered = (r.lower <= best) & (r.upper >= worst)
        false_claim = r.dominance is not None and bool((r.dominance & (gaps <= design.delta)).any())
        out[(test, coverage)] = (covered, float((r.upper - r.lower).mean()), false_claim)
    return out


def run_design(design: Design, reps: int, seed: int, executor=None) -> list[dict]:
    m = len(design.ability)
    results = {
        key: {"cover": 0, "model_cover": np.zeros(m), "width": 0.0, "false_claim": 0}
        for key in design.methods
    }
    replicates = map_replicates(
        partial(replicate, design), reps, rng=seed, executor=executor, desc=design.name
    )
    for found in replicates:
        for key, (covered, width, false_claim) in found.items():
            out = results[key]
            out["model_cover"] += covered
            out["cover"] += bool(covered.all())
            out["width"] += width
            out["false_claim"] += false_claim
    rows = []
    for (test, coverage), out in results.items():
        cover = out["cover"] / reps
        rows.append(
            {
                "design": design.name,
                "unit": design.unit,
                "test": test,
                "coverage": coverage,
                "simultaneous_coverage": cover,
                "se": np.sqrt(cover * (1 - cover) / reps),
                "min_marginal_coverage": float(out["model_cover"].min() / reps),
                "false_claim_rate": (
                    out["false_claim"] / reps if coverage == "simultaneous" else None
                ),
                "mean_width": out["width"] / reps,
            }
        )
    return rows


def markdown(rows: list[dict], reps: int) -> str:
    lines = [
        "| design | unit | test | coverage | all models covered (± SE) | min per-model coverage "
        "| false certified statement | mean width U − L |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        false = "—" if r["false_claim_rate"] is None else f"{r['false_claim_rate']:.3f}"
        lines.append(
            f"| {r['design']} | {r['unit']} | {r['test']} | {r['coverage']} | "
            f"{r['simultaneous_coverage']:.3f} ± {r['se']:.3f} | "
            f"{r['min_marginal_coverage']:.3f} | "
            f"{false} | {r['mean_width']:.2f} |"
        )
    lines.append(f"\n{reps} replicates per design, alpha = 0.05.")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates per design (CI smoke run)"
    )
    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.reps = QUICK_REPS
    rows = []
    with executor_scope(executor_from_arguments(args)) as pool:
        for k, design in enumerate(DESIGNS):
            start = time.perf_counter()
            rows += run_design(design, args.reps, args.seed + k, pool)
            print(f"{design.name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(markdown(rows, args.reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
