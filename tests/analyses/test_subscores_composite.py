"""Per-cluster subscores and composite scores against pandas/scipy computations."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import rankci
from rankci.analyses.composite import composite_scores
from rankci.analyses.subscores import subscores

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"


# ---------------------------------------------------------------------- subscores
# m07 scores 1 on all 12 items of cluster c028: rankci names that zero-width interval; the
# subject here is the per-cluster means and standard errors
@pytest.mark.filterwarnings("ignore:1 zero-width normal interval:rankci.RankciWarning")
def test_subscores_are_each_clusters_mean_and_normal_interval():
    scores = rankci.read_scores(ORACLES / "unbalanced.csv.gz")
    result = subscores(scores, "normal", verdict=False, missing="pairwise")
    table = pd.read_csv(ORACLES / "unbalanced.csv.gz")
    grouped = table.groupby(["cluster", "model"])["score"]
    expected = grouped.mean()
    sem = grouped.sem()
    frame = result.to_frame().set_index(["cluster", "model"])
    both = frame.index.intersection(expected.index)
    assert len(both) == len(expected)  # every (cluster, model) with scores is reported
    np.testing.assert_allclose(frame.loc[both, "score"], expected.loc[both], rtol=1e-12)
    half = stats.norm.ppf(0.975) * sem.loc[both]
    np.testing.assert_allclose(frame.loc[both, "upper"], expected.loc[both] + half, rtol=1e-10)
    # m08 has no rows in c001-c003: its subscore there is missing, not invented
    assert frame.loc[("c001", "m08"), "n"] == 0 and np.isnan(frame.loc[("c001", "m08"), "score"])


def test_cluster_methods_fall_back_to_item_methods_within_a_cluster():
    scores = rankci.read_scores(ORACLES / "small.csv.gz")
    result = subscores(scores, "cluster-bootstrap", reps=200, rng=3)
    assert result.within_method == "bootstrap" and result.method == "cluster-bootstrap"
    again = subscores(scores, "cluster-bootstrap", reps=200, rng=3)
    np.testing.assert_array_equal(result.to_frame()["lower"], again.to_frame()["lower"])
    payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert payload["within_cluster_method"] == "bootstrap"
    assert len(payload["clusters"]) == 20 and "indistinguishable" in payload["clusters"][0]
    assert repr(result) == "SubScores(20 clusters, method='bootstrap', alpha=0.05)"


def test_subscores_need_a_cluster_column():
    x = np.array([[1, 0], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match="cluster column"):
        subscores(rankci.Scores.from_matrix(x))


# ---------------------------------------------------------------------- composite
def _two_dimensions(rho: float, n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Two correlated dimensions for three models (long form with a dimension column)."""
    rng = np.random.default_rng(seed)
    rows = []
    for k, model in enumerate(["a", "b", "c"]):
        z1 = rng.normal(size=n)
        z2 = rho * z1 + np.sqrt(1 - rho**2) * rng.normal(size=n)
        for dim, z in (("quality", z1), ("adherence", z2)):
            score = np.clip(0.5 + 0.05 * k + 0.15 * z, 0, 1)
            rows.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "item": [f"q{i:03d}" for i in range(n)],
                        "dimension": dim,
                        "score": score,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def test_composite_is_the_weighted_sum_of_dimension_means():
    table = _two_dimensions(0.3)
    weights = {"quality": 0.7, "adherence": 0.3}
    result = composite_scores(table, weights, method="normal")
    means = table.groupby(["model", "dimension"])["score"].mean().unstack()
    expected = 0.7 * means["quality"] + 0.3 * means["adherence"]
    frame = result.composite.to_frame().set_index("model")
    np.testing.assert_allclose(frame.loc[expected.index, "score"], expected, rtol=1e-12)
    wide = table.pivot_table(index=["model", "item"], columns="dimension", values="score")
    per_item = (0.7 * wide["quality"] + 0.3 * wide["adherence"]).groupby("model")
    np.testing.assert_allclose(frame.loc[expected.index, "se"], per_item.sem(), rtol=1e-10)


