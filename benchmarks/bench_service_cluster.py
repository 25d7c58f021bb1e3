"""Several `rankci serve --cluster` processes on one PostgreSQL database, one killed mid-ingest
(issue 29, item 6).

Three cluster members share a fresh schema; 30 boards (``--models`` x ``--items``) are created
round-robin through them (a new board belongs to the process that creates it). ``--workers``
client processes post every board's scores, one post per item (its ``--models`` scores), each
worker its share of the boards, over keep-alive connections: a 307 sends the worker to the owner
named, a refused connection or a 503 to another member after 0.1 s, and an unacknowledged post is
repeated until it is acknowledged (a repeat of a post already stored comes back as duplicates,
never stored twice). Once ``--kill-at`` of the posts are acknowledged, member 0 is killed with
SIGKILL. Measured:

* acknowledged scores lost (acknowledged, but not in the database) and doubled (stored twice, or
  counted twice by the board's new owner): both must be 0;
* the time from the kill until every one of the 30 boards answers its leaderboard again (from a
  live member, following redirects; polled every 50 ms);
* the ingest rate (posts/s and scores/s) of the cluster before the kill, and over the whole run,
  against one single-process `rankci serve` on another fresh schema of the same database, the
  same workload and workers, measured in the same run.

Run: ``python benchmarks/bench_service_cluster.py [--postgres URL]`` (default: the URL in
``RANKCI_TEST_POSTGRES_URL``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import platform
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path

from bench_service import start_server  # benchmarks/ is the script's folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(db: str, port: int, log: Path, cluster: bool) -> subprocess.Popen:
    return start_server(db, port, log, ("--cluster",) if cluster else ())


def schema_url(base: str) -> tuple[str, str]:
    import psycopg

    schema = f"rankci_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urllib.parse.urlsplit(base)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    return schema, urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def drop_schema(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Conns:
    def __init__(self) -> None:
        self.by_port: dict[int, http.client.HTTPConnection] = {}

    def request(self, port, method, path, body=None, token=None):
        if method == "GET" and port in self.by_port:  # an idle keep-alive may have been closed
            try:
                return self._request(port, method, path, body, token)
            except (http.client.HTTPException, OSError):
                pass
        return self._request(port, method, path, body, token)

    def _request(self, port, method, path, body=None, token=None):
        conn = self.by_port.get(port)
        if conn is None:
            conn = self.by_port[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            self.by_port.pop(port, None)
            raise
        return response.status, payload


def worker(ports, boards, models, items, acked_out, counter) -> None:
    """Post every item of ``boards`` [(id, token)], following the owner; put the acknowledged
    (board, item) pairs and the post count on ``acked_out``."""
    conns = Conns()
    owner = {board: ports[i % len(ports)] for i, (board, _) in enumerate(boards)}
    acked, posts, started = [], 0, time.monotonic()
    for j, item in enumerate(items):
        for board, token in boards:
            body = json.dumps(
                {
                    "scores": [
                        {"model": m, "item": item, "score": (j + k) % 2}
                        for k, m in enumerate(models)
                    ]
                }
            ).encode()
            path = f"/api/boards/{board}/scores"
            while True:
                port = owner[board]
                try:
                    status, payload = conns.request(port, "POST", path, body, token)
                except OSError:
                    status, payload = 0, b""
                if status == 200:
                    break
                if status == 307:
                    owner[board] = urllib.parse.urlsplit(json.loads(payload)["owner"]).port
                    continue
                if status not in (0, 503):
                    raise RuntimeError(f"{board}: {status} {payload[:300]!r}")
                alive = [p for p in ports if p != port] or ports
                owner[board] = alive[(posts + len(acked)) % len(alive)]
                time.sleep(0.1)
            acked.append((board, item))
            posts += 1
            with counter.get_lock():
                counter.value += 1
    acked_out.put((acked, posts, time.monotonic() - started))


def run(args, base: str, folder: Path, cluster: bool) -> dict:
    schema, url = schema_url(base)
    processes: list[subprocess.Popen] = []
    try:
        return measure(args, url, folder, cluster, processes)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(30)
        drop_schema(base, schema)


def measure(args, url: str, folder: Path, cluster: bool, processes: list) -> dict:
    n = args.members if cluster else 1
    ports = [free_port() for _ in range(n)]
    for i, port in enumerate(ports):
        processes.append(start(url, port, folder / f"{'c' if cluster else 's'}{i}.log", cluster))
    models = [f"m{i}" for i in range(args.models)]
    items = [f"q{i}" for i in range(args.items)]
    conns = Conns()
    boards = []
    for b in range(args.boards):
        spec = {
            "benchmark": "bench",
            "run": "r",
            "id": f"b{b:02d}",
            "models": models,
            "items": items,
        }
        status, payload = conns.request(
            ports[b % n], "POST", "/api/boards", json.dumps(spec).encode()
        )
        assert status == 201, payload
        boards.append((spec["id"], json.loads(payload)["write_token"]))
    total = args.boards * args.items
    counter = mp.Value("q", 0)
    out = mp.Queue()
    shares = [boards[w :: args.workers] for w in range(args.workers)]
    workers = [
        mp.Process(target=worker, args=(ports, share, models, items, out, counter))
        for share in shares
    ]
    started = time.monotonic()
    for process in workers:
        process.start()
    killed_at = before_kill = None
    answered_again = None
    if cluster:
        while counter.value < args.kill_at * total:
            time.sleep(0.01)
        before_kill = (counter.value, time.monotonic() - started)
        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait()
        killed_at = time.monotonic()
        live = ports[1:]
        waiting = {board for board, _ in boards}
        while waiting:
            for board in list(waiting):
                port = live[hash(board) % len(live)]
                try:
                    status, payload = conns.request(port, "GET", f"/api/boards/{board}/leaderboard")
                    if status == 307:
                        port = urllib.parse.urlsplit(json.loads(payload)["owner"]).port
                        status, _ = conns.request(port, "GET", f"/api/boards/{board}/leaderboard")
                except OSError:
                    status = 0
                if status == 200:
                    waiting.discard(board)
            if waiting:
                time.sleep(0.05)
        answered_again = time.monotonic() - killed_at
    results = [out.get(timeout=900) for _ in workers]
    for process in workers:
        process.join()
    elapsed = time.monotonic() - started
    acked = {pair for result in results for pair in result[0]}
    posts = sum(result[1] for result in results)
    # every board, from its owner now: the scores it counts
    received = {}
    for board, _ in boards:
        port = ports[-1]
        status, payload = conns.request(port, "GET", f"/api/boards/{board}")
        if status == 307:
            port = urllib.parse.urlsplit(json.loads(payload)["owner"]).port
            status, payload = conns.request(port, "GET", f"/api/boards/{board}")
        assert status == 200, payload
        received[board] = json.loads(payload)["progress"]["scores_received"]
    import psycopg

    with psycopg.connect(url) as conn:
        stored = conn.execute(
            "SELECT b.id, s.model, s.item, COUNT(*) FROM scores s JOIN boards b ON b.num = s.board "
            "GROUP BY b.id, s.model, s.item"
        ).fetchall()
        index = {item: i for i, item in enumerate(items)}
    cells = {}
    doubled = 0
    for board, _model, item, count in stored:
        cells.setdefault((board, item), 0)
        cells[(board, item)] += 1
        doubled += count - 1
    lost = sum(args.models - cells.get((board, index[item]), 0) for board, item in acked)
    stored_per_board = {}
    for board, _m, _i, _c in stored:
        stored_per_board[board] = stored_per_board.get(board, 0) + 1
    doubled += sum(max(received[b] - stored_per_board.get(b, 0), 0) for b, _ in boards)
    out_row = {
        "members": n,
        "posts": posts,
        "acked_scores": len(acked) * args.models,
        "lost": lost,
        "doubled": doubled,
        "elapsed": elapsed,
        "posts_per_s": posts / elapsed,
    }
    if cluster:
        out_row["before_kill_posts_per_s"] = before_kill[0] / before_kill[1]
        out_row["answered_again_s"] = answered_again
    return out_row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", default=os.environ.get("RANKCI_TEST_POSTGRES_URL"))
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--boards", type=int, default=30)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--kill-at", type=float, default=0.4)
    args = parser.parse_args()
    if not args.postgres:
        raise SystemExit("give --postgres URL or set RANKCI_TEST_POSTGRES_URL")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        single = run(args, args.postgres, Path(folder), cluster=False)
        cluster = run(args, args.postgres, Path(folder), cluster=True)
    from rankci.service.storage_postgres import LEASE_TTL

    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.platform()}, "
        f"{os.cpu_count()} cores, load average {load[0]:.1f} before / "
        f"{os.getloadavg()[0]:.1f} after; lease {LEASE_TTL:g} s; {args.boards} boards x "
        f"{args.models} models x {args.items} items, {args.workers} client processes, "
        f"one post per item ({args.models} scores)"
    )
    print(
        f"one process: {single['posts']:,} posts in {single['elapsed']:.1f} s = "
        f"{single['posts_per_s']:,.0f} posts/s ({single['posts_per_s'] * args.models:,.0f} "
        f"scores/s); lost {single['lost']}, doubled {single['doubled']}"
    )
    print(
        f"{cluster['members']} processes, member 0 killed at {args.kill_at:.0%} of the posts: "
        f"{cluster['before_kill_posts_per_s']:,.0f} posts/s before the kill "
        f"({cluster['before_kill_posts_per_s'] / single['posts_per_s']:.2f} x one process), "
        f"{cluster['posts_per_s']:,.0f} posts/s over the whole run with the failover; "
        f"every board answered again {cluster['answered_again_s']:.2f} s after the kill; "
        f"acknowledged scores {cluster['acked_scores']:,}: lost {cluster['lost']}, "
        f"doubled {cluster['doubled']}"
    )
    print(json.dumps({"single": single, "cluster": cluster}))


if __name__ == "__main__":
    main()
