"""Binary score intervals (issue 25, item 5): Wilson and Clopper-Pearson through
score_intervals, the "auto" default, and zero-width intervals said in the result, text and JSON.

The oracle of the binomial intervals is statsmodels' ``proportion_confint`` ("wilson" and
"beta", the Clopper-Pearson interval); the defect is the issue's "0/25 gives the score interval
[0, 0] under the normal, bootstrap and BCa methods, with no note".
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

import rankci
from rankci._base import RankciWarning
from rankci.analyses.composite import composite_scores
from rankci.analyses.intervals import score_intervals
from rankci.analyses.subscores import subscores
from rankci.cli import main
from rankci.report.html import build_report


def _boundary() -> rankci.Scores:
    """25 items: 'none' 0/25, 'some' 12/25, 'all' 25/25 correct."""
    x = np.column_stack([np.zeros(25), np.r_[np.ones(12), np.zeros(13)], np.ones(25)])
    return rankci.Scores.from_matrix(x, models=["none", "some", "all"])


def _csv(scores: rankci.Scores, path) -> str:
    scores.to_frame().to_csv(path, index=False)
    return str(path)


# ---------------------------------------------------------------------- the defect: 0/25
@pytest.mark.parametrize("method", ["normal", "bootstrap", "bca"])
def test_zero_of_25_is_flagged_degenerate_in_the_result(method):
    with pytest.warns(RankciWarning, match=r"zero-width .*none"):
        result = score_intervals(_boundary(), method, rng=0, reps=500, verdict=False)
    frame = result.to_frame().set_index("model")
    assert frame.loc["none", "lower"] == frame.loc["none", "upper"] == 0.0  # the [0, 0]
    assert set(result.degenerate) == {"none", "all"}
    assert result.degenerate["none"].startswith("all 25 scores are 0: ")
    assert result.degenerate["all"].startswith("all 25 scores are 1: ")
    assert "use method='clopper-pearson'" in result.degenerate["none"]
    assert "2 interval(s) have zero width" in result.guarantee
    assert result.to_dict()["degenerate"] == {
        "all": result.degenerate["all"],
        "none": result.degenerate["none"],
    }


@pytest.mark.parametrize("method", ["normal", "bootstrap", "bca"])
def test_zero_of_25_is_said_in_the_text_and_the_json(method, tmp_path, capsys):
    path = _csv(_boundary(), tmp_path / "boundary.csv")
    assert main(["scores", path, "--method", method, "--reps", "500"]) == 0
    captured = capsys.readouterr()
    assert "degenerate (zero-width) intervals: 2 of 3 models" in captured.out
    line = next(x for x in captured.out.splitlines() if x.strip().startswith("none:"))
    assert "all 25 scores are 0" in line and "--method clopper-pearson" in line
    assert "zero-width" in captured.err  # the warning, in flag words
    out = tmp_path / "out.json"
    assert main(["scores", path, "--method", method, "--format", "json", "-o", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert list(payload["degenerate"]) == ["all", "none"]  # best first
    assert payload["degenerate"]["none"].startswith("all 25 scores are 0")


def test_a_constant_fractional_score_is_degenerate_too():
    x = np.column_stack([np.full(20, 0.3), np.linspace(0, 1, 20)])
    with pytest.warns(RankciWarning, match="zero-width"):
        result = score_intervals(rankci.Scores.from_matrix(x, models=["flat", "ramp"]),
                                 "normal", verdict=False)
    assert list(result.degenerate) == ["flat"]
    assert result.degenerate["flat"].startswith("all 20 scores are 0.3: ")
    assert "clopper-pearson" not in result.degenerate["flat"]  # not 0/1: no binomial advice


def test_intervals_with_width_are_not_flagged():
    rng = np.random.default_rng(3)
    x = (rng.random((40, 3)) < [0.2, 0.5, 0.8]).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        for method in ("normal", "bootstrap", "bca", "wilson", "clopper-pearson"):
            result = score_intervals(rankci.Scores.from_matrix(x), method, rng=1, verdict=False)
            assert result.degenerate == {} and result.to_dict()["degenerate"] == {}
            assert "zero width" not in result.guarantee


# ---------------------------------------------------------------------- the oracle
def _table_with_gaps() -> rankci.Scores:
    rng = np.random.default_rng(11)
    x = (rng.random((30, 4)) < [0.05, 0.4, 0.7, 0.97]).astype(float)
    x[:, 0] = 0.0  # 0 of n
    x[:, 3] = 1.0  # n of n
    x[[2, 5, 9], 1] = np.nan  # missing cells: 27 items for model m1
    x[[0, 1], 2] = np.nan
    return rankci.Scores.from_matrix(x, models=["m0", "m1", "m2", "m3"])


@pytest.mark.parametrize(("method", "oracle"), [("wilson", "wilson"),
                                                 ("clopper-pearson", "beta")])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_binomial_methods_equal_statsmodels_per_model(method, oracle, alpha):
    scores = _table_with_gaps()
    result = score_intervals(scores, method, alpha=alpha, missing="pairwise", verdict=False)
    frame = scores.to_frame()
    for model, group in frame.groupby("model", observed=True):
        k, n = int(group["score"].sum()), len(group)
        lo, hi = proportion_confint(k, n, alpha=alpha, method=oracle)
        j = result.models.index(model)
        assert result.n[j] == n and result.score[j] == pytest.approx(k / n)
        assert result.lower[j] == pytest.approx(lo, abs=1e-10)
        assert result.upper[j] == pytest.approx(hi, abs=1e-10)
        assert result.upper[j] - result.lower[j] > 0.05
    assert result.method == method and result.degenerate == {}
    assert "method_rule" not in result.options


def test_complete_rule_drops_the_items_some_model_lacks():
    result = score_intervals(_table_with_gaps(), "clopper-pearson", verdict=False)
    assert set(result.n.tolist()) == {25}  # 30 items less the 5 with a missing cell
    m1 = result.models.index("m1")
    k = int(round(result.score[m1] * 25))
    lo, hi = proportion_confint(k, 25, alpha=0.05, method="beta")
    assert (result.lower[m1], result.upper[m1]) == pytest.approx((lo, hi), abs=1e-10)


# ---------------------------------------------------------------------- the default
def test_auto_picks_clopper_pearson_on_binary_scores():
    result = score_intervals(_boundary(), verdict=False)
    explicit = score_intervals(_boundary(), "clopper-pearson", verdict=False)
    assert result.method == "clopper-pearson" and result.degenerate == {}
    assert result.options["method_rule"].startswith("auto: clopper-pearson")
    np.testing.assert_array_equal(result.lower, explicit.lower)
    np.testing.assert_array_equal(result.upper, explicit.upper)
    lo, hi = proportion_confint(0, 25, alpha=0.05, method="beta")
    none = result.models.index("none")
    assert (result.lower[none], result.upper[none]) == pytest.approx((lo, hi), abs=1e-10)
    payload = result.to_dict()
    assert payload["method"] == "clopper-pearson"
    assert payload["options"]["method_rule"] == result.options["method_rule"]


def test_auto_keeps_the_bootstrap_on_fractional_scores():
    rng = np.random.default_rng(5)
    scores = rankci.Scores.from_matrix(rng.random((30, 3)))
    result = score_intervals(scores, rng=4, verdict=False)
    explicit = score_intervals(scores, "bootstrap", rng=4, verdict=False)
    assert result.method == "bootstrap" and result.options["reps"] == 1000
    np.testing.assert_array_equal(result.lower, explicit.lower)
    np.testing.assert_array_equal(result.upper, explicit.upper)


def test_auto_on_cluster_units_of_binary_items_is_not_binomial():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {
            "model": np.repeat(["a", "b"], 40),
            "item": np.tile([f"q{i}" for i in range(40)], 2),
            "cluster": np.tile(np.repeat([f"c{i}" for i in range(8)], 5), 2),
            "score": (rng.random(80) < 0.6).astype(float),
        }
    )
    scores = rankci.read_scores(frame)
    assert score_intervals(scores, unit="cluster", rng=0, verdict=False).method == "bootstrap"
    with pytest.raises(ValueError, match=r"method='wilson'.*cluster scores.*unit='item'"):
        score_intervals(scores, "wilson", unit="cluster", verdict=False)
    sub = subscores(scores, verdict=False)
    assert sub.within_method == "clopper-pearson"
    part = sub.intervals["c0"]
    for j, model in enumerate(part.models):
        x = frame[(frame.cluster == "c0") & (frame.model == model)]["score"]
        lo, hi = proportion_confint(int(x.sum()), len(x), alpha=0.05, method="beta")
        assert (part.lower[j], part.upper[j]) == pytest.approx((lo, hi), abs=1e-10)


# ---------------------------------------------------------------------- refusals
@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
def test_binomial_methods_refuse_scores_other_than_0_and_1(method, tmp_path, capsys):
    x = np.array([[0.0, 1.0], [0.5, 1.0], [1.0, 0.0]])
    scores = rankci.Scores.from_matrix(x)
    with pytest.raises(ValueError, match=rf"method='{method}'.*0/1.*0\.5.*method='normal'"):
        score_intervals(scores, method)
    path = _csv(scores, tmp_path / "fractional.csv")
    assert main(["scores", path, "--method", method]) == 2
    err = capsys.readouterr().err
    assert f"--method {method}" in err and "--method normal" in err


def test_the_composite_offers_no_binomial_method():
    table = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "item": ["q1", "q2"] * 4,
                          "dimension": (["x"] * 2 + ["y"] * 2) * 2,
                          "score": [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]})
    with pytest.raises(ValueError, match="method"):
        composite_scores(table, method="clopper-pearson")


# ---------------------------------------------------------------------- the command line
def test_cli_clopper_pearson_json(tmp_path, capsys):
    scores = _table_with_gaps()
    path = _csv(scores, tmp_path / "gaps.csv")
    argv = ["scores", path, "--method", "clopper-pearson", "--missing", "pairwise",
            "--format", "json"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["method"] == "clopper-pearson" and payload["degenerate"] == {}
    frame = scores.to_frame()
    for row in payload["models"]:
        x = frame[frame.model == row["model"]]["score"]
        lo, hi = proportion_confint(int(x.sum()), len(x), alpha=0.05, method="beta")
        assert (row["lower"], row["upper"]) == pytest.approx((lo, hi), abs=1e-10)
        assert row["n"] == len(x)


def test_cli_default_is_auto_and_says_so(tmp_path, capsys):
    path = _csv(_boundary(), tmp_path / "boundary.csv")
    assert main(["scores", path]) == 0
    out = capsys.readouterr().out
    assert "Clopper-Pearson exact binomial interval (--method auto: every score is 0 or 1)" in out
    assert "degenerate" not in out


def test_the_report_names_degenerate_intervals():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        page = build_report(_boundary(), omnibus=False, by_cluster=False,
                            score_intervals="normal")
        default = build_report(_boundary(), omnibus=False, by_cluster=False)
    assert "2 degenerate (zero-width) interval(s)" in page and "all 25 scores are 0" in page
    assert "degenerate (zero-width)" not in default
    assert "[0.0000, 0.1372]" in default  # Clopper-Pearson at 0/25, as statsmodels gives
