"""validation/late_entry.py: its helpers against direct constructions, and its quick mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from validation_study import load_study  # tests/validation_study.py

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "late_entry.py"


def _module():
    return load_study("late_entry")


def test_wide_keeps_only_items_every_model_answered_and_false_pairs():
    mod = _module()
    frame = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b"],
            "item": [1, 2, 3, 1, 3],
            "score": [1.0, 0.0, 1.0, 0.0, 1.0],
        }
    )
    models, x = mod.wide(frame)
    assert models == ["a", "b"]
    assert x.tolist() == [[1.0, 0.0], [1.0, 1.0]]  # item 2 (b missing) dropped
    wrong = mod.false_pairs(np.array([0.5, 0.5, 0.7]))
    # (j, l) certified is false when theta_j <= theta_l
    assert wrong.tolist() == [[False, True, True], [True, False, True], [False, False, False]]


def test_quick_mode_runs_and_reports_every_design(tmp_path):
    out = tmp_path / "late.json"
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
        # a late entrant's board cannot certify more true late pairs than there are
        assert row["open_late_late"] <= row["true_late_pairs_mean"]
