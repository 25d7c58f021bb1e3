"""Reading HELM per-instance results (real run directories written by crfm-helm 0.5.16).

The fixtures in tests/fixtures/helm/runs were produced by helm-run (PROVENANCE.md); the reader is
checked against HELM's own aggregates in each run's stats.json.
"""

import json
import shutil
import warnings
from pathlib import Path

import pytest

import rankci
from rankci.adapters import read_helm

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "helm" / "runs"
MODELS = ("mock/medium", "mock/strong", "mock/weak")


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_helm(*args, **kwargs)


def helm_mean(run_dir: Path, metric: str, perturbation: str | None = None) -> float:
    stats = json.loads((run_dir / "stats.json").read_text())
    for stat in stats:
        name = stat["name"]
        p = name.get("perturbation")
        if name["name"] != metric or name.get("split") != "test":
            continue
        if perturbation is None and p is None:
            return stat["mean"]
        if p is not None and p.get("name") == perturbation and p["computed_on"] == "perturbed":
            return stat["mean"]
    raise AssertionError(f"{metric} not in {run_dir}")


def run_dirs():
    for run_dir in sorted((RUNS / "toy").iterdir()):
        spec = json.loads((run_dir / "run_spec.json").read_text())
        yield run_dir, spec["adapter_spec"]["model"], spec["name"].split(":")[0]


@pytest.mark.parametrize("metric", ["exact_match", "quasi_exact_match", "prefix_exact_match"])
def test_means_equal_helms_own_aggregates(metric):
    scores = read(RUNS, metric=metric)
    assert scores.models == MODELS
    frame = scores.to_frame()
    for run_dir, model, scenario in run_dirs():
        got = frame.loc[(frame["model"] == model) & (frame["cluster"] == scenario), "score"]
        assert got.mean() == pytest.approx(helm_mean(run_dir, metric), abs=1e-12)


def test_perturbations_become_prompt_variants_and_match_helm():
    scores = read(str(RUNS / "toy" / "simple_mcqa*"), perturbations=True)
    assert scores.prompts == ("mild_mix", "original")
    frame = scores.to_frame()
    for run_dir, model, _ in run_dirs():
        if "mcqa" not in run_dir.name:
            continue
        mine = frame[frame["model"] == model]
        perturbed = mine.loc[mine["prompt"] == "mild_mix", "score"].mean()
        original = mine.loc[mine["prompt"] == "original", "score"].mean()
        assert perturbed == pytest.approx(helm_mean(run_dir, "exact_match", "mild_mix"))
        assert original == pytest.approx(helm_mean(run_dir, "exact_match"))


def test_perturbed_entries_are_counted_when_left_out():
    scores = read(RUNS)
    skipped = scores.notes["perturbed_entries_skipped"]
    assert skipped == {f"{m}/simple_mcqa": 25 for m in MODELS}
    assert scores.prompts is None


def test_missing_instances_are_reported_and_items_matched_across_models():
    with pytest.warns(rankci.RankciWarning, match="'mock/weak' lacks 5"):
        scores = read_helm(RUNS)
    assert scores.notes["missing"]["items_missing_by_model"] == {"mock/weak": 5}
    states = {}
    for run_dir, model, scenario in run_dirs():
        state = json.loads((run_dir / "scenario_state.json").read_text())
        states[model, scenario] = {r["instance"]["id"] for r in state["request_states"]}
    for model in scores.models:
        ids = {i for i in scores.to_frame().query("model == @model")["item"]}
        expected = {f"{s}/{i}" for (m, s), found in states.items() if m == model for i in found}
        assert ids == expected


def test_the_mock_models_skills_are_recovered():
    """strong (0.9) > medium (0.6) > weak (0.3) on 50 items: certified by rank()."""
    ranking = rankci.rank(read(RUNS))
    assert ranking.dominance_pairs() == [
        ("mock/strong", "mock/medium"),
        ("mock/strong", "mock/weak"),
        ("mock/medium", "mock/weak"),
    ]


def test_cluster_choices():
    assert read(RUNS, cluster="group").clusters == ("simple_classification", "simple_mcqa")
    assert read(RUNS, cluster=None).clusters is None
    with pytest.raises(ValueError, match="unknown cluster 'suite'"):
        read(RUNS, cluster="suite")


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="has no per-instance stat 'f1'; it has: .*exact_match"):
        read(RUNS, metric="f1")
    with pytest.raises(ValueError, match="no HELM per_instance_stats.json"):
        read(tmp_path)
    shutil.copytree(RUNS / "toy", tmp_path / "a")
    shutil.copytree(RUNS / "toy", tmp_path / "b")
    with pytest.raises(ValueError, match="model 'mock/medium' has two runs of scenario"):
        read(tmp_path)
