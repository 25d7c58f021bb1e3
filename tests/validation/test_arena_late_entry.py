"""validation/arena_late_entry.py: its helpers against direct constructions, and its quick mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from validation_study import load_study  # tests/validation_study.py

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "arena_late_entry.py"


def test_false_pairs_and_votes_only_among_the_models_present():
    mod = load_study("arena_late_entry")
    wrong = mod.false_pairs(np.array([0.0, 0.0, 1.0]))
    # "j beats l" is false when beta_j <= beta_l
    assert wrong.tolist() == [[False, True, True], [True, False, True], [False, False, False]]
    rng = np.random.default_rng(0)
    a, b, outcome = mod.batch_votes(rng, 3, np.array([2.0, 0.0, 0.0, 0.0]), 20000)
    assert set(a) | set(b) == {0, 1, 2} and not (a == b).any()  # model 3 has not joined
    ties = outcome == 2
    assert abs(ties.mean() - mod.TIE) < 0.01
    # P(0 beats 1 | decisive) = sigmoid(2) = 0.881, by hand
    decisive = ~ties & (np.minimum(a, b) == 0) & (np.maximum(a, b) == 1)
    zero_won = np.where(a == 0, outcome == 0, outcome == 1)[decisive]
    assert abs(zero_won.mean() - 1 / (1 + np.exp(-2.0))) < 0.02


def test_quick_mode_runs_and_reports_every_design_and_board(tmp_path):
    out = tmp_path / "arena_late.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        check=True,
        capture_output=True,
        env=env,
        timeout=HANG_GUARD,
    )
    record = json.loads(out.read_text())
    assert set(record["results"]) == {"null_uniform", "null_adaptive", "bt_uniform"}
    for design, row in record["results"].items():
        for board in ("open_late", "closed_from_start", "open_from_start"):
            cell = row[board]
            assert 0.0 <= cell["error_any_look"] <= cell["error_upper95"] <= 1.0
            assert cell["true_certified_late"] <= cell["true_certified"] <= row["true_pairs_mean"]
        if design.startswith("null"):  # every pair tied: nothing is true to certify
            assert row["true_pairs_mean"] == 0.0
