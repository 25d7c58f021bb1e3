"""Time-uniform coverage and width of the service's anytime-valid score intervals (issue 10).

The confidence sequences of :mod:`rankci.sequential.meancs` (empirical Bernstein, the service's
default, and Hoeffding) are run on many random
evaluation orders (sampling model F: a fixed population of N item scores, permuted) or i.i.d.
streams (model S). A run *misses* when the running interval excludes the true mean at **any**
item count t = 1..N; the guarantee is P(miss) <= alpha. Widths are compared with the fixed-sample
normal interval ``mean +- 1.96 sd / sqrt(t)`` (valid at one pre-planned t only).

Run: ``python validation/service_score_cs.py [--runs 4000]`` (seeded; about a minute).
``--quick`` runs 50 per row (the CI smoke run, seconds).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rankci.sequential.meancs import mean_confidence_sequence

ALPHA = 0.05
QUICK_RUNS = 50


def populations(rng, n):
    difficulty = rng.normal(0.0, 1.5, n)
    return {
        "Bernoulli p = 0.5": (rng.random(n) < 0.5).astype(float),
        "Bernoulli p = 0.1": (rng.random(n) < 0.1).astype(float),
        "Bernoulli p = 0.9 (logistic items)": (
            rng.random(n) < 1 / (1 + np.exp(-(2.2 - difficulty)))
        ).astype(float),
        "Beta(0.5, 0.5) scores": rng.beta(0.5, 0.5, n),
        "judge scores (Beta(5, 2))": rng.beta(5, 2, n),
    }


def study(sampling, name, values, runs, rng, bound, chunk=250):
    n = len(values)
    mu = values.mean()
    misses = 0
    checkpoints = [t for t in (100, 1000, n // 2, n) if t <= n]
    widths = {t: [] for t in checkpoints}
    for start in range(0, runs, chunk):
        k = min(chunk, runs - start)
        if sampling == "finite":
            x = np.stack([rng.permutation(values) for _ in range(k)], axis=1)
            truth = mu
            big_n = n
        else:
            x = rng.choice(values, size=(n, k), replace=True)  # i.i.d. from the population
            truth = mu
            big_n = None
        lower, upper = mean_confidence_sequence(
            x, sampling=sampling, n_items=big_n, bound=bound, path=True
        )
        tol = 1e-12
        misses += int(((lower > truth + tol) | (upper < truth - tol)).any(axis=0).sum())
        for t in checkpoints:
            widths[t].extend((upper[t - 1] - lower[t - 1]).tolist())
    sd = values.std(ddof=1)
    normal = {t: 2 * 1.96 * sd / np.sqrt(t) for t in checkpoints}
    return {
        "bound": bound,
        "sampling": sampling,
        "population": name,
        "N": n,
        "mean": mu,
        "miss": misses / runs,
        "se": np.sqrt(ALPHA * (1 - ALPHA) / runs),
        "widths": {t: float(np.mean(w)) for t, w in widths.items()},
        "normal": normal,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=20261210)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_RUNS} runs per row (CI smoke run)"
    )
    args = parser.parse_args()
    if args.quick:
        args.runs = QUICK_RUNS
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = []
    for n in (500, 5000):
        pops = populations(rng, n)
        for name, values in pops.items():
            for sampling in ("finite", "iid"):
                if n == 500 and sampling == "iid":
                    continue
                for bound in ("bernstein", "hoeffding"):
                    rows.append(study(sampling, name, values, args.runs, rng, bound))
                    r = rows[-1]
                    print(
                        f"{bound:9s} {sampling:6s} N={n:5d} {name:36s} miss {r['miss']:.4f} "
                        f"(alpha {ALPHA}, MC se {r['se']:.4f})",
                        flush=True,
                    )
    print(f"\n{args.runs} runs per row, seed {args.seed}, {time.perf_counter() - start:.0f} s\n")
    print(
        "| sampling | N | scores | true mean | P(miss at any t): Bernstein / Hoeffding | width at "
        "t = 100 / 1,000 / N/2: Bernstein; Hoeffding; normal at one look |"
    )
    print("|---|---:|---|---:|---:|---|")
    for bern, hoef in zip(rows[::2], rows[1::2]):
        steps = [t for t in sorted(bern["widths"]) if t < bern["N"]]
        cells = "; ".join(
            " / ".join(f"{source[t]:.3f}" for t in steps)
            for source in (bern["widths"], hoef["widths"], bern["normal"])
        )
        print(
            f"| {bern['sampling']} | {bern['N']:,} | {bern['population']} | {bern['mean']:.3f} | "
            f"{bern['miss']:.4f} / {hoef['miss']:.4f} | {cells} |"
        )


if __name__ == "__main__":
    main()
