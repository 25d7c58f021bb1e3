"""The <= alpha event: the monitor never raises mid-stream, records the event and keeps going.

The event is forced through the real code path: a stream whose winner changes half-way violates
both sampling models, so the pairwise wealths end up certifying both directions of the pair
(a cycle, shortcut and Bonferroni) or eliminating every weak order (exact).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankci import RankciWarning
from rankci.sequential import Monitor


def _reversing_stream() -> np.ndarray:
    first = np.tile([1.0, 0.0, 0.5], (100, 1))  # model a beats b on 100 items
    second = np.tile([0.0, 1.0, 0.5], (600, 1))  # then b beats a on 600
    return np.vstack([first, second])


@pytest.mark.parametrize("certifier", ["exact", "shortcut", "bonferroni", "ilp"])
def test_the_event_is_recorded_not_raised(certifier, tmp_path):
    monitor = Monitor(
        ["a", "b", "c"], alpha=0.2, sampling="iid", certifier=certifier, look_every=10
    )
    x = _reversing_stream()
    with pytest.warns(RankciWarning, match="<= alpha event happened"):
        used = monitor.update_block(x)
    assert used == x.shape[0]  # everything consumed: the stream was not stopped
    event = monitor.alpha_event
    assert event is not None and 100 < event["t"] <= 700
    assert set(event["cycle"]) >= {"a", "b"}
    before = [look for look in monitor.looks if look["t"] < event["t"]]
    assert any(look["n_certified"] > 0 for look in before)  # what came before is kept
    ranking = monitor.ranking()
    assert ranking.lower.tolist() == [1, 1, 1] and ranking.upper.tolist() == [3, 3, 3]
    assert not ranking.dominance.any() and ranking.tier.tolist() == [1, 1, 1]
    assert ranking.details["alpha_event"] == event
    assert "event happened" in ranking.guarantee
    assert all(look.get("alpha_event") for look in monitor.looks if look["t"] >= event["t"])
    # single items after the event are consumed too, and the state survives save/restore
    monitor.update([1.0, 0.0, 0.5])
    path = tmp_path / "monitor.npz"
    monitor.save(path)
    restored = Monitor.restore(path)
    assert restored.alpha_event == monitor.alpha_event
    assert restored.ranking().upper.tolist() == [3, 3, 3]


def test_replay_keeps_the_run_and_reports_the_event():
    import pandas as pd

    from rankci import Scores
    from rankci.sequential import replay
    from rankci.sequential.replay import evaluation_order

    ids = [f"q{i:03d}" for i in range(700)]
    order = [ids[i] for i in evaluation_order(ids, order_seed=3)]  # the replay order
    x = _reversing_stream()
    frame = pd.DataFrame(
        [
            {"model": m, "item": item, "score": x[position, j]}
            for position, item in enumerate(order)
            for j, m in enumerate("abc")
        ]
    )
    scores = Scores.from_frame(frame, model="model", item="item", score="score")
    with pytest.warns(RankciWarning, match="<= alpha event happened"):
        run = replay(scores, alpha=0.2, sampling="iid", order_seed=3, look_every=10)
    assert run.n_consumed == 700 and len(run.looks) == 70  # nothing was lost or stopped
    payload = json.loads(json.dumps(run.to_dict(), allow_nan=False))
    assert payload["alpha_event"] == run.alpha_event
    assert run.alpha_event["reason"] == "every weak order was eliminated"  # auto: exact at M = 3
    assert all(
        row["rank_lower"] == 1 and row["rank_upper"] == 3 for row in payload["final"]["models"]
    )


def _first_look_reverse_reaches(threshold, grid=(0.03, 0.06, 0.12, 0.25, 0.5), every=10):
    """The first look (a multiple of ``every``) at which the mixture wealth of "b better than a"
    reaches ``threshold`` on the reversing stream, computed directly: after the 100 items that a
    wins and n that b wins, it is ``mean_k (1 - lam_k)^100 (1 + lam_k)^n`` (model S)."""
    lam = np.asarray(grid)
    for t in range(100 + every, 701, every):
        wealth = np.mean((1 - lam) ** 100 * (1 + lam) ** (t - 100))
        if wealth >= threshold:
            return t
    raise AssertionError("the reverse never reaches the threshold")


@pytest.mark.parametrize("certifier", ["exact", "shortcut", "bonferroni", "ilp"])
def test_a_frozen_monitor_meets_the_event_no_later_than_the_unfrozen_one(certifier):
    """Issue 25: ``freeze`` used to freeze the reverse of a certified pair at wealth 0, so the
    frozen monitor never saw b overtake a and kept reporting "a better than b" (and "a better
    than c", false on the whole stream) after the unfrozen monitor had met the <= alpha event
    and reported nothing. Now the reverse stays updated: the same event, at the same look for
    the certifiers whose answers are identical, and no statement after it."""
    x = _reversing_stream()
    runs = {}
    for freeze in (False, True):
        monitor = Monitor(["a", "b", "c"], alpha=0.2, sampling="iid", certifier=certifier,
                          look_every=10, freeze=freeze)  # fmt: skip
        with pytest.warns(RankciWarning, match="<= alpha event happened"):
            monitor.update_block(x)
        runs[freeze] = monitor
    plain, frozen = runs[False], runs[True]
    assert frozen.freeze and frozen.n_frozen_pairs > 0  # pairs were frozen before the event
    assert frozen.alpha_event is not None
    assert frozen.alpha_event["t"] <= plain.alpha_event["t"]
    if certifier == "bonferroni":  # the cycle closes when E^{ba} reaches M(M-1)/alpha = 30
        assert frozen.alpha_event["t"] == _first_look_reverse_reaches(3 * 2 / 0.2)
    if certifier != "shortcut":  # identical answers look for look (freezing.py)
        assert frozen.alpha_event == plain.alpha_event
        assert frozen.looks == plain.looks
    ranking = frozen.ranking()
    assert not ranking.dominance.any() and ranking.upper.tolist() == [3, 3, 3]
    assert ranking.details["alpha_event"] == frozen.alpha_event
    after = [look for look in frozen.looks if look["t"] >= frozen.alpha_event["t"]]
    assert after and all(look["n_certified"] == 0 and look["alpha_event"] for look in after)


def test_a_large_frozen_board_meets_the_event_of_its_unfrozen_run():
    """20 models (``freeze="auto"`` freezes, ``certifier="auto"`` is the shortcut): models 0 and
    1 swap places after 150 of 900 items, the others keep theirs. The unfrozen run meets the
    event; the frozen run meets it too, no later, and then reports nothing either."""
    rng = np.random.default_rng(7)
    m, n = 20, 900
    p = np.linspace(0.9, 0.1, m)
    x = (rng.random((n, m)) < p).astype(float)
    x[:150, 0], x[:150, 1] = 1.0, 0.0  # 0 wins every item first
    x[150:, 0], x[150:, 1] = 0.0, 1.0  # then 1 wins every item
    names = [f"m{j:02d}" for j in range(m)]
    runs = {}
    for freeze in ("auto", False):
        monitor = Monitor(names, alpha=0.1, sampling="iid", look_every=10, freeze=freeze)
        with pytest.warns(RankciWarning, match="<= alpha event happened"):
            monitor.update_block(x)
        runs[freeze] = monitor
    frozen, plain = runs["auto"], runs[False]
    assert frozen.freeze and frozen.certifier == "shortcut" and frozen.n_frozen_pairs > 0
    assert frozen.alpha_event is not None
    assert frozen.alpha_event["t"] <= plain.alpha_event["t"]
    assert "m01" in frozen.alpha_event["cycle"]  # m01 lost every item, then won every one
    assert not frozen.ranking().dominance.any()
