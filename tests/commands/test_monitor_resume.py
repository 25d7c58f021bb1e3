"""``rankci monitor DATA --save STATE.npz`` and ``--resume STATE.npz``: an evaluation (or an
arena) replayed in parts gives the looks of one monitor fed the parts in turn, models may join an
open monitor in a later part, and what cannot be resumed is refused naming the flag or file."""

from __future__ import annotations

import json
import re

import numpy as np

from rankci.cli import main
from rankci.sequential import Monitor, MonitorSpec, OpenMonitor
from rankci.sequential.replay import evaluation_order
from rankci.votes.sequential import ArenaMonitor
from rankci.votes.table import Votes


def score_table(path, models, rates, n, seed, prefix):
    """A long score table of 0/1 scores; returns the items x models matrix in item-id order."""
    rng = np.random.default_rng(seed)
    x = (rng.random((n, len(models))) < rates).astype(float)
    items = [f"{prefix}{i:04d}" for i in range(n)]
    lines = ["model,item,score"] + [
        f"{m},{items[i]},{x[i, j]:g}" for i in range(n) for j, m in enumerate(models)
    ]
    path.write_text("\n".join(lines) + "\n")
    return x, items


def run_json(args, capsys) -> dict:
    assert main(["monitor", *map(str, args), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_closed_monitor_resumed_on_the_next_items_is_one_monitor_fed_both(tmp_path, capsys):
    models = ["a", "b", "c"]
    x1, items1 = score_table(tmp_path / "p1.csv", models, [0.8, 0.5, 0.3], 230, 0, "w1-")
    x2, items2 = score_table(tmp_path / "p2.csv", models, [0.8, 0.5, 0.3], 170, 1, "w2-")
    state = tmp_path / "state.npz"
    flags = ["--sampling", "iid", "--look-every", "20", "--certifier", "exact"]
    first = run_json([tmp_path / "p1.csv", *flags, "--save", state], capsys)
    second = run_json(
        [tmp_path / "p2.csv", "--resume", state, "--order-seed", "3", "--save", state], capsys
    )
    # by hand: one monitor, fed part 1 in its seed-0 order (a look at its last item, as every
    # replay ends), then part 2 in its seed-3 order
    mon = Monitor(models, MonitorSpec(sampling="iid", look_every=20, certifier="exact"))
    mon.update_block(x1[evaluation_order(items1, 0)])
    mon.ranking()
    assert first["looks"] == mon.looks
    mon.update_block(x2[evaluation_order(items2, 3)])
    ranking = mon.ranking()
    assert second["looks"] == mon.looks and second["looks"][-1]["t"] == 400
    assert second["final"]["dominance"] == [list(p) for p in ranking.dominance_pairs()]
    assert second["n_consumed"] == 170 and second["resumed_from"] == {"t": 230, "looks": 12}
    assert Monitor.restore(state).looks == mon.looks  # --save after --resume: the new state


def test_a_new_model_joins_an_open_monitor_at_the_resume(tmp_path, capsys):
    x1, items1 = score_table(tmp_path / "p1.csv", ["a", "b"], [0.8, 0.3], 200, 0, "w1-")
    x2, items2 = score_table(tmp_path / "p2.csv", ["a", "b", "c"], [0.8, 0.3, 0.6], 300, 1, "w2-")
    state = tmp_path / "open.npz"
    flags = ["--sampling", "iid", "--entry", "open", "--look-every", "25"]
    run_json([tmp_path / "p1.csv", *flags, "--save", state], capsys)
    second = run_json([tmp_path / "p2.csv", "--resume", state], capsys)
    mon = OpenMonitor(["a", "b"], MonitorSpec(sampling="iid", entry="open", look_every=25))
    mon.update_block(x1[evaluation_order(items1, 0)])
    mon.ranking()
    mon.add_model("c")
    mon.update_block(x2[evaluation_order(items2, 0)])
    ranking = mon.ranking()
    assert second["looks"] == mon.looks
    assert second["final"]["dominance"] == [list(p) for p in ranking.dominance_pairs()]
    assert ranking.details["entrants"][2]["t"] == 200  # c's evidence starts at the resume


def vote_file(path, models, a, b, outcome) -> None:
    winners = ["model_a", "model_b", "tie"]
    path.write_text(
        "\n".join(
            json.dumps({"model_a": models[i], "model_b": models[j], "winner": winners[o]})
            for i, j, o in zip(a, b, outcome)
        )
        + "\n"
    )


def random_votes(rng, n, strengths):
    m = len(strengths)
    a = rng.integers(m, size=n)
    b = (a + rng.integers(1, m, size=n)) % m
    p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
    u = rng.random(n)
    return a, b, np.where(u < 0.1, 2, np.where(u < 0.1 + 0.9 * p, 0, 1))


def test_an_open_arena_resumed_on_the_next_votes_with_a_new_model(tmp_path, capsys):
    rng = np.random.default_rng(5)
    first_models, all_models = ["x", "y", "z"], ["x", "y", "z", "w"]
    a1, b1, o1 = random_votes(rng, 600, np.array([1.0, 0.0, -1.0]))
    a2, b2, o2 = random_votes(rng, 900, np.array([1.0, 0.0, -1.0, 1.5]))
    vote_file(tmp_path / "v1.jsonl", first_models, a1, b1, o1)
    vote_file(tmp_path / "v2.jsonl", all_models, a2, b2, o2)
    state = tmp_path / "arena.npz"
    flags = ["--entry", "open", "--sampling", "iid", "--look-every", "100"]
    run_json([tmp_path / "v1.jsonl", *flags, "--save", state], capsys)
    second = run_json([tmp_path / "v2.jsonl", "--resume", state, "--save", state], capsys)
    spec = MonitorSpec(sampling="iid", entry="open", look_every=100)
    mon = ArenaMonitor(first_models, spec)
    for votes, models in (((a1, b1, o1), first_models), ((a2, b2, o2), all_models)):
        if len(models) > mon.n_models:
            mon.add_model("w")
        for start in range(0, votes[0].size, 100):
            chunk = [v[start : start + 100] for v in votes]
            mon.update(Votes.from_arrays(*chunk, models=models))
            mon.look()
    assert second["looks"] == mon.looks() and second["n_votes"] == 1500
    assert second["entrants"] == mon.entrants and second["entrants"][3]["t"] == 600
    assert second["threshold"] is None and "will join" in second["guarantee"]
    certified = sorted([mon.models[j], mon.models[k]] for j, k in zip(*np.nonzero(mon.certified())))
    assert sorted([p["winner"], p["loser"]] for p in second["certified"]) == certified
    assert ArenaMonitor.restore(state).looks() == mon.looks()


def test_what_cannot_be_resumed_is_refused_naming_the_flag_or_file(tmp_path, capsys):
    score_table(tmp_path / "p1.csv", ["a", "b"], [0.8, 0.3], 100, 0, "w1-")
    score_table(tmp_path / "new.csv", ["a", "b", "c"], [0.8, 0.3, 0.5], 100, 1, "w2-")
    rng = np.random.default_rng(0)
    vote_file(tmp_path / "v.jsonl", ["x", "y"], *random_votes(rng, 50, np.array([0.0, 0.0])))
    state, arena = tmp_path / "s.npz", tmp_path / "arena.npz"
    assert (
        main(["monitor", str(tmp_path / "p1.csv"), "--sampling", "iid", "--save", str(state)]) == 0
    )
    assert main(["monitor", str(tmp_path / "v.jsonl"), "--save", str(arena)]) == 0
    capsys.readouterr()
    cases = [
        # a setting that differs from the saved one, named with its saved value
        (["p1.csv", "--resume", state, "--alpha", "0.1"], r"--alpha 0.1 \(saved: 0.05\)"),
        (["p1.csv", "--resume", state, "--look-every", "7"], r"--look-every 7 \(saved: 1\)"),
        # a model new to a closed monitor
        (["new.csv", "--resume", state], "model 'c' is not on the monitor being continued"),
        # a state of the other kind
        (["p1.csv", "--resume", arena], "arena monitor .*DATA .*p1.csv is a score table"),
        (["v.jsonl", "--resume", state], "holds a saved monitor .*is a vote table"),
        (["p1.csv", "--resume", tmp_path / "absent.npz"], "absent.npz'?: no such file"),
        (["p1.csv", "--save", tmp_path / "no" / "s.npz"], "--save .*does not exist"),
    ]
    for args, says in cases:
        args = [str(tmp_path / args[0]), *map(str, args[1:])]
        assert main(["monitor", *args]) == 2, args
        assert re.search(says, capsys.readouterr().err), (args, says)
    # the same settings given again are not a conflict
    again = ["monitor", str(tmp_path / "p1.csv"), "--resume", str(state), "--sampling", "iid"]
    assert main(again) == 0
    assert main(["monitor", str(tmp_path / "p1.csv"), "--resume", str(state)]) == 0
