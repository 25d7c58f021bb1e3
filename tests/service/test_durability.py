"""Durability: the server is killed (SIGKILL) mid-stream, twice, and restarted; the evaluation goes
on (the client retries the post that was in flight), and the final state - wealths, surviving
weak orders, certified pairs, retirements, every look - equals, bit for bit, an uninterrupted
monitor fed the same scores in the board's order. Every acknowledged score survives each kill."""

from __future__ import annotations

import io
import json
import socket
import threading
import time

import numpy as np
import pandas as pd
import pytest
from service_server import Server, database

from rankci.sequential import Monitor

BACKENDS = ["sqlite", "postgresql"]


def _npz(data: bytes) -> dict:
    with np.load(io.BytesIO(data)) as archive:
        return {key: archive[key] for key in archive.files}


def _reference(models, items, x, seed, every):
    """The uninterrupted run, from the replay contract (not from the service's code)."""
    by_string = np.argsort(np.asarray(items, dtype=str), kind="stable")
    order = by_string[np.random.default_rng(seed).permutation(len(items))]
    monitor = Monitor(
        models, n_items=len(items), certifier="exact", retire="topk", k=2, look_every=every
    )
    monitor.update_block(x[order])
    return monitor


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_mid_stream_then_restart_gives_the_uninterrupted_result(backend, tmp_path):
    rng = np.random.default_rng(17)
    m, n, every, seed = 6, 1500, 15, 29
    models = [f"model-{j}" for j in range(m)]
    items = [f"item-{i:05d}" for i in range(n)]
    x = (rng.random((n, m)) < np.array([0.7, 0.64, 0.6, 0.58, 0.54, 0.45])).astype(float)
    index = {item: i for i, item in enumerate(items)}
    acknowledged: set[tuple[str, str]] = set()
    with database(backend, tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            status, created = api.post(
                "/api/boards",
                {
                    "benchmark": "durability",
                    "run": backend,
                    "models": models,
                    "items": items,
                    "order_seed": seed,
                    "look_every": every,
                    "certifier": "exact",
                    "retire": "topk",
                    "k": 2,
                },
            )
            assert status == 201, created
            board, token = created["board"]["id"], created["write_token"]
            kills_at = {12, 33}  # batches during which the server is killed
            batch_number = 0
            pending = None

            def extra(needs, count):
                """More needed evaluations, past the ones already pending."""
                status, more = api.get(f"/api/boards/{board}/needs?limit={count + 30}")
                have = {(e["model"], e["item"]) for e in needs["evaluations"]}
                return [
                    {
                        "model": e["model"],
                        "item": e["item"],
                        "score": float(x[index[e["item"]], models.index(e["model"])]),
                    }
                    for e in more["evaluations"]
                    if (e["model"], e["item"]) not in have
                ]

            while True:
                if pending is None:
                    status, needs = api.get(f"/api/boards/{board}/needs?limit=30")
                    assert status == 200
                    if not needs["evaluations"]:
                        break
                    pending = [
                        {
                            "model": e["model"],
                            "item": e["item"],
                            "score": float(x[index[e["item"]], models.index(e["model"])]),
                        }
                        for e in needs["evaluations"]
                    ]
                batch_number += 1
                if batch_number in kills_at:
                    outcome = {}
                    if batch_number == min(kills_at):
                        # killed while the body is still arriving: nothing of it may be stored
                        body = json.dumps({"scores": pending}).encode()
                        raw = socket.create_connection(("127.0.0.1", server.port))
                        raw.sendall(
                            f"POST /api/boards/{board}/scores HTTP/1.1\r\nHost: x\r\n"
                            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(body)}\r\n\r\n".encode()
                            + body[: len(body) // 2]
                        )
                        time.sleep(0.2)
                        server.kill()
                        raw.close()
                        half = {(e["model"], e["item"]) for e in pending}
                    else:
                        # killed at a random moment while posts stream in back to back
                        half = set()

                        def stream(first=pending, outcome=outcome, api=api):
                            batch = first
                            try:
                                while True:
                                    outcome["in_flight"] = batch
                                    status, _ = api.post(
                                        f"/api/boards/{board}/scores", {"scores": batch}, token
                                    )
                                    if status != 200:
                                        outcome["status"] = status
                                        return
                                    acknowledged.update((s["model"], s["item"]) for s in batch)
                                    outcome["acknowledged"] = outcome.get("acknowledged", 0) + 1
                                    batch = extra({"evaluations": []}, 60)[:60]
                                    if not batch:
                                        return
                            except OSError as error:  # the connection died with the server
                                outcome["error"] = error

                        thread = threading.Thread(target=stream)
                        thread.start()
                        time.sleep(float(rng.uniform(0.003, 0.02)))
                        server.kill()
                        thread.join(30)
                        assert "status" not in outcome, outcome
                        pending = outcome["in_flight"]  # retried below, stored or not
                    api.close()
                    server = Server(db, tmp_path / "server.log")
                    api = server.client()
                    # everything acknowledged before the kill is there
                    status, text = api.get(f"/api/boards/{board}/scores")
                    stored = pd.read_csv(io.BytesIO(text))
                    assert acknowledged <= set(zip(stored["model"], stored["item"]))
                    assert not half & set(zip(stored["model"], stored["item"]))
                    continue  # retry the same batch: idempotent, whether it was stored or not
                status, answer = api.post(f"/api/boards/{board}/scores", {"scores": pending}, token)
                assert status == 200, answer
                acknowledged.update((s["model"], s["item"]) for s in pending)
                pending = None
            assert batch_number > max(kills_at)

            reference = _reference(models, items, x, seed, every)
            path = tmp_path / "reference.npz"
            reference.save(path)
            want = _npz(path.read_bytes())

            def check(api):
                status, data = api.get(f"/api/boards/{board}/monitor")
                assert status == 200
                got = _npz(data)
                assert got.keys() == want.keys()
                for key in want:
                    assert got[key].dtype == want[key].dtype, key
                    assert np.array_equal(
                        got[key], want[key], equal_nan=want[key].dtype.kind == "f"
                    ), key
                status, history = api.get(f"/api/boards/{board}/history")
                assert history["looks"] == reference.looks
                status, leaderboard = api.get(f"/api/boards/{board}/leaderboard")
                ranking = reference.ranking()
                by_model = {row["model"]: row for row in leaderboard["models"]}
                for j, model in enumerate(models):
                    row = by_model[model]
                    assert (row["rank_lower"], row["rank_upper"]) == (
                        ranking.lower[j],
                        ranking.upper[j],
                    )
                    assert row["score"] == ranking.score[j]
                    assert row["rank_set"] == ranking.details["rank_sets"][model]
                assert leaderboard["certified_pairs"] == [
                    list(p) for p in ranking.dominance_pairs()
                ]
                assert leaderboard["progress"]["evaluations"] == reference.evaluations

            assert reference.retired and reference.t < n  # retirement and early stop were exercised
            check(api)
            # and once more after a clean restart, rebuilt from storage alone
            api.close()
            server.stop()
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            check(api)
            api.close()
            server.stop()
        finally:  # whichever server is running, even when the test fails
            server.stop()
