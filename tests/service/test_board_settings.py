"""A board's monitor settings are one MonitorSpec: the request body's setting fields are the
spec's, an invalid setting is a 422 naming it, and boards stored before the spec still load."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from service_server import database, running

from rankci.sequential.spec import REPLAY_DEFAULTS, SETTINGS, MonitorSpec
from rankci.service.board import Board
from rankci.service.registry import Service
from rankci.service.schemas import BOARD_SETTINGS, BoardCreate
from rankci.service.spec import BoardSpec, make_spec
from rankci.service.storage import open_storage

OLD_BOARD = Path(__file__).resolve().parents[1] / "fixtures" / "board_spec_v1.json"

#: Per setting: an invalid value in a request body.
INVALID = {
    "alpha": 1.5,
    "sampling": "bootstrap",
    "bet": "kelly",
    "lam": 0.95,
    "grid": [0.5, 1.2],
    "eps": 0,
    "certifier": "magic",
    "retire": "sometimes",
    "k": 0,
    "width": -1,
    "look_every": "150%",
    "freeze": "sometimes",
    "entry": "ajar",
}


def test_the_request_body_has_the_specs_settings_with_its_defaults():
    fields = BoardCreate.model_fields
    assert set(BOARD_SETTINGS) == set(SETTINGS) - {"n_items"} == set(INVALID)
    assert set(BOARD_SETTINGS) <= set(fields)
    for setting in dataclasses.fields(MonitorSpec):
        if setting.name in BOARD_SETTINGS:
            want = REPLAY_DEFAULTS.get(setting.name, setting.default)
            assert fields[setting.name].default == want, setting.name
            assert fields[setting.name].description == setting.metadata["help"]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    folder = tmp_path_factory.mktemp("settings")
    with database("sqlite", folder) as db:
        with running(db, folder / "server.log") as server:
            client = server.client()
            yield client
            client.close()


def test_an_invalid_setting_is_a_422_naming_it(api):
    body = {"benchmark": "b", "models": ["a", "b", "c"], "items": [f"q{i}" for i in range(20)]}
    for n, (name, value) in enumerate(sorted(INVALID.items())):
        status, answer = api.post("/api/boards", {**body, "run": f"bad-{n}", name: value})
        assert status == 422, (name, answer)
        assert name in json.dumps(answer), (name, answer)
    status, answer = api.post("/api/boards", {**body, "run": "topk", "retire": "topk"})
    assert status == 422 and "needs k" in json.dumps(answer)
    status, answer = api.post("/api/boards", {**body, "run": "k", "retire": "topk", "k": 3})
    assert status == 422 and "k must be smaller" in json.dumps(answer)
    settings = {"bet": "fixed", "lam": 0.4, "eps": 0.05, "freeze": True, "look_every": 5}
    status, created = api.post("/api/boards", {**body, "run": "good", **settings})
    assert status == 201, created
    for name, value in settings.items():
        assert created["board"][name] == value, name


def _old_board_settings() -> dict:
    # what tests/fixtures/board_spec_v1.json was made with (rankci at commit 3500ffd):
    # make_spec(benchmark="demo", run="old", models=["a", "b", "c", "d"],
    #           items=[f"q{i}" for i in range(60)], order_seed=11, alpha=0.1, retire="topk", k=1,
    #           look_every="10%", bet="agrapa", public=False, title="An old board")
    return dict(alpha=0.1, retire="topk", k=1, look_every="10%", bet="agrapa")


def test_a_board_stored_before_the_spec_still_loads(tmp_path):
    text = OLD_BOARD.read_text().strip()
    assert '"monitor"' not in text and '"alpha":0.1' in text  # the old form: settings on top
    old = BoardSpec.from_json(text)
    new = make_spec(benchmark="demo", run="old", models=["a", "b", "c", "d"],
                    items=[f"q{i}" for i in range(60)], order_seed=11, public=False,
                    title="An old board", **_old_board_settings())  # fmt: skip
    assert old.monitor == new.monitor
    assert old.monitor == MonitorSpec(alpha=0.1, n_items=60, bet="agrapa", certifier="exact",
                                      retire="topk", k=1, look_every=6)  # fmt: skip
    assert (old.look_every, old.certifier, old.look_every_option) == (6, "exact", "10%")
    assert (old.id, old.public, old.title) == ("demo--old", False, "An old board")
    assert old.order_seed == 11
    assert BoardSpec.from_json(old.to_json()) == old
    # in a database: the registry loads it, and it runs as a board made now does
    x = (np.random.default_rng(12).random((60, 4)) < [0.9, 0.6, 0.4, 0.2]).astype(float)
    entries = [(m, f"q{i}", float(x[i, j])) for i in range(60) for j, m in enumerate("abcd")]
    storage = open_storage(str(tmp_path / "old.sqlite")).open()
    storage.create_board(old.id, text, "h", None, old.created_at)
    service = Service(storage)
    board = service.board(old.id)
    assert board.spec == old
    board.post(entries)
    num = storage.create_board("demo--new", new.to_json(), "h", None, new.created_at)
    fresh = Board(new, num, storage)
    fresh.post(entries)
    assert board.monitor.looks == fresh.monitor.looks and board.monitor.retired
    assert board.monitor.retired == fresh.monitor.retired
    assert board.leaderboard()["models"] == fresh.leaderboard()["models"]
    storage.close()


def test_make_spec_takes_a_monitor_spec():
    items = [f"q{i}" for i in range(40)]
    spec = MonitorSpec(retire="topk", k=1, look_every="25%", certifier="shortcut")
    board = make_spec(benchmark="b", run="r", models=["a", "b", "c"], items=items, monitor=spec)
    assert board.monitor == spec.replace(n_items=40, look_every=10)
    assert board.make_monitor().spec == board.monitor
    with pytest.raises(ValueError, match="conflicts"):
        make_spec(benchmark="b", run="r", models=["a", "b"], items=items, monitor=spec, k=2)
    with pytest.raises(ValueError, match="look_every"):
        make_spec(benchmark="b", run="r", models=["a", "b"], items=items, look_every=None)
