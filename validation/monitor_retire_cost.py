"""Cost of settling the top 3 with retirement rules (the source's experiment E3, in simulation).

20 models with logit abilities ``linspace(1.5, -1.5, 20)``; item difficulty d_i ~ N(0, 1); model j
correct with probability sigmoid(a_j - d_i); a fixed benchmark of N = 5,000 items replayed in a
seeded random order (sampling model F: the truth is each model's mean over the 5,000 items),
mixture bet, alpha = 0.05, shortcut certifier (``auto`` for 20 models), a look every 1 %.
Exactly what ``rankci monitor DATA --retire RULE --k 3 --order-seed S`` does.

Per rule: mean cost (evaluations used / (N x M)) with its Monte-Carlo standard error, items
consumed before everyone stopped, how often every top-3 status was settled, and how often some
statement was false (a certified dominance against the benchmark means; certified pairs are kept
for good, so a false statement at any look shows in the final certified set).

Run:  python validation/monitor_retire_cost.py             (200 replicates, ~3 minutes)
      python validation/monitor_retire_cost.py --quick     (3 replicates: the CI smoke run, seconds)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

import rankci
from rankci.sequential import replay

QUICK_REPS = 3
RULES = ["topk", "topk-safe", "resolved", "stop-at-goal", "none"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20260103)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates (CI smoke run)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.reps = QUICK_REPS
    ability = np.linspace(1.5, -1.5, args.models)
    rng = np.random.default_rng(args.seed)
    stats = {rule: {"cost": [], "consumed": [], "settled": 0, "wrong": 0} for rule in RULES}
    start = time.perf_counter()
    for rep in range(args.reps):
        d = rng.normal(size=args.items)
        x = (rng.random((args.items, args.models)) < special.expit(ability - d[:, None])) * 1.0
        theta = x.mean(axis=0)
        false_pair = theta[:, None] <= theta[None, :]
        scores = rankci.Scores.from_matrix(x)
        for rule in RULES:
            run = replay(scores, order_seed=rep, retire=rule, k=args.k, look_every="1%")
            s = stats[rule]
            s["cost"].append(run.cost_fraction)
            s["consumed"].append(run.n_consumed / args.items)
            s["settled"] += bool((run.ranking.top_k(args.k) != "undetermined").all())
            s["wrong"] += bool((run.ranking.dominance & false_pair).any())
    elapsed = time.perf_counter() - start
    print(
        f"{args.models} models, N = {args.items} items, top-{args.k}, {args.reps} replicates "
        f"({elapsed:.0f} s)\n"
    )
    print("| rule | cost (evaluations / N M) | items consumed | all top-k settled | ever wrong |")
    print("|---|---|---|---|---|")
    for rule in RULES:
        s = stats[rule]
        cost = np.array(s["cost"])
        print(
            f"| {rule} | {cost.mean():.3f} ± {cost.std(ddof=1) / np.sqrt(args.reps):.3f} "
            f"| {np.mean(s['consumed']):.3f} | {s['settled'] / args.reps:.3f} "
            f"| {s['wrong'] / args.reps:.3f} |"
        )


if __name__ == "__main__":
    main()
