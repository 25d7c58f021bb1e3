"""The streaming monitor and the replay contract (rcs-examples D, save/restore, retirement)."""

import warnings

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.evidence.pairwise import RankciWarning
from rankci.sequential import Monitor, parse_look_every, replay


def _example_d():
    x = np.random.default_rng(20260101).random((2000, 5)) < [0.72, 0.70, 0.66, 0.60, 0.50]
    return x.astype(float)


# rcs-examples.md, D: certified pairs after 100 / 250 / 500 / 1000 / 1500 / 2000 items
TABLE_D = {
    "exact": [0, 4, 5, 7, 8, 10],
    "ilp": [0, 4, 5, 7, 8, 10],
    "shortcut": [0, 3, 5, 7, 8, 10],
    "bonferroni": [0, 3, 5, 7, 8, 10],
}
LOOKS_D = [100, 250, 500, 1000, 1500, 2000]


@pytest.mark.parametrize("certifier", list(TABLE_D))
def test_example_d_certified_pairs(certifier):
    run = replay(rankci.Scores.from_matrix(_example_d()), order_seed=7, certifier=certifier,
                 look_every=50)  # fmt: skip
    counts = {look["t"]: look["n_certified"] for look in run.looks}
    assert [counts[t] for t in LOOKS_D] == TABLE_D[certifier]
    assert [look["t"] for look in run.looks] == list(range(50, 2001, 50))


def test_example_d_final_statements():
    scores = rankci.Scores.from_matrix(_example_d())
    final = replay(scores, order_seed=7, certifier="exact", look_every=50).ranking
    assert final.lower.tolist() == [1, 2, 3, 4, 5] == final.upper.tolist()
    assert final.tier.tolist() == [1, 2, 3, 4, 5]
    assert final.top_k(2).tolist() == ["in", "in", "out", "out", "out"]
    assert final.coverage == "anytime"
    iid = replay(scores, order_seed=7, certifier="exact", look_every=50, sampling="iid").ranking
    assert iid.lower.tolist() == [1, 1, 1, 4, 5]
    assert iid.upper.tolist() == [3, 3, 3, 4, 5]


def test_example_d_fixed_n_holm_mcnemar_comparison_row():
    """The comparison row of example D, from rankci's own fixed-sample path (sign test + Holm)."""
    x = _example_d()[np.random.default_rng(7).permutation(2000)]
    def certified(t: int) -> int:
        return int(rankci.rank(rankci.Scores.from_matrix(x[:t]), test="sign").dominance.sum())

    with pytest.warns(rankci.RankciWarning, match="nothing is certified"):  # and it says why
        first = certified(LOOKS_D[0])
    counts = [first] + [certified(t) for t in LOOKS_D[1:]]
    assert counts == [0, 6, 6, 7, 8, 8]


def test_replay_contract_order_exclusions_and_last_look():
    rng = np.random.default_rng(1)
    x = (rng.random((53, 4)) < [0.9, 0.6, 0.4, 0.1]).astype(float)
    x[[3, 17], 2] = np.nan  # two incomplete items
    items = [f"q{k}" for k in range(53)]  # "q10" sorts before "q2" as strings
    scores = rankci.Scores.from_matrix(x, items=items)
    run = replay(scores, order_seed=3, look_every=10, sampling="iid", certifier="shortcut")
    kept = sorted(i for k, i in enumerate(items) if k not in (3, 17))
    expected = [kept[p] for p in np.random.default_rng(3).permutation(51)]
    assert list(run.order) == expected
    assert run.excluded["items_excluded"] == 2
    assert run.excluded["missing_by_model"] == {"m2": 2}
    assert [look["t"] for look in run.looks] == [10, 20, 30, 40, 50, 51]
    assert run.evaluations == 51 * 4 and run.cost_fraction == 1.0
    assert parse_look_every("1%", 14042) == 141 and parse_look_every("10%", 51) == 6
    with pytest.raises(ValueError, match="percentage"):
        parse_look_every("0%", 10)


def test_feeding_forms_agree_bit_for_bit_and_ranking_is_a_look():
    x = np.random.default_rng(4).random((300, 3)) ** np.array([0.3, 1.0, 3.0])  # continuous
    names = ["a", "b", "c"]
    monitors = [Monitor(names, n_items=300) for _ in range(4)]
    for row in x:
        monitors[0].update(row)
        monitors[1].update(dict(zip(names, row.tolist())))
    monitors[2].update_block(pd.DataFrame(x, columns=names))
    for start in range(0, 300, 7):
        for _, row in pd.DataFrame(x[start : start + 7], columns=names).iterrows():
            monitors[3].update(row)  # a pandas Series
    results = [mon.ranking() for mon in monitors]
    for mon, result in zip(monitors[1:], results[1:]):
        assert np.array_equal(mon.log_wealth(), monitors[0].log_wealth(), equal_nan=True)
        assert result.to_dict() == results[0].to_dict()
    assert monitors[0].looks[-1]["t"] == 300 and len(monitors[0].looks) == 1
    assert monitors[0].ranking() is results[0]  # no new item: no new look
    np.testing.assert_allclose(results[0].score, x.mean(axis=0))


