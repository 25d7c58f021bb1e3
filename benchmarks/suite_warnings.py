"""The warnings the test suite prints, counted one test directory at a time.

Each directory (and the top-level ``tests/test_*.py`` files as one group) runs in its own
``python -m pytest -q -p no:cacheprovider`` process; the count is pytest's own, the ``N warnings``
of its last line. With ``--kinds`` the warnings summary is also tallied by (category, message
with numbers and quoted names blanked, test module). Browser tests are left out
(``-m "not browser"``), and so is tests/benchmarks (compare.py --quick alone takes minutes).

Run:  nice -n 10 python benchmarks/suite_warnings.py            (every directory, one after another)
      nice -n 10 python benchmarks/suite_warnings.py analyses --kinds
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ("root", "adapters", "analyses", "certify", "commands", "evidence", "mixed", "report")
GROUPS += ("sequential", "service", "validation", "votes")


def targets(group: str) -> list[str]:
    if group == "root":
        return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))
    return [f"tests/{group}"]


def run(group: str) -> tuple[str, float]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not browser"]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, *targets(group)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr, time.perf_counter() - start


def count(output: str) -> int:
    last = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    found = re.search(r"(\d+) warnings?", last[-1]) if last else None
    return int(found.group(1)) if found else 0


def kinds(output: str) -> collections.Counter:
    """(category, blanked message prefix, first test module) -> number of warnings."""
    tally: collections.Counter = collections.Counter()
    summary = re.search(r"=+ warnings summary =+\n(.*?)\n-- Docs", output, re.S)
    for group in summary.group(1).split("\n\n") if summary else ():
        lines = group.splitlines()
        ids = [line for line in lines if not line.startswith(" ")]
        message = next((line.strip() for line in lines if line.startswith("  ")), "?")
        parsed = re.match(r".*?:\d+: (\w+): (.*)", message)
        category, text = parsed.groups() if parsed else ("?", message)
        text = re.sub(r"\d+(\.\d+)?", "#", re.sub(r"'[^']*'", "'X'", text))[:60]
        for node in ids:
            repeated = re.search(r": (\d+) warnings?$", node)
            module = re.sub(r": \d+ warnings?$", "", node).split("::")[0]
            tally[(category, text, module)] += int(repeated.group(1)) if repeated else 1
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", default=list(GROUPS))
    parser.add_argument("--kinds", action="store_true", help="tally the warnings by kind too")
    args = parser.parse_args()
    total = 0
    for group in args.groups:
        output, seconds = run(group)
        n = count(output)
        total += n
        print(f"{group:12s} {n:6d} warnings  ({seconds:.0f} s)", flush=True)
        if args.kinds:
            for (category, text, module), k in sorted(kinds(output).items()):
                print(f"    {k:5d} {category:16s} {module:45s} {text}")
    print(f"{'total':12s} {total:6d} warnings")


if __name__ == "__main__":
    main()
