"""benchmarks/bench_omnibus.py runs in --quick mode (so the harness cannot rot); the agreement
columns it reports are checked, no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_omnibus.py"


def test_quick_benchmark_runs_and_agrees():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--only", "many"],
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_GUARD,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    by_case = {}
    for row in rows:
        by_case.setdefault(row["case"], []).append(row)
    assert set(by_case) == {"many/mixed", "many/cli", "many/anova", "many/tukey", "many/nemenyi"}
    assert by_case["many/mixed"][0]["max_abs_diff_on_sample"] <= 1e-10
    assert by_case["many/anova"][0]["max_rel_diff"] <= 1e-10
    for row in by_case["many/tukey"] + by_case["many/nemenyi"]:
        assert "old_seconds" not in row or row["max_abs_diff"] <= 1e-10
    cli = by_case["many/cli"][0]
    assert cli["lines"] < cli["full_table_lines"]  # 435 pairs summarised unless --full-table
    assert "| many/anova |" in out and "load average" in out
