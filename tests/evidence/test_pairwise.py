"""Pairwise tests against scipy.stats, pair by pair, including margins and missing cells."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.stats import mstats

import rankci
from rankci.evidence.pairwise import RankciWarning, bounded_pvalue, signed_margin_tests

# few-unit boards of continuous scores: the p-value arithmetic is the subject of most tests here;
# the paired t's small-sample warning is asserted where it is (test_few_units_keep_the_level...)
pytestmark = pytest.mark.filterwarnings(
    "ignore:.* item units of continuous .not 0/1. scores. below 25:rankci.RankciWarning"
)


@pytest.fixture(scope="module")
def continuous():
    rng = np.random.default_rng(11)
    x = rng.random((80, 5))
    x[:, 1] = np.round(x[:, 1], 1)  # ties
    x[:, 2] = np.clip(x[:, 0] + rng.normal(0.05, 0.1, 80), 0, 1)
    return x


def _units(x, missing="complete"):
    return rankci.Scores.from_matrix(x).units("item", missing)


PAIRS = [(0, 1), (1, 0), (0, 2), (2, 0), (3, 4)]


@pytest.mark.parametrize("delta", [0.0, 0.03])
def test_t_and_z_match_scipy(continuous, delta):
    t = rankci.pairwise_tests(_units(continuous), "t", delta=delta)
    z = rankci.pairwise_tests(_units(continuous), "z", delta=delta)
    for j, l in PAIRS:
        d = continuous[:, j] - continuous[:, l] - delta
        ref = stats.ttest_1samp(d, 0.0, alternative="greater")
        assert t.pvalue[j, l] == pytest.approx(ref.pvalue, rel=1e-10)
        assert t.statistic[j, l] == pytest.approx(ref.statistic, rel=1e-10)
        assert z.pvalue[j, l] == pytest.approx(stats.norm.sf(ref.statistic), rel=1e-10)
        assert t.se[j, l] == pytest.approx(stats.sem(d), rel=1e-10)


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt"])
@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_normal_approximation_matches_scipy(continuous, zero_method, correction):
    pw = rankci.pairwise_tests(
        _units(continuous),
        "wilcoxon",
        distribution="approx",
        zero_method=zero_method,
        correction=correction,
        delta=0.02,
    )
    for j, l in PAIRS:
        ref = stats.wilcoxon(
            continuous[:, j] - continuous[:, l] - 0.02,
            alternative="greater",
            method="asymptotic",
            zero_method=zero_method,
            correction=correction,
        )
        assert pw.pvalue[j, l] == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.fixture(scope="module")
def partial_credit():
    """Scores in {0, 0.25, ..., 1} (few distinct differences: ranked by counting) with holes."""
    rng = np.random.default_rng(21)
    x = rng.integers(0, 5, (120, 5)) / 4.0
    x[:, 1] = np.clip(x[:, 0] + rng.choice([-0.25, 0, 0, 0.25, 0.5], 120), 0, 1)
    x[rng.random(x.shape) < 0.08] = np.nan
    return x


@pytest.mark.parametrize("delta", [0.0, 0.25, 0.1])
@pytest.mark.parametrize("zero_method", ["wilcox", "pratt"])
def test_wilcoxon_every_ordered_pair_matches_scipy_on_partial_credit(
    partial_credit, delta, zero_method
):
    # delta = 0 takes the symmetric half (W+ of (l, j) is W- of (j, l)); 0.25 and 0.1 do not
    pw = rankci.pairwise_tests(
        _units(partial_credit, "pairwise"),
        "wilcoxon",
        delta=delta,
        zero_method=zero_method,
        distribution="approx",
    )
    m = partial_credit.shape[1]
    for j in range(m):
        for l in range(m):
            if j == l:
                continue
            both = ~np.isnan(partial_credit[:, j]) & ~np.isnan(partial_credit[:, l])
            d = partial_credit[both, j] - partial_credit[both, l] - delta
            ref = stats.wilcoxon(
                d, alternative="greater", method="asymptotic", zero_method=zero_method
            )
            assert pw.pvalue[j, l] == pytest.approx(ref.pvalue, rel=1e-9), (j, l)
            assert pw.n[j, l] == both.sum()
            assert pw.estimate[j, l] == pytest.approx(np.mean(d + delta), abs=1e-12)


@pytest.mark.parametrize("delta", [0.0, 0.25])
@pytest.mark.parametrize("zero_method", ["wilcox", "pratt"])
def test_wilcoxon_ranks_by_counting_as_by_sorting(partial_credit, delta, zero_method, monkeypatch):
    import rankci.evidence.wilcoxon as pairwise  # the module of the Wilcoxon test

    units = _units(partial_credit, "pairwise")
    assert pairwise._difference_levels(units.values, delta) is not None  # counting is used
    counted = rankci.pairwise_tests(units, "wilcoxon", delta=delta, zero_method=zero_method)
    monkeypatch.setattr(pairwise, "MAX_COUNTED_LEVELS", 0)
    assert pairwise._difference_levels(units.values, delta) is None
    sorted_ = rankci.pairwise_tests(units, "wilcoxon", delta=delta, zero_method=zero_method)
    np.testing.assert_allclose(counted.statistic, sorted_.statistic, rtol=1e-13)
    np.testing.assert_allclose(counted.pvalue, sorted_.pvalue, rtol=1e-12)


def test_wilcoxon_exact_for_small_samples_without_ties():
    rng = np.random.default_rng(3)
    x = rng.random((14, 3))
    pw = rankci.pairwise_tests(_units(x), "wilcoxon")
    for j, l in [(0, 1), (1, 0), (2, 0)]:
        ref = stats.wilcoxon(x[:, j], x[:, l], alternative="greater", method="exact")
        assert pw.pvalue[j, l] == pytest.approx(ref.pvalue, rel=1e-12)


def test_wilcoxon_on_binary_scores_is_the_sign_test_normal_approximation():
    rng = np.random.default_rng(5)
    x = (rng.random((300, 2)) < [0.6, 0.5]).astype(float)
    pw = rankci.pairwise_tests(_units(x), "wilcoxon")
    wins = ((x[:, 0] == 1) & (x[:, 1] == 0)).sum()
    losses = ((x[:, 0] == 0) & (x[:, 1] == 1)).sum()
    z = (wins - losses) / np.sqrt(wins + losses)
    assert pw.pvalue[0, 1] == pytest.approx(stats.norm.sf(z), rel=1e-10)


def _yuen_reference(a, b, trim):
    """Wilcox's yuend written with scipy's own trimming and winsorizing."""
    n = len(a)
    g = int(np.floor(trim * n))
    h = n - 2 * g
    wa = np.asarray(mstats.winsorize(a, limits=(trim, trim)))
    wb = np.asarray(mstats.winsorize(b, limits=(trim, trim)))
    q = np.cov(wa, wb, ddof=1)
    se = np.sqrt((n - 1) * (q[0, 0] + q[1, 1] - 2 * q[0, 1]) / (h * (h - 1)))
    diff = stats.trim_mean(a, trim) - stats.trim_mean(b, trim)
    return diff, se, h - 1


@pytest.mark.parametrize("trim", [0.1, 0.2, 0.25])
def test_yuen_matches_a_reference_built_on_scipy(continuous, trim):
    pw = rankci.pairwise_tests(_units(continuous), "yuen", trim=trim, delta=0.01)
    for j, l in PAIRS:
        diff, se, df = _yuen_reference(continuous[:, j], continuous[:, l], trim)
        assert pw.estimate[j, l] == pytest.approx(diff, rel=1e-10)
        assert pw.se[j, l] == pytest.approx(se, rel=1e-10)
        assert pw.df[j, l] == df
        assert pw.pvalue[j, l] == pytest.approx(stats.t.sf((diff - 0.01) / se, df), rel=1e-9)


def test_yuen_without_trimming_is_the_paired_t(continuous):
    yuen = rankci.pairwise_tests(_units(continuous), "yuen", trim=0.0)
    t = rankci.pairwise_tests(_units(continuous), "t")
    np.testing.assert_allclose(yuen.pvalue, t.pvalue, rtol=1e-10)


def test_sign_test_matches_binomtest():
    rng = np.random.default_rng(8)
    x = (rng.random((250, 4)) < [0.65, 0.55, 0.55, 0.4]).astype(float)
    pw = rankci.pairwise_tests(_units(x), "sign")
    for j, l in [(0, 1), (1, 0), (1, 2), (0, 3)]:
        wins = int(((x[:, j] == 1) & (x[:, l] == 0)).sum())
        losses = int(((x[:, j] == 0) & (x[:, l] == 1)).sum())
        ref = stats.binomtest(wins, wins + losses, 0.5, alternative="greater")
        assert pw.pvalue[j, l] == pytest.approx(ref.pvalue, rel=1e-10)


def test_sign_test_refuses_non_binary_units_and_margins(continuous):
    with pytest.raises(ValueError, match="binary unit scores"):
        rankci.pairwise_tests(_units(continuous), "sign")
    binary = (continuous > 0.5).astype(float)
    with pytest.raises(ValueError, match="delta = 0"):
        rankci.pairwise_tests(_units(binary), "sign", delta=0.01)


@pytest.mark.parametrize("test", ["t", "z", "wilcoxon", "yuen", "sign"])
def test_missing_pairwise_uses_the_units_both_models_have(test):
    rng = np.random.default_rng(21)
    x = (rng.random((120, 4)) < [0.7, 0.5, 0.5, 0.3]).astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    pw = rankci.pairwise_tests(_units(x, "pairwise"), test)
    for j, l in [(0, 1), (2, 3), (3, 0)]:
        both = ~np.isnan(x[:, j]) & ~np.isnan(x[:, l])
        alone = rankci.pairwise_tests(_units(x[both][:, [j, l]]), test)
        assert pw.n[j, l] == both.sum()
        assert pw.pvalue[j, l] == pytest.approx(alone.pvalue[0, 1], rel=1e-9)
        assert pw.estimate[j, l] == pytest.approx(alone.estimate[0, 1], rel=1e-9, abs=1e-12)


def test_permutation_matches_the_exact_sign_flip_distribution():
    rng = np.random.default_rng(2)
    x = rng.random((10, 2))
    x[:, 0] += 0.15
    x = np.clip(x, 0, 1)
    d = x[:, 0] - x[:, 1]
    exact = stats.permutation_test(
        (d,), np.mean, permutation_type="samples", alternative="greater", n_resamples=np.inf
    ).pvalue
    reps = 20_000
    pw = rankci.pairwise_tests(_units(x), "permutation", reps=reps, rng=1)
    se = np.sqrt(exact * (1 - exact) / reps)
    assert abs(pw.pvalue[0, 1] - exact) < 4 * se + 1 / reps


def test_bootstrap_agrees_with_the_t_test_on_large_samples():
    rng = np.random.default_rng(4)
    x = (rng.random((2000, 3)) < [0.52, 0.5, 0.47]).astype(float)
    boot = rankci.pairwise_tests(_units(x), "bootstrap", reps=4000, rng=0)
    t = rankci.pairwise_tests(_units(x), "t")
    off = ~np.eye(3, dtype=bool)
    assert np.max(np.abs(boot.pvalue[off] - t.pvalue[off])) < 0.02


@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
def test_resampling_is_reproducible_from_the_seed(continuous, test):
    first = rankci.pairwise_tests(_units(continuous), test, reps=500, rng=7)
    again = rankci.pairwise_tests(_units(continuous), test, reps=500, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(first.pvalue, again.pvalue)


def test_resampling_with_missing_cells_matches_the_pair_alone_in_distribution():
    rng = np.random.default_rng(9)
    x = rng.random((200, 3))
    x[:, 0] = np.clip(x[:, 0] + 0.06, 0, 1)
    x[rng.random(x.shape) < 0.1] = np.nan
    both = ~np.isnan(x[:, 0]) & ~np.isnan(x[:, 1])
    full = rankci.pairwise_tests(_units(x, "pairwise"), "permutation", reps=4000, rng=1)
    alone = rankci.pairwise_tests(_units(x[both][:, :2]), "permutation", reps=4000, rng=2)
    assert abs(full.pvalue[0, 1] - alone.pvalue[0, 1]) < 0.03


def test_too_few_resamples_for_holm_is_announced():
    x = np.random.default_rng(0).random((30, 8))
    with pytest.warns(RankciWarning, match="smallest attainable p-value"):
        rankci.pairwise_tests(_units(x), "permutation", reps=99, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rankci.pairwise_tests(_units(x[:, :2]), "permutation", reps=99, rng=0)


def test_constant_differences_take_the_exact_bound_not_certainty():
    # d = 0.5 on each of 3 items: sd = 0, t = inf. Issue 16: a zero variance is no evidence.
    # The p-value is Hoeffding's exact bound, computed here by hand:
    # u = (d + 1) / 2 = 0.75 against u0 = 0.5, p = exp(-n KL(0.75 || 0.5)).
    x = np.array([[1.0, 0.5, 0.5], [0.8, 0.3, 0.3], [0.6, 0.1, 0.1]])
    pw = rankci.pairwise_tests(_units(x), "t")
    kl = 0.75 * np.log(0.75 / 0.5) + 0.25 * np.log(0.25 / 0.5)
    assert pw.pvalue[0, 1] == pytest.approx(np.exp(-3 * kl), rel=1e-12)
    assert pw.pvalue[0, 1] > 0.5 and pw.pvalue[1, 0] == 1.0
    # identical models: no evidence either way (p = 1 from the bound; it was 0.5 = P(t > 0))
    assert pw.pvalue[1, 2] == 1.0
    assert np.isnan(np.diag(pw.pvalue)).all()


def test_two_items_won_twice_certify_nothing_and_say_why():
    # the case: two items, one model beats the other on both
    scores = rankci.Scores.from_matrix(np.array([[1.0, 0.0], [1.0, 0.0]]))
    # the opt-in exact floor for few units (p >= 1/4 with 2 units) says so before testing: at
    # alpha = 0.05 Holm's first threshold 0.025 needs at least 6 units
    with pytest.warns(RankciWarning, match=r"with 2 item units the smallest attainable p-value "
                      r"of the t test is 0.25.*at least 6 item units"):
        ranking = rankci.rank(scores, test="t", exact_bound_n=30)
    assert ranking.upper.tolist() == [2, 2] and not ranking.dominance.any()
    # the default (the exact sign test on these 0/1 units): two units never certify anything
    with pytest.warns(RankciWarning, match=r"auto test \(exact McNemar \(sign\) test on 0/1 "
                      r"units\) is 1.*at least 3 units"):
        ranking = rankci.rank(scores)
    assert ranking.upper.tolist() == [2, 2] and not ranking.dominance.any()
    assert rankci.pairwise_tests(scores.units(), "t").pvalue[0, 1] == pytest.approx(0.25)


def test_one_item_says_that_two_are_needed():
    scores = rankci.Scores.from_matrix(np.array([[1.0, 0.0, 0.5]]))
    with pytest.warns(RankciWarning, match="at least 2 units scored by both models"):
        rankci.rank(scores)


def test_a_sign_test_that_cannot_reach_holm_says_how_many_units_it_needs():
    x = (np.random.default_rng(2).random((14, 32)) < np.linspace(0.2, 0.9, 32)).astype(float)
    scores = rankci.Scores.from_matrix(x)
    with pytest.warns(RankciWarning, match=r"smallest attainable p-value of the sign test is "
                      r"6.1e-05.*at least 15 discordant item units.*2\^-D"):
        ranking = rankci.rank(scores, test="sign")
    assert not ranking.dominance.any()


def test_above_small_n_the_t_test_is_used_as_it_is():
    rng = np.random.default_rng(4)
    x = np.clip(rng.normal([0.6, 0.5], 0.2, size=(200, 2)), 0, 1)
    pw = rankci.pairwise_tests(_units(x), "t")
    d = x[:, 0] - x[:, 1]
    assert pw.pvalue[0, 1] == pytest.approx(stats.ttest_1samp(d, 0, alternative="greater").pvalue)


def test_zero_variance_outside_0_1_gives_no_certainty():
    x = np.array([[5.0, 2.0]] * 100)  # bounds=None data: no exact bound, sd = 0
    scores = rankci.Scores.from_matrix(x, bounds=None)
    assert rankci.pairwise_tests(scores.units(), "t").pvalue[0, 1] == 1.0


def test_result_object_tables(continuous):
    pw = rankci.pairwise_tests(_units(continuous), "t")
    frame = pw.to_frame()
    assert len(frame) == 20 and set(frame.columns) >= {"first", "second", "pvalue", "estimate"}
    row = frame[(frame["first"] == pw.models[0]) & (frame["second"] == pw.models[1])].iloc[0]
    assert row.pvalue == pw.pvalue[0, 1]
    import json

    json.dumps(pw.to_dict(), allow_nan=False)
    assert "Pairwise(test='t'" in repr(pw)


def test_unknown_test_and_options_are_named():
    units = _units(np.random.default_rng(0).random((10, 2)))
    with pytest.raises(ValueError, match="unknown test 'ttest'"):
        rankci.pairwise_tests(units, "ttest")
    with pytest.raises(ValueError, match="delta must be"):
        rankci.pairwise_tests(units, "t", delta=-0.1)
    with pytest.raises(ValueError, match="unknown zero_method"):
        rankci.pairwise_tests(units, "wilcoxon", zero_method="zsplit")
    with pytest.raises(ValueError, match="trim must be"):
        rankci.pairwise_tests(units, "yuen", trim=0.5)
    with pytest.raises(ValueError, match="reps must be"):
        rankci.pairwise_tests(units, "bootstrap", reps=0)
    with pytest.raises(ValueError, match="UnitScores"):
        rankci.pairwise_tests(np.zeros((3, 2)), "t")


# ---------------------------------------------------------------- the exact floor for few units
def _skewed_tie(rng, n):
    """Two models with the same mean 0.05: one constant, one Beta(0.025, 0.475) (rare large
    scores). The differences are mostly +0.05 with rare large negatives, the case where the
    paired t is far too liberal at small n."""
    return np.column_stack([np.full(n, 0.05), rng.beta(0.025, 0.475, n)])


def test_few_units_keep_the_level_where_the_plain_t_does_not():
    rng = np.random.default_rng(0)
    plain = floored = 0
    reps = 400
    for _ in range(reps):
        units = rankci.Scores.from_matrix(_skewed_tie(rng, 10)).units()
        # rankci warns that the plain t's level is not assured here: the point of this test
        with pytest.warns(rankci.RankciWarning, match="below 25 such units the paired t's level"):
            plain += rankci.pairwise_tests(units, "t").pvalue[0, 1] <= 0.05
        floored += rankci.pairwise_tests(units, "t", exact_bound_n=30).pvalue[0, 1] <= 0.05
    assert plain / reps > 0.3  # the plain t: about 0.46 false rejections at alpha = 0.05
    assert floored / reps <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)


@pytest.mark.parametrize("n", [3, 12, 30, 31, 60])
@pytest.mark.parametrize("test", ["t", "z"])
def test_the_floor_is_the_larger_of_the_test_and_the_exact_bound_up_to_exact_bound_n(n, test):
    x = np.random.default_rng(n).beta(2.0, 3.0, (n, 3)) * np.array([1.0, 0.8, 0.6])
    units = rankci.Scores.from_matrix(x).units()
    d = x[:, 0] - x[:, 2]
    if test == "t":
        plain = stats.ttest_rel(x[:, 0], x[:, 2], alternative="greater").pvalue
    else:
        plain = stats.norm.sf(d.mean() / (d.std(ddof=1) / np.sqrt(n)))
    got = rankci.pairwise_tests(units, test, exact_bound_n=30).pvalue[0, 2]
    bound = bounded_pvalue(np.array(d.mean()), 0.0, np.array(n))
    expected = max(plain, float(bound)) if n <= 30 else plain
    assert got == pytest.approx(expected, rel=1e-10)
    assert rankci.pairwise_tests(units, test, exact_bound_n=0).pvalue[0, 2] == pytest.approx(
        plain, rel=1e-10
    )
    # the general path (missing cells, pair by pair) applies the same rule
    x_missing = np.vstack([x, np.full((1, 3), np.nan)])
    x_missing[-1, 1] = 0.5
    pairwise = rankci.Scores.from_matrix(x_missing).units(missing="pairwise")
    got = rankci.pairwise_tests(pairwise, test, exact_bound_n=30).pvalue[0, 2]
    assert got == pytest.approx(expected, rel=1e-10)


def test_unbounded_scores_take_no_floor():
    x = np.random.default_rng(1).normal(0.0, 1.0, (8, 2)) + np.array([1.0, 0.0])
    units = rankci.Scores.from_matrix(x, bounds=None).units()
    plain = stats.ttest_rel(x[:, 0], x[:, 1], alternative="greater").pvalue
    assert rankci.pairwise_tests(units).pvalue[0, 1] == pytest.approx(plain, rel=1e-10)


# 6 units at alpha = 0.05 cannot certify; the subject is the recording of exact_bound_n
@pytest.mark.filterwarnings("ignore:with 6 item units the smallest attainable:rankci.RankciWarning")
def test_exact_bound_n_is_recorded_and_checked():
    scores = rankci.Scores.from_matrix(np.random.default_rng(2).random((6, 3)))
    assert rankci.pairwise_tests(scores.units(), "t", exact_bound_n=30).options == {
        "exact_bound_n": 30
    }
    with pytest.warns(RankciWarning, match="continuous"):  # 6 continuous items: the default
        options = rankci.pairwise_tests(scores.units()).options
    assert options["exact_bound_n"] == 0 and options["test_rule"] == "t"
    ranking = rankci.rank(scores, exact_bound_n=30)
    assert ranking.spec.test_options == {"exact_bound_n": 30}
    assert rankci.rank(scores, spec=ranking.spec).lower.tolist() == ranking.lower.tolist()
    with pytest.raises(ValueError, match="exact_bound_n must be an integer >= 0"):
        rankci.pairwise_tests(scores.units(), exact_bound_n=-1)


def test_a_margin_beyond_the_score_range_takes_no_floor():
    # |margin| >= 1: Hoeffding's bound is not defined, so the plain t applies (never p = 1)
    x = np.array([[0.6, 0.62], [0.5, 0.49], [0.7, 0.71], [0.4, 0.42], [0.55, 0.56]])
    pw = signed_margin_tests(rankci.Scores.from_matrix(x).units(), -1.5)
    d = x[:, 0] - x[:, 1]
    plain = stats.t.sf((d.mean() + 1.5) / (d.std(ddof=1) / np.sqrt(5)), 4)
    assert pw.pvalue[0, 1] == pytest.approx(plain, rel=1e-10)
