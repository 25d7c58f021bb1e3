"""``rankci monitor --entry open`` on a score table: the open-entry monitor's levels (alpha/M0^2
per initial pair), fed in the replay contract's order."""

from __future__ import annotations

import json

import numpy as np

from rankci.cli import main
from rankci.sequential.entry import OpenMonitor
from rankci.sequential.replay import evaluation_order
from rankci.sequential.spec import MonitorSpec


def test_monitor_entry_open_is_the_open_monitor_on_the_replay_order(tmp_path):
    rng = np.random.default_rng(0)
    n, models, rates = 300, ["a", "b", "c"], (0.9, 0.5, 0.3)
    x = (rng.random((n, 3)) < rates).astype(float)
    items = [f"q{i:03d}" for i in range(n)]
    lines = ["model,item,score"] + [
        f"{m},{items[i]},{x[i, j]:g}" for i in range(n) for j, m in enumerate(models)
    ]
    table = tmp_path / "t.csv"
    table.write_text("\n".join(lines) + "\n")
    out = tmp_path / "open.json"
    args = [str(table), "--entry", "open", "--sampling", "iid", "--look-every", "10"]
    assert main(["monitor", *args, "--format", "json", "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    order = evaluation_order(sorted(items), 0)  # the items are sorted as strings already
    spec = MonitorSpec(sampling="iid", entry="open", look_every=10)
    mon = OpenMonitor(models, spec)
    mon.update_block(x[order])
    assert result["looks"] == mon.looks
    # a pair is certified at the level alpha / M0^2 (by hand: 1 / level = 9 / 0.05 = 180)
    log_wealth = mon.log_wealth()
    expected = {
        (models[j], models[l])
        for j in range(3)
        for l in range(3)
        if j != l and log_wealth[j, l] >= np.log(9 / 0.05)
    }
    assert expected, "0.9 against 0.3 over 300 items is certified"
    assert result["looks"][-1]["n_certified"] >= len(expected)
