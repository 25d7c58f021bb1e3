"""Issue 25, item 1: zero variance decided on an absolute scale, and two units never certify.

The issue's case: clusters in which model A scores 21/40 and model B 20/40 in every cluster. The
variance across clusters of the mean difference is zero (every cluster gives the same 0.025), but
in floating point it comes out as ~1e-33, beside own variances of ~1e-33: the old relative test
``var <= 1e-12 (S_jj + S_ll)`` let it through and t was ~1e15 ("A > B" at p = 3e-16). Every
expected value below is fixed by the rule or computed independently (scipy, Hoeffding's formula,
Miller's z by hand), never by the code under test.
"""

import csv
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import rankci
from rankci import RankciWarning
from rankci.analyses.intervals import score_intervals
from rankci.analyses.verdicts import clustered_pairwise
from rankci.certify.maxt import certify_maxt
from rankci.cli import main
from rankci.evidence.covariance import unit_clusters
from rankci.evidence.moments import ZERO_VARIANCE_FACTOR, variance_is_zero


def _rows(n_clusters: int, shift: int = 7):
    """A scores 21/40 and B 20/40 in every cluster (B's 20 right answers rotate by cluster)."""
    for g in range(n_clusters):
        for i in range(40):
            item = f"c{g}-{i:02d}"
            yield "A", item, f"c{g}", float(i < 21)
            yield "B", item, f"c{g}", float((i + shift * g) % 40 < 20)


def _scores(n_clusters: int, shift: int = 7) -> rankci.Scores:
    columns = ["model", "item", "cluster", "score"]
    frame = pd.DataFrame(list(_rows(n_clusters, shift)), columns=columns)
    return rankci.Scores.from_frame(frame, cluster="cluster")


def _hoeffding(dbar: float, n: int) -> float:
    """exp(-n KL(u || 1/2)) with u = (dbar + 1) / 2: the exact bound for delta = 0."""
    u = (dbar + 1.0) / 2.0
    return float(np.exp(-n * (u * np.log(u / 0.5) + (1 - u) * np.log((1 - u) / 0.5))))


# ---------------------------------------------------------------------- the rule itself
def test_the_threshold_is_absolute_and_scaled_to_the_scores_width():
    eps = np.finfo(float).eps
    assert ZERO_VARIANCE_FACTOR == 64.0
    assert variance_is_zero(1e-33, 1.0)  # the rounding residue
    assert variance_is_zero(64 * eps, 1.0) and not variance_is_zero(65 * eps, 1.0)
    assert variance_is_zero(65 * eps * 100.0**2, 100.0) is not np.True_  # scales with R**2
    assert variance_is_zero(64 * eps * 100.0**2, 100.0)
    assert not variance_is_zero(np.nan, 1.0)


def test_one_item_in_ten_thousand_is_a_real_variance():
    """A genuine difference of 1 item in 10,000 is far above the threshold: a plain t test."""
    n = 10_000
    x = np.zeros((n, 2))
    x[:5000, :] = 1.0
    x[-1, 0] = 1.0  # A right on one item more than B
    var_of_mean = np.var(x[:, 0] - x[:, 1], ddof=1) / n
    assert var_of_mean == pytest.approx(1e-8, rel=1e-3)
    assert not variance_is_zero(var_of_mean, 1.0)
    pairwise = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), "t")
    expected = stats.ttest_rel(x[:, 0], x[:, 1], alternative="greater")
    assert pairwise.statistic[0, 1] == pytest.approx(expected.statistic, rel=1e-9)
    assert pairwise.pvalue[0, 1] == pytest.approx(expected.pvalue, rel=1e-9)


# ---------------------------------------------------------------------- the clustered verdict
@pytest.mark.parametrize("n_clusters", [2, 3, 5])
def test_21_of_40_against_20_of_40_is_not_a_verdict(n_clusters):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = score_intervals(_scores(n_clusters), method="cluster")
    assert result.separated_pairs() == []
    pairs = result.pairs_frame()
    assert pairs.paired_pvalue.tolist() == [1.0]  # a zero variance is no evidence
    assert pairs.paired_verdict.tolist() == ["indistinguishable"]


def test_two_clusters_never_certify_and_say_how_many_are_needed():
    with pytest.warns(RankciWarning, match="two clusters never certify anything, at least 3"):
        pairwise = clustered_pairwise(
            _scores(2).units("item"), np.repeat([0, 1], 40), small_sample=False
        )
    assert np.nanmax(pairwise.pvalue) == 1.0 and np.nanmin(pairwise.pvalue) == 1.0


def test_a_real_tiny_clustered_variance_is_still_a_variance():
    """Three clusters; B is one item behind A in the first only: Miller's z, by hand."""
    x = np.zeros((120, 2))
    x[::2, :] = 1.0
    x[0, 1] = 0.0  # B wrong on one item of cluster 0
    cluster = np.repeat(np.arange(3), 40)
    units = rankci.Scores.from_matrix(x).units("item", missing="complete")
    pairwise = clustered_pairwise(units, cluster, small_sample=False)
    e = np.array([(x - x.mean(axis=0))[cluster == g].sum(axis=0) for g in range(3)])
    s = e.T @ e / 120**2
    var = s[0, 0] + s[1, 1] - 2 * s[0, 1]
    assert not variance_is_zero(var, 1.0)
    z = (x[:, 0].mean() - x[:, 1].mean()) / np.sqrt(var)
    assert pairwise.statistic[0, 1] == pytest.approx(z, rel=1e-9)
    assert pairwise.pvalue[0, 1] == pytest.approx(stats.norm.sf(z), rel=1e-9)


