"""Holm and Bonferroni against R's p.adjust."""

import numpy as np
import pandas as pd
import pytest
from conftest import ORACLES

from rankci.certify.holm import adjust_pvalues, reject, rejections_per_row


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_adjusted_pvalues_match_r(method):
    table = pd.read_csv(ORACLES / "p_adjust.csv")
    np.testing.assert_allclose(adjust_pvalues(table.p, method), table[method], rtol=1e-12)


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_reject_agrees_with_adjusted_pvalues(method, alpha):
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(40) ** 4
        p[rng.random(40) < 0.1] = np.nan
        adjusted = adjust_pvalues(p, method)
        np.testing.assert_array_equal(
            reject(p, alpha, method), np.nan_to_num(adjusted, nan=2) <= alpha
        )


def test_holm_step_down_by_hand():
    # K = 4: thresholds alpha/4, alpha/3, alpha/2, alpha = .0125, .0167, .025, .05
    p = np.array([0.01, 0.015, 0.03, 0.04])
    assert reject(p, 0.05).tolist() == [True, True, False, False]
    assert reject(p, 0.05, "bonferroni").tolist() == [True, False, False, False]


def test_rows_are_separate_families():
    rng = np.random.default_rng(1)
    p = rng.random((6, 6)) ** 3
    np.fill_diagonal(p, np.nan)
    for method in ("holm", "bonferroni"):
        counts = rejections_per_row(p, 0.05, method)
        expected = [int(reject(row, 0.05, method).sum()) for row in p]
        assert counts.tolist() == expected
