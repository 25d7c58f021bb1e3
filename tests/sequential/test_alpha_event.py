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
