"""Few clusters (issue 25, item 2): below 30 clusters every cluster-robust interval and the
clustered verdict carry a warning naming G, the largest cluster's share of the items and the
effective number of clusters G* (rho = 1), what the real-population study measured and what to do
(validation/few_clusters_real.py). The expected G* values are computed by hand here, not by
rankci's ``effective_clusters``.
"""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci import RankciWarning
from rankci.analyses.intervals import score_intervals


def _scores(sizes, seed=3) -> rankci.Scores:
    """Three models; cluster g has sizes[g] items; scores 0/1 at random."""
    rng = np.random.default_rng(seed)
    rows = []
    item = 0
    for g, size in enumerate(sizes):
        for _ in range(size):
            for model, p in (("a", 0.7), ("b", 0.5), ("c", 0.3)):
                rows.append((model, f"q{item}", f"topic{g}", float(rng.random() < p)))
            item += 1
    frame = pd.DataFrame(rows, columns=["model", "item", "cluster", "score"])
    return rankci.Scores.from_frame(frame, cluster="cluster")


@pytest.mark.parametrize("method", ["cluster", "cluster-bootstrap", "cluster-wild"])
def test_fewer_than_30_clusters_warn_naming_g_share_and_g_star(method):
    sizes = [36, 8, 8, 8, 8, 8, 8, 8, 8]  # 100 items, the largest 36 %
    g_star = sum(n**2 for n in sizes) ** 2 / sum(n**4 for n in sizes)  # by hand: 1.49...
    with pytest.warns(RankciWarning) as caught:
        result = score_intervals(_scores(sizes), method, rng=1)
    texts = [str(w.message) for w in caught]
    expected_start = (
        f"9 clusters, the largest 36 % of the items (effective number of clusters "
        f"G* = {g_star:.1f})"
    )
    ours = [t for t in texts if t.startswith(expected_start)]
    assert len(ours) == 1, texts
    text = ours[0]
    assert "0.841-0.921 (ChemBench)" in text and "up to 20 % of draws" in text
    assert "use item units for these clusters" in text.lower()
    # in the result: the options (JSON) and the guarantee (text output)
    assert result.options["few_clusters_warning"] == text
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["options"]["few_clusters_warning"] == text
    assert text in result.guarantee


def test_thirty_clusters_do_not_warn():
    result_sizes = [4] * 30
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        result = score_intervals(_scores(result_sizes), "cluster")
    assert "few_clusters_warning" not in result.options
    assert "Warning:" not in result.guarantee


def test_item_units_of_the_same_data_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        result = score_intervals(_scores([36, 8, 8]), "normal")
    assert "few_clusters_warning" not in result.options


