"""Does rankci.plan predict what more items would give? Checked by subsampling.

1. Real data (bundled MMLU-Pro, 32 models, the 10,298 items every model answered): a pilot of
   1,000 random items predicts, for n = 500 ... 4,000 items, each model's interval width and the
   probability that each of the 496 pairs is separated (two-sided paired t at alpha = 0.05, in the
   direction of the population difference). Reality: S subsamples of n items, drawn without
   replacement from the other 9,298 items (the "population"). Widths need no finite-population
   correction (they are estimated from each subsample's own SD); separation frequencies do, so the
   prediction is shown both plain and with the factor (N - n)/(N - 1) on the variance of the
   difference. Repeated over P pilots.
2. Clustered data (the logistic random-effects model of validation/coverage_intervals.py,
   sigma_cluster 0.6, 20 items per cluster): a pilot of 30 clusters predicts the spread of the
   means at 60, 120 and 240 clusters with ``covariance="cluster"``; reality is fresh draws of that
   many clusters. The item-level prediction (``covariance="independent"``), which ignores the
   clustering, is shown beside it (the table's columns keep the names of the recorded run,
   ``method='cluster'`` and ``method='item'``).

Run: ``OMP_NUM_THREADS=1 python validation/planning_subsampling.py [--pilots P --subsamples S]``;
``--quick`` uses 2 pilots and 5 subsamples (the CI smoke run, seconds).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special, stats

import rankci
from rankci.analyses.planning import plan

SIZES = (500, 1000, 2000, 4000)
QUICK_PILOTS, QUICK_SUBSAMPLES = 2, 5


def _separated(x: np.ndarray, direction: np.ndarray, alpha: float) -> np.ndarray:
    """Pairs (j, l) separated by a two-sided paired t in the given direction; M x M bool."""
    n = x.shape[0]
    cov = np.cov(x, rowvar=False)
    diag = np.diag(cov)
    se = np.sqrt(np.maximum(diag[:, None] + diag[None, :] - 2 * cov, 1e-300) / n)
    mean = x.mean(axis=0)
    t = (mean[:, None] - mean[None, :]) / se
    crit = stats.t.ppf(1 - alpha / 2, n - 1)
    return (np.abs(t) > crit) & (np.sign(t) == direction)


def real_data(pilots: int, subsamples: int, seed: int) -> None:
    scores = rankci.datasets.load_mmlu_pro()
    x_all = scores.units("item", "complete").values
    rng = np.random.default_rng(seed)
    m = x_all.shape[1]
    upper = np.triu(np.ones((m, m), dtype=bool), 1)
    width_ratio = {n: [] for n in SIZES}
    calib = []  # (predicted plain, predicted with FPC, realised) per pair, n, pilot
    for _ in range(pilots):
        order = rng.permutation(x_all.shape[0])
        pilot_rows, rest = order[:1000], order[1000:]
        population = x_all[rest]
        big_n = population.shape[0]
        pilot = plan(rankci.Scores.from_matrix(x_all[pilot_rows], models=scores.models))
        # separations are counted in the pilot's direction: what the plan predicts
        direction = np.sign(pilot.score[:, None] - pilot.score[None, :])
        z = special.ndtri(0.975)
        for n in SIZES:
            realised_width = np.zeros(m)
            realised_sep = np.zeros((m, m))
            for _ in range(subsamples):
                sample = population[rng.choice(big_n, n, replace=False)]
                realised_width += 2 * z * sample.std(axis=0, ddof=1) / np.sqrt(n)
                realised_sep += _separated(sample, direction, 0.05)
            width_ratio[n].append(np.mean(realised_width / subsamples / pilot.width(n)))
            plain = pilot.separation_probability(n)
            gap = np.abs(pilot.score[:, None] - pilot.score[None, :])
            sd = pilot.difference_sd() * np.sqrt((big_n - n) / (big_n - 1))
            with np.errstate(divide="ignore", invalid="ignore"):
                fpc = special.ndtr(gap * np.sqrt(n) / sd - z)
            calib.append(
                np.column_stack(
                    [
                        plain[upper],
                        fpc[upper],
                        (realised_sep / subsamples)[upper],
                        np.full(upper.sum(), n),
                    ]
                )
            )
    calib = np.vstack(calib)
    print("**Interval width: realised / predicted (mean over 32 models and the pilots)**\n")
    print("| n | realised / predicted width |\n|---:|---:|")
    for n in SIZES:
        print(
            f"| {n} | {np.mean(width_ratio[n]):.3f} (pilots: {np.min(width_ratio[n]):.3f} - "
            f"{np.max(width_ratio[n]):.3f}) |"
        )
    print(
        "\n**Pair separation: predicted probability against realised frequency "
        f"({len(calib)} pair x n x pilot cells)**\n"
    )
    print(
        "| predicted (plain) | cells | mean predicted | mean predicted with FPC | "
        "realised |\n|---|---:|---:|---:|---:|"
    )
    edges = [0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0001]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        pick = (calib[:, 0] >= lo) & (calib[:, 0] < hi)
        if pick.any():
            print(
                f"| [{lo:.2f}, {min(hi, 1):.2f}) | {pick.sum()} | {calib[pick, 0].mean():.3f} "
                f"| {calib[pick, 1].mean():.3f} | {calib[pick, 2].mean():.3f} |"
            )
    print("\n| n | pairs predicted >= 0.8 (plain) | realised frequency >= 0.8 |\n|---:|---:|---:|")
    for n in SIZES:
        pick = calib[:, 3] == n
        print(
            f"| {n} | {(calib[pick, 0] >= 0.8).sum() / pilots:.1f} | "
            f"{(calib[pick, 2] >= 0.8).sum() / pilots:.1f} |"
        )


def clustered(pilots: int, draws: int, seed: int) -> None:
    from coverage_intervals import simulate  # same folder

    rng = np.random.default_rng(seed)
    beta = np.array([-0.6, 0.0, 0.4, 0.9])
    rows = {k: [] for k in (60, 120, 240)}
    for _ in range(pilots):
        x, cluster = simulate(rng, beta, 30, 20, 0.6, 1.0)
        labels = [f"c{c:03d}" for c in cluster]
        pilot_scores = rankci.Scores.from_matrix(x, clusters=labels)
        by_cluster = plan(pilot_scores, covariance="cluster")
        by_item = plan(pilot_scores, covariance="independent")
        for k in rows:
            means = np.array(
                [simulate(rng, beta, k, 20, 0.6, 1.0)[0].mean(axis=0) for _ in range(draws)]
            )
            actual = 2 * special.ndtri(0.975) * means.std(axis=0, ddof=1)
            rows[k].append(
                (
                    np.mean(by_cluster.width(20 * k) / actual),
                    np.mean(by_item.width(20 * k) / actual),
                )
            )
    print("\n**Clustered items: predicted / actual width (30-cluster pilot)**\n")
    print(
        "| clusters (items) | method='cluster' | method='item' (ignores clustering) |\n"
        "|---|---:|---:|"
    )
    for k, values in rows.items():
        values = np.array(values)
        print(
            f"| {k} ({20 * k}) | {values[:, 0].mean():.3f} (sd over pilots "
            f"{values[:, 0].std():.3f}) | {values[:, 1].mean():.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilots", type=int, default=20)
    parser.add_argument("--subsamples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_PILOTS} pilots, {QUICK_SUBSAMPLES} subsamples (CI smoke run)",
    )
    args = parser.parse_args()
    if args.quick:
        args.pilots, args.subsamples = QUICK_PILOTS, QUICK_SUBSAMPLES
    start = time.perf_counter()
    print(f"pilots: {args.pilots}; subsamples per pilot and n: {args.subsamples}\n")
    real_data(args.pilots, args.subsamples, args.seed)
    clustered(args.pilots, args.subsamples, args.seed + 1)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
