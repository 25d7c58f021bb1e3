"""A large long CSV: rankci.read_scores (batch reader) against pyarrow.csv.read_csv, and peak RSS.

``python benchmarks/bench_csv_read.py [--rows 36000000]``; each reader runs in a fresh process
(its own peak RSS, ``resource.getrusage``). The default 36M rows is about 1 GB; ``--quick``
writes 3.6M rows.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = """
import resource, sys, time
t0 = time.perf_counter()
if sys.argv[1] == "pyarrow":
    import pyarrow.csv as c
    c.read_csv(sys.argv[2])
else:
    import rankci
    rankci.read_scores(sys.argv[2])
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)
"""


def write(path: Path, rows: int, models: int = 360) -> None:
    rng = np.random.default_rng(0)
    items = rows // models
    with open(path, "w") as handle:
        handle.write("model,item,score\n")
        for lo in range(0, items, 10000):
            hi = min(lo + 10000, items)
            block = [
                f"model-{j:04d},item-{i:08d},{s:.4f}\n"
                for i in range(lo, hi)
                for j, s in zip(range(models), rng.random(models))
            ]
            handle.writelines(block)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=36_000_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = 3_600_000 if args.quick else args.rows
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "scores.csv"
        write(path, rows)
        size = path.stat().st_size / 1e9
        out = {}
        for reader in ("pyarrow", "rankci"):
            env = {**os.environ, "RANKCI_PROGRESS": "0"}
            done = subprocess.run(
                [sys.executable, "-c", CHILD, reader, str(path)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            out[reader] = [float(v) for v in done.stdout.split()[-2:]]
    print(
        f"date {datetime.date.today()}, load {os.getloadavg()[0]:.2f}, rows {rows:,}, {size:.2f} GB"
    )
    print("| reader | time (s) | peak RSS (GB) |\n|---|---|---|")
    for reader, (seconds, rss) in out.items():
        print(f"| {reader} | {seconds:.1f} | {rss:.2f} |")
    print(f"ratio rankci / pyarrow: {out['rankci'][0] / out['pyarrow'][0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
