"""validation/aggregate_coverage.py on a tiny design: its truth is the pool's aggregate and its
error count catches a false dominance (the full study's numbers are in validation/README.md)."""

from __future__ import annotations

import numpy as np
from validation_study import load_study  # tests/validation_study.py

import rankci


def _study():
    return load_study("aggregate_coverage")


def test_pools_are_the_categories_complete_items():
    study = _study()
    models = study.DESIGNS["spread"][:3]
    pools = study.pools(models)
    frame = rankci.datasets.load_mmlu_pro(as_frame=True)
    frame = frame[frame.model.isin(models)]
    wide = frame.pivot_table(index=["cluster", "item"], columns="model", values="score")
    wide = wide.dropna()[models]
    assert sorted(pools) == sorted(frame.cluster.unique())
    for category, x in pools.items():
        expected = wide.loc[category].to_numpy(dtype=float)
        assert x.shape == expected.shape
        assert np.allclose(x.mean(axis=0), expected.mean(axis=0))


def test_a_tiny_design_runs_and_reports_every_aggregate():
    study = _study()
    rows = study.run_design("spread", study.DESIGNS["spread"][:4], 30, 2, 100, 1)
    assert [r["aggregate"] for r in rows] == ["weighted", "win-rate", "borda", "normalised"]
    for row in rows:
        assert 0.0 <= row["coverage"] <= 1.0 and row["replicates"] == 2
        assert row["of_pairs"] == 6


def test_an_error_is_a_certified_dominance_the_truth_denies():
    study = _study()
    truth = np.array([0.5, 0.3, 0.3])
    right = np.zeros((3, 3), dtype=bool)
    right[0, 1] = right[0, 2] = True
    assert not study.errs(right, truth)
    tie = right.copy()
    tie[1, 2] = True  # 0.3 over 0.3: a true tie is not "better"
    assert study.errs(tie, truth)
    reversed_ = np.zeros((3, 3), dtype=bool)
    reversed_[2, 0] = True
    assert study.errs(reversed_, truth)
