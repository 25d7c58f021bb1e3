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

``--billion DIR``: the issue-30 target, 10^9 scores (10,000 models x 100,000 items), measured.
The partitioned dataset is written into DIR once (reused while its ``_rankci_billion.json``
matches the sizes): 0/1 scores as uint8 (correct / wrong, P = expit(a_model - b_item)), model
and item as dictionary codes, ``--items-per-file`` items per file, sorted by item. Then, each in
a fresh process with its load before and after: ``read`` (pyarrow reads the three columns of
every file, one file at a time: the floor), ``rankci rank DIR --test t`` (the CLI, out of core)
and ``rankci rank DIR --test t --dask local``; wall time and peak RSS of each (``os.wait4``);
then the BLAS floor of the centred Gram alone (two blocks timed, scaled to N / rows blocks).
The two rankings are compared (ranks, rank intervals, tiers equal; scores to rounding) and kept
as ``DIR/_rank-cli.csv`` and ``DIR/_rank-dask.csv``. ``--models``, ``--items`` shrink it (the
test runs it tiny); the dataset is not deleted (``rm -r DIR``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
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


def write_binary(directory: Path, m: int, n: int, per_file: int, seed: int = 0) -> None:
    """0/1 scores (uint8), P(correct) = expit(a_j - b_i), sorted by item, per_file items a file."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    models = pa.array([f"model {j:05d}" for j in range(m)])
    ability = np.linspace(-1.0, 1.0, m)
    model_codes = pa.array(np.tile(np.arange(m, dtype=np.int32), per_file))
    for k, lo in enumerate(range(0, n, per_file)):
        hi = min(lo + per_file, n)
        difficulty = rng.standard_normal(hi - lo)
        p = expit(ability[None, :] - difficulty[:, None])
        x = (rng.random((hi - lo, m)) < p).astype(np.uint8)
        del p
        items = pa.array([f"q{i:07d}" for i in range(lo, hi)])
        codes = model_codes if hi - lo == per_file else model_codes[: (hi - lo) * m]
        table = pa.table(
            {
                "model": pa.DictionaryArray.from_arrays(codes, models),
                "item": pa.DictionaryArray.from_arrays(
                    np.repeat(np.arange(hi - lo, dtype=np.int32), m), items
                ),
                "score": x.ravel(),
            }
        )
        # row groups of whole items, so that no reader splits an item between partitions
        rows = max(1, (1 << 20) // m) * m
        pq.write_table(table, directory / f"part-{k:05d}.parquet", row_group_size=rows)


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


READ = """
import sys, pyarrow.dataset as ds
for fragment in sorted(ds.dataset(sys.argv[1], format="parquet").get_fragments(),
                       key=lambda f: f.path):
    fragment.to_table(columns=["model", "item", "score"])
"""


GRAM = """
import sys, time, numpy as np
from rankci.evidence.ttest import gram_rows
m, n = int(sys.argv[1]), int(sys.argv[2])
rows = min(gram_rows(m), n)
block = np.random.default_rng(0).random((rows, m)) - 0.5
timed = min(2, -(-n // rows))
t0 = time.perf_counter()
for _ in range(timed):
    gram = block.T @ block
print((time.perf_counter() - t0) / timed * n / rows)
"""


def gram_floor(m: int, n: int) -> tuple[float, float, float]:
    """The centred Gram's BLAS time alone at M x N (two blocks of gram_rows(M) rows timed in a
    fresh process, scaled to N / rows blocks), with the load before and after."""
    before = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "-c", GRAM, str(m), str(n)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1]), before, os.getloadavg()[0]


def timed(command: list[str], out: Path | None = None) -> tuple[float, float, float, float]:
    """Wall seconds, peak RSS (GiB) of a fresh process, and the load before and after."""
    before = os.getloadavg()[0]
    sink = open(out, "w") if out is not None else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        child = subprocess.Popen(command, stdout=sink)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
    finally:
        if out is not None:
            sink.close()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(command)} exited with {child.returncode}")
    return wall, usage.ru_maxrss / 2**20, before, os.getloadavg()[0]


def compare(cli: Path, dask: Path) -> str:
    import pandas as pd

    a, b = pd.read_csv(cli), pd.read_csv(dask)
    exact = [c for c in a.columns if c not in ("score",)]
    if not a[exact].equals(b[exact]):
        differ = [c for c in exact if not a[c].equals(b[c])]
        raise SystemExit(f"the CLI and the Dask rankings differ in {differ}")
    gap = float(np.max(np.abs(a["score"].to_numpy() - b["score"].to_numpy())))
    return (
        f"same answer: {len(a)} models, every column but the score equal ({', '.join(exact)}); "
        f"largest score difference {gap:.1e}"
    )


def billion(args) -> int:
    directory = Path(args.billion)
    m, n, per_file = args.models, args.items, args.items_per_file
    marker = directory / "_rankci_billion.json"
    wanted = {"models": m, "items": n, "items_per_file": per_file, "seed": 0, "scores": "uint8"}
    print(
        f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, BLAS threads "
        f"{os.environ.get('OPENBLAS_NUM_THREADS', os.environ.get('OMP_NUM_THREADS', 'default'))}"
        f", {os.cpu_count()} cores, python {sys.version.split()[0]}"
    )
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        print(f"dataset: reused {directory}")
    else:
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.parquet"):
            old.unlink()
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        write_binary(directory, m, n, per_file)
        marker.write_text(json.dumps(wanted))
        print(
            f"dataset: written in {time.perf_counter() - t0:.0f} s (load before {load:.2f}, "
            f"after {os.getloadavg()[0]:.2f})"
        )
    files = sorted(directory.glob("*.parquet"))
    if args.write_only:
        return 0
    size = sum(f.stat().st_size for f in files)
    print(
        f"{m:,} models x {n:,} items = {m * n:,} scores (uint8 0/1, dictionary model and item), "
        f"{len(files)} files of {per_file:,} items, {size / 2**30:.2f} GiB on disk"
    )
    rankci = [sys.executable, "-m", "rankci", "rank", str(directory), "--test", "t"]
    rankci += ["--seed", "0", "--format", "csv"]
    runs = [
        ("read (pyarrow, file by file)", [sys.executable, "-c", READ, str(directory)], None),
        ("rankci rank DIR --test t", rankci, directory / "_rank-cli.csv"),
        ("rankci rank DIR --test t --dask local", [*rankci, "--dask", "local"],
         directory / "_rank-dask.csv"),
    ]  # fmt: skip
    print("| run | wall (s) | ratio to read | peak RSS (GiB) | load before | load after |")
    print("|---|---|---|---|---|---|")
    read = None
    for name, command, out in runs:
        wall, rss, before, after = timed(command, out)
        read = wall if read is None else read
        print(
            f"| {name} | {wall:.1f} | {wall / read:.1f} | {rss:.2f} | {before:.2f} | {after:.2f} |"
        )
        sys.stdout.flush()
    gram, before, after = gram_floor(m, n)
    print(
        f"| floor of the centred Gram alone (BLAS, N M^2 / 2 multiply-adds; 2 blocks timed, "
        f"scaled) | {gram:.3g} | {gram / read:.2g} | | {before:.2f} | {after:.2f} |"
    )
    print(compare(directory / "_rank-cli.csv", directory / "_rank-dask.csv"))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--items-per-file", type=int, default=2000)
    parser.add_argument("--billion", metavar="DIR", help="the 10^9-score run (see the docstring)")
    parser.add_argument("--models", type=int, default=10_000, help="with --billion")
    parser.add_argument("--items", type=int, default=100_000, help="with --billion")
    parser.add_argument("--write-only", action="store_true", help="with --billion: write, stop")
    args = parser.parse_args()
    if args.billion:
        return billion(args)
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