def test_the_command_line_gives_no_verdict_either(tmp_path, capsys):
    for n_clusters in (2, 3):
        path = tmp_path / f"g{n_clusters}.csv"
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["model", "item", "cluster", "score"])
            writer.writerows(_rows(n_clusters))
        assert main(["scores", str(path), "--method", "cluster", "--format", "json"]) == 0
        captured = capsys.readouterr()
        payload = json.loads(captured.out)
        # the compact runs of docs/json.md: nothing separated; A and B (places 0, 1) unordered
        assert payload["paired"]["separated"] == {"form": "runs", "n_pairs": 0, "below": [[], []]}
        assert payload["paired"]["indistinguishable"] == {
            "form": "runs",
            "n_pairs": 1,
            "below": [[[1, 1]], []],
        }
        if n_clusters == 2:
            assert "two clusters never certify anything" in captured.err


# ---------------------------------------------------------------------- pairwise t, z, bootstrap
@pytest.mark.parametrize("test", ["t", "z"])
def test_t_and_z_use_the_absolute_rule(test):
    """Differences of 0.1 with a spread of 1e-10: zero by the rule (sd of the mean 1.4e-11),
    so the exact bound decides, not t ~ 1e10."""
    rng = np.random.default_rng(0)
    noise = 1e-10 * rng.standard_normal((50, 2))
    x = np.array([0.5, 0.4]) + noise
    pairwise = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), test, exact_bound_n=0)
    dbar = float((x[:, 0] - x[:, 1]).mean())
    assert pairwise.pvalue[0, 1] == pytest.approx(_hoeffding(dbar, 50), rel=1e-6)
    assert pairwise.pvalue[0, 1] > 0.5


def test_yuen_uses_the_absolute_rule():
    rng = np.random.default_rng(0)
    x = np.array([0.5, 0.4]) + 1e-10 * rng.standard_normal((50, 2))
    pairwise = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), "yuen")
    assert pairwise.pvalue[0, 1] == 1.0  # was 7e-263: t ~ 1e9 from a spread of 1e-10


def test_the_bootstrap_test_takes_no_evidence_from_a_zero_variance():
    units = _scores(3).units("cluster")  # three cluster means: 0.525 and 0.5 in each
    pairwise = rankci.pairwise_tests(units, "bootstrap", reps=999, rng=0)
    assert pairwise.pvalue[0, 1] == pytest.approx(_hoeffding(0.025, 3), rel=1e-9)


def test_two_units_never_certify_on_the_t_path():
    unbounded = rankci.Scores.from_matrix(np.array([[5.0, 0.0], [5.001, 0.0]]), bounds=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        pairwise = rankci.pairwise_tests(unbounded.units(), "t", exact_bound_n=0)
        assert pairwise.pvalue[0, 1] == 1.0  # the plain t on 1 df would give 3e-5
        assert not rankci.rank(unbounded, exact_bound_n=0).dominance.any()
        bounded = rankci.Scores.from_matrix(np.array([[1.0, 0.0], [1.0, 0.0]]))
        # p = 1/4 (the exact bound) would pass Holm's 0.6 / 2 = 0.3: still nothing certified
        assert not rankci.rank(bounded, alpha=0.6).dominance.any()


# ---------------------------------------------------------------------- max-t (covariance path)
@pytest.mark.parametrize("small_sample", [False, True])
@pytest.mark.parametrize("resampling", ["gaussian", "bootstrap"])
def test_max_t_certifies_nothing_from_a_zero_clustered_variance(small_sample, resampling):
    scores = _scores(3)
    units = scores.units("item")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        certification = certify_maxt(
            units,
            groups=unit_clusters(scores, units),
            small_sample=small_sample,
            resampling=resampling,
            rng=0,
        )
    assert not certification.ranking().dominance.any()


def test_max_t_with_two_clusters_certifies_nothing_and_says_so():
    x = np.zeros((80, 2))
    x[:, 0] = 1.0  # A wins every item: still two clusters
    x[:20, 1] = 1.0  # (B right on 20 items of the first cluster: a real variance)
    units = rankci.Scores.from_matrix(x).units()
    with pytest.warns(RankciWarning, match="two clusters never certify anything"):
        certification = certify_maxt(units, groups=np.repeat([0, 1], 40))
    assert not certification.ranking().dominance.any()


# ---------------------------------------------------------------------- the overall of benchmarks
@pytest.mark.parametrize("test", ["t", "z"])
def test_the_overall_table_takes_no_evidence_from_a_zero_variance(test):
    """Two benchmarks of 3 clusters, A 21/40 and B 20/40 in every cluster, cluster units."""
    data = {"b1": _scores(3), "b2": _scores(3, shift=3)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = rankci.rank_benchmarks(data, unit="cluster", test=test, exact_bound_n=0)
    overall = result.overall.pairwise
    j, l = overall.models.index("A"), overall.models.index("B")
    assert overall.pvalue[j, l] == 1.0  # a zero variance is no evidence
    assert not result.overall.dominance.any()
