"""The benchmark scripts run (quick mode), so the harness cannot rot; no timing is asserted."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(script, *args):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_compare_quick_runs_every_task_with_its_peers():
    out = _run("compare.py", "--quick")
    for task in ("paired t, all pairs + Holm", "rank intervals"):
        assert task in out
    for tool in ("scipy ttest_rel loop", "pingouin pairwise_tests", "honestboard rank_summary"):
        line = next(line for line in out.splitlines() if tool in line)
        assert "skipped" not in line, line
    # where peers compute the same p-values, they agree with rankci
    agreements = [line for line in out.splitlines() if "max abs Δp" in line]
    assert agreements and all(
        float(line.split("max abs Δp = ")[1].split()[0]) < 1e-8 for line in agreements
    )


def test_rank_benchmark_quick():
    out = _run("bench_rank.py", "--quick")
    assert "| 20 | 5,000 |" in out


def test_adapters_benchmark_quick():
    out = _run("bench_adapters.py", "--quick")
    for fmt in ("lm-eval", "inspect", "helm"):
        assert f"| {fmt} | 3 |" in out


def test_report_benchmark_quick():
    out = _run("bench_report.py", "--quick")
    assert "| MMLU-Pro (32 × 12,032) |" in out


def test_service_benchmark_quick():
    out = _run(
        "bench_service.py",
        "--models",
        "4",
        "--items",
        "300",
        "--batch",
        "200",
        "--repeat",
        "1",
        "--reads",
        "5",
    )
    assert "| sustained ingest" in out and "leaderboard read at rest" in out
