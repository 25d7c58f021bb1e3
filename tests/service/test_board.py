"""The board's state machine (in process, real SQLite): the monitor's state depends on the
committed scores only - not on their arrival order or batching - and is rebuilt exactly."""

import numpy as np
import pytest

from rankci.sequential import Monitor
from rankci.service.board import Board, Conflict, Rejected
from rankci.service.spec import make_spec
from rankci.service.storage import open_storage


def _state(monitor: Monitor, tmp_path, name: str) -> dict:
    path = tmp_path / f"{name}.npz"
    monitor.save(path)
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def _assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype, key
        assert np.array_equal(a[key], b[key], equal_nan=a[key].dtype.kind == "f"), key


@pytest.fixture
def setup(tmp_path):
    rng = np.random.default_rng(2)
    m, n = 6, 900
    models = [f"model-{j}" for j in range(m)]
    items = [f"q{i:04d}" for i in range(n)]
    clusters = [f"c{i % 4}" for i in range(n)]
    x = (rng.random((n, m)) < np.linspace(0.35, 0.75, m)).astype(float)
    spec = make_spec(
        benchmark="b",
        run="r",
        models=models,
        items=items,
        clusters=clusters,
        order_seed=9,
        look_every=15,
        retire="topk",
        k=2,
    )
    return spec, x


def _entries(spec, x, cells):
    return [(spec.models[j], spec.items[i], float(x[i, j])) for i, j in cells]


def test_arrival_order_and_batching_do_not_matter_and_restart_is_exact(setup, tmp_path):
    spec, x = setup
    n, m = x.shape
    # the reference: a monitor fed the whole matrix in the board's order (the replay contract)
    order = np.argsort(np.asarray(spec.items, dtype=str), kind="stable")
    order = order[np.random.default_rng(9).permutation(n)]
    reference = spec.make_monitor()
    reference.update_block(x[order])
    want = _state(reference, tmp_path, "reference")

    cells = [(i, j) for i in range(n) for j in range(m)]
    rng = np.random.default_rng(4)
    states = []
    for trial, shuffle in enumerate([False, True]):
        storage = open_storage(str(tmp_path / f"trial{trial}.sqlite")).open()
        num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
        board = Board(spec, num, storage)
        arrival = list(cells)
        if shuffle:
            rng.shuffle(arrival)
        start = 0
        while start < len(arrival):
            size = int(rng.integers(1, 400))
            board.post(_entries(spec, x, arrival[start : start + size]))
            start += size
            if start % 7 == 0:
                board.leaderboard()  # reads never take a look
        states.append(_state(board.monitor, tmp_path, f"trial{trial}"))
        rebuilt = Board.load(spec, num, storage)
        _assert_same_state(_state(rebuilt.monitor, tmp_path, "rebuilt"), states[-1])
        assert rebuilt.leaderboard()["models"] == board.leaderboard()["models"]
        storage.close()
    _assert_same_state(states[0], want)
    _assert_same_state(states[1], want)


def test_a_post_is_all_or_nothing(setup, tmp_path):
    spec, x = setup
    storage = open_storage(str(tmp_path / "b.sqlite")).open()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    board = Board(spec, num, storage)
    good = _entries(spec, x, [(0, 0), (0, 1)])
    assert board.post(good).accepted == 2
    bad_batches = [
        good[:1] + [("nobody", spec.items[1], 0.5)],
        good[:1] + [(spec.models[0], "no-such-item", 0.5)],
        good[:1] + [(spec.models[0], spec.items[1], 1.5)],
        good[:1] + [(spec.models[0], spec.items[1], float("nan"))],
        [(spec.models[2], spec.items[3], 0.0), (spec.models[2], spec.items[3], 1.0)],
        [(spec.models[2], spec.items[4], 1.0), (good[0][0], good[0][1], 1.0 - good[0][2])],
    ]
    for batch in bad_batches:
        with pytest.raises(Rejected):
            board.post(batch)
    assert board.received == 2
    assert len(storage.load_scores(num)[0]) == 2
    with pytest.raises(Conflict):
        board.post([(good[1][0], good[1][1], 1.0 - good[1][2])])
    again = board.post(good)
    assert (again.accepted, again.duplicates) == (0, 2)
    storage.close()