def test_no_switch_to_plain_hc0_at_50_clusters():
    """ "auto" is CR2 at 60 clusters too: the HC0 switch at 50 lost coverage on real data."""
    scores = _scores([3] * 30 + [5] * 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        auto = score_intervals(scores, "cluster")
        cr2 = score_intervals(scores, "cluster", small_sample="cr2")
        hc0 = score_intervals(scores, "cluster", small_sample=False)
    assert auto.options["small_sample"] == "cr2"
    np.testing.assert_array_equal(auto.lower, cr2.lower)
    np.testing.assert_array_equal(auto.upper, cr2.upper)
    assert (auto.upper - auto.lower > hc0.upper - hc0.lower).all()


@pytest.mark.parametrize("method", ["cluster", "cluster-bootstrap", "cluster-wild"])
@pytest.mark.parametrize("n_clusters", [2, 5])
def test_five_clusters_or_fewer_give_no_finite_interval_and_say_why(method, n_clusters):
    scores = _scores([20] * n_clusters)
    with pytest.warns(RankciWarning) as caught:
        result = score_intervals(scores, method, rng=1)
    assert np.isnan(result.lower).all() and np.isnan(result.upper).all()
    why = [str(w.message) for w in caught if "2/2^G" in str(w.message)]
    assert len(why) == 1
    assert result.options["few_clusters_refusal"] == why[0]  # in the result (JSON) too
    assert why[0] in result.guarantee  # and in the text output
    assert f"with {n_clusters} clusters" in why[0]
    assert f"2/2^G = {2 / 2**n_clusters:.3g}" in why[0]
    assert "use item units for these clusters" in why[0].lower()


@pytest.mark.parametrize("method", ["cluster", "cluster-wild"])
def test_six_clusters_give_finite_intervals(method):
    with pytest.warns(RankciWarning, match="6 clusters, the largest 17 %"):  # and says why
        result = score_intervals(_scores([20] * 6), method)
    assert np.isfinite(result.lower).all() and np.isfinite(result.upper).all()


# ------------------------------------------------------------------ the wild cluster bootstrap
def test_the_warning_of_cr2_points_to_cluster_wild_with_its_measured_coverage():
    """validation/few_clusters_real.py at G = 7-20: the wild bootstrap covered 0.872-0.921
    (ChemBench) and 0.928-0.945 (MMLU-Pro), CR2 0.848-0.910 and 0.909-0.934."""
    scores = _scores([36, 8, 8, 8, 8, 8, 8, 8, 8])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cr2 = score_intervals(scores, "cluster")
        wild = score_intervals(scores, "cluster-wild", rng=0)
    for result in (cr2, wild):
        text = result.options["few_clusters_warning"]
        assert "0.872-0.921 (ChemBench) and 0.928-0.945 (MMLU-Pro)" in text
        assert "0.848-0.910 and 0.909-0.934" in text
    assert "method='cluster-wild'" in cr2.options["few_clusters_warning"]
    assert "method='cluster-wild'" not in wild.options["few_clusters_warning"]


def test_cluster_wild_records_weights_draws_enumeration_and_seed_in_the_json():
    scores = _scores([10] * 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = score_intervals(scores, "cluster-wild", rng=4, wild_weights="webb")
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["method"] == "cluster-wild"
    options = payload["options"]
    assert options["wild_weights"] == "webb" and options["studentization"] == "CR1"
    assert options["seed"] == 4 and options["reps"] == 1000
    assert options["draws"] == 1000 and options["enumerated"] is False  # 6^8 > 1000
    assert "test" in options["interval"] and options["n_clusters"] == 8
    assert "Webb weights" in payload["guarantee"]
    # the verdict stays the clustered paired t (CR2), and says why
    assert payload["paired"]["test"] == "clustered-t"
    assert "needs B >= M(M - 1)/alpha" in payload["guarantee"]
    with pytest.raises(ValueError, match="wild_weights='webb' is an option of method='cluster"):
        score_intervals(scores, "cluster", wild_weights="webb")
    with pytest.raises(ValueError, match="wild_weights"):
        score_intervals(scores, "cluster-wild", wild_weights="mammen")


def test_cluster_wild_says_why_an_interval_is_unbounded():
    """G = 6, all 64 sign vectors: the symmetric p-value is >= 2/64 = 0.031, so at alpha = 0.01
    no value of the mean is rejected: the whole line, named with the reason."""
    with pytest.warns(RankciWarning) as caught:
        result = score_intervals(_scores([15] * 6), "cluster-wild", alpha=0.01, rng=0)
    assert np.isneginf(result.lower).all() and np.isposinf(result.upper).all()
    assert set(result.options["unbounded"]) == {"a", "b", "c"}
    reason = result.options["unbounded"]["a"]
    assert "either side" in reason and "about 0.0312" in reason and "6 clusters" in reason
    assert any("unbounded interval" in str(w.message) for w in caught)
    assert "unbounded" in result.guarantee


def test_cluster_wild_refuses_a_model_with_items_in_five_clusters_or_fewer():
    """missing='pairwise': model c has items in 5 of the 8 clusters only (no interval, named,
    with the 2/2^G reason); a and b keep theirs, the dropped clusters are counted."""
    scores = _scores([10] * 8)
    frame = scores.to_frame()
    frame = frame[
        ~((frame["model"] == "c") & frame["cluster"].isin(["topic0", "topic1", "topic2"]))
    ]
    holey = rankci.Scores.from_frame(frame, cluster="cluster")
    with pytest.warns(RankciWarning) as caught:
        result = score_intervals(holey, "cluster-wild", missing="pairwise", rng=0)
    index = {m: j for j, m in enumerate(result.models)}
    assert np.isnan(result.lower[index["c"]]) and np.isnan(result.upper[index["c"]])
    assert np.isfinite(result.lower[index["a"]]) and np.isfinite(result.upper[index["b"]])
    assert result.options["dropped_clusters"] == {"c": 3}
    assert list(result.options["refused_models"]) == ["c"]
    assert "items in only 5 of the 8 clusters" in result.options["refused_models"]["c"]
    assert "2/2^G = 0.0625" in result.options["refused_models"]["c"]
    assert any("get no interval" in str(w.message) for w in caught)


def test_cluster_wild_is_the_studys_wcr():
    """score_intervals(method="cluster-wild") computes what validation/few_clusters_real.py
    measured as "WCR Rademacher": wild_cluster_means on the cluster sums, CR1, 30 bisection
    steps, the weights drawn from the seed (here 7 ChemBench topics: all 128 sign vectors)."""
    from rankci.evidence.wild_cluster import cluster_totals, wild_cluster_means

    scores = rankci.datasets.load_chembench()
    topics = sorted(set(scores.to_frame()["cluster"]))[:7]
    frame = scores.to_frame()
    part = rankci.Scores.from_frame(frame[frame["cluster"].isin(topics)], cluster="cluster")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = score_intervals(part, "cluster-wild", rng=3, verdict=False)
    units = part.units("item", missing="complete")
    sums, sizes = cluster_totals(units.values, units.unit_cluster)
    study = wild_cluster_means(sums, sizes, alpha=0.05, weights="rademacher", reps=999,
                               statistic="t", rng=3, steps=30)  # fmt: skip
    assert result.options["draws"] == study.reps == 128 and study.enumerated
    np.testing.assert_array_equal(result.lower, study.lower)
    np.testing.assert_array_equal(result.upper, study.upper)
