"""A board's history, its Parquet export (API and ``rankci export``) and its replay by
``rankci monitor`` on real servers: the replay reproduces the server's looks bit for bit."""

from __future__ import annotations

import io
import itertools
import json
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from live_boards import replayed
from service_server import running

from rankci.cli import main
from rankci.sequential.spec import MonitorSpec
from rankci.service.export import EXPORT_KEY, EXPORT_MEDIA_TYPE, replay_export
from rankci.service.spec import BoardSpec

_ids = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    with running(str(folder / "boards.sqlite"), folder / "log") as srv:
        srv.folder = folder
        yield srv


def _post_all(api, board, token, rows, rng, batches: int) -> None:
    order = rng.permutation(len(rows))
    for part in np.array_split(order, batches):
        if len(part):
            body = {"scores": [rows[i] for i in part]}
            status, answer = api.post(f"/api/boards/{board}/scores", body, token)
            assert status == 200, answer


def _build_open_board(api, seed: int, n_initial: int, joins: list[float], batches: int):
    """A board with ``n_initial`` models and one late entrant per fraction in ``joins`` (the
    fraction of the items whose scores are posted before it joins). Returns the board id, its
    token and every score posted."""
    rng = np.random.default_rng(seed)
    n = 90
    items = [f"q{i}" for i in range(n)]
    models = [f"m{j}" for j in range(n_initial + len(joins))]
    rates = np.linspace(0.95, 0.05, len(models))
    x = (rng.random((n, len(models))) < rates).astype(float)
    x[:, 0] = np.round(rng.random(n) * 0.2 + 0.8, 6)  # a model with non-binary scores
    body = {
        "id": f"open-{next(_ids)}",
        "benchmark": "b",
        "run": "r",
        "models": models[:n_initial],
        "items": items,
        "sampling": "iid",
        "entry": "open",
        "look_every": 10,
        "order_seed": seed,
        "public": False,
    }
    status, created = api.post("/api/boards", body)
    assert status == 201, created
    board, token = created["board"]["id"], created["write_token"]
    posted: dict = {}
    present = n_initial

    def post_cells(upto: int) -> None:
        rows = [
            {"model": models[j], "item": items[i], "score": float(x[i, j])}
            for i in range(upto)
            for j in range(present)
            if (models[j], items[i]) not in posted
        ]
        _post_all(api, board, token, rows, rng, batches)
        posted.update({(r["model"], r["item"]): r["score"] for r in rows})

    for fraction in joins:
        post_cells(int(round(fraction * n)))
        status, answer = api.post(f"/api/boards/{board}/models", {"model": models[present]}, token)
        assert status == 200, answer
        present += 1
    post_cells(n)  # the late entrants' scores on the items before they joined too
    posted = [(m, i, s) for (m, i), s in posted.items()]
    return board, token, posted


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 10_000),
    n_initial=st.integers(2, 3),
    joins=st.lists(st.floats(0.0, 0.9), min_size=1, max_size=2).map(sorted),
    batches=st.integers(1, 7),
)
def test_an_export_replays_into_the_boards_looks_bit_for_bit(
    server, tmp_path, seed, n_initial, joins, batches
):
    api = server.client()
    board, token, posted = _build_open_board(api, seed, n_initial, joins, batches)
    status, history = api.get(f"/api/boards/{board}/history", token)
    assert status == 200
    status, data = api.get(f"/api/boards/{board}/export", token)
    assert status == 200 and isinstance(data, bytes)
    # every accepted score, once, bit for bit
    table = pq.read_table(io.BytesIO(data))
    rows = list(
        zip(
            table.column("model").to_pylist(),
            table.column("item").to_pylist(),
            table.column("score").to_pylist(),
        )
    )
    assert sorted(rows) == sorted(posted)
    assert table.column("seq").to_pylist() == list(range(len(posted)))
    # the replay (rankci monitor FILE) has the server's looks, events and first certifications
    replay = replayed(tmp_path, data, board)
    for key in ("looks", "events", "entries", "first_certified", "rank_bounds_since", "models"):
        assert replay[key] == history[key], key
    assert len(history["looks"]) >= 9
    # a late entrant's entry: the item count of its join event, the look count before it
    joined = {e["model"]: e for e in history["events"] if e["kind"] == "join"}
    for entry in history["entries"]:
        assert entry["n_scores"] == 90
        if entry["model"] in joined:
            event = joined[entry["model"]]
            assert entry["t"] == event["t"] and entry["at"] is not None
            assert entry["look"] == sum(look["t"] <= event["t"] for look in history["looks"])
        else:
            assert entry["t"] == 0 and entry["look"] == 0
    api.close()


