"""Planning against subsampling of pilot data and statsmodels' power calculations."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import rankci
from rankci.analyses.planning import plan

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"


@pytest.fixture(scope="module")
def medium():
    return rankci.read_scores(ORACLES / "medium.csv.gz")


def test_predicted_width_matches_subsampled_intervals(medium):
    pilot = plan(medium)
    x = medium.units().values
    n, reps = 200, 400
    rng = np.random.default_rng(0)
    rows = rng.integers(0, x.shape[0], size=(reps, n))
    samples = x[rows]  # reps x n x models: subsamples of n items from the pilot
    widths = 2 * stats.norm.ppf(0.975) * samples.std(axis=1, ddof=1) / np.sqrt(n)
    predicted = pilot.width(n)
    np.testing.assert_allclose(widths.mean(axis=0), predicted, rtol=0.02)
    # the realised spread of the subsample means is what the predicted width is about
    spread = 2 * stats.norm.ppf(0.975) * samples.mean(axis=1).std(axis=0, ddof=1)
    np.testing.assert_allclose(spread, predicted, rtol=0.12)


def test_predicted_separation_matches_the_paired_t_on_subsamples(medium):
    pilot = plan(medium)
    x = medium.units().values
    j, l = pilot.models.index("m12"), pilot.models.index("m10")
    n, reps = 800, 600
    predicted = pilot.separation_probability(n)[j, l]
    assert 0.4 < predicted < 0.8  # a pair the test can discriminate
    rng = np.random.default_rng(1)
    rows = rng.integers(0, x.shape[0], size=(reps, n))
    d = x[rows, j] - x[rows, l]
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    separated = (2 * stats.t.sf(np.abs(t), n - 1) < 0.05) & (t > 0)
    assert separated.mean() == pytest.approx(predicted, abs=4 * np.sqrt(0.25 / reps))


def test_clustered_prediction_matches_resampled_clusters(medium):
    pilot = plan(medium, covariance="cluster")
    units = medium.units()
    cluster = np.asarray(medium.item_cluster)[[medium.items.index(i) for i in units.labels]]
    by_cluster = [units.values[cluster == c] for c in np.unique(cluster)]
    k, reps = 20, 500  # 20 clusters of 50 items
    rng = np.random.default_rng(2)
    means = np.array(
        [
            np.concatenate([by_cluster[c] for c in rng.integers(0, len(by_cluster), k)]).mean(
                axis=0
            )
            for _ in range(reps)
        ]
    )
    predicted = pilot.width(k * 50) / (2 * stats.norm.ppf(0.975))
    np.testing.assert_allclose(means.std(axis=0, ddof=1), predicted, rtol=0.15)
    item_level = plan(medium).width(k * 50) / (2 * stats.norm.ppf(0.975))
    assert (predicted > 1.3 * item_level).mean() > 0.8  # the design effect is not ignored


def test_items_to_separate_agrees_with_statsmodels_power(medium):
    from statsmodels.stats.power import NormalIndPower

    pilot = plan(medium)
    sd = pilot.difference_sd()
    j, l = pilot.models.index("m12"), pilot.models.index("m10")
    gap = pilot.score[j] - pilot.score[l]
    solved = NormalIndPower().solve_power(
        effect_size=gap / sd[j, l], alpha=0.05, power=0.8, ratio=0, alternative="two-sided"
    )
    assert pilot.items_to_separate("m12", "m10") == np.ceil(solved)
    strict = plan(medium, multiplicity="bonferroni", power=0.9)
    solved = NormalIndPower().solve_power(
        effect_size=0.03 / sd[j, l], alpha=0.05 / 66, power=0.9, ratio=0, alternative="two-sided"
    )
    assert strict.items_to_separate("m12", "m10", difference=0.03) == pytest.approx(
        np.ceil(solved), abs=1
    )
    assert pilot.items_to_separate("m04", "m05", difference=0) == np.inf


def test_items_for_width_is_the_smallest_sufficient_n(medium):
    pilot = plan(medium)
    needed = pilot.items_for_width(0.03)
    assert np.all(pilot.width(needed.astype(float)).diagonal() <= 0.03)
    assert np.all(pilot.width((needed - 1).astype(float)).diagonal() > 0.03)


def test_resolution_grows_with_n_and_frames_are_json_safe(medium):
    pilot = plan(medium)
    resolution = pilot.resolution([250, 1000, 4000])
    assert resolution["separated_at_power"].is_monotonic_increasing
    assert resolution["pairs"].eq(66).all()
    pairs = pilot.pairs_frame(1000)
    assert len(pairs) == 66 and (pairs["difference"] >= 0).all()
    assert json.loads(json.dumps(pilot.to_dict(), allow_nan=False))["kind"] == "item"
    assert repr(pilot).startswith("Plan(12 models, pilot n=2000")
    curve = pilot.curve([100, 400])
    assert curve["width"].iloc[0] == pytest.approx(2 * curve["width"].iloc[12])


def test_planning_errors(medium):
    pilot = plan(medium)
    with pytest.raises(ValueError, match="unknown model 'zzz'"):
        pilot.items_to_separate("m01", "zzz")
    with pytest.raises(ValueError, match="positive number"):
        pilot.items_for_width(0)
    with pytest.raises(ValueError, match=">= 2"):
        pilot.width(1)
    with pytest.raises(ValueError, match="unknown multiplicity"):
        plan(medium, multiplicity="holm")
    with pytest.raises(ValueError, match="power"):
        plan(medium, power=1.0)
