"""validation/arena_anytime.py: its fixed-sample comparator against scipy / statsmodels, and its
quick mode (every design, every method in the table)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from scipy import stats
from statsmodels.stats.multitest import multipletests
from validation_study import load_study  # tests/validation_study.py

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "arena_anytime.py"


def _module():
    return load_study("arena_anytime")


def test_sign_test_and_holm_match_scipy_and_statsmodels():
    mod = _module()
    rng = np.random.default_rng(2)
    wins = rng.integers(0, 30, size=(6, 6)).astype(float)
    np.fill_diagonal(wins, 0)
    wins[0, 1] = wins[1, 0] = 0  # a pair without votes: p = 1
    p = mod.binomial_pvalues(wins)
    for j in range(6):
        for l in range(6):
            if j != l and wins[j, l] + wins[l, j] > 0:
                n = int(wins[j, l] + wins[l, j])
                want = stats.binomtest(int(wins[j, l]), n, 0.5, alternative="greater").pvalue
                assert abs(p[j, l] - want) < 1e-12
    assert p[0, 1] == 1.0
    off = ~np.eye(6, dtype=bool)
    for level in (0.05, 0.3, 0.8):
        assert (mod.holm(p, level)[off] == multipletests(p[off], level, method="holm")[0]).all()


def test_quick_mode_prints_every_design():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--runs", "3"],
        capture_output=True,
        text=True,
        cwd=SCRIPT.parent,
        env=env,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stderr
    for name in ("null_balanced", "null_adaptive", "bt_balanced", "bt_lopsided"):
        assert name in done.stdout
