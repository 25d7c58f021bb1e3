"""A validation study and a bootstrap on one core, two local processes and a Dask LocalCluster.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_parallel.py
      python benchmarks/bench_parallel.py --quick     (the CI smoke run, seconds)

Study: the replicates of ``validation/coverage_holm.py`` (every design, ``--reps`` replicates
each) through :func:`rankci.parallel.map_replicates` on

* ``serial``: :class:`rankci.parallel.SerialExecutor`, in this process (the baseline, ratio 1);
* ``processes``: a local ``ProcessPoolExecutor`` with ``--workers`` processes (pool start-up
  included);
* ``dask``: a ``distributed.Client`` on a ``LocalCluster`` of ``--workers`` worker processes, one
  thread each, reached by its scheduler address like a remote cluster (cluster start-up reported
  apart: a cluster is started once and shared).

Bootstrap: ``bootstrap_means`` of a units x models matrix (``--models``, ``--items``, ``--draws``)
with ``executor=None`` (the in-caller stream, the baseline), ``"serial"`` and ``"processes"``.

Every time is the best of ``--repeat`` runs (default 3). Every row checks that its answers equal
the serial run's (every replicate's coverage, widths and false claims; every bootstrap draw), so a
speed-up can never come from different work. The load average is printed before and after, as the
machine is shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "validation"))

import coverage_holm  # noqa: E402

from rankci.evidence.bootstrap import bootstrap_means  # noqa: E402
from rankci.parallel import SerialExecutor, get_executor, map_replicates  # noqa: E402


def study(executor, reps: int, seed: int) -> list:
    """Every replicate of every design of coverage_holm, in order."""
    out = []
    for k, design in enumerate(coverage_holm.DESIGNS):
        found = map_replicates(
            partial(coverage_holm.replicate, design), reps, rng=seed + k, executor=executor
        )
        out.append(found)
    return out


def same(a: list, b: list) -> bool:
    """Equal replicate by replicate: coverage arrays, widths, false claims."""
    for design_a, design_b in zip(a, b, strict=True):
        for rep_a, rep_b in zip(design_a, design_b, strict=True):
            if rep_a.keys() != rep_b.keys():
                return False
            for key, (covered, width, claim) in rep_a.items():
                other = rep_b[key]
                if not (np.array_equal(covered, other[0]) and width == other[1]):
                    return False
                if claim != other[2]:
                    return False
    return True


REPEAT = [1]  # set from --repeat: every time below is the best of that many runs


def timed(run):
    best, result = float("inf"), None
    for _ in range(REPEAT[0]):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="replicates per design")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--models", type=int, default=400)
    parser.add_argument("--items", type=int, default=14000)
    parser.add_argument("--draws", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per row")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask rows")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.models, args.items, args.draws, args.repeat = 4, 20, 300, 64, 1
    REPEAT[0] = max(1, args.repeat)
    os.environ.setdefault("RANKCI_PROGRESS", "0")
    load_before = os.getloadavg()
    designs = len(coverage_holm.DESIGNS)
    print(
        f"machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, NumPy {np.__version__}; load average before "
        f"{load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}"
    )
    print(
        f"\nStudy: validation/coverage_holm.py, {designs} designs x {args.reps} replicates "
        f"({designs * args.reps} leaderboards); {args.workers} workers; best of {REPEAT[0]}\n"
    )
    print("| executor | time (s) | serial / this | same answers as serial |")
    print("|---|---:|---:|---|")
    mismatches = []
    serial_time, reference = timed(lambda: study(SerialExecutor(), args.reps, args.seed))
    print(f"| serial (in this process) | {serial_time:.2f} | 1.00 | (the baseline) |")

    def local():
        with get_executor("processes", workers=args.workers) as pool:
            return study(pool, args.reps, args.seed)

    seconds, found = timed(local)
    mismatches += [] if same(reference, found) else ["study: processes"]
    print(
        f"| processes ({args.workers} local, start-up included) | {seconds:.2f} | "
        f"{serial_time / seconds:.2f} | {same(reference, found)} |"
    )
    if not args.no_dask:
        from distributed import LocalCluster

        start = time.perf_counter()
        cluster = LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        cluster_start = time.perf_counter() - start
        try:

            def dask():
                with get_executor(cluster.scheduler_address) as pool:
                    pool.client.upload_file(coverage_holm.__file__)
                    return study(pool, args.reps, args.seed)

            seconds, found = timed(dask)
            mismatches += [] if same(reference, found) else ["study: dask"]
            print(
                f"| dask LocalCluster ({args.workers} worker processes; cluster start "
                f"{cluster_start:.1f} s not included) | {seconds:.2f} | "
                f"{serial_time / seconds:.2f} | {same(reference, found)} |"
            )
        finally:
            cluster.close()

    rng = np.random.default_rng(args.seed)
    x = (rng.random((args.items, args.models)) < np.linspace(0.3, 0.8, args.models)).astype(float)
    print(
        f"\nBootstrap: bootstrap_means, {args.items:,} items x {args.models} models, "
        f"{args.draws:,} resamples\n"
    )
    print("| executor | time (s) | in-caller / this | same draws as serial |")
    print("|---|---:|---:|---|")
    base_time, _ = timed(lambda: bootstrap_means(x, args.draws, np.random.default_rng(1)))
    print(f"| None (in the caller, today's stream) | {base_time:.2f} | 1.00 | (another stream) |")
    seconds, serial = timed(
        lambda: bootstrap_means(x, args.draws, np.random.default_rng(1), executor="serial")
    )
    print(f"| serial (8 chunks, child seeds) | {seconds:.2f} | {base_time / seconds:.2f} | — |")

    def processes():
        with get_executor("processes", workers=args.workers) as pool:
            return bootstrap_means(x, args.draws, np.random.default_rng(1), executor=pool)

    seconds, found = timed(processes)
    mismatches += [] if np.array_equal(serial, found) else ["bootstrap: processes"]
    print(
        f"| processes ({args.workers} local, start-up included) | {seconds:.2f} | "
        f"{base_time / seconds:.2f} | {np.array_equal(serial, found)} |"
    )
    load_after = os.getloadavg()
    print(
        f"\nload average after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
    )
    if mismatches:
        print(f"DIFFERENT ANSWERS: {', '.join(mismatches)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
