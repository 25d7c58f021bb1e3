"""Storage growth of `rankci serve` (issue 29 item 4): bytes per stored score on SQLite and
PostgreSQL, and the Parquet export's bytes per score, extrapolated to 10^7 scores.

One board of M models x N items receives every score (binary scores, like an accuracy board, and
continuous ones) through :meth:`Storage.insert_scores` in batches of 10,000 (as group commits
write them), model by model, each with its arrival number (the order of the inserts); the size
is then read back: the SQLite file after a WAL checkpoint, PostgreSQL's
``pg_total_relation_size('scores')`` (table, primary key index and TOAST) in a fresh schema.
The Parquet export (its rows in arrival order) is measured for that arrival order and for one
where each item's scores of every model arrive together (item by item). Bytes per score at two
sizes show the growth is linear, and the larger one is extrapolated to 10^7 scores. The load
average and the date are printed.

Run:  nice -n 10 python benchmarks/bench_service_storage.py            (10^5 and 10^6 scores)
      nice -n 10 python benchmarks/bench_service_storage.py --quick    (10^4 and 10^5)
"""

from __future__ import annotations

import argparse
import datetime
import os
import tempfile
import urllib.parse
import uuid

import numpy as np

from rankci.service.spec import make_spec
from rankci.service.storage import open_storage

TARGET = 10**7


def _scores(n_scores: int, continuous: bool, seed: int = 0):
    """(model, item, score) of every cell of 50 models x n_scores / 50 items, model by model."""
    m = 50
    n = n_scores // m
    rng = np.random.default_rng(seed)
    model, item = np.divmod(np.arange(m * n, dtype=np.int64), n)
    score = rng.random(m * n) if continuous else (rng.random(m * n) < 0.6).astype(float)
    return model, item, score


def _fill(storage, n_scores: int, continuous: bool, seed: int = 0) -> None:
    m = 50
    n = n_scores // m
    spec = make_spec(
        benchmark="bench",
        run=f"r{n_scores}{continuous}",
        models=[f"model-{j}" for j in range(m)],
        items=[f"item-{i}" for i in range(n)],
        order_seed=1,
    )
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    model, item, score = _scores(n_scores, continuous, seed)
    arrival = np.arange(m * n, dtype=np.int64)
    for start in range(0, m * n, 10_000):
        part = slice(start, start + 10_000)
        storage.insert_scores(num, model[part], item[part], score[part], arrival[part])


def sqlite_bytes(n_scores: int, continuous: bool) -> float:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "b.sqlite")
        empty = open_storage(path).open()
        empty._run(lambda cur: cur.execute("PRAGMA wal_checkpoint(TRUNCATE)"), write=True)
        base = os.path.getsize(path)
        empty.close()
        storage = open_storage(path).open()
        storage.lock_owner()
        _fill(storage, n_scores, continuous)
        storage._run(lambda cur: cur.execute("PRAGMA wal_checkpoint(TRUNCATE)"), write=True)
        storage.close()
        return (os.path.getsize(path) - base) / n_scores


def postgres_bytes(url: str, n_scores: int, continuous: bool) -> float:
    import psycopg

    schema = f"rankci_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urllib.parse.urlsplit(url)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    scoped = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    try:
        storage = open_storage(scoped).open()
        storage.lock_owner()  # a fresh schema: this process is its only owner
        _fill(storage, n_scores, continuous)
        storage.close()
        with psycopg.connect(scoped, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE scores")
            size = conn.execute("SELECT pg_total_relation_size('scores')").fetchone()[0]
        return size / n_scores
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def parquet_bytes(n_scores: int, continuous: bool, by_item: bool = False) -> float:
    """The export's bytes per score, its scores arriving model by model (as :func:`_fill`
    inserts them) or, ``by_item``, item by item (every model's score of an item together)."""
    from rankci.service.board import Board
    from rankci.service.export import MemoryStorage, parquet_chunks

    m = 50
    n = n_scores // m
    spec = make_spec(
        benchmark="bench",
        run="p",
        models=[f"model-{j}" for j in range(m)],
        items=[f"item-{i}" for i in range(n)],
        order_seed=1,
    )
    model, item, score = _scores(n_scores, continuous)
    arrival = np.arange(m * n, dtype=np.int64)
    if by_item:  # cell (model j, item i) arrives at i * m + j
        arrival = item * m + model
    board = Board.load(spec, 0, MemoryStorage(model, item, score, [], arrival=arrival))
    return sum(len(chunk) for chunk in parquet_chunks(board)) / n_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--postgres", default=os.environ.get("RANKCI_TEST_POSTGRES_URL"), metavar="URL"
    )
    args = parser.parse_args()
    sizes = (10**4, 10**5) if args.quick else (10**5, 10**6)
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"load before {os.getloadavg()[0]:.2f}; 50 models; batches of 10,000 scores")
    print("| store | scores | kind | bytes per score | extrapolated to 10^7 scores |")
    print("|---|---:|---|---:|---:|")
    for continuous in (False, True):
        kind = "continuous" if continuous else "binary"
        for n_scores in sizes:
            rows = [("SQLite", sqlite_bytes(n_scores, continuous))]
            if args.postgres:
                rows.append(("PostgreSQL", postgres_bytes(args.postgres, n_scores, continuous)))
            rows.append(
                ("Parquet export, arrival model by model", parquet_bytes(n_scores, continuous))
            )
            rows.append(
                ("Parquet export, arrival item by item", parquet_bytes(n_scores, continuous, True))
            )
            for store, per in rows:
                print(
                    f"| {store} | {n_scores:,} | {kind} | {per:.1f} | "
                    f"{per * TARGET / 2**20:,.0f} MiB |"
                )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
