"""Scores.subset by items per cluster and by prompt subsets N_T (seed 000's subsampling helpers),
on small hand-made tables."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci import Scores
from rankci._base import RankciWarning
from rankci.subsampling import draw_items_per_cluster

#: 3 clusters with 4, 2 and 3 items; 2 models; 2 prompt variants; score = a code of the row
ITEMS = {"c1": ["q1", "q2", "q3", "q4"], "c2": ["q5", "q6"], "c3": ["q7", "q8", "q9"]}


def _table() -> pd.DataFrame:
    rows = []
    for cluster, items in ITEMS.items():
        for item in items:
            for prompt in ("p1", "p2"):
                for model, base in (("A", 0.6), ("B", 0.4)):
                    score = base + 0.01 * int(item[1:]) + (0.005 if prompt == "p2" else 0.0)
                    rows.append((model, item, cluster, prompt, score))
    return pd.DataFrame(rows, columns=["model", "item", "cluster", "prompt", "score"])


@pytest.fixture
def scores() -> Scores:
    return Scores.from_frame(_table(), cluster="cluster", prompt="prompt")


def _kept(sub: Scores) -> dict[str, list[str]]:
    frame = sub.to_frame()
    return {
        str(c): sorted(set(frame.loc[frame["cluster"] == c, "item"])) for c in sub.clusters
    }


def test_k_items_per_cluster_with_every_row_of_the_kept_items(scores):
    with pytest.warns(RankciWarning, match=r"'c2' \(2\)"):
        sub = scores.subset(items_per_cluster=3, rng=5)
    kept = _kept(sub)
    assert [len(kept[c]) for c in ("c1", "c2", "c3")] == [3, 2, 3]
    assert kept["c2"] == ["q5", "q6"] and kept["c3"] == ["q7", "q8", "q9"]
    assert set(kept["c1"]) < set(ITEMS["c1"])
    # a kept item keeps all its rows: 2 models x 2 prompts, with the original scores
    frame = sub.to_frame()
    assert len(frame) == 8 * 4
    original = _table().set_index(["model", "item", "prompt"])["score"]
    for row in frame.itertuples():
        assert row.score == original[(row.model, row.item, row.prompt)]
    record = sub.notes["excluded"]["subsample"][0]
    assert record == {
        "items_per_cluster": 3,
        "seed": 5,
        "clusters_with_fewer_items": {"c2": 2},
        "items_kept": 8,
        "items_dropped": 1,
        "prompts_kept": 2,
        "prompts_dropped": 0,
        "rows_dropped": 4,
    }
    # every result from the subset reports it
    assert sub.units().excluded["subsample"] == [record]


def test_the_draw_is_uniform_keys_sorted_within_clusters():
    """A direct version of the documented rule: the k smallest keys of each cluster."""
    clusters = np.array([2, 0, 0, 1, 0, 2, 2, 0, 1])
    keys = np.random.default_rng(3).random(clusters.size)
    expected = np.zeros(clusters.size, dtype=bool)
    for c in np.unique(clusters):
        members = np.flatnonzero(clusters == c)
        expected[members[np.argsort(keys[members])[:2]]] = True
    got = draw_items_per_cluster(clusters, 2, np.random.default_rng(3))
    assert got.tolist() == expected.tolist()


def test_the_draw_is_uniform_over_subsets():
    """Each of the C(4, 2) = 6 pairs of a 4-item cluster is drawn with probability 1/6."""
    gen = np.random.default_rng(0)
    clusters = np.zeros(4, dtype=int)
    draws = np.array([draw_items_per_cluster(clusters, 2, gen) for _ in range(6000)])
    codes = draws @ (2 ** np.arange(4))
    frequencies = np.bincount(codes, minlength=16)[[3, 5, 6, 9, 10, 12]] / 6000
    se = np.sqrt(1 / 6 * 5 / 6 / 6000)
    assert np.all(np.abs(frequencies - 1 / 6) < 4 * se)


def test_seeded_reproducible_and_recorded(scores):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        a = scores.subset(items_per_cluster=1, rng=11)
        b = scores.subset(items_per_cluster=1, rng=11)
        fresh = scores.subset(items_per_cluster=1)
    assert a.items == b.items and len(a.items) == 3
    seed = fresh.notes["excluded"]["subsample"][0]["seed"]
    assert isinstance(seed, int)
    again = scores.subset(items_per_cluster=1, rng=seed)
    assert again.items == fresh.items
    draws = {scores.subset(items_per_cluster=1, rng=s).items for s in range(30)}
    assert len(draws) > 5  # the seed matters


def test_prompt_subsets(scores):
    sub = scores.subset(prompts=["p2"])
    assert sub.prompts == ("p2",) and sub.n_items == 9 and sub.n_rows == 18
    assert np.allclose(sorted(sub.score), sorted(_table().query("prompt == 'p2'")["score"]))
    record = sub.notes["excluded"]["subsample"][0]
    assert record["prompts"] == ["p2"] and record["prompts_dropped"] == 1
    assert record["items_dropped"] == 0 and record["rows_dropped"] == 18
    # with prompt units the subset is what the inference extends from
    assert sub.units("prompt").labels == ("p2",)
    both = scores.subset(prompts="p1", items_per_cluster=2, rng=0)
    assert both.prompts == ("p1",) and both.n_items == 6
    assert [r.get("items_per_cluster") for r in both.notes["excluded"]["subsample"]] == [2]


def test_items_and_chained_subsets_are_recorded(scores):
    sub = scores.subset(items=["q1", "q5", "q9"]).subset(prompts=["p1"])
    assert sub.items == ("q1", "q5", "q9") and sub.n_rows == 6
    records = sub.notes["excluded"]["subsample"]
    assert [r.get("items") for r in records] == [3, None]
    assert [r.get("prompts") for r in records] == [None, ["p1"]]
    assert scores.notes == {}  # the original is unchanged


# a 6-item subset: the subject is the report of the subset, not what it certifies
@pytest.mark.filterwarnings("ignore:.* item units of continuous:rankci.RankciWarning")
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_a_ranking_of_the_subset_reports_it(scores):
    ranking = rankci.rank(scores.subset(items_per_cluster=2, rng=1), unit="item")
    assert ranking.to_dict()["excluded"]["subsample"][0]["seed"] == 1


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"items_per_cluster": 0}, "items_per_cluster must be an integer >= 1, got 0"),
        ({"items_per_cluster": 2.5}, "items_per_cluster must be an integer >= 1"),
        ({"prompts": ["p9"]}, "unknown prompt 'p9'"),
        ({"prompts": []}, "prompts is empty"),
        ({"items": ["zz"]}, "unknown item 'zz'"),
    ],
)
def test_bad_selections_name_the_argument(scores, kwargs, words):
    with pytest.raises(ValueError, match=words):
        scores.subset(**kwargs)


def test_without_clusters_or_prompts_the_selection_is_refused():
    plain = Scores.from_matrix(np.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="items_per_cluster needs a cluster column"):
        plain.subset(items_per_cluster=1, rng=0)
    with pytest.raises(ValueError, match="prompts= needs a prompt column"):
        plain.subset(prompts=["p1"])
