"""The out-of-core path (rankci.outofcore) on partitioned Parquet, against its floor.

For each size (M models x N items, written as files of ``--items-per-file`` items), in one run:

* ``read``: pyarrow reads every file of the directory (the floor of any reduction of it);
* ``outofcore``: :func:`rankci.outofcore.rank_dataset`, the whole rank intervals, file by file;
* ``dask``: the same on a ``distributed.LocalCluster`` (2 workers, 1 thread each, processes=False);
* peak RSS of the process (``resource.getrusage``; the high-water mark, so monotone over rows);
* an extrapolation of the out-of-core time to 10^9 scores (10,000 x 100,000), linear in the
  number of scores from the largest size measured for the reading and pivoting, plus the
  M^2 certification measured at M models scaled by (10,000 / M)^2: stated as extrapolated.

Run: ``python benchmarks/bench_outofcore.py [--quick]``; prints a Markdown table with load,
threads and date.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq


def write(directory: Path, m: int, n: int, per_file: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    models = pa.array([f"model {j:05d}" for j in range(m)])
    shift = np.linspace(0, 0.2, m)
    for k, lo in enumerate(range(0, n, per_file)):
        hi = min(lo + per_file, n)
        items = pa.array([f"q{i:07d}" for i in range(lo, hi)])
        x = np.clip(0.4 * rng.random((hi - lo, m)) + shift + 0.2, 0, 1)
        table = pa.table(
            {
                "model": pa.DictionaryArray.from_arrays(
                    np.tile(np.arange(m, dtype=np.int32), hi - lo), models
                ),
                "item": pa.DictionaryArray.from_arrays(
                    np.repeat(np.arange(hi - lo, dtype=np.int32), m), items
                ),
                "score": x.ravel(),
            }
        )
        pq.write_table(table, directory / f"part-{k:05d}.parquet")


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--items-per-file", type=int, default=2000)
    args = parser.parse_args()
    from rankci.outofcore import rank_dataset

    sizes = (
        [(100, 2000), (300, 10000)] if args.quick else [(100, 10000), (300, 20000), (1000, 20000)]
    )
    load = os.getloadavg()[0]
    threads = os.environ.get("OMP_NUM_THREADS", "default")
    print(
        f"date {datetime.date.today()}, load {load:.2f}, BLAS threads {threads}, "
        f"python {sys.version.split()[0]}"
    )
    print(
        "| M | N | scores | files | read (s) | outofcore (s) | ratio | dask local (s) "
        "| peak RSS (GB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    last = None
    for m, n in sizes:
        with tempfile.TemporaryDirectory() as name:
            directory = Path(name)
            write(directory, m, n, args.items_per_file)
            t0 = time.perf_counter()
            ds.dataset(directory, format="parquet").to_table()
            read = time.perf_counter() - t0
            t0 = time.perf_counter()
            rank_dataset(directory, rng=0)
            ooc = time.perf_counter() - t0
            t0 = time.perf_counter()
            rank_dataset(directory, rng=0, dask="local")
            dask = time.perf_counter() - t0
            files = len(list(directory.glob("*.parquet")))
        print(
            f"| {m} | {n} | {m * n:,} | {files} | {read:.2f} | {ooc:.2f} | {ooc / read:.1f} | "
            f"{dask:.2f} | {peak_gb():.2f} |"
        )
        last = (m, n, ooc)
    m, n, ooc = last
    per_score = ooc / (m * n)
    print(
        f"extrapolated (not measured) to 10,000 x 100,000 = 10^9 scores, linear in scores from "
        f"{m} x {n}: {per_score * 1e9 / 60:.1f} min (the M^2 certification at M = 10,000 not "
        "included in the linear term; see BENCHMARKS.md)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
