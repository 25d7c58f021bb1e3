"""The method specification: validated once, stored on every ranking, JSON round trip, re-run."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import rankci
from rankci.method import MULTIPLICITY_OPTIONS, TEST_OPTIONS, MethodSpec


@pytest.fixture(scope="module")
def chembench():
    return rankci.datasets.load_chembench()


def test_defaults_are_the_documented_ones():
    spec = MethodSpec()
    assert (spec.unit, spec.test, spec.coverage, spec.alpha, spec.delta, spec.missing,
            spec.multiplicity, spec.seed) == ("item", "auto", "simultaneous", 0.05, 0.0, "complete",
                                              "holm", None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"unit": "subject"}, "unknown unit 'subject'"),
        ({"test": "ttest"}, "unknown test 'ttest'"),
        ({"alpha": 1.5}, "alpha must be a number strictly between 0 and 1"),
        ({"alpha": True}, "alpha must be a number"),
        ({"delta": -0.1}, "delta must be a finite number >= 0"),
        ({"delta": float("nan")}, "delta must be a finite number >= 0"),
        ({"missing": "drop"}, "unknown missing 'drop'"),
        ({"multiplicity": "fdr"}, "unknown multiplicity 'fdr'"),
        ({"seed": -1}, "seed must be None or an integer >= 0"),
        ({"test": "yuen", "test_options": {"reps": 10}}, "test='yuen' takes the options trim"),
        ({"multiplicity": "max-t", "test": "wilcoxon"}, "cannot be combined with test='wilcoxon'"),
        ({"multiplicity": "max-t", "multiplicity_options": {"resampling": "jackknife"}},
         "unknown resampling 'jackknife'"),
        ({"cluster_filter": {"alpha_split": (0.9, 0.9), "top": 3}}, "summing to <= 1"),
        ({"trials": "best@3"}, "trials must be mean, pass@K or pass"),
        ({"trials": "pass@0"}, "trials must be mean, pass@K or pass"),
        ({"trials": 3}, "trials must be mean, pass@K or pass"),
    ],
)
def test_bad_fields_are_refused_when_the_spec_is_made(fields, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MethodSpec(**fields)


def test_the_spec_is_frozen_and_replace_validates_again():
    spec = MethodSpec()
    with pytest.raises(AttributeError):
        spec.alpha = 0.1  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.test_options["trim"] = 0.1  # type: ignore[index]
    assert spec.replace(alpha=0.1).alpha == 0.1
    with pytest.raises(ValueError, match="alpha must be"):
        spec.replace(alpha=2.0)
    with pytest.raises(ValueError, match="has no field 'level'"):
        spec.replace(level=0.1)


def test_every_option_name_belongs_to_one_test_or_procedure():
    names = [n for group in (*TEST_OPTIONS.values(), *MULTIPLICITY_OPTIONS.values()) for n in group]
    for test, options in TEST_OPTIONS.items():
        assert len(set(options)) == len(options), test
    # reps is shared by the resampling tests, the exact floor for few units by t and z, trim by
    # yuen and the bootstrap-t of trimmed means (issue 26); nothing else is shared
    assert {n for n in names if names.count(n) > 1} == {"reps", "exact_bound_n", "trim"}
    # a shared name is one option: the same default, type and range wherever it appears
    from rankci.registry import TEST_REGISTRY

    for name in ("reps", "exact_bound_n", "trim"):
        declared = {e.option(name) for e in TEST_REGISTRY.values() if name in e.option_names}
        assert len(declared) == 1, name


@pytest.mark.parametrize(
    "spec",
    [
        MethodSpec(),
        MethodSpec(test="wilcoxon", test_options={"zero_method": "pratt"}, coverage="marginal"),
        MethodSpec(multiplicity="max-t", multiplicity_options={"draws": 200, "stepdown": False},
                   seed=7),
        MethodSpec(cluster_filter={"alpha_split": (0.3, 0.7), "top": 2}),
        MethodSpec(trials="pass^3"),
        MethodSpec(trials="mean", test="t"),
    ],
)
def test_json_round_trip(spec):
    text = json.dumps(spec.to_dict(), allow_nan=False)
    assert MethodSpec.from_dict(json.loads(text)) == spec


def test_from_dict_names_an_unknown_field():
    with pytest.raises(ValueError, match="unknown field 'level'"):
        MethodSpec.from_dict({"level": 0.1})


def test_every_ranking_records_its_spec_and_reruns_from_it(chembench):
    ranking = rankci.rank(chembench, test="yuen", trim=0.1, alpha=0.1)
    assert ranking.spec == MethodSpec(test="yuen", test_options={"trim": 0.1}, alpha=0.1)
    assert ranking.to_dict()["spec"] == ranking.spec.to_dict()
    again = rankci.rank(chembench, spec=MethodSpec.from_dict(ranking.to_dict()["spec"]))
    assert again.lower.tolist() == ranking.lower.tolist()
    assert again.upper.tolist() == ranking.upper.tolist()


def test_a_random_method_records_the_seed_it_used_and_reproduces(chembench):
    small = chembench.subset(models=list(chembench.models[:6]))
    first = rankci.rank(small, multiplicity="max-t", draws=300)
    assert first.spec.seed is not None  # drawn fresh, and recorded
    again = rankci.rank(small, spec=first.spec)
    assert again.details["critical_values"] == first.details["critical_values"]
    seeded = rankci.rank(small, multiplicity="max-t", draws=300, rng=first.spec.seed)
    assert seeded.details["critical_values"] == first.details["critical_values"]
    assert rankci.rank(small).spec.seed is None  # the t test with Holm draws nothing


def test_a_generator_is_used_as_given_and_recorded_as_no_seed(chembench):
    small = chembench.subset(models=list(chembench.models[:5]))
    a = rankci.rank(small, test="bootstrap", reps=999, rng=np.random.default_rng(3))
    b = rankci.rank(small, test="bootstrap", reps=999, rng=np.random.default_rng(3))
    assert a.spec.seed is None
    np.testing.assert_array_equal(a.pairwise.pvalue, b.pairwise.pvalue)


def test_spec_and_keywords_together_are_an_error(chembench):
    with pytest.raises(ValueError, match="got spec= and also alpha="):
        rankci.rank(chembench, spec=MethodSpec(), alpha=0.1)


def test_an_unknown_keyword_lists_the_keywords_of_rank(chembench):
    with pytest.raises(ValueError, match="rank\\(\\) got an unknown option 'seed'") as error:
        rankci.rank(chembench, seed=1)
    assert "rng" in str(error.value) and "multiplicity" in str(error.value)
    with pytest.raises(ValueError, match="unknown option 'alternative'"):
        rankci.rank(chembench, alternative="greater")


def test_the_cluster_filter_is_part_of_the_spec(chembench):
    filtered = rankci.rank(chembench, filter_uninformative=True)
    assert filtered.spec.cluster_filter == {"alpha_split": (0.3, 0.7), "top": 3}
    again = rankci.rank(chembench, spec=filtered.spec)
    assert again.details["filter"] == filtered.details["filter"]
    assert again.upper.tolist() == filtered.upper.tolist()


def test_per_cluster_rankings_share_one_spec(chembench):
    by = rankci.rank_by_cluster(chembench, unit="item")
    assert all(r.spec == by.spec for r in by.rankings.values())


def test_names_dropped_before_the_first_release_are_plain_errors(chembench):
    """The pre-release shims are gone: an old keyword is a TypeError, an old attribute missing."""
    with pytest.raises(TypeError, match="method"):
        rankci.adjust_pvalues([0.01, 0.2], method="holm")
    ranking = rankci.rank(chembench)
    assert not hasattr(ranking, "method")
    with pytest.raises(TypeError, match="method"):
        rankci.ranking_from_dominance(
            ["a", "b"], [0.9, 0.1], np.zeros((2, 2), dtype=bool), alpha=0.05,
            coverage="simultaneous", method={}, n_units=1, excluded={}, guarantee="",
        )
    with pytest.raises(TypeError, match="kind"):
        rankci.plan(chembench, kind="item")
    with pytest.raises(TypeError, match="method"):
        rankci.pairwise_tests(chembench.units("item", "complete"), "wilcoxon", method="approx")


def test_every_name_in_all_resolves_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in rankci.__all__:
            assert getattr(rankci, name) is not None, name


def trial_frame(seed: int = 0, n_items: int = 40, n_trials: int = 4):
    """Three models' 0/1 trials (model a strongest), long, with a cluster column."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = [
        (m, f"q{i:02d}", f"c{i % 2}", t, int(rng.random() < p))
        for m, p in (("a", 0.85), ("b", 0.5), ("c", 0.2))
        for i in range(n_items)
        for t in range(n_trials)
    ]
    return pd.DataFrame(rows, columns=["model", "item", "cluster", "trial", "score"])


