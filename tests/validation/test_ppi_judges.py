"""The judge study (validation/ppi_judges.py) in a fast version: its quick mode runs, and with a
hundred replicates PPI++ covers where the judge alone does not, and the per-pair lam ranks at
least as tightly as the human labels alone."""

from __future__ import annotations

import math

import numpy as np
from validation_study import load_study  # tests/validation_study.py


def _study():
    return load_study("ppi_judges")


def test_ppi_covers_the_judge_does_not_and_per_pair_is_tight():
    study = _study()
    reps = 100
    oracle = study._oracle_lam("graded")
    runs = [study.replicate(i, "graded", 100, oracle) for i in range(reps)]
    rows = {row["fit"]: row for row in study.summarise(runs)}
    se = math.sqrt(0.05 * 0.95 / reps)
    assert rows["ppi++"]["score_coverage"] >= 0.95 - 3 * se
    assert rows["ppi++"]["rank_coverage"] >= 0.95 - 3 * se
    assert rows["judge"]["score_coverage"] < 0.5 and rows["judge"]["rank_coverage"] < 0.5
    assert rows["ppi++"]["score_width"] < rows["human"]["score_width"]
    assert rows["ppi++ per-pair"]["rank_width"] <= rows["human"]["rank_width"] + 0.05
    assert np.mean([r["effective_labels"] for r in runs]) > 150
