"""Speed and memory of the score intervals (issue: 1,000 resamples, 400 models x 14,000 items).

Targets: percentile bootstrap with 1,000 resamples for 400 models x 14,000 items in <= 5 s and
<= 4 GiB; the cluster bootstrap of the same size in <= 5 s. The bootstrap is one resampling-weights
matrix product per chunk of resamples (multiplicities x scores), never a loop over resamples.

Run: ``python benchmarks/bench_intervals.py [--models 400 --items 14000 --reps 1000 --repeat 3]``;
``--only chembench`` times only the wild cluster bootstrap-t (``cluster-wild``) against the CR2
``cluster`` interval on the bundled ChemBench (35 models x 2,788 items, 9 topics), in the same run,
as a ratio; ``--only wild`` also times both at the configured size (complete, and 10 % of the
cells missing with ``missing="pairwise"``).
Times are the best of ``--repeat`` runs (the machine may be shared); memory is the peak of the
Python allocations made by the call (tracemalloc, which sees numpy's buffers) and the process'
peak resident set size at the end.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import tracemalloc

import numpy as np

import rankci
from rankci.analyses.composite import composite_scores
from rankci.analyses.intervals import score_intervals
from rankci.analyses.planning import plan
from rankci.analyses.subscores import subscores


def _data(models: int, items: int, clusters: int, missing: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(0, 1, models)
    difficulty = rng.normal(0, 1.5, items)
    p = 1 / (1 + np.exp(-(ability[None, :] - difficulty[:, None])))
    x = (rng.random((items, models)) < p).astype(float)
    if missing:
        x[rng.random(x.shape) < missing] = np.nan
    labels = [f"c{c:04d}" for c in np.sort(rng.integers(0, clusters, items))]
    return rankci.Scores.from_matrix(x, clusters=labels)


def _measure(label: str, call, repeat: int) -> dict:
    times = []
    peak = 0
    for _ in range(repeat):
        tracemalloc.start()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    row = {
        "case": label,
        "best_s": min(times),
        "median_s": float(np.median(times)),
        "peak_MiB": peak / 2**20,
    }
    print(
        f"| {label} | {row['best_s']:.2f} | {row['median_s']:.2f} | {row['peak_MiB']:.0f} |",
        flush=True,
    )
    return row


def chembench_wild(repeat: int) -> None:
    """cluster-wild against cluster (CR2) on ChemBench, both timed in this run; the ratio."""
    import warnings

    scores = rankci.datasets.load_chembench()
    print("| case | best s | median s | peak MiB (tracemalloc) |\n|---|---:|---:|---:|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 9 clusters: the few-clusters warning
        rows = [
            _measure(
                f"ChemBench, {method}",
                lambda method=method: score_intervals(scores, method, rng=0, verdict=False),
                repeat,
            )
            for method in ("cluster", "cluster-wild")
        ]
    ratio = rows[1]["best_s"] / rows[0]["best_s"]
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"\ncluster {1000 * rows[0]['best_s']:.1f} ms, cluster-wild {1000 * rows[1]['best_s']:.1f} "
        f"ms (best of {repeat}): ratio {ratio:.1f}x; load average {load} (1, 5, 15 min)"
    )


def large_wild(args: argparse.Namespace) -> None:
    """cluster and cluster-wild at the configured size, complete and with missing cells."""
    import warnings

    scores = _data(args.models, args.items, args.clusters, 0.0)
    holey = _data(args.models, args.items, args.clusters, 0.1, seed=1)
    print("| case | best s | median s | peak MiB (tracemalloc) |\n|---|---:|---:|---:|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, data, missing in (
            ("", scores, "complete"),
            (", 10 % missing", holey, "pairwise"),
        ):
            for method in ("cluster", "cluster-wild"):
                _measure(
                    f"{method}{label}",
                    lambda data=data, method=method, missing=missing: score_intervals(
                        data, method, reps=args.reps, rng=1, verdict=False, missing=missing
                    ),
                    args.repeat,
                )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=400)
    parser.add_argument("--items", type=int, default=14000)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("all", "chembench", "wild"), default="all")
    args = parser.parse_args()
    if args.only == "chembench":
        chembench_wild(max(args.repeat, 5))
        return
    if args.only == "wild":
        large_wild(args)
        chembench_wild(max(args.repeat, 5))
        return
    m, n, reps = args.models, args.items, args.reps
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"{m} models x {n} items, {args.clusters} clusters, {reps} resamples; "
        f"{os.cpu_count()} CPUs, OPENBLAS_NUM_THREADS={threads}; Python "
        f"{platform.python_version()}, NumPy {np.__version__}\n"
    )
    scores = _data(m, n, args.clusters, 0.0)
    holey = _data(m, n, args.clusters, 0.1, seed=1)
    print("| case | best s | median s | peak MiB (tracemalloc) |\n|---|---:|---:|---:|")
    cases = [
        (
            "bootstrap percentile",
            lambda: score_intervals(scores, "bootstrap", reps=reps, rng=1, verdict=False),
        ),
        ("bootstrap BCa", lambda: score_intervals(scores, "bca", reps=reps, rng=1, verdict=False)),
        (
            "cluster bootstrap",
            lambda: score_intervals(scores, "cluster-bootstrap", reps=reps, rng=1, verdict=False),
        ),
        ("normal", lambda: score_intervals(scores, "normal", verdict=False)),
        ("cluster (Miller SE)", lambda: score_intervals(scores, "cluster", verdict=False)),
        (
            "bootstrap, 10 % cells missing",
            lambda: score_intervals(holey, "bootstrap", reps=reps, rng=1, verdict=False),
        ),
        (
            "bootstrap + paired verdict (t + Holm)",
            lambda: score_intervals(scores, "bootstrap", reps=reps, rng=1),
        ),
        ("cluster + clustered paired verdict", lambda: score_intervals(scores, "cluster")),
        (
            "subscores, bootstrap per cluster",
            lambda: subscores(scores, "bootstrap", reps=reps, rng=1, verdict=False),
        ),
        ("plan (item-level)", lambda: plan(scores)),
    ]
    for label, call in cases:
        _measure(label, call, args.repeat)
    frame = scores.to_frame()
    frame = frame[frame["model"].isin(scores.models[:50])]
    long = frame.assign(dimension="a")
    other = frame.assign(dimension="b", score=1.0 - frame["score"].to_numpy())
    import pandas as pd

    table = pd.concat([long, other], ignore_index=True)
    _measure(
        "composite, 2 dimensions, 50 models",
        lambda: composite_scores(table, reps=reps, rng=1, verdict=False),
        args.repeat,
    )
    print()
    chembench_wild(max(args.repeat, 5))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nprocess peak RSS: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