@pytest.mark.parametrize("rho", [-0.8, 0.8])
def test_joint_bootstrap_matches_scipys_paired_bootstrap(rho):
    table = _two_dimensions(rho)
    reps = 6000
    result = composite_scores(table, {"quality": 0.5, "adherence": 0.5}, reps=reps, rng=2)
    wide = table.pivot_table(index=["model", "item"], columns="dimension", values="score")
    frame = result.composite.to_frame().set_index("model")
    for model in ("a", "b", "c"):
        q, a = wide.loc[model, "quality"].to_numpy(), wide.loc[model, "adherence"].to_numpy()
        ref = stats.bootstrap(
            (q, a),
            lambda x, y, axis=-1: 0.5 * x.mean(axis) + 0.5 * y.mean(axis),
            paired=True,
            n_resamples=reps,
            method="percentile",
            rng=np.random.default_rng(11),
        )
        density = stats.norm.pdf(stats.norm.ppf(0.025)) / ref.standard_error
        tol = 4 * np.sqrt(2 * 0.025 * 0.975 / reps) / density
        assert abs(frame.loc[model, "lower"] - ref.confidence_interval.low) < tol
        assert abs(frame.loc[model, "upper"] - ref.confidence_interval.high) < tol


def test_correlation_between_dimensions_changes_the_composite_width():
    widths = {}
    for rho in (-0.8, 0.8):
        result = composite_scores(_two_dimensions(rho), reps=2000, rng=1, verdict=False)
        comp = result.composite.to_frame().set_index("model")
        parts = [r.to_frame().set_index("model") for r in result.components.values()]
        naive = sum(0.5 * (p["upper"] - p["lower"]) for p in parts)  # the source's combination
        widths[rho] = ((comp["upper"] - comp["lower"]) / naive).mean()
    assert widths[-0.8] < 0.6  # negatively correlated dimensions cancel
    assert 0.85 < widths[0.8] < 1.05


def test_wide_and_long_inputs_give_the_same_answer():
    table = _two_dimensions(0.2)
    wide = table.pivot_table(
        index=["model", "item"], columns="dimension", values="score"
    ).reset_index()
    wide.columns.name = None
    a = composite_scores(table, {"quality": 2, "adherence": 1}, reps=300, rng=4)
    b = composite_scores(
        wide, {"quality": 2, "adherence": 1}, dimensions=["quality", "adherence"], reps=300, rng=4
    )
    assert b.dimensions == ("quality", "adherence")  # as listed; long input sorts them
    assert a.dimensions == ("adherence", "quality")

    def ordered(frame):
        return frame.sort_values(["model", "component"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(ordered(a.to_frame()), ordered(b.to_frame()))


def test_components_use_the_cells_every_dimension_has():
    table = _two_dimensions(0.0, n=50)
    drop = (
        (table["model"] == "a")
        & (table["dimension"] == "adherence")
        & (table["item"].isin(["q000", "q001", "q002"]))
    )
    result = composite_scores(table[~drop], method="normal")
    assert result.excluded["cells_excluded"] == 3
    frame = result.to_frame()
    n_a = frame[(frame["model"] == "a")]["n"].unique()
    assert n_a.tolist() == [47]
    comp = frame[frame["component"] == "composite"].set_index("model")["score"]
    parts = frame[frame["component"] != "composite"]
    weighted = (parts["weight"] * parts["score"]).groupby(parts["model"]).sum()
    np.testing.assert_allclose(comp.loc[weighted.index], weighted, rtol=1e-12)


def test_composite_result_is_json_safe_and_readable():
    result = composite_scores(_two_dimensions(0.1), reps=200, rng=0)
    payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert set(payload) == {"composite", "weights", "components", "excluded"}
    assert payload["weights"] == {"adherence": 0.5, "quality": 0.5}
    assert "indistinguishable" in payload["composite"]
    assert repr(result).startswith("CompositeScores(3 models, adherence=0.5, quality=0.5")


def test_composite_errors_name_the_problem():
    table = _two_dimensions(0.0, n=20)
    with pytest.raises(ValueError, match="unknown dimension 'speed'"):
        composite_scores(table, {"quality": 1, "adherence": 1, "speed": 1})
    with pytest.raises(ValueError, match="no weight given for dimension 'adherence'"):
        composite_scores(table, {"quality": 1})
    with pytest.raises(ValueError, match="dimension column 'kind'"):
        composite_scores(table, dimension="kind")
    with pytest.raises(ValueError, match="dimension 'quality': duplicated score"):
        composite_scores(pd.concat([table, table.iloc[:1]]))
    with pytest.raises(ValueError, match="needs a cluster column"):
        composite_scores(table, method="cluster")
