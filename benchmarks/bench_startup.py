"""Start-up time of the command line (``rankci --version``, ``rankci rank --help``) and of the
live service (``rankci serve`` until ``/api/health`` answers).

Each command runs in a fresh subprocess; the wall-clock time is the best of 5 runs (``--repeats``),
and the ratio is to ``python -c pass`` (the interpreter alone). Building the parser imports no
numpy, pandas or scipy (tests/commands/test_startup.py checks that), so the CLI's start-up should
stay within a few tens of milliseconds of the bare interpreter.

The service's row is timed from the spawn of ``rankci serve --db NEW.sqlite`` to its first
``200`` on ``/api/health``; its plain baseline is the interpreter importing what any FastAPI
service on uvicorn imports (``import fastapi, uvicorn``). Serving JSON imports no matplotlib,
pandas or scipy.optimize (tests/service/test_service_imports.py checks that).

Run:  python benchmarks/bench_startup.py              (best of 5)
      python benchmarks/bench_startup.py --repeats 1  (once; for CI)
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def commands() -> list[tuple[str, list[str]]]:
    python = sys.executable
    rankci = shutil.which("rankci")
    cli = [rankci] if rankci else [python, "-m", "rankci"]
    return [
        ("python -c pass", [python, "-c", "pass"]),
        ("rankci --version", [*cli, "--version"]),
        ("rankci rank --help", [*cli, "rank", "--help"]),
        ('python -c "import rankci"', [python, "-c", "import rankci"]),
        ('python -c "import fastapi, uvicorn"', [python, "-c", "import fastapi, uvicorn"]),
    ]


def best_time(argv: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def serve_time(repeats: int) -> float:
    """Best of ``repeats``: spawn ``rankci serve`` on a new SQLite file and a free loopback port,
    until ``GET /api/health`` answers 200 (then the server is stopped)."""
    python = sys.executable
    best = float("inf")
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            argv = [python, "-m", "rankci", "serve", "--db", os.path.join(folder, "b.sqlite")]
            argv += ["--port", str(port), "--no-access-log", "--log-level", "warning"]
            env = {**os.environ, "RANKCI_ADMIN_TOKEN": "t" * 32, "RANKCI_PROGRESS": "0"}
            start = time.perf_counter()
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            server = subprocess.Popen(argv, env=env, **quiet)
            try:
                while True:
                    if server.poll() is not None:
                        raise RuntimeError(f"rankci serve exited with {server.returncode}")
                    try:
                        url = f"http://127.0.0.1:{port}/api/health"
                        with urllib.request.urlopen(url, timeout=5) as answer:
                            if answer.status == 200:
                                break
                    except OSError:
                        time.sleep(0.01)
                best = min(best, time.perf_counter() - start)
            finally:
                server.terminate()
                server.wait(30)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (default 5)")
    args = parser.parse_args(argv)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"best of {args.repeats}, wall clock, fresh subprocess; load {os.getloadavg()[0]:.2f}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    rows = [(name, best_time(cmd, args.repeats)) for name, cmd in commands()]
    rows.append(("rankci serve (until /api/health answers)", serve_time(args.repeats)))
    base = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  {'time (s)':>8}  {'x python -c pass':>16}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:>8.3f}  {seconds / base:>16.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
