"""Every fixed-sample entry point takes ``spec=`` and records it (issue 24).

For rank, rank_by_cluster, rank_benchmarks, check_claims, tau_best, mixed_ranking and plan:

* the result carries the validated :class:`~rankci.method.MethodSpec` (``.spec``) and its JSON
  records it (``to_dict()["spec"]``);
* **round trip**: the spec written to JSON and read back (``MethodSpec.from_dict``) re-runs to the
  identical result (the whole ``to_dict()``, every number);
* the keywords of each function still work and become the spec's fields; ``spec=`` together with
  a method keyword is an error.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import rankci
from rankci.analyses.best import tau_best
from rankci.analyses.claims import check_claims
from rankci.analyses.multibench import rank_benchmarks
from rankci.analyses.planning import plan
from rankci.leaderboard import rank, rank_by_cluster
from rankci.method import MethodSpec
from rankci.mixed.model import mixed_ranking
from rankci.simulate import simulate_scores


@pytest.fixture(scope="module")
def board():
    """Four models, 120 items in 6 clusters, clear but not total differences."""
    return simulate_scores(
        [1.0, 0.4, 0.0, -0.8], 120, n_clusters=6, sigma_cluster=0.3, rng=11
    ).scores


@pytest.fixture(scope="module")
def chembench():
    return rankci.datasets.load_chembench()


@pytest.fixture(scope="module")
def two_benchmarks(board):
    frame = board.to_frame()
    clusters = sorted(frame["cluster"].unique())
    frame["benchmark"] = frame["cluster"].map(
        {c: ("first" if i % 2 else "second") for i, c in enumerate(clusters)}
    )
    return frame.drop(columns="cluster")


def _same(a: dict, b: dict) -> None:
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _frame_dict(result) -> dict:
    frame = result.to_frame()
    return json.loads(frame.to_json(orient="split")) if isinstance(frame, pd.DataFrame) else {}


# Each case: the entry point, its data (a fixture name), the method keywords it is first called
# with, and the spec fields they must give. The re-run passes the spec instead of them (and the
# same other arguments: EXTRA, OTHER).
CASES = {
    "rank": (
        rank, "board",
        {"test": "bootstrap", "reps": 999, "alpha": 0.1, "coverage": "marginal"},
        {"test": "bootstrap", "test_options": {"reps": 999}, "alpha": 0.1,
         "coverage": "marginal"},
    ),
    "rank max-t": (
        rank, "board",
        {"multiplicity": "max-t", "draws": 300, "resampling": "bootstrap", "delta": 0.01},
        {"multiplicity": "max-t", "multiplicity_options": {"draws": 300,
                                                           "resampling": "bootstrap"},
         "delta": 0.01},
    ),
    "rank filtered": (
        rank, "chembench", {"filter_uninformative": True, "top": 2},
        {"cluster_filter": {"alpha_split": (0.3, 0.7), "top": 2}},
    ),
    "rank_by_cluster": (
        rank_by_cluster, "board", {"test": "wilcoxon", "zero_method": "pratt", "alpha": 0.2},
        {"test": "wilcoxon", "test_options": {"zero_method": "pratt"}, "alpha": 0.2},
    ),
    "rank_benchmarks": (
        rank_benchmarks, "two_benchmarks", {"alpha": 0.1, "multiplicity": "bonferroni"},
        {"alpha": 0.1, "multiplicity": "bonferroni"},
    ),
    "rank_benchmarks permutation": (
        rank_benchmarks, "two_benchmarks",
        {"test": "permutation", "reps": 499},
        {"test": "permutation", "test_options": {"reps": 499}},
    ),
    "check_claims": (
        check_claims, "board", {"alpha": 0.1, "test": "z", "unit": "item"},
        {"alpha": 0.1, "test": "z"},
    ),
    "tau_best": (
        tau_best, "board", {"multiplicity": "max-t", "draws": 200, "alpha": 0.1},
        {"multiplicity": "max-t", "multiplicity_options": {"draws": 200}, "alpha": 0.1},
    ),
    "mixed_ranking": (
        mixed_ranking, "board", {"alpha": 0.1, "multiplicity": "bonferroni", "delta": 0.01},
        {"alpha": 0.1, "multiplicity": "bonferroni", "delta": 0.01},
    ),
    "plan": (
        plan, "board", {"alpha": 0.1, "missing": "pairwise"},
        {"alpha": 0.1, "missing": "pairwise"},
    ),
}

#: arguments of a case that are not the method (given to both calls)
OTHER = {"rank_benchmarks permutation": {"overall": False}}

#: the other arguments each entry point needs besides the data and the method
EXTRA = {
    check_claims: {"claims": ["m0 > m3", "m1 >= m2 - 0.05", "m0 in top 2"]},
    tau_best: {"tau": 2},
    plan: {"covariance": "cluster", "power": 0.9},
    rank_benchmarks: {"benchmark": "benchmark"},
}


def _call(function, data, **keywords):
    extra = dict(EXTRA.get(function, {}))
    if function is check_claims:
        return function(data, extra.pop("claims"), **extra, **keywords)
    if function is tau_best:
        return function(data, extra.pop("tau"), **keywords)
    return function(data, **extra, **keywords)


@pytest.mark.parametrize("name", sorted(CASES))
# small boards: the subject is the recorded spec, not what each cluster certifies
@pytest.mark.filterwarnings("ignore:cluster '.*'. nothing is certified:rankci.RankciWarning")
def test_the_spec_is_recorded_and_round_trips_through_json(name, request):
    function, data, keywords, fields = CASES[name]
    data = request.getfixturevalue(data)
    other = OTHER.get(name, {})
    first = _call(function, data, **keywords, **other)
    spec = first.spec
    assert isinstance(spec, MethodSpec)
    for field, value in fields.items():  # the keywords became the spec's fields
        got = getattr(spec, field)
        assert (dict(got) if hasattr(got, "keys") else got) == value, field
    if spec.draws_random:
        assert spec.seed is not None  # a fresh seed, recorded
    payload = first.to_dict()
    assert payload["spec"] == spec.to_dict()
    read_back = MethodSpec.from_dict(json.loads(json.dumps(payload["spec"])))
    assert read_back == spec
    again = _call(function, data, spec=read_back, **other)
    assert again.spec == spec
    _same(again.to_dict(), payload)  # every number again
    assert _frame_dict(again) == _frame_dict(first)


@pytest.mark.parametrize("name", sorted(CASES))
def test_spec_and_a_method_keyword_together_are_an_error(name, request):
    function, data, _, _ = CASES[name]
    data = request.getfixturevalue(data)
    spec = MethodSpec(alpha=0.1)
    with pytest.raises(ValueError, match="got spec= and also alpha="):
        _call(function, data, spec=spec, alpha=0.2)


def test_the_spec_of_a_json_file_re_runs_rank(board, tmp_path):
    ranking = rank(board, test="yuen", trim=0.1, alpha=0.1)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(ranking.to_dict()["spec"]))
    again = rank(board, spec=MethodSpec.from_dict(json.loads(path.read_text())))
    _same(again.to_dict(), ranking.to_dict())


def test_the_mixed_ranking_carries_its_spec(board):
    ranking = mixed_ranking(board)
    assert ranking.spec == MethodSpec()  # the defaults: alpha 0.05, Holm, simultaneous
    assert ranking.to_dict()["spec"] == MethodSpec().to_dict()
    with pytest.raises(ValueError, match="test must be 't'"):
        mixed_ranking(board, spec=MethodSpec(test="wilcoxon"))


def test_entry_points_refuse_a_spec_they_cannot_follow(board, two_benchmarks):
    with pytest.raises(ValueError, match="unknown multiplicity 'max-t'"):
        rank_benchmarks(two_benchmarks, spec=MethodSpec(multiplicity="max-t"))
    with pytest.raises(ValueError, match="coverage"):
        rank_benchmarks(two_benchmarks, spec=MethodSpec(coverage="marginal"))
    with pytest.raises(ValueError, match="unknown test 'wilcoxon'"):
        check_claims(board, ["m0 > m1"], spec=MethodSpec(test="wilcoxon"))
    with pytest.raises(ValueError, match="delta 0"):
        check_claims(board, ["m0 > m1"], spec=MethodSpec(delta=0.01))
    with pytest.raises(ValueError, match="simultaneous"):
        tau_best(board, 1, spec=MethodSpec(coverage="marginal"))
    with pytest.raises(ValueError, match="unknown covariance 'clustered'"):
        plan(board, covariance="clustered")


def test_an_option_value_is_checked_at_every_entry_point(board, two_benchmarks):
    message = r"trim must be in \[0, 0.5\), got 0.9"
    with pytest.raises(ValueError, match=message):
        rank_benchmarks(two_benchmarks, test="yuen", trim=0.9, overall=False)
    with pytest.raises(ValueError, match=message):
        tau_best(board, 1, test="yuen", trim=0.9)
    with pytest.raises(ValueError, match=message):
        rank_by_cluster(board, test="yuen", trim=0.9)
    with pytest.raises(ValueError, match="exact_bound_n must be an integer >= 0"):
        check_claims(board, ["m0 > m1"], spec=MethodSpec.from_dict(
            {**MethodSpec().to_dict(), "test_options": {"exact_bound_n": -1}}
        ))


# m1 and m2 are close (p = 0.9): no claim is decided; the subject is the p-value the spec gives
@pytest.mark.filterwarnings("ignore:no claim is decided:rankci.RankciWarning")
def test_check_claims_follows_the_exact_bound_of_its_spec(board):
    """The spec's exact_bound_n reaches the claims' tests: with the floor over all 120 items a
    p-value is never below the exact bound, without it it is the plain paired t's. (test="t":
    on these 0/1 items the default auto takes the exact McNemar test, which needs no floor.)"""
    claim = ["m1 > m2"]
    floored = check_claims(
        board, claim, spec=MethodSpec(test="t", test_options={"exact_bound_n": 200})
    )
    plain = check_claims(board, claim, spec=MethodSpec(test="t", test_options={"exact_bound_n": 0}))
    units = board.units("item")
    reference = rankci.pairwise_tests(units, "t", exact_bound_n=0)
    j, l = units.models.index("m1"), units.models.index("m2")
    assert plain.to_dict()["claims"][0]["pvalue"] == pytest.approx(reference.pvalue[j, l])
    assert floored.to_dict()["claims"][0]["pvalue"] >= plain.to_dict()["claims"][0]["pvalue"]


def test_the_cli_records_the_method_of_benchmarks_check_and_plan(board, tmp_path):
    from rankci.cli import main

    path = tmp_path / "board.csv"
    board.to_frame().to_csv(path, index=False)
    for argv in (
        ["benchmarks", str(path), "--benchmark-col", "cluster", "--alpha", "0.1"],
        ["check", str(path), "--claim", "m0 > m3", "--alpha", "0.1"],
        ["plan", str(path), "--alpha", "0.1"],
    ):
        out = tmp_path / "out.json"
        status = main([*argv, "--format", "json", "-o", str(out)])
        assert status == 0, argv
        record = json.loads(out.read_text())["spec"]
        assert record["command"] == argv[0] and record["alpha"] == 0.1
        assert MethodSpec.from_dict(record["method"]).alpha == 0.1
