"""Saving a monitor mid-stream and restoring it: continuing after the restore gives bit for bit
the looks of a monitor that never stopped (score monitors with fixed or open entry, withdrawals
and voids; the arena monitor of votes, fixed or open), and files of another kind, another
format version or damaged ones are refused with a message naming the file."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankci.sequential import Monitor, MonitorSpec, OpenMonitor
from rankci.sequential.persistence import (
    ARENA_FORMAT,
    FORMAT,
    OPEN_FORMAT,
    read_state,
    write_state,
)
from rankci.votes.sequential import ArenaMonitor
from rankci.votes.table import Votes

RATES = (0.85, 0.7, 0.55, 0.5, 0.4, 0.3, 0.2, 0.1)


# ---------------------------------------------------------------------- scores
def score_script(mon, seed: int, n_steps: int) -> list[tuple]:
    """Feed ``mon`` a random stream of named items, model additions (open boards), withdrawals
    and voids, chosen from the monitor's state as it goes (as a board's users would); return the
    actions so that they can be replayed on another monitor."""
    rng = np.random.default_rng(seed)
    actions: list[tuple] = []
    added = 0
    for _ in range(n_steps):
        if mon.finished:
            break
        u = rng.random()
        active = [m for m, on in zip(mon.models, mon.active) if on]
        if u < 0.03 and isinstance(mon, OpenMonitor) and mon.n_models < len(RATES):
            action = ("add", f"late{added}")
            added += 1
        elif u < 0.05 and len(active) > 2 and mon.t > 0:
            action = ("withdraw", str(rng.choice(active)))
        elif u < 0.08 and mon.item_positions:
            candidates = sorted(set(mon.item_positions) - set(mon.voided))
            if not candidates:
                continue
            action = ("void", str(rng.choice(candidates)))
        else:
            p = np.array(RATES[: mon.n_models])
            row = (rng.random(mon.n_models) < p).astype(float)
            row[~mon.active] = np.nan
            action = ("item", f"q{rng.integers(60)}", row)
        apply_score(mon, action)
        actions.append(action)
    return actions


def apply_score(mon, action: tuple) -> None:
    kind = action[0]
    if kind == "add":
        mon.add_model(action[1])
    elif kind == "withdraw":
        mon.withdraw_model(action[1])
    elif kind == "void":
        mon.void_item(action[1])
    else:
        mon.update_item(action[1], action[2])


def assert_same_monitor(a, b) -> None:
    assert a.t == b.t and a.models == b.models
    assert a.looks == b.looks
    assert a.evaluations == b.evaluations
    assert a.retired == b.retired and a.withdrawn == b.withdrawn and a.voided == b.voided
    assert a.item_positions == b.item_positions
    assert a.excluded == b.excluded
    assert np.array_equal(a.log_wealth(), b.log_wealth(), equal_nan=True)
    assert a.ranking().to_dict() == b.ranking().to_dict()


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    cut=st.floats(0.0, 1.0),
    look_every=st.integers(3, 25),
    bet=st.sampled_from(["mixture", "agrapa", "ons", "fixed"]),
    certifier=st.sampled_from(["exact", "shortcut", "bonferroni"]),
    freeze=st.booleans(),
)
def test_a_fixed_board_saved_at_any_point_continues_bit_for_bit(
    tmp_path_factory, seed, cut, look_every, bet, certifier, freeze
):
    spec = MonitorSpec(
        sampling="iid", look_every=look_every, bet=bet, certifier=certifier, freeze=freeze
    )
    models = ["a", "b", "c", "d"]
    whole = Monitor(models, spec)
    actions = score_script(whole, seed, 200)
    stop = int(cut * len(actions))
    first = Monitor(models, spec)
    for action in actions[:stop]:
        apply_score(first, action)
    path = tmp_path_factory.mktemp("fixed") / "state.npz"
    first.save(path)
    resumed = Monitor.restore(path)
    assert type(resumed) is Monitor and resumed.spec == spec
    for action in actions[stop:]:
        apply_score(resumed, action)
    assert_same_monitor(resumed, whole)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    cut=st.floats(0.0, 1.0),
    look_every=st.integers(1, 25),
    bet=st.sampled_from(["mixture", "agrapa", "fixed"]),
    retire=st.sampled_from(["none", "resolved"]),
)
def test_an_open_board_saved_at_any_point_continues_bit_for_bit(
    tmp_path_factory, seed, cut, look_every, bet, retire
):
    spec = MonitorSpec(sampling="iid", entry="open", look_every=look_every, bet=bet, retire=retire)
    whole = OpenMonitor(["a", "b", "c"], spec)
    actions = score_script(whole, seed, 400)
    stop = int(cut * len(actions))
    first = OpenMonitor(["a", "b", "c"], spec)
    for action in actions[:stop]:
        apply_score(first, action)
    path = tmp_path_factory.mktemp("open") / "state.npz"
    first.save(path)
    resumed = OpenMonitor.restore(path)
    assert type(resumed) is OpenMonitor and resumed.spec == spec
    assert resumed.entrants == first.entrants
    for action in actions[stop:]:
        apply_score(resumed, action)
    assert_same_monitor(resumed, whole)
    assert resumed.entrants == whole.entrants
    np.testing.assert_array_equal(resumed.log_thresholds(), whole.log_thresholds())


def test_an_open_board_with_a_stopped_entry_group_and_a_late_entrant_round_trips(tmp_path):
    # entrant c is withdrawn: the group it opened has no pair updated any more (kept as its
    # last log-wealths); d joins after, and the restored board goes on exactly
    spec = MonitorSpec(sampling="iid", entry="open", look_every=20)
    boards = [OpenMonitor(["a", "b"], spec) for _ in range(2)]
    for mon in boards:
        mon.update_block(np.random.default_rng(3).random((60, 2)) < [0.8, 0.4])
        mon.add_model("c")
        mon.update_block(np.random.default_rng(4).random((40, 3)) < [0.8, 0.4, 0.2])
        mon.withdraw_model("c")
        mon.update_block(np.random.default_rng(5).random((20, 3)) < [0.8, 0.4, 0.2])
    boards[0].save(tmp_path / "s.npz")
    restored = OpenMonitor.restore(tmp_path / "s.npz")
    assert any(type(g["wealth"]).__name__ == "_Stopped" for g in restored._groups)
    for mon in (boards[1], restored):
        mon.add_model("d")
        mon.update_block(np.random.default_rng(6).random((80, 4)) < [0.8, 0.4, 0.2, 0.9])
    assert_same_monitor(restored, boards[1])
    assert restored.entrants[-1]["t"] == 120 and restored.entrants[-1]["look"] == 6


# ---------------------------------------------------------------------- votes
def vote_script(mon: ArenaMonitor, seed: int, n_chunks: int, every: int) -> list[tuple]:
    """Chunks of ``every`` random votes (a look after each) and, on an open arena, models that
    join between them."""
    rng = np.random.default_rng(seed)
    actions: list[tuple] = []
    added = 0
    for _ in range(n_chunks):
        if mon.spec.entry == "open" and rng.random() < 0.2 and mon.n_models < len(RATES):
            action = ("add", f"late{added}")
            added += 1
        else:
            m = mon.n_models
            a = rng.integers(m, size=every)
            b = (a + rng.integers(1, m, size=every)) % m
            strength = np.array(RATES[:m])
            p_a = strength[a] / (strength[a] + strength[b])
            u = rng.random(every)
            outcome = np.where(u < 0.1, 2, np.where(u < 0.1 + 0.9 * p_a, 0, 1))
            action = ("votes", a, b, outcome, tuple(mon.models))
        apply_votes(mon, action)
        actions.append(action)
    return actions


def apply_votes(mon: ArenaMonitor, action: tuple) -> None:
    if action[0] == "add":
        mon.add_model(action[1])
        return
    _, a, b, outcome, models = action
    mon.update(Votes.from_arrays(a, b, outcome, models=models))
    mon.look()


def assert_same_arena(a: ArenaMonitor, b: ArenaMonitor) -> None:
    assert a.models == b.models and a.n_votes == b.n_votes
    assert a.looks() == b.looks() and a.entrants == b.entrants
    np.testing.assert_array_equal(a.wins, b.wins)
    np.testing.assert_array_equal(a.ties, b.ties)
    np.testing.assert_array_equal(a.certified(), b.certified())
    assert np.array_equal(a.log_wealth(), b.log_wealth(), equal_nan=True)
    assert np.array_equal(a.log_thresholds(), b.log_thresholds(), equal_nan=True)
    assert a.ranking().to_dict() == b.ranking().to_dict()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    cut=st.floats(0.0, 1.0),
    every=st.integers(1, 60),
    bet=st.sampled_from(["mixture", "agrapa", "fixed"]),
    entry=st.sampled_from(["closed", "open"]),
)
def test_an_arena_saved_at_any_look_continues_bit_for_bit(
    tmp_path_factory, seed, cut, every, bet, entry
):
    spec = MonitorSpec(sampling="iid", bet=bet, entry=entry)
    models = ["x", "y", "z"]
    whole = ArenaMonitor(models, spec)
    actions = vote_script(whole, seed, 30, every)
    stop = int(cut * len(actions))
    first = ArenaMonitor(models, spec)
    for action in actions[:stop]:
        apply_votes(first, action)
    path = tmp_path_factory.mktemp("arena") / "arena.npz"
    first.save(path)
    resumed = ArenaMonitor.restore(path)
    assert resumed.spec == spec and resumed.models == first.models
    for action in actions[stop:]:
        apply_votes(resumed, action)
    assert_same_arena(resumed, whole)


# ---------------------------------------------------------------------- refusals
@pytest.fixture
def saved(tmp_path):
    """One saved file of each kind."""
    rng = np.random.default_rng(0)
    closed = Monitor(["a", "b", "c"], sampling="iid", look_every=10)
    closed.update_block(rng.random((30, 3)) < [0.8, 0.5, 0.2])
    open_board = OpenMonitor(["a", "b"], sampling="iid", entry="open", look_every=10)
    open_board.update_block(rng.random((30, 2)) < [0.8, 0.5])
    arena = ArenaMonitor(["x", "y"])
    arena.update(Votes.from_arrays([0] * 5, [1] * 5, [0] * 5, models=["x", "y"]))
    paths = {"closed": tmp_path / "closed.npz", "open": tmp_path / "open.npz"}
    paths["arena"] = tmp_path / "arena.npz"
    closed.save(paths["closed"])
    open_board.save(paths["open"])
    arena.save(paths["arena"])
    return paths


@pytest.mark.parametrize(
    ("kind", "loader", "says"),
    [
        ("open", Monitor.restore, "open-entry monitor .*OpenMonitor.restore"),
        ("arena", Monitor.restore, "arena monitor .*ArenaMonitor.restore"),
        ("closed", OpenMonitor.restore, r"saved monitor \(rankci-monitor-2\).*Monitor.restore"),
        ("arena", OpenMonitor.restore, "arena monitor .*ArenaMonitor.restore"),
        ("closed", ArenaMonitor.restore, "saved monitor .*Monitor.restore"),
        ("open", ArenaMonitor.restore, "open-entry monitor .*OpenMonitor.restore"),
    ],
)
def test_a_file_of_another_kind_is_refused_naming_the_file_and_the_class(saved, kind, loader, says):
    with pytest.raises(ValueError, match=says) as caught:
        loader(saved[kind])
    assert str(saved[kind]) in str(caught.value)


def rewrite_format(path, form: str) -> None:
    """The same file with another format tag (as a newer rankci would write it)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta["config"]["format"] = form
    write_state(path, meta, arrays)


