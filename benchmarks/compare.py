"""rankci beside the tools users would pick instead: same seeded data, same run, same machine.

For every task and data set the run prints each tool's time (best of ``--repeats``), peak memory
(tracemalloc, in a separate call so that tracing does not slow the timing), the ratio of its
time to rankci's, and -- where the peer computes the same quantity -- the largest difference
between its result and rankci's, so that a fast wrong answer cannot hide (a difference above the
stated tolerance prints DISAGREES and makes the run exit with status 1). How peers too slow for
``--budget`` are timed on a part and scaled up is in ``comparisons/harness.py``.

Run:  python benchmarks/compare.py --write   (every size; rewrites the table in BENCHMARKS.md)
      python benchmarks/compare.py --quick   (every task once on 10 x 1,000: the harness, not a
                                             measurement; under a minute)

Peers come from the ``bench`` extra (``pip install -e ".[bench]"``: pingouin, honestboard,
ppi-python;
scipy and statsmodels are rankci's own dependencies). R's anchors -- lme4/lmerTest (the mixed
model and its Satterthwaite F), pbkrtest (its Kenward-Roger F), emmeans (pairwise contrasts, on
the lmer fit and after the RM-ANOVA) and car (RM-ANOVA with Greenhouse-Geisser/Huynh-Feldt) --
run when ``Rscript`` with those packages is on the PATH (Debian: ``apt-get install r-base-core
r-cran-lme4 r-cran-lmertest r-cran-emmeans r-cran-car r-cran-pbkrtest``); each R script times
its steps itself, so R's startup and CSV reading are reported apart from the timed work
(``comparisons/rpeers.py``).
csranks is not a Debian package: its row says it is missing unless it is installed by hand.
A missing peer is a row saying so, never dropped.

``--write`` after a run of every task and size rewrites the whole table; after a run of some
tasks or sizes it replaces only the rows of the (task, data) pairs measured and keeps the rest,
adding a line that says which rows were re-measured and when.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from comparisons import (
    intervals,
    kenward_roger,
    mixed,
    monitor,
    omnibus,
    paired,
    posthoc,
    ppi,
    ranks,
)
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
    "tukey": (posthoc.tukey, False),
    "bootstrap": (intervals.bootstrap, False),
    "clustered-se": (intervals.clustered_se, True),
    "mixed-model": (mixed.mixed_model, True),
    "kenward-roger": (kenward_roger.kenward_roger, True),
    "monitor": (monitor.monitor, False),
    "ppi": (ppi.ppi_mean, False),
}
SIZES = {"20x5000": (20, 5_000), "100x14000": (100, 14_000), "400x14000": (400, 14_000)}
#: --quick checks that every task and peer runs and agrees, on a size that keeps the test suite
#: short on a loaded machine (issue 30); its times are not the table's
QUICK_SIZE = {"10x1000": (10, 1_000)}
CLUSTERS = (40, 280)


def datasets(size: str, quick: bool):
    """(data, clustered variant only?) pairs of one size: 40 clusters, then 280."""
    if size == "mmlu-pro":
        yield mmlu_pro(), False
        return
    models, items = {**SIZES, **QUICK_SIZE}[size]
    for k, clusters in enumerate(CLUSTERS[:1] if quick else CLUSTERS):
        yield synthetic(models, items, clusters), k > 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every task once on 10 x 1,000")
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
    sizes = list(QUICK_SIZE) if args.quick else args.sizes
    run = Run(
        repeats=1 if args.quick else args.repeats,
        budget=2.0 if args.quick else args.budget,
        quick=args.quick,
    )
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
    full = not args.quick and set(args.tasks) == set(TASKS) and set(sizes) == {*SIZES, "mmlu-pro"}
    if not full and not args.quick:
        command += f" --tasks {' '.join(args.tasks)} --sizes {' '.join(sizes)}"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    header = (
        f"Run on {time.strftime('%Y-%m-%d')} ({time.perf_counter() - started:.0f} s in all): "
        f"{platform.machine()}, {os.cpu_count()} cores, load average {load} (1, 5, 15 min) at "
        f"the end, Python {platform.python_version()}, numpy {np.__version__}{r_version()}; "
        f"best of {run.repeats}, budget {run.budget:g} s; `{command}`."
    )
    table = markdown(rows)
    print(header + "\n\n" + table)
    if args.write:
        write_benchmarks(header, table, full)
    return 1 if any(row.disagrees for row in rows) else 0


def r_version() -> str:
    """ ", R x.y.z" when Rscript is here, else ""."""
    path = shutil.which("Rscript")
    if path is None:
        return ""
    done = subprocess.run(
        [path, "-e", "cat(format(getRversion()), basename(sessionInfo()$BLAS))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        return ""
    version, *blas = done.stdout.split()
    return f", R {version}" + (f" ({blas[0]})" if blas else "")


def write_benchmarks(header: str, table: str, full: bool = True) -> None:
    """Rewrite the block between the markers: all of it after a full run, else only the rows of
    the (task, data) pairs in ``table`` (each group where it stood; a new group after the last
    row on the same data), with ``header`` added below the earlier run's lines."""
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    if START not in text:
        raise SystemExit(f"{path} has no {START} ... {END} block to rewrite")
    before, rest = text.split(START, 1)
    old, after = rest.split(END, 1)
    block = f"{header}\n\n{table}" if full else merge(old.strip("\n"), header, table)
    path.write_text(f"{before}{START}\n{block}\n{END}{after}")


def merge(old: str, header: str, table: str) -> str:
    """The old block with the rows of ``table``'s (task, data) pairs replaced (see above)."""

    def key(line: str) -> tuple[str, str]:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        return cells[0], cells[1]

    lines = old.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("| "))
    notes, columns, old_rows = lines[:first], lines[first : first + 2], lines[first + 2 :]
    new_rows = table.splitlines()[2:]
    groups: dict[tuple[str, str], list[str]] = {}
    for line in new_rows:
        groups.setdefault(key(line), []).append(line)
    merged: list[str] = []
    for line in old_rows:
        k = key(line)
        if k in groups:
            if groups[k]:
                merged += groups[k]
                groups[k] = []
        else:
            merged.append(line)
    for (_, data), lines_of in groups.items():  # groups the old table did not have
        if not lines_of:
            continue
        same_data = [i for i, line in enumerate(merged) if key(line)[1] == data]
        at = same_data[-1] + 1 if same_data else len(merged)
        merged[at:at] = lines_of
    while notes and not notes[-1].strip():
        notes.pop()
    notes += ["", "Re-measured rows (the rest as above): " + header]
    return "\n\n".join(["\n".join(notes), "\n".join(columns + merged)])


if __name__ == "__main__":
    raise SystemExit(main())
