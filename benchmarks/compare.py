"""rankci beside the tools users would pick instead: same seeded data, same run, same machine.

For every task and data set the run prints each tool's time (best of ``--repeats``), peak memory
(tracemalloc, in a separate call so that tracing does not slow the timing), the ratio of its
time to rankci's, and -- where the peer computes the same quantity -- the largest difference
between its result and rankci's, so that a fast wrong answer cannot hide (a difference above the
stated tolerance prints DISAGREES and makes the run exit with status 1). How peers too slow for
``--budget`` are timed on a part and scaled up is in ``comparisons/harness.py``.

Run:  python benchmarks/compare.py --write   (every size; rewrites the table in BENCHMARKS.md)
      python benchmarks/compare.py --quick   (every task once on 20 x 5,000; under 2 minutes)

Peers come from the ``bench`` extra (``pip install -e ".[bench]"``: pingouin, honestboard;
scipy and statsmodels are rankci's own dependencies); R's csranks and lme4 run when ``Rscript``
with those packages is on the PATH. A missing peer is a row saying so, never dropped.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from comparisons import intervals, mixed, monitor, omnibus, paired, ranks
from comparisons.harness import Row, Run, markdown, mmlu_pro, synthetic

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- compare:start -->", "<!-- compare:end -->"

#: task name -> (function, needs clusters: run on the 40- and the 280-cluster variant)
TASKS = {
    "paired-t": (paired.paired_t, False),
    "wilcoxon": (paired.wilcoxon, False),
    "rank-intervals": (ranks.rank_intervals, False),
    "rm-anova": (omnibus.rm_anova, False),
    "friedman": (omnibus.friedman, False),
    "bootstrap": (intervals.bootstrap, False),
    "clustered-se": (intervals.clustered_se, True),
    "mixed-model": (mixed.mixed_model, True),
    "monitor": (monitor.monitor, False),
}
SIZES = {"20x5000": (20, 5_000), "100x14000": (100, 14_000), "400x14000": (400, 14_000)}
CLUSTERS = (40, 280)


def datasets(size: str, quick: bool):
    """(data, clustered variant only?) pairs of one size: 40 clusters, then 280."""
    if size == "mmlu-pro":
        yield mmlu_pro(), False
        return
    models, items = SIZES[size]
    for k, clusters in enumerate(CLUSTERS[:1] if quick else CLUSTERS):
        yield synthetic(models, items, clusters), k > 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every task once on 20 x 5,000")
    parser.add_argument(
        "--sizes", nargs="*", default=[*SIZES, "mmlu-pro"], choices=[*SIZES, "mmlu-pro"]
    )
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--budget",
        type=float,
        default=30.0,
        help="seconds a peer may take before it is timed on a part",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the table in BENCHMARKS.md")
    args = parser.parse_args(argv)
    sizes = ["20x5000"] if args.quick else args.sizes
    run = Run(repeats=1 if args.quick else args.repeats, budget=5.0 if args.quick else args.budget)
    rows: list[Row] = []
    started = time.perf_counter()
    for size in sizes:
        for data, variant in datasets(size, args.quick):
            for task in args.tasks:
                fn, clustered = TASKS[task]
                if variant and not clustered:
                    continue
                start = time.perf_counter()
                rows += fn(data, run)
                print(
                    f"{task} on {data.label}: {time.perf_counter() - start:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    command = "python benchmarks/compare.py" + (" --quick" if args.quick else "")
    header = (
        f"Run on {time.strftime('%Y-%m-%d')} ({time.perf_counter() - started:.0f} s in all): "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}; best of {run.repeats}, budget {run.budget:g} s; `{command}`."
    )
    table = markdown(rows)
    print(header + "\n\n" + table)
    if args.write:
        write_benchmarks(header + "\n\n" + table)
    return 1 if any(row.disagrees for row in rows) else 0


def write_benchmarks(block: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    if START not in text:
        raise SystemExit(f"{path} has no {START} ... {END} block to rewrite")
    before, rest = text.split(START, 1)
    path.write_text(f"{before}{START}\n{block}\n{END}{rest.split(END, 1)[1]}")


if __name__ == "__main__":
    raise SystemExit(main())
