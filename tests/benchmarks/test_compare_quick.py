"""The benchmark scripts run (quick mode), so the harness cannot rot; no timing is asserted."""

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

#: every peer the `bench` extra and rankci's own dependencies provide; R peers may be absent
PEERS = (
    "scipy ttest_rel loop",
    "pingouin pairwise_tests",
    "scipy wilcoxon loop",
    "honestboard rank_summary",
    "pingouin rm_anova",
    "statsmodels AnovaRM",
    "scipy friedmanchisquare",
    "pingouin friedman",
    "scipy.stats.bootstrap",
    "statsmodels OLS(cov_type='cluster')",
    "statsmodels MixedLM",
    "NumPy per-item loop",
)


def _run(script, *args):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _cells(line):
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_compare_quick_runs_every_task_beside_its_peers_and_they_agree():
    out = _run("compare.py", "--quick")
    rows = [_cells(line) for line in out.splitlines() if line.startswith("| ")][1:]
    tasks = {row[0] for row in rows}
    assert len(tasks) == 9, tasks
    for task in tasks:  # rankci is timed on every task
        assert any(r[0] == task and r[2].startswith("rankci") and r[3] != "—" for r in rows)
    for peer in PEERS:
        row = next(r for r in rows if r[2].startswith(peer))
        assert row[3] != "—" and "skipped" not in row[7], row  # it ran (time, maybe scaled up)
        assert row[5] != "—", row  # with its ratio to rankci
        # where a peer computes the same quantity, the harness measured the difference
        if not peer.startswith("honestboard"):
            # (a mixed-model peer that stops short of the REML optimum is shown to do so)
            assert row[6].startswith("max \\|Δ") or "stopped short of the REML" in row[6], row
    for row in rows:  # a difference above the tolerance would have failed the run already
        assert "DISAGREES" not in row[6]
    # R peers are run, or said to be missing -- never silently left out
    for r_peer in ("R csranks", "R lmerTest"):
        row = next(r for r in rows if r[2].startswith(r_peer))
        assert row[3] != "—" or row[7].startswith("skipped: "), row


def test_a_difference_above_the_tolerance_is_a_disagreement(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from comparisons.harness import Row, markdown

    close, far = Row("t", "d", "peer A", 1.0), Row("t", "d", "peer B", 2.0)
    close.agree("p", 1e-12, 1e-8)
    far.agree("p", 0.3, 1e-8)
    assert not close.disagrees and far.disagrees
    table = markdown([Row("t", "d", "rankci", 0.5), close, far])
    assert "DISAGREES" in table.splitlines()[-1] and "DISAGREES" not in table.splitlines()[-2]
    assert "| 2 |" in table.splitlines()[-2] and "| 4 |" in table.splitlines()[-1]  # ratios


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
