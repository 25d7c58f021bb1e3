"""The benchmark scripts run (quick mode), so the harness cannot rot; no timing is asserted."""

import os
import re
import shutil
from pathlib import Path

import pytest
from limits import run_script  # tests/limits.py: a script run under the hang guard

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
    "ppi-python ppi_mean_pointestimate + ppi_mean_ci",
)


#: R's anchors (lme4/lmerTest, emmeans, car, pbkrtest): run whenever Rscript is here, and always
#: in CI
KR_PEER = "R lme4::lmer + pbkrtest::KRmodcomp (Kenward–Roger F)"
R_PEERS = (
    "R lme4::lmer + lmerTest anova (Satterthwaite F)",
    KR_PEER,
    "R emmeans pairs",  # on the lmer fit
    "R emmeans pairs (lm, adjust = 'tukey')",  # after the RM-ANOVA
    "R car::Anova (type III, GG/HF, Mauchly)",
)


def _require_rscript() -> bool:
    """Whether the R rows must have run: Rscript is here; in CI (CI=true) a missing Rscript is a
    failure, as a missing Chromium or PostgreSQL is (.ci/run installs Debian's R packages)."""
    if shutil.which("Rscript") is not None:
        return True
    if os.environ.get("CI"):
        pytest.fail(
            "Rscript not found: install r-base-core r-cran-lme4 r-cran-lmertest r-cran-emmeans "
            "r-cran-car r-cran-pbkrtest (Debian; .ci/run does it)"
        )
    return False


def _run(script, *args):
    return run_script(BENCH / script, *args)


def _cells(line):
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_compare_quick_runs_every_task_beside_its_peers_and_they_agree():
    out = _run("compare.py", "--quick")
    rows = [_cells(line) for line in out.splitlines() if line.startswith("| ")][1:]
    tasks = {row[0] for row in rows}
    assert len(tasks) == 12, tasks
    for task in tasks:  # rankci is timed on every task
        assert any(r[0] == task and r[2].startswith("rankci") and r[3] != "—" for r in rows)
    for peer in PEERS:
        row = next(r for r in rows if r[2].startswith(peer))
        assert row[3] != "—" and "skipped" not in row[7], row  # it ran (time, maybe scaled up)
        assert row[5] != "—", row  # with its ratio to rankci
        # where a peer computes the same quantity, the harness measured the difference
        if not peer.startswith("honestboard"):
            # (a mixed-model peer that stops short of the REML optimum is shown to do so; one
            # whose probe did not finish within its limit on a loaded machine is shown as a
            # lower bound "> t" with the reason, and its agreement is left to tests/mixed's oracles)
            unfinished = row[3].startswith("> ") and "did not finish in" in row[7]
            assert (
                row[6].startswith("max \\|Δ") or "stopped short of the REML" in row[6] or unfinished
            ), row
    for row in rows:  # a difference above the tolerance would have failed the run already
        assert "DISAGREES" not in row[6]
    # csranks is not a Debian package: run, or said to be missing -- never silently left out
    row = next(r for r in rows if r[2].startswith("R csranks"))
    assert row[3] != "—" or row[7].startswith("skipped: "), row
    with_r = _require_rscript()
    for r_peer in R_PEERS:
        row = next(r for r in rows if r[2] == r_peer)
        if not with_r:
            assert row[3] == "—" and row[7] == "skipped: Rscript not found on this machine", row
            continue
        # it ran, with its ratio and its agreement with rankci measured (within the tolerance,
        # else DISAGREES above would have failed); R's startup is reported apart from its time
        assert row[3] != "—" and row[5] != "—", row
        assert row[6].startswith("max \\|Δ"), row
        assert "R startup + packages" in row[7] or r_peer == "R emmeans pairs", row
    # Kenward-Roger: pbkrtest's F, df and p in the same run, to 1e-6, on the synthetic part and
    # on the unbalanced ChemBench subset
    kr_rows = [r for r in rows if r[2] == KR_PEER]
    assert len(kr_rows) == 2 and kr_rows[1][1].startswith("ChemBench subset"), kr_rows
    for row in kr_rows:
        if not with_r:
            assert row[3] == "—" and row[7] == "skipped: Rscript not found on this machine", row
            continue
        gaps = re.search(
            r"max \\\|Δ F \(relative\)\\\| = (\S+);.*?\\\|Δ df\\\| (\S+) \(relative\), "
            r"\\\|Δ p\\\| (\S+);",
            row[6],
        )
        assert gaps is not None, row
        assert all(float(gap) <= 1e-6 for gap in gaps.groups()), row
        assert "unbalanced" in row[7] and "KRmodcomp" in row[7], row


def test_write_replaces_only_the_rows_measured(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from compare import merge

    head = "| task | data | tool | t |\n|---|---|---|---:|"
    old = "\n".join(
        [
            "Run on day 1.",
            "",
            head,
            "| A | d1 | rankci | 1 |",
            "| A | d1 | peer | 2 |",
            "| B | d1 | rankci | 3 |",
            "| A | d2 | rankci | 4 |",
        ]
    )
    new = head + "\n| A | d1 | rankci | 5 |\n| A | d1 | R | 6 |\n| C | d1 | rankci | 7 |"
    block = merge(old, "Run on day 2.", new)
    assert block.splitlines()[:3] == [
        "Run on day 1.",
        "",
        "Re-measured rows (the rest as above): Run on day 2.",
    ]
    rows = [line for line in block.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1:] == [
        "| A | d1 | rankci | 5 |",
        "| A | d1 | R | 6 |",
        "| B | d1 | rankci | 3 |",
        "| C | d1 | rankci | 7 |",  # a new task: after the last row on the same data
        "| A | d2 | rankci | 4 |",
    ]


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
    # single-score posts from raw-socket clients (the issue-17 rows), each one acknowledged
    out = _run(
        "bench_service.py",
        *("--models", "4", "--items", "50", "--batch", "1", "--clients", "2"),
        *("--raw-clients", "--repeat", "1", "--reads", "5"),
    )
    assert "2 raw-socket client(s)" in out and "the posting clients' CPU time" in out


def test_kenward_roger_row_disagrees_on_df_or_p_not_only_on_f(monkeypatch):
    """The pbkrtest row fails the run when its df or p (not only F) differ beyond 1e-6."""
    monkeypatch.syspath_prepend(str(BENCH))
    import pandas as pd
    from comparisons import kenward_roger as kr
    from comparisons.harness import Row, synthetic
    from comparisons.rpeers import RResult

    label, frame, where = kr._part(synthetic(8, 400, 8))
    assert "unbalanced" in where and frame["model"].value_counts().nunique() > 1
    ours = kr._fit(frame)
    test = ours.model_test

    def row_for(**shift):
        ftest = pd.DataFrame([{key: test[key] * shift.get(key, 1.0) for key in test}])
        result = RResult({}, {"ftest": ftest, "theta": pd.DataFrame({"theta": ours.theta})}, 0.0)
        row = Row(kr.TASK, label, kr.TOOL, 1.0)
        kr._agree(row, result, ours, frame)
        return row

    assert not row_for().disagrees
    for shift in ({"F": 1 + 1e-5}, {"df_den": 1 + 1e-5}, {"p": 1 + 1e-3 / test["p"]}):
        row = row_for(**shift)
        assert row.disagrees and "DISAGREES" in row.agreement, (shift, row.agreement)
