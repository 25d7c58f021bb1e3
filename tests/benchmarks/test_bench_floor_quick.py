"""benchmarks/bench_floor.py runs (quick mode) and its rows agree; no timing is asserted."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_bench_floor_quick_runs_and_answers_agree(tmp_path):
    out = tmp_path / "rows.json"
    subprocess.run(
        [sys.executable, str(BENCH / "bench_floor.py"), "--quick", "--json", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    rows = json.loads(out.read_text())
    assert [(r["models"], r["items"]) for r in rows] == [(30, 200), (120, 300)]
    for row in rows:
        # the hand NumPy version, rankci.rank in process and the command's JSON: same intervals
        assert row["equal"] is True
        assert row["command_equal"] is True
        for key in ("floor_s", "command_s", "loop_s", "numpy_s", "rank_s"):
            assert row[key] > 0
        for key in ("floor_gib", "command_gib", "loop_gib", "inprocess_gib"):
            assert 0 < row[key] < 64
        assert "load_before" in row and "threads" in row and "date" in row


def test_hand_numpy_matches_a_scipy_loop_and_holm():
    """The peer itself is checked against scipy.stats.ttest_rel + statsmodels' Holm."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    sys.path.insert(0, str(BENCH))
    import bench_floor

    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 6)) + np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.6])
    lower, upper = bench_floor.hand_numpy(x)
    m = x.shape[1]
    p = np.full((m, m), np.nan)
    for i in range(m):
        for j in range(m):
            if i != j:
                p[i, j] = stats.ttest_rel(x[:, i], x[:, j], alternative="greater").pvalue
    off = ~np.eye(m, dtype=bool)
    reject = np.zeros((m, m), bool)
    reject[off] = multipletests(p[off], 0.05, "holm")[0]
    # reject[i, j]: i certified above j; Holm rejections are closed here already (checked)
    closed = reject | ((reject.astype(int) @ reject.astype(int)) > 0)
    assert np.array_equal(closed, reject)
    np.testing.assert_array_equal(lower, 1 + reject.sum(axis=0))
    np.testing.assert_array_equal(upper, m - reject.sum(axis=1))