def test_first_certifications_follow_the_looks(server):
    """Each certified pair's first look is the first look whose rank bounds carry it (checked
    against the looks' n_certified counts, which the monitor records independently)."""
    api = server.client()
    board, token, _ = _build_open_board(api, 11, 3, [0.3], 3)
    # a private board's export is authorised like its other reads (hidden without a token)
    refused = api.get(f"/api/boards/{board}/history")[0]
    assert refused in (401, 404) and api.get(f"/api/boards/{board}/export")[0] == refused
    assert api.get(f"/api/boards/{board}/export", "wrong-token")[0] == refused
    _, history = api.get(f"/api/boards/{board}/history", token)
    looks = history["looks"]
    firsts = history["first_certified"]
    assert firsts, "the rates 0.95 .. 0.05 certify some pair in 90 items"
    for number, look in enumerate(looks, start=1):
        assert sum(p["look"] <= number for p in firsts) == look["n_certified"]
    for p in firsts:
        assert p["t"] == looks[p["look"] - 1]["t"]
    models = history["models"]
    last = looks[-1]
    for bound in history["rank_bounds_since"]:
        j = models.index(bound["model"])
        assert bound["lower"] == last["lower"][j] and bound["upper"] == last["upper"][j]
        since = bound["lower_since_look"]
        assert all(look["lower"][j] == bound["lower"] for look in looks[since - 1 :])
        if since > 1:
            previous = looks[since - 2]["lower"]
            assert j >= len(previous) or previous[j] != bound["lower"]
    for _ in range(600):  # the page's sections are rendered in the background
        status, fragment = api.get(f"/boards/{board}/fragment", token)
        assert status == 200
        if fragment["version"] != "rendering":
            break
        time.sleep(0.1)
    assert '<section id="history">' in fragment["html"]
    assert "joined at item" in fragment["html"] and "<td>m3</td>" in fragment["html"]
    api.close()


def test_closed_board_with_a_retirement_exports_and_replays(server, tmp_path):
    api = server.client()
    rng = np.random.default_rng(2)
    items = [str(i) for i in range(60)]
    body = {
        "id": "closed-retire",
        "benchmark": "b",
        "run": "c",
        "models": ["a", "b", "c"],
        "items": items,
        "look_every": 10,
        "order_seed": 5,
    }
    status, created = api.post("/api/boards", body)
    token = created["write_token"]
    x = (rng.random((60, 3)) < [0.9, 0.5, 0.2]).astype(float)
    first = [
        {"model": m, "item": items[i], "score": float(x[i, j])}
        for i in range(30)
        for j, m in enumerate("abc")
    ]
    assert api.post("/api/boards/closed-retire/scores", {"scores": first}, token)[0] == 200
    assert api.post("/api/boards/closed-retire/retire", {"model": "c"}, token)[0] == 200
    rest = [
        {"model": m, "item": items[i], "score": float(x[i, j])}
        for i in range(30, 60)
        for j, m in enumerate("ab")
    ]
    assert api.post("/api/boards/closed-retire/scores", {"scores": rest}, token)[0] == 200
    status, data = api.get("/api/boards/closed-retire/export")
    assert status == 200
    _, headers = api.headers("/api/boards/closed-retire/export")
    assert headers["content-type"] == EXPORT_MEDIA_TYPE
    _, history = api.get("/api/boards/closed-retire/history")
    replay = replayed(tmp_path, data, "closed")
    assert replay["looks"] == history["looks"] and replay["events"] == history["events"]
    meta = json.loads(pq.read_schema(io.BytesIO(data)).metadata[EXPORT_KEY])
    assert [e["kind"] for e in meta["events"]] == ["retire"]
    assert meta["n_scores"] == 150
    # rankci export from the URL and from the database give the same rows as the API
    by_url = tmp_path / "url.parquet"
    url = f"http://127.0.0.1:{server.port}"
    assert main(["export", url, "closed-retire", "-o", str(by_url)]) == 0
    by_db = tmp_path / "db.parquet"
    assert main(["export", server.db, "closed-retire", "-o", str(by_db)]) == 0
    expected = pq.read_table(io.BytesIO(data))
    assert pq.read_table(by_url).equals(expected)
    assert pq.read_table(by_db).equals(expected)
    assert replay_export(by_db).monitor.looks == history["looks"]
    api.close()


