"""Time and size of the HTML report on the bundled data (issue 7).

Each case builds the whole page: ranking, bootstrap score intervals (1,000 resamples), the plots,
per-cluster rank intervals, omnibus tests with the mixed model, and (where stated) the monitor
replay. Best of ``--repeat`` runs; the size is that of the self-contained HTML file.

Run:  python benchmarks/bench_report.py            (best of 3)
      python benchmarks/bench_report.py --quick    (MMLU-Pro once, without the monitor)
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import rankci
from rankci.report import build_report

CASES = [
    ("MMLU-Pro (32 × 12,032)", rankci.datasets.load_mmlu_pro, None),
    ("MMLU-Pro (32 × 12,032) + monitor", rankci.datasets.load_mmlu_pro, {"retire": "topk", "k": 3}),
    ("ChemBench (35 × 2,788)", rankci.datasets.load_chembench, None),
    (
        "ChemBench (35 × 2,788) + monitor",
        rankci.datasets.load_chembench,
        {"retire": "topk", "k": 3},
    ),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    cases = CASES[:1] if args.quick else CASES
    repeat = 1 if args.quick else args.repeat
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; best of {repeat}"
    )
    print("| data | build (s) | size (MB) |")
    print("|---|---:|---:|")
    for name, load, monitor in cases:
        scores = load()
        best, html = float("inf"), ""
        for _ in range(repeat):
            start = time.perf_counter()
            html = build_report(scores, k=3, monitor=monitor)
            best = min(best, time.perf_counter() - start)
        print(f"| {name} | {best:.2f} | {len(html.encode()) / 1e6:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