@pytest.mark.parametrize(
    ("kind", "loader", "newer"),
    [
        ("closed", Monitor.restore, "rankci-monitor-3"),
        ("open", OpenMonitor.restore, "rankci-open-monitor-2"),
        ("arena", ArenaMonitor.restore, "rankci-arena-monitor-2"),
        ("closed", Monitor.restore, None),
    ],
)
def test_a_file_of_an_unknown_version_is_refused_not_reinterpreted(saved, kind, loader, newer):
    rewrite_format(saved[kind], newer)
    with pytest.raises(ValueError, match="does not read|not a saved rankci monitor") as caught:
        loader(saved[kind])
    message = str(caught.value)
    assert str(saved[kind]) in message
    if newer is not None:
        assert repr(newer) in message and "refused rather than reinterpreted" in message


@pytest.mark.parametrize("kind", ["closed", "open", "arena"])
def test_a_truncated_or_garbled_file_is_refused_naming_it(saved, kind):
    loader = {"closed": Monitor, "open": OpenMonitor, "arena": ArenaMonitor}[kind].restore
    path = saved[kind]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a crash in the middle of a copy
    with pytest.raises(ValueError, match="damaged") as caught:
        loader(path)
    assert str(path) in str(caught.value)
    path.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="not a saved rankci monitor"):
        loader(path)
    missing = path.with_name("absent.npz")
    with pytest.raises(ValueError, match="no such file") as caught:
        loader(missing)
    assert str(missing) in str(caught.value)


