"""Adding a model to a live board that holds many scores (issue 29, Targets): time of
``POST /api/boards/{id}/models``, and evidence that no full replay happens.

A board made with ``"entry": "open"`` (``"sampling": "iid"``) of 10 models x 200,000 items is
created on a ``rankci serve`` in its own process (as ``bench_service.py`` starts it), and
receives S stored scores (S = 10^5, then 10^6; binary, logistic model) through the API in posts
of 100,000 in the board's shared order, so that the monitor has consumed S / 10 items and the
board is still open. Then ``--additions`` models are added one after another, each
``POST .../models`` timed from this process (median / p99 / max). The same board shape at both
sizes: the items are fixed, only the stored scores differ, so an addition whose time does not
grow with S replays nothing. The plain baseline of the same run is a full replay: the server is
restarted and the time until the board answers again (rebuilt from its S stored scores and its
join events) is measured; the ratio addition / replay is printed.

SQLite (a fresh file) and PostgreSQL (``--postgres URL``, default ``RANKCI_TEST_POSTGRES_URL``;
a fresh schema, dropped afterwards, so no other server's database is touched). The date, the
load average before and after, and the threads (BLAS pinned to one) are printed.

Run:  nice -n 10 python benchmarks/bench_add_model.py            (10^5 and 10^6 scores)
      nice -n 10 python benchmarks/bench_add_model.py --quick    (10^3 and 10^4; CI)
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import sys
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_service import free_port, ms, request, start_server  # noqa: E402

from rankci.service.spec import make_spec  # noqa: E402

MODELS = 10
BATCH = 100_000


def scoped_postgres(url: str) -> tuple[str, str]:
    """A fresh schema on the PostgreSQL at ``url``: (schema, URL whose search_path is it)."""
    import psycopg

    schema = f"rankci_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urllib.parse.urlsplit(url)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    return schema, urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def open_board(conn, n_items: int, models: list[str], seed: int, look_every) -> tuple:
    """Create an open board; return (id, token, the shared item order as indices)."""
    items = [f"item-{i:06d}" for i in range(n_items)]
    spec = {
        "benchmark": "grow",
        "run": f"run-{seed}-{time.time_ns()}",  # a fresh board id
        "models": models,
        "items": items,
        "order_seed": seed,
        "look_every": look_every,
        "sampling": "iid",
        "entry": "open",
    }
    created = json.loads(request(conn, "POST", "/api/boards", json.dumps(spec).encode()))
    order = make_spec(
        benchmark="grow", run="order", models=models, items=items, order_seed=seed
    ).order
    return created["board"]["id"], created["write_token"], items, np.asarray(order)


def one_size(db: str, folder: Path, stored: int, n_items: int, additions: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    models = [f"model-{j:02d}" for j in range(MODELS)]
    ability = rng.normal(0.0, 0.6, MODELS)
    scored = stored // MODELS
    port, log = free_port(), folder / "server.log"
    server = start_server(db, port, log)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        board, token, items, order = open_board(conn, n_items, models, seed, "1%")
        rows = order[:scored]
        difficulty = rng.normal(0.0, 1.5, scored)
        x = rng.random((scored, MODELS)) < special.expit(ability - difficulty[:, None])
        t0 = time.perf_counter()
        for start in range(0, scored * MODELS, BATCH):
            cells = range(start, min(start + BATCH, scored * MODELS))
            scores = [
                {"model": models[c % MODELS], "item": items[rows[c // MODELS]],
                 "score": float(x[c // MODELS, c % MODELS])}
                for c in cells
            ]  # fmt: skip
            request(
                conn, "POST", f"/api/boards/{board}/scores", json.dumps({"scores": scores}), token
            )
            request(conn, "GET", "/api/health")  # keep the connection warm
        fill = time.perf_counter() - t0
        path = f"/api/boards/{board}/leaderboard"
        before = json.loads(request(conn, "GET", path))
        assert before["progress"]["state"] == "open", before["progress"]
        times = []
        for k in range(additions):
            body = json.dumps({"model": f"late-{k:03d}"}).encode()
            t0 = time.perf_counter()
            answer = json.loads(request(conn, "POST", f"/api/boards/{board}/models", body, token))
            times.append(time.perf_counter() - t0)
            assert answer["t"] == scored, answer  # joined at the item count: nothing replayed
        after = json.loads(request(conn, "GET", path))
        n_rows = sorted(after)
        conn.close()
    finally:
        server.terminate()
        server.wait(60)
    t0 = time.perf_counter()  # the baseline: a full replay of the stored scores and events
    server = start_server(db, port, log)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        replayed = json.loads(request(conn, "GET", path))
        replay = time.perf_counter() - t0
        conn.close()
    finally:
        server.terminate()
        server.wait(60)
    assert replayed["progress"] == after["progress"], (replayed["progress"], after["progress"])
    return {
        "stored": scored * MODELS,
        "times": times,
        "fill_s": fill,
        "replay_s": replay,
        "models_after": n_rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 scores (CI)")
    parser.add_argument("--additions", type=int, default=25, help="models added (default 25)")
    parser.add_argument(
        "--postgres", default=os.environ.get("RANKCI_TEST_POSTGRES_URL"), metavar="URL"
    )
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    sizes = (10**3, 10**4) if args.quick else (10**5, 10**6)
    n_items = 2 * sizes[-1] // MODELS  # half of the items scored at the larger size: still open
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(
        f"load before {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; server: one process, "
        f"BLAS threads 1; board: {MODELS} models x {n_items:,} items, entry open, "
        f"{args.additions} additions per size"
    )
    backends = [("SQLite", None)]
    if args.postgres and not args.no_postgres:
        backends.append(("PostgreSQL", args.postgres))
    results = []
    for name, url in backends:
        for stored in sizes:
            with tempfile.TemporaryDirectory() as folder:
                schema = None
                if url:
                    schema, db = scoped_postgres(url)
                else:
                    db = str(Path(folder) / "add.sqlite")
                try:
                    run = one_size(db, Path(folder), stored, n_items, args.additions, seed=1)
                except Exception:
                    print((Path(folder) / "server.log").read_text()[-3000:], file=sys.stderr)
                    raise
                finally:
                    if schema:
                        drop_schema(url, schema)
            results.append((name, run))
            print(
                f"{name} {run['stored']:,} scores: filled in {run['fill_s']:.1f} s, addition "
                f"median {ms(run['times'], 0.5):.1f} ms, replay {run['replay_s']:.2f} s, load "
                f"{os.getloadavg()[0]:.2f}",
                flush=True,
            )
    print()
    print(
        "| store | stored scores | additions | POST .../models median / p99 / max | "
        "full replay (restart) | addition / replay | target |"
    )
    print("|---|---:|---:|---|---:|---:|---|")
    for name, run in results:
        t = run["times"]
        print(
            f"| {name} | {run['stored']:,} | {len(t)} | {ms(t, 0.5):.1f} / **{ms(t, 0.99):.1f}**"
            f" / {1000 * max(t):.1f} ms | {run['replay_s']:.2f} s | "
            f"{float(np.median(t)) / run['replay_s']:.4f} | < 100 ms |"
        )
    for name in dict(backends):
        small, large = (run for n, run in results if n == name)
        print(
            f"{name}: median addition at {large['stored']:,} / at {small['stored']:,} stored "
            f"scores = {np.median(large['times']) / np.median(small['times']):.2f} "
            f"(replay: {large['replay_s'] / small['replay_s']:.2f})"
        )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
