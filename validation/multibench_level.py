"""Monte-Carlo checks of the multi-benchmark tables (issue 8): :func:`rankci.rank_benchmarks`.

Study A -- level of the overall (stratified, Welch-Satterthwaite) paired t test. Two models whose
overall abilities (weighted means of their benchmark accuracies) are equal, while the benchmarks
disagree; the one-sided tests of "a better than b" and "b better than a" at alpha = 0.05 must
reject at most 5 % of the time. Scores are binary; within an item the two models' scores are
correlated through a Gaussian copula (correlation r).

Study B -- family-wise error across tables. Five models on three benchmarks with ties inside
benchmarks and in the overall table; a replicate errs when any certified "j better than l" in any
table is false (true accuracies: the benchmark's success probabilities, the weighted mean for the
overall table). ``across="joint"`` and ``"split"`` promise at most alpha; ``"separate"`` does not.

Run:  python validation/multibench_level.py             (10,000 / 4,000 replicates, ~10 minutes)
      python validation/multibench_level.py --reps 500  (a quick look)
      python validation/multibench_level.py --quick     (--reps 25: the CI smoke run, seconds)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

import rankci
from rankci._progress import progress

ALPHA = 0.05
QUICK_REPS = 25


def draw(rng, n: int, p: np.ndarray, r: float) -> np.ndarray:
    """n items x M models of binary scores with success probabilities p, copula correlation r."""
    z = np.sqrt(r) * rng.standard_normal((n, 1)) + np.sqrt(1 - r) * rng.standard_normal((n, len(p)))
    return (special.ndtr(z) < p).astype(float)


def scores(x: np.ndarray, models) -> rankci.Scores:
    return rankci.Scores.from_matrix(x, models=models)


LEVEL_DESIGNS = [
    # name, n per benchmark, (p_a, p_b) per benchmark, weights, copula r
    ("2 benchmarks, n = 30 / 100, r = 0", (30, 100), [(0.7, 0.5), (0.4, 0.6)], "equal", 0.0),
    ("2 benchmarks, n = 30 / 100, r = 0.5", (30, 100), [(0.7, 0.5), (0.4, 0.6)], "equal", 0.5),
    (
        "3 benchmarks, n = 15 / 15 / 200, r = 0.3",
        (15, 15, 200),
        [(0.8, 0.5), (0.4, 0.5), (0.3, 0.5)],
        "equal",
        0.3,
    ),
    (
        "2 benchmarks, n = 100 / 300, item weights, r = 0.3",
        (100, 300),
        [(0.8, 0.5), (0.4, 0.5)],
        "items",
        0.3,
    ),
]


def study_level(reps: int, rng) -> list[dict]:
    rows = []
    for name, sizes, probs, weights, r in LEVEL_DESIGNS:
        w = np.asarray(sizes, float) if weights == "items" else np.ones(len(sizes))
        w = w / w.sum()
        gap = sum(wb * (pa - pb) for wb, (pa, pb) in zip(w, probs))
        assert abs(gap) < 1e-12, name
        rejected = np.zeros(2)
        for _ in progress(range(reps), desc=name):
            parts = {
                f"b{k}": scores(draw(rng, n, np.asarray(p), r), ("a", "b"))
                for k, (n, p) in enumerate(zip(sizes, probs))
            }
            pw = rankci.rank_benchmarks(parts, weights=weights).overall.pairwise
            rejected += [pw.pvalue[0, 1] <= ALPHA, pw.pvalue[1, 0] <= ALPHA]
        rate = rejected / reps
        se = np.sqrt(ALPHA * (1 - ALPHA) / reps)
        rows.append({"design": name, "a over b": rate[0], "b over a": rate[1], "se": se})
    return rows


FWER_SIZES = (150, 300, 80)
FWER_PROBS = np.array(
    [
        [0.70, 0.70, 0.60, 0.50, 0.50],
        [0.50, 0.60, 0.60, 0.40, 0.60],
        [0.80, 0.60, 0.70, 0.70, 0.40],
    ]
)
MODELS = ("m1", "m2", "m3", "m4", "m5")


def study_fwer(reps: int, rng) -> list[dict]:
    truth = {f"b{k}": FWER_PROBS[k] for k in range(3)}
    truth["overall"] = FWER_PROBS.mean(axis=0)
    rows = []
    for across in ("joint", "split", "separate"):
        errors = 0
        per_table_errors = np.zeros(4)
        certified = 0
        for _ in progress(range(reps), desc=across):
            parts = {
                f"b{k}": scores(draw(rng, n, FWER_PROBS[k], 0.3), MODELS)
                for k, n in enumerate(FWER_SIZES)
            }
            result = rankci.rank_benchmarks(parts, across=across, alpha=ALPHA)
            wrong_any = False
            for t, (name, table) in enumerate(result.tables.items()):
                p = truth[name]
                false = table.dominance & ~(p[:, None] > p[None, :])
                if false.any():
                    wrong_any = True
                    per_table_errors[t] += 1
                certified += int(table.dominance.sum())
            errors += wrong_any
        rows.append(
            {
                "across": across,
                "fwer": errors / reps,
                "se": np.sqrt(max(errors / reps, ALPHA) * (1 - ALPHA) / reps),
                "worst table": per_table_errors.max() / reps,
                "certified": certified / reps,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help="replicates (A: 2x this)")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--quick", action="store_true", help=f"--reps {QUICK_REPS} (CI smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.reps = QUICK_REPS
    rng = np.random.default_rng(args.seed)
    level_reps = 10000 if args.reps is None else 2 * args.reps
    fwer_reps = 4000 if args.reps is None else args.reps
    start = time.perf_counter()
    print(f"Study A: level of the overall stratified t test ({level_reps} replicates, alpha 0.05)")
    print("| design | rejects a over b | rejects b over a | MC SE at 0.05 |")
    print("|---|---|---|---|")
    for row in study_level(level_reps, rng):
        print(
            f"| {row['design']} | {row['a over b']:.4f} | {row['b over a']:.4f} | {row['se']:.4f} |"
        )
    print()
    print(f"Study B: family-wise error over 4 tables ({fwer_reps} replicates, alpha 0.05)")
    print("| across | any false statement (± SE) | worst single table | statements certified |")
    print("|---|---|---|---|")
    for row in study_fwer(fwer_reps, rng):
        print(
            f"| {row['across']} | {row['fwer']:.4f} ± {row['se']:.4f} | "
            f"{row['worst table']:.4f} | {row['certified']:.2f} |"
        )
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
