"""A large long CSV: rankci.read_scores against pyarrow.csv.read_csv, and peak RSS.

``python benchmarks/bench_csv_read.py [--rows 36000000] [--general]``; each reader runs in a
fresh process (its own peak RSS, ``resource.getrusage``; the import included). The default 36M
rows (360 models, 100,000 items) is about 1.15 GB; ``--quick`` writes 3.6M rows. rankci reads
a text table of at least ``BIG_CSV_BYTES`` by ``rankci.io.read_csv_codes`` (pyarrow batches
straight into integer codes); ``--general`` also times the general path it falls back to
(``read_csv_batches``, then ``Scores.from_frame``: a pandas frame of Python strings, 1.4 GB
at 3.6M rows, so keep it to ``--quick`` sizes). The load average is printed before
and after.
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
    rows = c.read_csv(sys.argv[2]).num_rows
else:
    import rankci
    import rankci.io
    if sys.argv[1] == "general":  # the path read_csv_codes falls back to
        rankci.io.read_csv_codes = lambda *args: None
    rows = rankci.read_scores(sys.argv[2]).n_rows
seconds = time.perf_counter() - t0
print(rows, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)
"""
READERS = {
    "pyarrow": "pyarrow.csv.read_csv",
    "rankci": "rankci.read_scores (read_csv_codes)",
    "general": "rankci.read_scores, general path (read_csv_batches + from_frame)",
}


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
    parser.add_argument("--general", action="store_true", help="also time the general path")
    args = parser.parse_args()
    rows = 3_600_000 if args.quick else args.rows
    readers = ["pyarrow", "rankci", *(["general"] if args.general else [])]
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "scores.csv"
        write(path, rows)
        size = path.stat().st_size / 1e9
        before = os.getloadavg()[0]
        out = {}
        for reader in readers:
            env = {**os.environ, "RANKCI_PROGRESS": "0"}
            done = subprocess.run(
                [sys.executable, "-c", CHILD, reader, str(path)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            read, seconds, rss = done.stdout.split()[-3:]
            assert int(read) == rows, (reader, read, rows)
            out[reader] = (float(seconds), float(rss))
        after = os.getloadavg()[0]
    print(
        f"date {datetime.date.today()}, load (1 min) {before:.2f} before, {after:.2f} after, "
        f"{os.cpu_count()} cores, default threads, rows {rows:,}, {size:.2f} GB"
    )
    print("| reader | time (s) | peak RSS (GB) |\n|---|---|---|")
    for reader, (seconds, rss) in out.items():
        print(f"| {READERS[reader]} | {seconds:.1f} | {rss:.2f} |")
    for reader in readers[1:]:
        print(f"ratio {reader} / pyarrow: {out[reader][0] / out['pyarrow'][0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