def test_the_per_item_rule_is_recorded_in_the_spec_by_every_entry_point():
    from rankci.analyses.claims import check_claims
    from rankci.data import Scores

    frame = trial_frame()
    scores = Scores.from_frame(frame, cluster="cluster", trial="trial", per_item="pass@2")
    assert rankci.rank(scores).spec.trials == "pass@2"
    assert rankci.rank(Scores.from_frame(frame, trial="trial")).spec.trials == "mean"
    plain = Scores.from_frame(frame[frame.trial == 0].drop(columns="trial"))
    assert rankci.rank(plain).spec.trials is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        by_cluster = rankci.rank_by_cluster(scores)
    assert {r.spec.trials for r in by_cluster.rankings.values()} == {"pass@2"}
    check = check_claims(scores, ["a > c"])
    assert check.spec.trials == "pass@2"
    assert check.details["repeated_trials"]["per_item"] == "pass@2"
    assert check.guarantee.endswith("so a model's score is its mean pass@2 over the items.")
    assert rankci.plan(scores).spec.trials == "pass@2"
    mixed = rankci.mixed_ranking(scores)
    assert mixed.spec.trials == "pass@2"
    assert "unbiased pass@2 over its trials (4 per item)" in mixed.guarantee
    assert mixed.details["repeated_trials"]["per_item"] == "pass@2"
    # the JSON output carries it, and it reads back
    text = json.loads(json.dumps(rankci.rank(scores).to_dict()))
    assert MethodSpec.from_dict(text["spec"]).trials == "pass@2"