@pytest.mark.parametrize("kind", ["closed", "open", "arena"])
def test_a_file_with_a_damaged_array_or_missing_field_is_refused(saved, kind):
    loader = {"closed": Monitor, "open": OpenMonitor, "arena": ArenaMonitor}[kind].restore
    path = saved[kind]
    _, meta, arrays = read_state(path, FORMAT, OPEN_FORMAT, ARENA_FORMAT)
    name = {"closed": "dominance", "open": "dominance", "arena": "certified"}[kind]
    bad = dict(arrays)
    bad[name] = np.zeros((7, 7), dtype=bool)  # the certified pairs of another board
    write_state(path, meta, bad)
    with pytest.raises(ValueError, match=r"has shape \(7, 7\).*damaged") as caught:
        loader(path)
    assert str(path) in str(caught.value)
    incomplete = {k: v for k, v in meta.items() if k != "looks"}
    write_state(path, incomplete, arrays)
    with pytest.raises(ValueError, match="incomplete.*looks.*damaged"):
        loader(path)


def test_an_object_array_is_never_unpickled(saved, tmp_path):
    path = tmp_path / "pickled.npz"
    with np.load(saved["closed"], allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["sum"] = np.array([object()], dtype=object)
    np.savez(path, **arrays)
    with zipfile.ZipFile(path) as archive:  # the object array really is a pickle in the file
        assert "sum.npy" in archive.namelist()
    with pytest.raises(ValueError, match="not a saved rankci monitor, or is damaged"):
        Monitor.restore(path)


def test_saved_settings_that_are_not_valid_are_refused(saved):
    path = saved["open"]
    _, meta, arrays = read_state(path, OPEN_FORMAT)
    meta["config"]["spec"]["alpha"] = 2.0
    write_state(path, meta, arrays)
    with pytest.raises(ValueError, match="saved monitor settings are not valid.*alpha"):
        OpenMonitor.restore(path)


def test_continuing_a_monitor_with_other_settings_is_refused_naming_them():
    import rankci
    from rankci.sequential import replay
    from rankci.votes.sequential import replay_votes

    x = np.random.default_rng(1).random((60, 3)) < [0.8, 0.5, 0.2]
    first = replay(rankci.Scores.from_matrix(x), sampling="iid", look_every=10)
    other = first.monitor.spec.replace(alpha=0.1)
    with pytest.raises(ValueError, match=r"differs in alpha \(0.1, not 0.05\)"):
        replay(rankci.Scores.from_matrix(x), other, monitor=first.monitor)
    with pytest.raises(ValueError, match="conflicts with the spec's look_every=10"):
        replay(rankci.Scores.from_matrix(x), monitor=first.monitor, look_every=5)
    votes = Votes.from_arrays([0] * 20, [1] * 20, [0] * 20, models=["x", "y"])
    arena = replay_votes(votes, look_every=10)
    with pytest.raises(ValueError, match="continues the monitor with its own settings"):
        replay_votes(votes, MonitorSpec(sampling="iid", alpha=0.1), monitor=arena)
    with pytest.raises(ValueError, match="'z', which is not on the arena being continued"):
        replay_votes(Votes.from_arrays([0], [1], [0], models=["x", "z"]), monitor=arena)
