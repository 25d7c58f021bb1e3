"""Coverage of simultaneous rank intervals for aggregates over benchmarks (issue 28, item 3).

The 14 MMLU-Pro categories of the bundled data (``rankci.datasets.load_mmlu_pro``) are the
"benchmarks". For a set of models, each category's pool is its items that all of them answered;
the truth is the aggregate computed on the full pools (HELM's mean win rate, MTEB's Borda count,
the Open LLM Leaderboard's normalised mean with baseline 1/10 for MMLU-Pro's ten options, the
equal-weight mean). A replicate draws n items with replacement within every category (so the pool
is the population and its aggregate the exact truth), runs
``rankci.analyses.aggregates.rank_aggregate(target="items")`` and errs when any certified
"j better than l" is false for the truth (``A_j <= A_l``). Simultaneous coverage = 1 - P(error),
promised >= 1 - alpha; each rate comes with its Monte-Carlo SE ``sqrt(p (1 - p) / R)``.

Designs: "spread" (8 models from 0.86 to 0.18 accuracy), "near ties" (8 models between 0.42
and 0.52 accuracy, three pairs within 0.005) and "exact ties" (4 models between 0.49 and 0.52 and
twins of two of them: a twin's scores are its model's, shuffled across the items of each category,
so every category score of the pair ties exactly -- where win rate and Borda are least smooth),
n = 50 and 200 items per category.

Run:  nice -n 19 env OMP_NUM_THREADS=1 python validation/aggregate_coverage.py
      (full: 400 replicates, 500 draws)
      python validation/aggregate_coverage.py --quick   (3 replicates, 200 draws: CI smoke run)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import rankci
from rankci.analyses.aggregates import AGGREGATES, aggregate_scores, rank_aggregate

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "aggregate_coverage.json"
ALPHA = 0.05
SEED = 20261202
BASELINE = 0.1  # MMLU-Pro: ten options

DESIGNS = {
    "spread": [
        "gemini-3.1-pro [merged dir]",
        "gpt-4o-2024-05-13 [gpt4o dir]",
        "gemini-1.5-flash-002",
        "Meta-Llama-3_1-70B-Instruct",
        "jamba-1.5-large",
        "Yi-34B",
        "Meta-Llama-3-8B",
        "Llama-2-7b-hf",
    ],
    "near ties": [
        "DeepSeek-V2-Chat [deepseek dir]",
        "Meta-Llama-3_1-70B",
        "Meta-Llama-3-70B",
        "jamba-1.5-large",
        "Qwen1.5-110B",
        "Yi-34B",
        "mathstral-7B",
        "Mixtral-8x7B-Instruct-v0.1",
    ],
    # exact ties: two models and their twins -- the same scores shuffled across the items of each
    # category, so every category score (hence every aggregate) of a twin equals its model's
    "exact ties": [
        "Meta-Llama-3_1-70B",
        "Meta-Llama-3-70B",
        "jamba-1.5-large",
        "Qwen1.5-110B",
        "twin:Meta-Llama-3_1-70B",
        "twin:jamba-1.5-large",
    ],
}
TWIN = "twin:"


def pools(models: list[str], seed: int = SEED) -> dict[str, np.ndarray]:
    """Each category's complete items x models 0/1 matrix, columns in the order of ``models``.

    ``"twin:NAME"`` is NAME's column shuffled across the category's items (seeded): the same
    category mean, independent item by item."""
    real = [m for m in models if not m.startswith(TWIN)]
    scores = rankci.datasets.load_mmlu_pro().subset(models=real)
    rng = np.random.default_rng(seed)
    out = {}
    for category in scores.clusters:
        units = scores.subset(clusters=[category]).units("item", "complete")
        columns = []
        for m in models:
            column = units.values[:, units.models.index(m.removeprefix(TWIN))]
            columns.append(rng.permutation(column) if m.startswith(TWIN) else column)
        out[category] = np.column_stack(columns)
    return out


def errs(dominance: np.ndarray, truth: np.ndarray) -> bool:
    """Whether any certified "j better than l" (``dominance[j, l]``) is false: ``A_j <= A_l``."""
    true_better = truth[:, None] > truth[None, :]
    return bool((dominance & ~true_better).any())


def run_design(name, models, n, reps, draws, seed) -> list[dict]:
    pool = pools(models)
    names = list(pool)
    means = np.stack([x.mean(axis=0) for x in pool.values()])
    baselines = {b: BASELINE for b in names}
    g = np.full(len(names), BASELINE)
    truth = {a: aggregate_scores(means, a, baselines=g) for a in AGGREGATES}
    errors = {a: 0 for a in AGGREGATES}
    certified = {a: 0 for a in AGGREGATES}
    zero_se = {a: 0 for a in AGGREGATES}
    seeds = np.random.SeedSequence(seed).spawn(reps)
    for child in seeds:
        rng = np.random.default_rng(child)
        parts = {
            b: rankci.Scores.from_matrix(x[rng.integers(0, x.shape[0], size=n)], models=models)
            for b, x in pool.items()
        }
        for a in AGGREGATES:
            r = rank_aggregate(
                parts, aggregate=a, target="items", alpha=ALPHA, baselines=baselines,
                draws=draws, rng=rng,
            )  # fmt: skip
            index = [r.models.index(m) for m in models]
            dom = r.dominance[np.ix_(index, index)]
            errors[a] += errs(dom, truth[a])
            certified[a] += int(dom.sum())
            zero_se[a] += int(r.details.get("zero_se_pairs", 0))
    rows = []
    for a in AGGREGATES:
        gaps = np.diff(np.sort(truth[a]))
        p = 1 - errors[a] / reps
        rows.append(
            {
                "design": name,
                "n_per_category": n,
                "aggregate": a,
                "replicates": reps,
                "coverage": p,
                "mc_se": float(np.sqrt(max(p * (1 - p), 0.0) / reps)),
                "mean_certified_pairs": certified[a] / reps,
                "of_pairs": len(models) * (len(models) - 1) // 2,
                "mean_zero_se_pairs": zero_se[a] / reps,
                "smallest_true_gap": float(gaps.min()),
                "truth": dict(zip(models, np.round(truth[a], 6).tolist())),
            }
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="replicates per design")
    parser.add_argument("--draws", type=int, default=500, help="bootstrap draws per analysis")
    parser.add_argument("--quick", action="store_true", help="3 replicates, 200 draws (CI)")
    parser.add_argument("--out", help=f"results JSON (default {RESULTS.relative_to(HERE.parent)})")
    args = parser.parse_args(argv)
    reps, draws = (3, 200) if args.quick else (args.reps, args.draws)
    start = time.time()
    rows = []
    for k, (name, models) in enumerate(DESIGNS.items()):
        for j, n in enumerate((50, 200)):
            rows.extend(run_design(name, models, n, reps, draws, SEED + 10 * k + j))
    elapsed = time.time() - start
    print("| design | n / category | aggregate | coverage (± MC SE) | certified pairs | "
          "zero-SE pairs | smallest true gap |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['design']} | {row['n_per_category']} | {row['aggregate']} | "
            f"{row['coverage']:.3f} ± {row['mc_se']:.3f} | "
            f"{row['mean_certified_pairs']:.1f} / {row['of_pairs']} | "
            f"{row['mean_zero_se_pairs']:.2f} | {row['smallest_true_gap']:.4g} |"
        )
    print(f"\n{reps} replicates per design, {draws} bootstrap draws, alpha = {ALPHA}; "
          f"{elapsed:.0f} s")  # fmt: skip
    record = {
        "study": "aggregate_coverage",
        "seed": SEED,
        "alpha": ALPHA,
        "replicates": reps,
        "draws": draws,
        "seconds": round(elapsed, 1),
        "rows": rows,
    }
    import sys

    sys.path.insert(0, str(HERE))
    from _results import save_record

    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
