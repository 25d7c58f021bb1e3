"""The test suite's wall time with ``pytest -n 2``, the load during the run, and its slowest tests.

Runs ``python -m pytest -n 2 -q -p no:cacheprovider --durations=N`` once (every test, the browser
tests too), samples ``os.getloadavg()`` every 5 s while it runs, and with ``--write`` replaces the
section "The test suite (issue 30, item 5)" of BENCHMARKS.md. Each slow test is set beside its
duration in an earlier run, given with ``--before FILE`` (pytest's own ``slowest N durations``
block, as saved in benchmarks/results/suite_before.txt); both are pytest's figures, taken under
whatever load the machine had, which the section states.

Run:  python benchmarks/suite_time.py --write
      python benchmarks/suite_time.py --parse-only SAVED_OUTPUT --write   (a run already made)
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## The test suite (issue 30, item 5) — `benchmarks/suite_time.py`"
BEFORE = ROOT / "benchmarks" / "results" / "suite_before.txt"


def durations(text: str) -> dict[str, float]:
    """``test id -> seconds`` from pytest's ``slowest N durations`` block (the call phase)."""
    found = {}
    pattern = r"^([\d.]+)s (call|setup|teardown)\s+(\S+)"
    for seconds, _phase, test in re.findall(pattern, text, re.M):
        found[test] = found.get(test, 0.0) + float(seconds)
    return found


def summary(text: str) -> tuple[int, int, int, float]:
    """(passed, failed, warnings, seconds) of pytest's last line."""
    line = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed)", ln)][-1]

    def num(word: str) -> int:
        hit = re.search(rf"(\d+) {word}", line)
        return int(hit.group(1)) if hit else 0

    seconds = float(re.search(r"in ([\d.]+)s", line).group(1))
    return num("passed"), num("failed"), num("warning"), seconds


def run(n_slowest: int) -> tuple[str, list[float], float]:
    loads: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            loads.append(os.getloadavg()[0])
            done.wait(5.0)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider"]
    start = time.perf_counter()
    proc = subprocess.run(
        [*command, f"--durations={n_slowest}"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    done.set()
    thread.join()
    return proc.stdout + proc.stderr, loads, wall


def section(text: str, loads: list[float], wall: float | None, before: str, n: int) -> str:
    passed, failed, warnings, seconds = summary(text)
    after, old = durations(text), durations(before)
    _, _, _, old_seconds = summary(before) if re.search(r"\d+ passed", before) else (0, 0, 0, 0)
    load = (
        f"load average (1 min) {min(loads):.1f}–{max(loads):.1f}, "
        f"mean {sum(loads) / len(loads):.1f}"
        if loads
        else "load not sampled (a saved run)"
    )
    lines = [
        SECTION,
        "",
        "```bash",
        "python benchmarks/suite_time.py --write     # runs pytest -n 2 --durations once",
        "```",
        "",
        f"Run on {dt.date.today().isoformat()} on this 2-core machine ({load}, the suite's own two"
        f" workers included): `pytest -n 2` took **{seconds:.0f} s** (pytest's figure"
        + (f"; {wall:.0f} s wall with start-up" if wall else "")
        + f"), {passed} passed, {failed} failed, {warnings} warnings. The target is ≤ 6 min on a"
        " quiet machine; at load above 2 on 2 cores every figure here is stretched by about the"
        " load / 2.",
        "",
        f"Before: the full `pytest -n 2 --durations=40` run of main that benchmarks/results/"
        f"suite_before.txt keeps ({old_seconds:.0f} s, a quiet machine). The slowest {n} tests"
        " then, and each now (— : below this run's slowest list):",
        "",
        "| test | before (s) | now (s) |",
        "|---|---:|---:|",
    ]
    for test, t in sorted(old.items(), key=lambda kv: -kv[1])[:n]:
        now = after.get(test)
        lines.append(f"| `{test}` | {t:.1f} | {'—' if now is None else f'{now:.1f}'} |")
    lines += ["", f"The slowest {n} tests of this run:", "", "| test | s |", "|---|---:|"]
    for test, t in sorted(after.items(), key=lambda kv: -kv[1])[:n]:
        lines.append(f"| `{test}` | {t:.1f} |")
    return "\n".join(lines) + "\n"


def write(block: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    if SECTION in text:
        head, rest = text.split(SECTION, 1)
        tail = re.search(r"\n## ", rest)
        text = head + block + (rest[tail.start() + 1 :] if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowest", type=int, default=20)
    parser.add_argument("--before", type=Path, default=BEFORE)
    parser.add_argument("--parse-only", type=Path, help="a saved pytest output instead of a run")
    parser.add_argument("--write", action="store_true", help="replace the BENCHMARKS.md section")
    args = parser.parse_args()
    if args.parse_only:
        text, loads, wall = args.parse_only.read_text(), [], None
    else:
        text, loads, wall = run(max(args.slowest * 2, 40))
        (ROOT / "benchmarks" / "results" / "suite_last.txt").write_text(text)
    block = section(text, loads, wall, args.before.read_text(), args.slowest)
    print(block)
    if args.write:
        write(block)


if __name__ == "__main__":
    main()
