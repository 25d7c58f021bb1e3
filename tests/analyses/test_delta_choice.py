"""δ chosen by a sample split or an α split (issue 26, seed 000): what is computed, on which units,
and the guarantee stated in the text and the JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

import rankci
from rankci import Scores
from rankci.analyses.delta_choice import choose_delta, reference_gap_bound

MODELS = ["a", "a-rerun", "b", "c"]


@pytest.fixture(scope="module")
def scores() -> Scores:
    gen = np.random.default_rng(0)
    x = np.clip(gen.normal([0.70, 0.68, 0.55, 0.40], 0.1, size=(300, 4)), 0, 1)
    return Scores.from_matrix(x, models=MODELS)


def _matrix(s: Scores) -> np.ndarray:
    units = s.units()
    return units.values[:, [units.models.index(m) for m in MODELS]]


def test_the_bound_is_the_larger_end_of_the_t_interval(scores):
    x = _matrix(scores)
    d = x[:, 0] - x[:, 1]
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence_level=0.985)
    got = reference_gap_bound(scores.units(), ("a", "a-rerun"), 0.015)
    assert got["lower"] == pytest.approx(ci.low, rel=1e-12)
    assert got["upper"] == pytest.approx(ci.high, rel=1e-12)
    assert got["bound"] == pytest.approx(max(abs(ci.low), abs(ci.high)), rel=1e-12)
    assert got["estimate"] == pytest.approx(abs(d.mean()), rel=1e-12) and got["n"] == 300


def test_alpha_split_ranks_all_units_at_the_rest_of_alpha(scores):
    result = choose_delta(scores, how="alpha-split", reference=("a", "a-rerun"), alpha=0.05)
    x = _matrix(scores)
    d = x[:, 0] - x[:, 1]
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence_level=1 - 0.015)
    assert result.delta == pytest.approx(max(abs(ci.low), abs(ci.high)), rel=1e-12)
    direct = rankci.rank(scores, alpha=0.035, delta=result.delta)
    assert np.array_equal(result.ranking.dominance, direct.dominance)
    assert result.ranking.alpha == pytest.approx(0.035) and result.ranking.n_units == 300
    text = result.guarantee
    assert text.startswith("With probability at least 95%, every certified")
    assert "|theta_a - theta_a-rerun|" in text and "alpha_delta = 0.015" in text
    assert "alpha = 0.035" in text
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["guarantee"] == text and payload["how"] == "alpha-split"
    assert payload["selection"]["alpha_delta"] == pytest.approx(0.015)
    assert payload["ranking"]["alpha"] == pytest.approx(0.035)


def test_sample_split_chooses_on_one_part_and_ranks_the_other(scores):
    result = choose_delta(scores, how="split", reference=("a", "a-rerun"), fraction=0.4, rng=9)
    record = result.selection
    assert record["choosing_units"] == 120 and record["testing_units"] == 180
    assert record["seed"] == 9 and record["split_by"] == "items"
    # the parts: the documented draw (a permutation of the items), disjoint and complete
    order = np.random.default_rng(9).permutation(scores.n_items)
    choose = sorted(scores.items[i] for i in order[:120])
    test = sorted(scores.items[i] for i in order[120:])
    part = scores.subset(items=choose).units()
    d = part.values[:, part.models.index("a")] - part.values[:, part.models.index("a-rerun")]
    assert result.delta == pytest.approx(abs(d.mean()), rel=1e-12)
    assert result.ranking.n_units == 180
    direct = rankci.rank(scores.subset(items=test), delta=result.delta)
    assert np.array_equal(result.ranking.dominance, direct.dominance)
    # the ranking's result says it used a subsample
    sub = result.ranking.to_dict()["excluded"]["subsample"][0]
    assert sub["items_kept"] == 180 and sub["items_dropped"] == 120
    assert "on 120 items drawn at random (seed 9)" in result.guarantee
    assert "uses only the other 180" in result.guarantee


def test_sample_split_takes_any_rule(scores):
    seen = []

    def half_sd(units):
        seen.append(units.n_units)
        return 0.5 * float(np.std(units.values[:, 0] - units.values[:, 1], ddof=1))

    result = choose_delta(scores, rule=half_sd, rng=1)
    assert seen == [150] and result.selection["rule"] == "half_sd"
    assert result.ranking.spec.delta == pytest.approx(result.delta)


# 7 cluster units certify nothing here: the subject is the split by cluster units
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_split_by_cluster_units():
    gen = np.random.default_rng(3)
    x = gen.random((60, 3))
    clusters = [f"c{i // 6}" for i in range(60)]
    s = Scores.from_matrix(x, clusters=clusters)
    result = choose_delta(s, reference=("m0", "m1"), unit="cluster", rng=2, fraction=0.3)
    assert result.selection["split_by"] == "clusters"
    assert result.selection["choosing_units"] == 3 and result.ranking.n_units == 7


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"how": "bogus"}, "unknown how 'bogus'"),
        ({"how": "split"}, "exactly one of reference= and rule="),
        ({"how": "alpha-split"}, "needs reference="),
        ({"how": "alpha-split", "reference": ("a", "b"), "rule": len}, "not rule="),
        ({"how": "alpha-split", "reference": ("a", "b"), "alpha_delta": 0.06},
         "alpha_delta must be below alpha=0.05"),
        ({"reference": ("a", "zz")}, "reference: unknown model 'zz'"),
        ({"reference": ("a", "a")}, "two different models"),
        ({"reference": ("a", "b"), "fraction": 1.0}, "fraction must be strictly between"),
        ({"reference": ("a", "b"), "delta": 0.1}, "do not pass delta="),
        ({"rule": lambda u: -1.0}, "rule must return a finite number >= 0"),
    ],
)
def test_bad_arguments_are_named(scores, kwargs, words):
    with pytest.raises(ValueError, match=words):
        choose_delta(scores, **kwargs)