def test_restore_then_continue_equals_uninterrupted(tmp_path):
    x = (np.random.default_rng(9).random((900, 5)) < [0.6, 0.58, 0.5, 0.47, 0.42]).astype(float)
    names = [f"m{j}" for j in range(5)]
    for certifier in ("exact", "ilp", "shortcut"):
        kwargs = dict(n_items=900, certifier=certifier, retire="topk", k=2, look_every=25)
        whole = Monitor(names, **kwargs)
        whole.update_block(x)
        crash = whole.t // 2 + 3  # some models are retired by then, not all
        first = Monitor(names, **kwargs)
        for row in x[:crash]:  # fed one by one until the crash
            first.update(row)
        assert first.retired and not first.finished
        path = tmp_path / f"state-{certifier}.npz"
        first.save(path)
        resumed = Monitor.restore(path)
        used = resumed.update_block(x[crash:700])  # then in blocks
        if not resumed.finished:
            resumed.update_block(x[crash + used :])
        assert resumed.looks == whole.looks
        assert resumed.retired == whole.retired
        assert resumed.evaluations == whole.evaluations
        assert np.array_equal(resumed.log_wealth(), whole.log_wealth(), equal_nan=True)
        assert resumed.ranking().to_dict() == whole.ranking().to_dict()
    with pytest.raises(ValueError, match="not a saved rankci monitor"):
        np.savez(tmp_path / "other.npz", x=np.zeros(2))
        Monitor.restore(tmp_path / "other.npz")


def test_retirement_freezes_pairs_and_counts_evaluations():
    x = (np.random.default_rng(2).random((4000, 4)) < [0.9, 0.5, 0.48, 0.1]).astype(float)
    mon = Monitor(list("abcd"), sampling="iid", retire="resolved", look_every=50)
    mon.update_block(x)
    # a and d separate from everyone quickly; b and c are close and stay
    assert set(mon.retired) >= {"a", "d"}
    assert mon.needs() == [] or set(mon.needs()) <= {"b", "c"}
    stop_a = mon.retired["a"]["t"]
    frozen = mon.log_wealth()[0]
    assert mon.evaluations < 4 * mon.t
    used = [mon.retired[name]["t"] if name in mon.retired else mon.t for name in "abcd"]
    assert mon.evaluations == sum(used)
    # the frozen wealth of (a, b) equals the wealth after stop_a items
    ref = Monitor(list("abcd"), sampling="iid")
    ref.update_block(x[:stop_a])
    np.testing.assert_array_equal(frozen[1:], ref.log_wealth()[0, 1:])


def test_stop_at_goal_and_topk_rules():
    x = (np.random.default_rng(3).random((3000, 6)) < np.linspace(0.9, 0.2, 6)).astype(float)
    scores = rankci.Scores.from_matrix(x)
    goal = replay(scores, retire="stop-at-goal", k=2, look_every=20)
    assert goal.n_consumed < 3000
    assert (goal.ranking.top_k(2) != "undetermined").all()
    assert goal.cost_fraction == pytest.approx(goal.n_consumed / 3000)
    topk = replay(scores, retire="topk", k=2, look_every=20)
    assert topk.cost_fraction < goal.cost_fraction
    safe = replay(scores, retire="topk-safe", k=2, look_every=20)
    assert topk.cost_fraction <= safe.cost_fraction <= 1.0
    width = replay(scores, retire="width", width=0, look_every=20)
    assert all(info["reason"] in ("width", "no model left to compare")
               for info in width.ranking.details["retired"].values())  # fmt: skip
    with pytest.raises(ValueError, match="needs k"):
        Monitor(list("abc"), sampling="iid", retire="topk")


def test_bad_input_is_a_clear_error_and_missing_items_are_counted():
    mon = Monitor(["a", "b", "c"], n_items=10)
    with pytest.raises(ValueError, match=r"model 'b' is 1\.5.*\[0, 1\]"):
        mon.update({"a": 0.2, "b": 1.5, "c": 0.0})
    with pytest.raises(ValueError, match="unknown model 'z'"):
        mon.update({"a": 0.2, "z": 1.0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mon.update({"a": 1.0, "c": 0.0})  # b missing: excluded
    assert any(issubclass(w.category, RankciWarning) for w in caught)
    assert mon.t == 0 and mon.excluded["items_excluded"] == 1
    assert mon.excluded["missing_by_model"] == {"b": 1}
    mon.retire("b")
    mon.update({"a": 1.0, "c": 0.0})  # b retired: no longer needed
    assert mon.t == 1 and mon.needs() == ["a", "c"] and mon.evaluations == 2
    with pytest.raises(ValueError, match="3 scores"):
        mon.update([0.1, 0.2])
    with pytest.raises(ValueError, match="Scores"):
        replay(np.zeros((3, 3)))
