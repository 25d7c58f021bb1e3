"""validation/board_changes.py: its helpers against direct constructions, and its quick mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from validation_study import load_study  # tests/validation_study.py

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "board_changes.py"


def test_a_pair_is_wrong_when_false_under_any_ability_in_force():
    mod = load_study("board_changes")
    p = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(mod.abilities(p, np.array([0, 2])), [1.0, 0.5])
    before, after = np.array([0.6, 0.5]), np.array([0.4, 0.5])
    # (0, 1) is true before and false after: wrong; (1, 0) false before: wrong too
    assert mod.wrong_under_any([before, after]).tolist() == [[False, True], [True, False]]
    assert mod.wrong_under_any([before]).tolist() == [[False, False], [True, False]]


def test_quick_mode_runs_and_reports_every_design(tmp_path):
    out = tmp_path / "changes.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        check=True,
        capture_output=True,
        env=env,
        timeout=HANG_GUARD,
    )
    record = json.loads(out.read_text())
    assert set(record["results"]) == {
        "mmlu_pro_real",
        "chembench_real",
        "mmlu_pro_tied",
        "chembench_tied",
    }
    for row in record["results"].values():
        assert 0.0 <= row["error_any_look"] <= row["error_upper95"] <= 1.0
        assert row["certified_true_changing"] <= row["true_pairs_mean"]
        assert row["certified_true_fixed"] <= row["true_pairs_mean"]
        assert row["skipped_voided_mean"] > 0  # the voids had observations to skip
        assert row["withdrawals"] == record["config"]["reps"]
    for name in ("mmlu_pro_tied", "chembench_tied"):  # every pair tied: nothing is true
        assert record["results"][name]["true_pairs_mean"] == 0.0
