"""The bootstrap-t of trimmed means against a direct, loop-based implementation and a Monte-Carlo
level check (issue 26, the seed's trimmed-mean bootstrap-t)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import rankci
from rankci import Scores
from rankci.evidence.pairwise import pairwise_tests
from rankci.evidence.trimmed_bootstrap import bootstrap_t_test


def _yuen_direct(a: np.ndarray, b: np.ndarray, trim: float) -> tuple[float, float]:
    """Trimmed-mean difference and Yuen's SE of one pair, written out (Wilcox's yuend)."""
    n = len(a)
    g = math.floor(trim * n)
    h = n - 2 * g

    def winsorize(v):
        s = np.sort(v)
        return np.clip(v, s[g], s[n - g - 1])

    difference = stats.trim_mean(a, trim) - stats.trim_mean(b, trim)
    var = np.var(winsorize(a) - winsorize(b), ddof=1)
    return difference, math.sqrt((n - 1) * var / (h * (h - 1)))


def _direct(x: np.ndarray, delta: float, trim: float, reps: int, seed: int):
    """p-values, statistics and SEs pair by pair and resample by resample (same draws)."""
    n, m = x.shape
    draws = np.random.default_rng(seed).integers(0, n, size=(reps, n))
    p = np.full((m, m), np.nan)
    t = np.full((m, m), np.nan)
    se = np.full((m, m), np.nan)
    for j in range(m):
        for k in range(m):
            if j == k:
                continue
            both = np.isfinite(x[:, j]) & np.isfinite(x[:, k])
            diff, s = _yuen_direct(x[both, j], x[both, k], trim)
            t[j, k] = (diff - delta) / s
            se[j, k] = s
            exceed = 0
            for row in draws:
                xs = x[row]
                keep = np.isfinite(xs[:, j]) & np.isfinite(xs[:, k])
                d_star, s_star = _yuen_direct(xs[keep, j], xs[keep, k], trim)
                exceed += (d_star - diff) / s_star >= t[j, k]
            p[j, k] = (1 + exceed) / (reps + 1)
    return p, t, se


@pytest.mark.parametrize(("trim", "delta", "seed"), [(0.2, 0.0, 3), (0.1, 0.1, 4), (0.0, 0.05, 5)])
# few reps keep the direct reference fast: the subject is equality, not Holm's resolution
@pytest.mark.filterwarnings("ignore:with reps=99 the smallest attainable:rankci.RankciWarning")
def test_equals_a_direct_implementation_with_the_same_draws(trim, delta, seed):
    gen = np.random.default_rng(seed)
    x = gen.standard_t(3, size=(17, 3)) * 0.3 + [0.25, 0.1, 0.0] + gen.normal(size=(17, 1))
    units = Scores.from_matrix(x, bounds=None).units()
    result = bootstrap_t_test(units, delta, trim=trim, reps=99, rng=seed)
    p, t, se = _direct(x, delta, trim, 99, seed)
    off = ~np.eye(3, dtype=bool)
    assert np.allclose(result.pvalue[off], p[off], rtol=0, atol=1e-12)
    assert np.allclose(result.statistic[off], t[off], rtol=1e-12, atol=1e-12)
    assert np.allclose(result.se[off], se[off], rtol=1e-12, atol=1e-12)
    assert 0.05 < np.median(p[off]) < 0.95  # p-values away from the ends, so counts matter
    assert result.smallest_pvalue == pytest.approx(1 / 100)


# few reps keep the direct reference fast: the subject is which units each pair draws
@pytest.mark.filterwarnings("ignore:with reps=59 the smallest attainable:rankci.RankciWarning")
def test_missing_cells_use_the_drawn_units_each_pair_shares():
    gen = np.random.default_rng(11)
    x = gen.normal(size=(20, 3)) + [0.6, 0.2, 0.0]
    x[[2, 5], 0] = np.nan
    x[[7], 2] = np.nan
    units = Scores.from_matrix(x, bounds=None).units(missing="pairwise")
    result = bootstrap_t_test(units, 0.0, trim=0.2, reps=59, rng=2)
    p, t, _ = _direct(x, 0.0, 0.2, 59, 2)
    off = ~np.eye(3, dtype=bool)
    assert np.allclose(result.pvalue[off], p[off], rtol=0, atol=1e-12)
    assert np.allclose(result.statistic[off], t[off], rtol=1e-12)
    assert result.n[0, 2] == 17 and result.n[0, 1] == 18


# 30 items: the subject is the dispatch and its options, not what the ranking certifies
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_registered_and_dispatched_with_its_options():
    x = np.random.default_rng(0).normal(size=(30, 3)) + [0.5, 0.0, 0.0]
    units = Scores.from_matrix(x, bounds=None).units()
    direct = bootstrap_t_test(units, 0.0, trim=0.1, reps=199, rng=7)
    via = pairwise_tests(units, "bootstrap-t", delta=0.0, trim=0.1, reps=199, rng=7)
    off = ~np.eye(3, dtype=bool)
    assert np.array_equal(direct.pvalue[off], via.pvalue[off])
    assert np.isnan(via.pvalue[0, 0])
    ranking = rankci.rank(
        Scores.from_matrix(x, bounds=None), test="bootstrap-t", reps=999, trim=0.1, rng=1
    )
    assert ranking.spec.test == "bootstrap-t" and ranking.spec.seed == 1
    assert ranking.spec.test_options == {"trim": 0.1, "reps": 999}


def test_a_zero_winsorized_variance_is_never_evidence():
    x = np.tile([[1.0, 0.0]], (12, 1))  # d constant: se = 0
    result = bootstrap_t_test(Scores.from_matrix(x).units(), 0.0, reps=49, rng=0)
    assert result.pvalue[0, 1] == 1.0


def _rejection_rate(n: int, sims: int, shift: float, delta: float, seed: int) -> float:
    gen = np.random.default_rng(seed)
    rejected = 0
    for s in range(sims):
        common = gen.normal(size=(n, 1))
        noise = gen.exponential(size=(n, 2))  # skewed, the same law for both models
        x = common + noise + [shift, 0.0]
        units = Scores.from_matrix(x, bounds=None).units()
        p = bootstrap_t_test(units, delta, trim=0.2, reps=199, rng=seed * 1000 + s).pvalue[0, 1]
        rejected += p <= 0.05
    return rejected / sims


def test_the_level_holds_at_the_null_boundary_by_monte_carlo():
    """Shift 0.3 with delta 0.3: the trimmed-mean difference equals delta exactly (equivariance).
    The rejection rate at 0.05 stays within 3 Monte-Carlo SEs of 0.05."""
    sims = 400
    rate = _rejection_rate(25, sims, 0.3, 0.3, seed=1)
    se = math.sqrt(0.05 * 0.95 / sims)
    assert rate <= 0.05 + 3 * se, (rate, se)
    # and it has power away from the null (a test of constant p would pass the line above)
    assert _rejection_rate(25, 100, 1.2, 0.3, seed=2) > 0.5


def test_the_command_line_runs_it_with_its_flags(tmp_path):
    import json

    from rankci.cli import main

    x = np.random.default_rng(5).random((60, 3)) * 0.5 + [0.4, 0.1, 0.0]
    scores = Scores.from_matrix(x)
    path = tmp_path / "s.csv"
    scores.to_frame().to_csv(path, index=False)
    out = tmp_path / "r.json"
    argv = ["rank", str(path), "--test", "bootstrap-t", "--trim", "0.1", "--reps", "1999",
            "--seed", "4", "--format", "json", "-o", str(out)]
    assert main(argv) == 0
    payload = json.loads(out.read_text())
    assert payload["spec"]["test"] == "bootstrap-t"
    assert payload["spec"]["test_options"] == {"trim": 0.1, "reps": 1999}
    expected = rankci.rank(scores, test="bootstrap-t", trim=0.1, reps=1999, rng=4)
    assert payload["dominance"] == expected.to_dict()["dominance"]
    assert payload["dominance"]["n_pairs"] > 0