def test_export_errors_name_the_board_and_the_flags(server, tmp_path, capsys):
    target = tmp_path / "x.parquet"
    assert main(["export", server.db, "nope", "-o", str(target)]) != 0
    assert "no board 'nope'" in capsys.readouterr().err
    url = f"http://127.0.0.1:{server.port}"
    assert main(["export", url, "nope", "-o", str(target)]) != 0
    assert "answered 404" in capsys.readouterr().err
    assert not target.exists()
    api = server.client()
    items = [str(i) for i in range(20)]
    body = {"id": "flags", "benchmark": "b", "run": "f", "models": ["a", "b"], "items": items}
    assert api.post("/api/boards", body)[0] == 201
    status, data = api.get("/api/boards/flags/export")
    assert status == 200
    path = tmp_path / "flags.parquet"
    path.write_bytes(data)
    assert pq.read_table(path).num_rows == 0  # a board with no score yet exports its spec
    assert main(["monitor", str(path), "--alpha", "0.1"]) != 0
    error = capsys.readouterr().err
    assert "--alpha" in error and "board export" in error
    assert main(["monitor", str(path)]) == 0
    api.close()


def test_an_entry_rule_changed_on_an_existing_board_is_a_409_naming_it(server):
    api = server.client()
    body = {
        "id": "entry-fixed",
        "benchmark": "b",
        "run": "e",
        "models": ["a", "b"],
        "items": ["1", "2", "3"],
        "sampling": "iid",
    }
    assert api.post("/api/boards", body)[0] == 201
    status, answer = api.post("/api/boards", {**body, "entry": "open"})
    assert status == 409
    assert "entry 'closed'" in answer["detail"] and "cannot be changed" in answer["detail"]
    status, answer = api.post("/api/boards", body)  # the same rule: just "exists"
    assert status == 409 and answer["detail"] == "a board 'entry-fixed' exists"
    api.close()


def test_saved_state_from_before_the_entry_rule_loads_as_closed_explicitly():
    """A MonitorSpec dict, and a board spec, written before ``entry`` existed load as closed
    (models fixed: what they were); a dict naming an unknown entry rule is refused."""
    old = {"flow": "anytime", "version": 1, "alpha": 0.05, "sampling": "iid"}
    assert MonitorSpec.from_dict(old).entry == "closed"
    with pytest.raises(ValueError, match="entry"):
        MonitorSpec.from_dict({**old, "entry": "fixed-ish"})
    stored = json.dumps(
        {
            "id": "old",
            "benchmark": "b",
            "run": "r",
            "models": ["a", "b"],
            "items": ["1", "2"],
            "clusters": None,
            "order_seed": 1,
            "monitor": old,
            "look_every_option": "1%",
            "public": True,
            "title": "",
            "created_at": "2025-01-01T00:00:00+00:00",
        }
    )
    spec = BoardSpec.from_json(stored)
    assert spec.monitor.entry == "closed"
    assert type(spec.make_monitor()).__name__ == "Monitor"
