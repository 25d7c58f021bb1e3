"""The arena PPI study (validation/arena_ppi.py) in a fast version: its quick mode runs, and with
sixty replicates the PPI rank intervals cover, the biased judge's do not, and PPI is narrower
than the human labels alone."""

from __future__ import annotations

import math

import numpy as np
from validation_study import load_study  # tests/validation_study.py


def test_ppi_covers_the_judge_does_not_and_ppi_is_narrower():
    study = load_study("arena_ppi")
    reps, n = 60, 6000
    rng = np.random.default_rng(11)
    runs = [study.replicate(rng, n, "uniform", 1000) for _ in range(reps)]
    rows = {row["fit"]: row for row in study.summarise("uniform", runs, n)}
    se = math.sqrt(0.05 * 0.95 / reps)
    assert rows["ppi"]["coverage"] >= 0.95 - 3 * se
    assert rows["human"]["coverage"] >= 0.95 - 3 * se
    assert rows["judge"]["coverage"] < 0.5
    ppi = rows["ppi"]
    assert ppi["strength_coverage"] >= 0.95 - 3 * ppi["strength_coverage_se"]
    assert rows["judge"]["strength_coverage"] < 0.6
    assert rows["ppi"]["width"] < rows["human"]["width"]
    assert rows["ppi"]["mean_effective_labels"] > 1.1 * rows["ppi"]["mean_labelled"]
