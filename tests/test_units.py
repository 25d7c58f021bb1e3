"""Aggregation into units of analysis, checked against pandas group-bys."""

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.simulate import simulate_scores


@pytest.fixture(scope="module")
def prompted():
    sim = simulate_scores(
        [0.3, 0.0, -0.2], 60, n_clusters=6, n_prompts=3, sigma_cluster=0.5, missing_rate=0.05, rng=1
    )
    return sim.scores, sim.scores.to_frame()


def _pivot(frame, keys):
    return frame.groupby([*keys, "model"], observed=True)["score"].mean().unstack("model")


@pytest.mark.parametrize(
    "unit,keys",
    [
        ("observation", ["item", "prompt"]),
        ("item", ["item"]),
        ("cluster", ["cluster"]),
        ("prompt", ["prompt"]),
    ],
)
def test_pairwise_units_are_available_case_means(prompted, unit, keys):
    scores, frame = prompted
    units = scores.units(unit, "pairwise")
    expected = _pivot(frame, keys)
    np.testing.assert_allclose(units.values, expected.to_numpy(), rtol=1e-12)
    assert units.models == tuple(expected.columns)


@pytest.mark.parametrize(
    "unit,keys", [("item", ["item"]), ("cluster", ["cluster"]), ("prompt", ["prompt"])]
)
def test_complete_units_average_the_observations_every_model_has(prompted, unit, keys):
    scores, frame = prompted
    counts = frame.groupby(["item", "prompt"], observed=True)["model"].transform("size")
    complete = frame[counts == scores.n_models]
    units = scores.units(unit, "complete")
    np.testing.assert_allclose(units.values, _pivot(complete, keys).to_numpy(), rtol=1e-12)
    n_obs = frame.groupby(["item", "prompt"], observed=True).ngroups
    excluded = units.excluded
    assert (
        excluded["observations_excluded"]
        == n_obs - complete.groupby(["item", "prompt"], observed=True).ngroups
    )
    assert excluded["rows_excluded"] == len(frame) - len(complete)
    missing = n_obs - frame.groupby("model", observed=True).size()
    assert excluded["missing_cells_by_model"] == {m: int(c) for m, c in missing.items() if c}


def test_units_need_their_columns_and_known_names():
    scores = rankci.Scores.from_matrix(np.eye(3))
    with pytest.raises(ValueError, match="needs a cluster column"):
        scores.units("cluster")
    with pytest.raises(ValueError, match="needs a prompt column"):
        scores.units("prompt")
    with pytest.raises(ValueError, match="unknown unit 'subject'"):
        scores.units("subject")
    with pytest.raises(ValueError, match="unknown missing 'drop'"):
        scores.units("item", "drop")


def test_nothing_complete_is_a_clear_error():
    x = np.array([[1, np.nan], [np.nan, 0.0]])
    with pytest.raises(ValueError, match="no item is scored by every model"):
        rankci.Scores.from_matrix(x).units("item", "complete")


def test_binary_flag_follows_the_unit(prompted):
    scores, _ = prompted
    assert scores.units("observation", "pairwise").binary
    assert not scores.units("cluster", "pairwise").binary


def test_subset_and_round_trip(prompted):
    scores, frame = prompted
    part = scores.subset(clusters=["c0", "c1"], models=["m0", "m2"])
    assert part.models == ("m0", "m2") and part.clusters == ("c0", "c1")
    again = rankci.read_scores(scores.to_frame())
    pd.testing.assert_frame_equal(again.to_frame(), frame)
    with pytest.raises(ValueError, match="unknown cluster 'c99'"):
        scores.subset(clusters=["c99"])


def test_simulated_scores_equal_their_validated_round_trip():
    sim = simulate_scores([0.5, 0.0, -0.5], 40, n_clusters=4, n_prompts=2, missing_rate=0.1, rng=5)
    frame = sim.scores.to_frame()
    again = rankci.read_scores(frame)
    pd.testing.assert_frame_equal(again.to_frame(), frame)
    np.testing.assert_array_equal(again.units("observation", "pairwise").values, sim.matrix)


def test_the_range_scan_and_means_are_kept_only_while_the_matrix_is_read_only():
    """Scores.units() makes the matrix read-only: its range scan and means are computed once,
    equal to fresh ones, and handed out read-only; a writeable matrix is scanned on every call."""
    from rankci.data import UnitScores
    from rankci.evidence.moments import scan_range

    rng = np.random.default_rng(3)
    units = rankci.Scores.from_matrix(rng.random((40, 5))).units()
    assert not units.values.flags.writeable
    first = units.model_scores()
    assert first is units.model_scores()  # kept
    assert not first.flags.writeable
    np.testing.assert_array_equal(first, units.values.sum(axis=0) / 40)
    assert units.range_scan() == scan_range(units.values)

    values = rng.random((6, 3))
    plain = UnitScores(values, ("a", "b", "c"), tuple("uvwxyz"), "item", "complete", {}, False)
    before = plain.model_scores()
    values[0, 0] = np.nan  # a writeable matrix changed after a call: nothing stale
    assert plain.range_scan()[0] is False
    assert plain.model_scores()[0] == values[1:, 0].mean() != before[0]
