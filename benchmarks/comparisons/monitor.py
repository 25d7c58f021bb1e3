"""The anytime-valid monitor: rankci's replay against the paper-style NumPy per-item loop
(``benchmarks/monitor_baseline.py``), a look every 1 % of the items, model F, shortcut."""

from __future__ import annotations

import numpy as np
from monitor_baseline import agreement, baseline_replay, rankci_replay

import rankci
from rankci.sequential import parse_look_every

from .harness import Dataset, Row, Run, scaled, timed


def monitor(data: Dataset, run: Run) -> list[Row]:
    task = "anytime-valid monitor (replay, a look every 1 %)"
    x = data.matrix
    scores = data.scores
    own = timed(
        task,
        data,
        "rankci sequential.replay",
        lambda: rankci.sequential.replay(scores, look_every="1%"),
        run,
    )
    # a part of the items keeps the full run's spacing of looks, so that its cost per item
    # (updates and looks) is the full run's
    every = parse_look_every("1%", data.n_items)
    peer = scaled(
        task,
        data,
        "NumPy per-item loop (the paper's algorithm)",
        lambda k: baseline_replay(x[:k], look_every=every),
        data.n_items,
        run,
        probe=min(10 * every, data.n_items),
        unit="items",
    )
    if peer.result is not None:
        # agreement is checked against rankci's exact mode (freeze=False), which must agree look
        # for look; the timed default freezes settled pairs, whose looks may certify more
        # (rankci.sequential.freezing), so it is not the one compared
        if peer.extrapolated:  # rankci again, on the peer's part
            k, base = peer.result
            peer.note += "; agreement on those items"
        else:
            k, base = data.n_items, peer.result
        ours = rankci_replay(x[:k], look_every=every)
        peer.note += ("; " if peer.note else "") + "agreement with rankci's freeze=False mode"
        try:
            gap = agreement(ours, base) / np.nanmax(np.abs(base["log_wealth"]))
            peer.agree(
                "log wealth (relative)",
                gap,
                1e-9,
                f"; rank intervals identical at all {base['looks']} looks",
            )
        except ValueError as error:
            peer.disagrees = True
            peer.agreement = f"DISAGREES: {error}"
    return [own, peer]
