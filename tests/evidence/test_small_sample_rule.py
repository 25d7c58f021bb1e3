"""The small-sample rule (issue 25, item 3): ``test="auto"``, the default paired test.

Per pair: the exact McNemar (sign) test where both models' units are 0/1 and delta = 0, else
the plain paired t with no floor; the Hoeffding floor (``exact_bound_n``) is opt-in. Oracles:
statsmodels' ``mcnemar(exact=True)`` (two-sided, turned into the one-sided value by hand below),
scipy's ``ttest_rel``, and Monte Carlo for the power statements.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

import rankci
from rankci import RankciWarning, Scores
from rankci.analyses.claims import check_claims
from rankci.cli import main
from rankci.method import MethodSpec


def _binary(rng, n, theta, rho=0.5):
    """n items x M 0/1 scores, Gaussian copula with a shared item effect (correlated pairs)."""
    shared = rng.standard_normal((n, 1))
    z = np.sqrt(rho) * shared + np.sqrt(1 - rho) * rng.standard_normal((n, len(theta)))
    return (stats.norm.cdf(z) < np.asarray(theta)).astype(float)


def _one_sided_from_statsmodels(b: int, c: int) -> float:
    """P(Bin(b + c, 1/2) >= b) from statsmodels' two-sided exact McNemar p-value.

    statsmodels gives ``p2 = min(1, 2 P(Bin(D, 1/2) <= min(b, c)))``. For b > c the upper tail
    ``P(Bin >= b) = P(Bin <= c) = p2 / 2`` (symmetry). For b < c, ``P(Bin <= b) = p2 / 2``, so
    ``P(Bin >= b) = 1 - P(Bin <= b) + P(Bin = b)``. For b = c (p2 = 1),
    ``P(Bin >= b) = (1 + P(Bin = b)) / 2``. P(Bin = b) is the binomial coefficient over 2^D.
    """
    d = b + c
    if d == 0:
        return 1.0
    p2 = mcnemar([[0, b], [c, 0]], exact=True).pvalue
    at = math.comb(d, b) / 2.0**d
    if b > c:
        return p2 / 2
    if b < c:
        return 1 - p2 / 2 + at
    return (1 + at) / 2


# ---------------------------------------------------------------------- which rule
def test_auto_is_the_exact_mcnemar_test_on_0_1_units():
    rng = np.random.default_rng(3)
    x = _binary(rng, 40, [0.7, 0.55, 0.5, 0.3])
    pw = rankci.pairwise_tests(Scores.from_matrix(x).units())
    assert pw.test == "auto" and pw.options["test_rule"] == "sign"
    m = x.shape[1]
    for j in range(m):
        for l in range(m):
            if j == l:
                continue
            b = int(((x[:, j] == 1) & (x[:, l] == 0)).sum())
            c = int(((x[:, j] == 0) & (x[:, l] == 1)).sum())
            assert pw.pvalue[j, l] == pytest.approx(_one_sided_from_statsmodels(b, c), rel=1e-10)
            assert pw.statistic[j, l] == b


@pytest.mark.parametrize(("b", "c"), [(9, 2), (2, 9), (5, 5), (7, 0), (0, 4), (13, 12)])
def test_one_sided_mcnemar_against_statsmodels(b, c):
    x = np.array([[1, 0]] * b + [[0, 1]] * c + [[1, 1]] * 3 + [[0, 0]] * 2, dtype=float)
    pw = rankci.pairwise_tests(Scores.from_matrix(x).units())
    assert pw.pvalue[0, 1] == pytest.approx(_one_sided_from_statsmodels(b, c), rel=1e-10)
    assert pw.pvalue[1, 0] == pytest.approx(_one_sided_from_statsmodels(c, b), rel=1e-10)


def test_auto_is_the_plain_t_on_continuous_units_with_no_floor():
    rng = np.random.default_rng(4)
    x = np.clip(rng.normal([0.6, 0.5, 0.45], 0.1, size=(12, 3)), 0, 1)
    with pytest.warns(RankciWarning, match="continuous"):
        pw = rankci.pairwise_tests(Scores.from_matrix(x).units())
    assert pw.options["test_rule"] == "t" and pw.options["exact_bound_n"] == 0
    for j, l in [(0, 1), (0, 2), (1, 2), (2, 0)]:
        ref = stats.ttest_rel(x[:, j], x[:, l], alternative="greater").pvalue
        assert pw.pvalue[j, l] == pytest.approx(ref, rel=1e-9)


def test_auto_decides_per_pair_on_a_mixed_board():
    rng = np.random.default_rng(5)
    x = _binary(rng, 60, [0.7, 0.5, 0.5])
    x[:, 2] = np.clip(rng.normal(0.5, 0.2, 60), 0, 1)  # one model with continuous scores
    pw = rankci.pairwise_tests(Scores.from_matrix(x).units())
    assert pw.options["test_rule"] == "mixed" and pw.options["sign_pairs"] == 2
    b = int(((x[:, 0] == 1) & (x[:, 1] == 0)).sum())
    c = int(((x[:, 0] == 0) & (x[:, 1] == 1)).sum())
    assert pw.pvalue[0, 1] == pytest.approx(_one_sided_from_statsmodels(b, c), rel=1e-10)
    ref = stats.ttest_rel(x[:, 0], x[:, 2], alternative="greater").pvalue
    assert pw.pvalue[0, 2] == pytest.approx(ref, rel=1e-9)


def test_a_margin_on_0_1_units_takes_the_t_and_says_why():
    rng = np.random.default_rng(6)
    x = _binary(rng, 80, [0.8, 0.5])
    pw = rankci.pairwise_tests(Scores.from_matrix(x).units(), delta=0.05)
    assert pw.options["test_rule"] == "t"
    assert "cannot test a margin" in pw.options["test_rule_note"]
    d = x[:, 0] - x[:, 1] - 0.05
    ref = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
    assert pw.pvalue[0, 1] == pytest.approx(ref, rel=1e-9)
    ranking = rankci.rank(Scores.from_matrix(x), delta=0.05)
    assert "cannot test a margin" in ranking.guarantee


def test_the_rule_is_recorded_in_the_guarantee_and_the_json():
    ranking = rankci.rank(rankci.datasets.load_chembench())
    assert "exact McNemar (sign) test on 0/1 units" in ranking.guarantee
    payload = ranking.to_dict()
    assert payload["test"] == "auto" and payload["spec"]["test"] == "auto"
    assert payload["test_options"]["test_rule"] == "sign"
    assert MethodSpec().test == "auto"


# ---------------------------------------------------------------------- the warning
def _clustered(rng, g, per=10):
    x = np.clip(rng.normal([0.6, 0.5, 0.5], 0.15, size=(g * per, 3)), 0, 1)
    clusters = [f"c{i // per}" for i in range(g * per)]
    return Scores.from_matrix(x, clusters=clusters)


def test_continuous_single_items_below_25_warn_and_cluster_means_do_not():
    rng = np.random.default_rng(7)
    x = np.clip(rng.normal([0.6, 0.5, 0.5], 0.15, size=(10, 3)), 0, 1)
    with pytest.warns(RankciWarning) as caught:
        ranking = rankci.rank(Scores.from_matrix(x))
    texts = [str(w.message) for w in caught if "continuous" in str(w.message)]
    assert texts and "0.126" in texts[0] and "exact_bound_n" in texts[0]
    assert "0.126" in ranking.guarantee
    assert "small_sample_warning" in ranking.to_dict()["test_options"]
    # 25 units: no warning; the opt-in floor covering the units: no warning either
    y = np.clip(rng.normal([0.6, 0.5, 0.5], 0.15, size=(25, 3)), 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        assert "small_sample_warning" not in rankci.pairwise_tests(
            Scores.from_matrix(y).units()).options  # fmt: skip
        rankci.pairwise_tests(Scores.from_matrix(x).units(), exact_bound_n=24)
        # ten clusters of ten items as the units: means, the t holds (the study); no warning
        pw = rankci.pairwise_tests(_clustered(rng, 10).units("cluster"))
    assert pw.options["test_rule"] == "t" and "small_sample_warning" not in pw.options


def test_the_warning_names_the_flag_on_the_command_line(tmp_path, capsys):
    rng = np.random.default_rng(8)
    x = np.clip(rng.normal([0.7, 0.5], 0.15, size=(8, 2)), 0, 1)
    path = tmp_path / "few.csv"
    pd.DataFrame(x, columns=["a", "b"]).rename_axis("item").reset_index().to_csv(path, index=False)
    assert main(["rank", str(path)]) == 0
    err = capsys.readouterr().err
    assert "--exact-bound-n 24" in err and "0.126" in err


# ---------------------------------------------------------------------- power, no cliff
# a power study: replications that decide no claim are expected; the rate is what is tested
@pytest.mark.filterwarnings("ignore:no claim is decided:rankci.RankciWarning")
def test_check_supports_a_gap_at_30_items_where_the_floor_never_did():
    """0/1 items, n = 30, a true gap of 0.117: the floor supported "A > B" in 0 of 600 runs."""
    rng = np.random.default_rng(11)
    auto = floor = 0
    runs = 150
    for _ in range(runs):
        x = _binary(rng, 30, [0.617, 0.5], rho=0.7)
        scores = Scores.from_matrix(x, models=["A", "B"])
        auto += check_claims(scores, ["A > B"]).results[0].result == "supported"
        spec = MethodSpec(test="t", test_options={"exact_bound_n": 30})
        floor += check_claims(scores, ["A > B"], spec=spec).results[0].result == "supported"
    assert floor == 0
    assert auto >= 0.08 * runs  # 20 of 150 (0.13) with this seed: the exact sign test


def _power(n, exact_bound_n, runs=300, seed=12):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        x = np.clip(rng.normal([0.55, 0.5], 0.1, size=(n, 2)), 0, 1)
        pw = rankci.pairwise_tests(Scores.from_matrix(x).units(), exact_bound_n=exact_bound_n)
        hits += pw.pvalue[0, 1] <= 0.05 / 2
    return hits / runs


def test_no_power_cliff_between_30_and_31_units():
    p30, p31 = _power(30, 0), _power(31, 0)
    assert p30 > 0.4 and abs(p31 - p30) < 0.1  # smooth in n (SE about 0.03 each)
    assert _power(30, 30) == 0.0 and _power(31, 30) == p31  # the old floor: the cliff


# ---------------------------------------------------------------------- nothing certified
def test_nothing_certified_explains_the_sign_tests_smallest_p():
    x = np.array([[1, 0]] * 4 + [[1, 1]] * 3 + [[0, 0]] * 3, dtype=float)  # D = 4: p >= 1/16
    with pytest.warns(RankciWarning, match=r"2\^-D") as caught:
        ranking = rankci.rank(Scores.from_matrix(x))
    assert not ranking.dominance.any()
    assert "exact McNemar (sign) test on 0/1 units" in ranking.guarantee
    message = next(str(w.message) for w in caught if "2^-D" in str(w.message))
    # 2 models: Holm's first threshold 0.025 needs a pair with 6 discordant units, all won
    assert "at least 6 discordant item units" in message
    assert "floor" not in message and "exact_bound_n" not in message


def test_nothing_certified_in_discordant_units_when_the_threshold_is_attainable():
    rng = np.random.default_rng(13)
    x = _binary(rng, 40, [0.55, 0.5, 0.5])
    with pytest.warns(RankciWarning, match="nothing is certified"):
        ranking = rankci.rank(Scores.from_matrix(x))
    text = ranking.details["nothing_certified"]
    assert "the most discordant pair has D =" in text and "floor" not in text


# ---------------------------------------------------------------------- the command line
def test_check_chooses_its_test_and_the_floor(tmp_path):
    rng = np.random.default_rng(14)
    x = _binary(rng, 30, [0.9, 0.3], rho=0.3)
    path = tmp_path / "s.csv"
    pd.DataFrame(x, columns=["A", "B"]).rename_axis("item").reset_index().to_csv(path, index=False)
    out = tmp_path / "o.json"
    argv = ["check", str(path), "--claim", "A > B", "--format", "json", "-o", str(out)]
    assert main(argv) == 0
    payload = json.loads(out.read_text())
    assert payload["spec"]["test"] == "auto" and payload["spec"]["method"]["test"] == "auto"
    assert "exact McNemar" in payload["guarantee"]
    assert main([*argv, "--test", "t", "--exact-bound-n", "30"]) in (0, 1)
    floored = json.loads(out.read_text())
    assert floored["spec"]["test"] == "t" and floored["spec"]["exact_bound_n"] == 30
    assert floored["spec"]["method"]["test_options"] == {"exact_bound_n": 30}
    assert main([*argv, "--test", "z"]) == 0
    assert json.loads(out.read_text())["spec"]["test"] == "z"


def test_every_command_with_a_test_defaults_to_auto_and_takes_the_floor():
    from rankci.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    with_test = []
    for name, command in sub.choices.items():
        actions = {f: a for a in command._actions for f in a.option_strings}
        if "--test" in actions:
            with_test.append(name)
            assert actions["--test"].default == "auto", name
            assert "auto" in actions["--test"].choices, name
            assert actions["--exact-bound-n"].dest == "exact_bound_n", name
            assert actions["--exact-bound-n"].default is None, name  # the registry's 0
    assert {"rank", "taubest", "report", "benchmarks", "check"} <= set(with_test)


@pytest.mark.parametrize("tabulated", [True, False])
@pytest.mark.parametrize("missing", [False, True])
def test_the_blocked_sign_path_equals_the_whole_matrix_mcnemar(monkeypatch, missing, tabulated):
    import rankci.evidence.auto as auto
    from rankci.evidence.exact_small import mcnemar_tests

    monkeypatch.setattr(auto, "ROW_BLOCK", 3)  # several blocks of rows on 11 models
    if not tabulated:  # the p-values computed pair by pair instead of read from the (b, c) table
        monkeypatch.setattr(auto, "_TABLE_CELLS", 0)
    rng = np.random.default_rng(15)
    x = _binary(rng, 50, np.linspace(0.3, 0.8, 11))
    x[:, [2, 7]] = np.clip(rng.normal(0.5, 0.2, (50, 2)), 0, 1)  # two continuous models
    if missing:
        x[rng.random(x.shape) < 0.1] = np.nan
    units = Scores.from_matrix(x).units(missing="pairwise" if missing else "complete")
    pw = rankci.pairwise_tests(units)
    binary = [j for j in range(11) if j not in (2, 7)]
    expected = mcnemar_tests(units.values[:, binary])
    got = pw.pvalue[np.ix_(binary, binary)]
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)
    t = rankci.pairwise_tests(units, "t").pvalue
    np.testing.assert_allclose(pw.pvalue[:, [2, 7]], t[:, [2, 7]], rtol=1e-12, equal_nan=True)
    assert pw.options["test_rule"] == "mixed" and pw.options["sign_pairs"] == 9 * 8