def test_manual_retirement_is_replayed_at_its_item_count(setup, tmp_path):
    spec, x = setup
    storage = open_storage(str(tmp_path / "c.sqlite")).open()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    board = Board(spec, num, storage)
    n, m = x.shape
    cells = [(i, j) for i in range(n) for j in range(m)]
    order = list(board.order)
    first = [(i, j) for i in order[:40] for j in range(m)]
    board.post(_entries(spec, x, first))
    assert board.retire(spec.models[5]) == {"model": spec.models[5], "t": 40}
    with pytest.raises(Conflict):
        board.retire(spec.models[5])
    board.post(_entries(spec, x, [c for c in cells if c[1] != 5]))
    assert board.needs()["evaluations"] == [] and board.state == "finished"
    rebuilt = Board.load(spec, num, storage)
    _assert_same_state(_state(rebuilt.monitor, tmp_path, "a"), _state(board.monitor, tmp_path, "b"))
    assert rebuilt.monitor.retired[spec.models[5]] == {"t": 40, "reason": "manual"}
    storage.close()


def test_spec_refuses_bad_boards_with_named_errors():
    ok = dict(benchmark="b", run="r", models=["a", "b"], items=["1", "2", "3"])
    make_spec(**ok)
    cases = [
        ({"models": ["a"]}, "two models"),
        ({"models": ["a", "a"]}, "listed twice"),
        ({"items": ["1", "1"]}, "listed twice"),
        ({"items": []}, "non-empty"),
        ({"board_id": "bad id!"}, "board id"),
        ({"clusters": ["x"]}, "one cluster per item"),
        ({"retire": "topk"}, "needs k"),
        ({"sampling": "bootstrap"}, "sampling"),
        ({"alpha": 1.5}, "alpha"),
        ({"look_every": "150%"}, "look_every"),
        ({"order_seed": -1}, "order_seed"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            make_spec(**{**ok, **change})


# two tied models replayed: nothing is certified; the subject is the order of the items
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_the_shared_order_is_the_replay_contract():
    items = [str(i) for i in range(25)]  # sorted as strings: 0, 1, 10, 11, ...
    spec = make_spec(benchmark="b", run="r", models=["a", "b"], items=items, order_seed=5)
    by_string = sorted(items)
    expected = [by_string[p] for p in np.random.default_rng(5).permutation(25)]
    assert [spec.items[i] for i in spec.order] == expected
    # the same order as rankci.sequential.replay on these items
    import pandas as pd

    import rankci
    from rankci.sequential import replay

    frame = pd.DataFrame({"model": "a", "item": items, "score": 0.5})
    frame = pd.concat([frame, frame.assign(model="b")])
    run = replay(rankci.read_scores(frame), order_seed=5)
    assert list(run.order) == expected


def test_one_transaction_commits_the_posts_of_several_boards(tmp_path):
    from rankci.service.commits import commit_boards

    storage = open_storage(str(tmp_path / "b.sqlite")).open()
    boards = []
    for run in ("r1", "r2"):
        spec = make_spec(benchmark="b", run=run, models=["a", "b"], items=["q0", "q1"])
        num = storage.create_board(spec.id, spec.to_json(), "h", None, spec.created_at)
        boards.append(Board(spec, num, storage))
    first, second = boards
    writes = []
    insert = storage.insert_scores
    storage.insert_scores = lambda *args: (writes.append(args[0]), insert(*args))[1]
    one = first.submit([("a", "q0", 1.0)])
    two = second.submit([("a", "q0", 0.0), ("b", "q1", 1.0)])
    clash = second.submit([("a", "q0", 1.0)])  # contradicts the earlier post of its group
    again = first.submit([("a", "q0", 1.0)])  # repeats the earlier post of its group exactly
    assert commit_boards([second, first]) == 4
    assert len(writes) == 1  # one transaction (one fsync) for both boards
    assert sorted(np.asarray(writes[0]).tolist()) == sorted([first.num, second.num, second.num])
    assert (one.outcome().accepted, two.outcome().accepted) == (1, 2)
    assert (again.outcome().accepted, again.outcome().duplicates) == (0, 1)
    with pytest.raises(Conflict):
        clash.outcome()
    for board, received in ((first, 1), (second, 2)):
        assert board.received == received
        model, item, score = storage.load_scores(board.num)
        assert len(score) == received

    def broken(*args):
        raise OSError("disk on fire")

    storage.insert_scores = broken
    lost = [first.submit([("b", "q0", 0.0)]), second.submit([("b", "q0", 0.0)])]
    before = [board.x.copy() for board in boards]
    assert commit_boards(boards) == 2
    for pending in lost:  # a failed transaction fails every post in it ...
        with pytest.raises(OSError, match="disk on fire"):
            pending.outcome()
    for board, x in zip(boards, before):  # ... and changes nothing in memory
        assert np.array_equal(board.x, x, equal_nan=True)
    storage.close()


def test_board_commit_adds_its_new_scores_to_the_group_and_applies_them_once_written(tmp_path):
    # the contract of Board.commit(group) with the group commit (commits.CommitGroup)
    import dataclasses
    import json

    from rankci.service.commits import CommitGroup, finish
    from rankci.service.storage import StorageUnavailable

    storage = open_storage(str(tmp_path / "b.sqlite")).open()
    spec = make_spec(benchmark="b", run="r", models=["a", "b"], items=["q0", "q1"])
    num = storage.create_board(spec.id, spec.to_json(), "h", None, spec.created_at)
    board = Board(spec, num, storage)
    group = CommitGroup(storage)
    with board.lock:
        assert board.commit(group) == [] and group.parts == []  # nothing waits
    new = board.submit([("a", "q0", 1.0), ("b", "q0", 0.0)])
    clash = board.submit([("a", "q0", 0.0)])  # contradicts the earlier post of its group
    with board.lock:
        taken = board.commit(group)
        assert taken == [new, clash] and board.waiting() == 0
        assert isinstance(clash.error, Conflict)  # refused at once, alone
        # nothing is applied before the group is written
        assert board.received == 0 and np.isnan(board.x).all() and new.result is None
        assert [part[0] for part in group.parts] == [num]
        group.write()
    finish(taken)
    assert (new.outcome().accepted, new.outcome().duplicates) == (2, 0)
    assert board.received == 2 and len(storage.load_scores(num)[2]) == 2
    published = board.published.state
    with pytest.raises(dataclasses.FrozenInstanceError):
        published.progress = {}
    assert published.progress["scores_received"] == 2 and published.progress == board.progress()
    assert json.loads(published.progress_json) == published.progress
    assert json.loads(board.leaderboard_json()) == board.leaderboard()

    repeat = board.submit([("a", "q0", 1.0)])  # nothing new: answered without a write
    group = CommitGroup(storage)
    with board.lock:
        assert board.commit(group) == [repeat]
    assert group.parts == [] and (repeat.result.accepted, repeat.result.duplicates) == (0, 1)

    def ambiguous(*args):
        raise StorageUnavailable("connection lost during COMMIT", ambiguous=True)

    storage.insert_scores = ambiguous
    lost = board.submit([("b", "q1", 1.0)])
    group = CommitGroup(storage)
    before = board.x.copy()
    with board.lock:
        taken = board.commit(group)
        group.write()
    finish(taken)
    with pytest.raises(StorageUnavailable):
        lost.outcome()
    assert np.array_equal(board.x, before, equal_nan=True) and board.received == 2
    assert board.stale  # the outcome is unknown: rebuilt from the database before any write
    refused = board.submit([("a", "q1", 1.0)])
    group = CommitGroup(storage)
    with board.lock:
        assert board.commit(group) == [refused]
    assert group.parts == [] and isinstance(refused.error, StorageUnavailable)
    storage.close()
