"""Start-up time of the command line: ``rankci --version`` and ``rankci rank --help``.

Each command runs in a fresh subprocess; the wall-clock time is the best of 5 runs (``--repeats``),
and the ratio is to ``python -c pass`` (the interpreter alone). Building the parser imports no
numpy, pandas or scipy (tests/commands/test_startup.py checks that), so the CLI's start-up should
stay within a few tens of milliseconds of the bare interpreter.

Run:  python benchmarks/bench_startup.py              (best of 5)
      python benchmarks/bench_startup.py --repeats 1  (once; for CI)
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time


def commands() -> list[tuple[str, list[str]]]:
    python = sys.executable
    rankci = shutil.which("rankci")
    cli = [rankci] if rankci else [python, "-m", "rankci"]
    return [
        ("python -c pass", [python, "-c", "pass"]),
        ("rankci --version", [*cli, "--version"]),
        ("rankci rank --help", [*cli, "rank", "--help"]),
        ('python -c "import rankci"', [python, "-c", "import rankci"]),
    ]


def best_time(argv: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (default 5)")
    args = parser.parse_args(argv)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"best of {args.repeats}, wall clock, fresh subprocess"
    )
    rows = [(name, best_time(cmd, args.repeats)) for name, cmd in commands()]
    base = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  {'time (s)':>8}  {'x python -c pass':>16}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:>8.3f}  {seconds / base:>16.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