def test_a_spec_with_a_rule_rescores_trial_data_and_reruns_the_same_ranking():
    from rankci.data import Scores

    frame = trial_frame(seed=3)
    first = rankci.rank(Scores.from_frame(frame, trial="trial", per_item="pass^2"))
    again = rankci.rank(Scores.from_frame(frame, trial="trial"), spec=first.spec)
    assert again.spec == first.spec
    assert again.to_frame().equals(first.to_frame())
    assert again.details["repeated_trials"]["per_item"] == "pass^2"
    assert again.guarantee == first.guarantee
    # the scores behind it are the pass^2 scores (brute force over the pairs of trials)
    cell = frame[(frame.model == "b") & (frame.item == "q05")]["score"].tolist()
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    expected = np.mean([cell[i] and cell[j] for i, j in pairs])
    rescored = Scores.from_frame(frame, trial="trial").per_item(again.spec.trials)
    got = rescored.to_frame().set_index(["model", "item"])["score"][("b", "q05")]
    assert got == pytest.approx(expected)


def test_a_rule_on_scores_without_trials_is_an_error_naming_the_caller():
    from rankci.data import Scores

    frame = trial_frame()
    plain = Scores.from_frame(frame[frame.trial == 0].drop(columns="trial"))
    with pytest.raises(ValueError, match=r"rank\(\): the spec's trials='pass@2'.*no trial column"):
        rankci.rank(plain, spec=MethodSpec(trials="pass@2"))
    fitted = rankci.mixed_model(Scores.from_frame(frame, trial="trial", per_item="pass@2"))
    assert rankci.mixed_ranking(fitted).spec.trials == "pass@2"
    with pytest.raises(ValueError, match="fitted to per-item pass@2 scores"):
        rankci.mixed_ranking(fitted, spec=MethodSpec(test="t", trials="mean"))


def test_describe_names_the_rule():
    assert "per-item pass@3 over trials" in MethodSpec(trials="pass@3").describe()
    assert "trials" not in MethodSpec().describe()


def test_rank_benchmarks_records_the_rule_of_benchmarks_read_with_trials():
    from rankci.analyses.multibench import rank_benchmarks
    from rankci.data import Scores

    parts = {
        name: Scores.from_frame(trial_frame(seed=k), trial="trial", per_item="pass@2")
        for k, name in enumerate(("x", "y"))
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        result = rank_benchmarks(parts)
        assert result.spec.trials == "pass@2"
        assert "unbiased pass@2 over its trials (4 per item)" in result.guarantee
        # the spec re-runs the rule on the same trials read with the mean
        means = {n: Scores.from_frame(trial_frame(seed=k), trial="trial")
                 for k, n in enumerate(("x", "y"))}
        again = rank_benchmarks(means, spec=result.spec)
        assert again.guarantee == result.guarantee
        plain = {n: Scores.from_frame(trial_frame(seed=k)[lambda f: f.trial == 0]
                                      .drop(columns="trial"))
                 for k, n in enumerate(("x", "y"))}
        with pytest.raises(ValueError, match=r"rank_benchmarks\(\): the spec's trials='pass@2'"):
            rank_benchmarks(plain, spec=result.spec)
