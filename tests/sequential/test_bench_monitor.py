"""``benchmarks/bench_monitor.py --quick`` runs every case (so the harness behind the monitor's
numbers in BENCHMARKS.md and docs/monitor.md cannot rot); no timing is asserted, only the answers
the script checks as it measures."""

import re
import subprocess
import sys
from pathlib import Path

from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_monitor.py"


def test_every_case_runs_in_quick_mode_with_the_same_answers():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for case in ("stream", "replay", "exact", "ilp", "baseline", "auto"):
        assert f"[{case}]" in out, case
    # frozen and unfrozen replays agree look for look, and both agree with the per-item baseline
    same = re.findall(r"identical at (\d+) of (\d+) looks", out)
    assert len(same) == 2 and all(a == b and int(b) > 0 for a, b in same), out
    frozen = re.search(r"same rank intervals frozen / unfrozen: (\d+) of (\d+)", out)
    assert frozen and frozen.group(1) == frozen.group(2), out
    assert "orders alive at the end" in out
    # the auto rule's measurement names a largest M (or None when nothing is fast here)
    assert re.search(r"largest M with the integer program under 50 ms per look .*: (\d+|None)", out)
    assert "CPU" in out and "load average" in out
