"""Speed and memory of simultaneous paired-t + Holm rank intervals (issue 2).

Each case runs in a fresh subprocess so that its peak resident memory (ru_maxrss) is its own.
Two timings per case:

* ``rank``: from the units x models matrix to the Ranking (pairwise t for all pairs, Holm over all
  M(M-1) ordered pairs, transitive closure, intervals and tiers) -- what the targets refer to;
* ``end to end``: from the validated long table (Scores, one row per model and item) through
  aggregation into units, then ``rank``.

Targets: 400 models x 14,000 items < 2 s; 4,000 models x 1,000 items < 30 s; each < 4 GiB.

Run:  python benchmarks/bench_rank.py            (all sizes, best of 3 runs)
      python benchmarks/bench_rank.py --quick    (smallest size once; for CI)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

SIZES = [(20, 5_000), (400, 14_000), (4_000, 1_000)]


def _case(models: int, items: int, repeats: int) -> dict:
    import resource
    import time

    import numpy as np

    import rankci
    from rankci.simulate import simulate_scores

    ability = np.random.default_rng(0).normal(0.0, 0.5, models)
    sim = simulate_scores(ability, items, rng=1)
    scores = sim.scores
    best_rank, best_total = np.inf, np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        units = scores.units("item")
        middle = time.perf_counter()
        ranking = rankci.certify_holm(rankci.pairwise_tests(units, "t"), 0.05).ranking()
        end = time.perf_counter()
        best_rank = min(best_rank, end - middle)
        best_total = min(best_total, end - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB -> GiB
    return {
        "models": models,
        "items": items,
        "rank_s": best_rank,
        "end_to_end_s": best_total,
        "peak_gib": peak,
        "certified_pairs": int(ranking.dominance.sum()),
    }


def run(models: int, items: int, repeats: int) -> dict:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from bench_rank import _case;"
        "print(json.dumps(_case(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run(
        [sys.executable, "-c", code, here, str(models), str(items), str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smallest size, one run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = SIZES[:1] if args.quick else SIZES
    repeats = 1 if args.quick else args.repeats
    python = platform.python_version()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {python}")
    print("| models | items | rank (s) | end to end (s) | peak memory (GiB) | certified pairs |")
    print("|---:|---:|---:|---:|---:|---:|")
    for models, items in sizes:
        r = run(models, items, repeats)
        print(
            f"| {r['models']:,} | {r['items']:,} | {r['rank_s']:.2f} | {r['end_to_end_s']:.2f} | "
            f"{r['peak_gib']:.2f} | {r['certified_pairs']:,} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
