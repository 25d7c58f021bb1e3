"""A live board that grows from 5 to 200 models (issue 29, Targets): single-score ingest from 8
clients while models join, and leaderboard reads at 200 models.

One board made with ``"entry": "open"`` (``"sampling": "iid"``) starts with ``--start-models``
models on a ``rankci serve`` in its own process (SQLite; ``bench_service.py``'s harness). Its
items, in the board's shared order, are cut into one segment per model count: segment k is
scored by the first ``start + k`` models, and after it the next model joins
(``POST .../models``), so that the board ends at ``--final-models`` models with about
``--scores`` scores in all. Every score is its own post (``{"model", "item", "score"}``),
written by ``--clients`` raw-socket keep-alive clients (``bench_service.post_raw``: request bytes
made before the clock starts), each taking every k-th post of the segment. The board looks every
``1000 // final`` items: every 1,000 scores at the final model count, more often before. A second
process reads the leaderboard every ``--read-every`` seconds during the stream, each read tagged
with the model count of that moment; after the stream, ``--reads`` reads at rest at the final
model count.

Reported: the sustained rate (scores / wall time of the whole stream, the joins included), the
server's CPU time per post, the additions' times, and read latency p50 / p99 / max during the
stream at >= 150 models and at rest at the final count. Targets: >= 2,000 posts/s; read p99
< 50 ms at 200 models. The date, the load average before and after, the threads are printed.

Run:  nice -n 10 python benchmarks/bench_service_growth.py                  (2 x 10^5 scores)
      nice -n 10 python benchmarks/bench_service_growth.py --scores 1000000 (the issue's size)
      python benchmarks/bench_service_growth.py --quick                     (5 -> 20, 10^4; CI)
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_add_model import open_board  # noqa: E402
from bench_service import cpu_seconds, free_port, ms, post_raw, request, start_server  # noqa: E402


def tagged_reader(port: int, path: str, every: float, models, stop, out) -> None:
    """Read the leaderboard until told to stop; each read's latency with the model count then."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    reads = []
    while not stop.is_set():
        m = models.value
        t0 = time.perf_counter()
        request(conn, "GET", path)
        reads.append((m, time.perf_counter() - t0))
        time.sleep(every)
    out.put(reads)


def run(args, folder: Path) -> dict:
    start_m, final_m = args.start_models, args.final_models
    joins = final_m - start_m
    per_segment = max(1, round(args.scores / ((joins + 1) * (start_m + final_m) / 2)))
    n_items = per_segment * (joins + 1)
    look_every = max(1, 1000 // final_m)
    rng = np.random.default_rng(args.seed)
    ability = rng.normal(0.0, 0.6, final_m)
    difficulty = rng.normal(0.0, 1.5, n_items)
    x = rng.random((n_items, final_m)) < special.expit(ability - difficulty[:, None])
    names = [f"model-{j:03d}" for j in range(final_m)]
    port = free_port()
    server = start_server(str(folder / "growth.sqlite"), port, folder / "server.log")
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        board, token, items, order = open_board(
            conn, n_items, names[:start_m], args.seed, look_every
        )
        segments = []  # the single-score bodies of each segment, made before the clock starts
        for k in range(joins + 1):
            rows = order[k * per_segment : (k + 1) * per_segment]
            segments.append(
                [
                    json.dumps(
                        {"model": names[j], "item": items[i], "score": float(x[i, j])}
                    ).encode()
                    for i in rows
                    for j in range(start_m + k)
                ]
            )
        total = sum(len(s) for s in segments)
        path = f"/api/boards/{board}/leaderboard"
        models, stop, out = mp.Value("i", start_m), mp.Event(), mp.Queue()
        probe = mp.Process(
            target=tagged_reader, args=(port, path, args.read_every, models, stop, out)
        )
        probe.start()
        time.sleep(0.5)
        additions = []
        cpu0 = cpu_seconds(server.pid)
        t_start = time.perf_counter()
        for k, bodies in enumerate(segments):
            shares = [bodies[c :: args.clients] for c in range(args.clients)]
            threads = [
                threading.Thread(target=post_raw, args=(port, board, token, share))
                for share in shares
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if k < joins:
                body = json.dumps({"model": names[start_m + k]}).encode()
                # a fresh connection: a keep-alive one idle through a long segment is closed by
                # the server (uvicorn's timeout_keep_alive, 5 s) and would fail here
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                t0 = time.perf_counter()
                answer = json.loads(
                    request(conn, "POST", f"/api/boards/{board}/models", body, token)
                )
                additions.append(time.perf_counter() - t0)
                conn.close()
                # every posted row was consumed: the model joins at the segment's end
                assert answer["t"] == (k + 1) * per_segment, (answer, k)
                models.value = start_m + k + 1
        elapsed = time.perf_counter() - t_start
        cpu = cpu_seconds(server.pid) - cpu0
        stop.set()
        during = out.get()
        probe.join()
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        final = json.loads(request(conn, "GET", path))
        assert final["progress"]["state"] == "finished", final["progress"]
        at_rest = []
        for _ in range(args.reads):
            t0 = time.perf_counter()
            request(conn, "GET", path)
            at_rest.append(time.perf_counter() - t0)
        conn.close()
    finally:
        server.terminate()
        server.wait(60)
    return {
        "scores": total,
        "items": n_items,
        "per_segment": per_segment,
        "look_every": look_every,
        "seconds": elapsed,
        "cpu_per_post": cpu / total,
        "additions": additions,
        "during": during,
        "at_rest": at_rest,
        "certified": len(final.get("certified_pairs", [])),
        "final_models": final_m,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 -> 20 models, 10^4 scores (CI)")
    parser.add_argument("--scores", type=int, default=200_000)
    parser.add_argument("--start-models", type=int, default=5)
    parser.add_argument("--final-models", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--read-every", type=float, default=0.05, help="seconds between reads")
    parser.add_argument("--reads", type=int, default=300, help="reads at rest after the stream")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.scores, args.final_models, args.reads = 10_000, 20, 50
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(
        f"load before {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; server: one process "
        f"(SQLite), BLAS threads 1; {args.clients} raw-socket clients (threads of this process)"
        f"; one reader process"
    )
    with tempfile.TemporaryDirectory() as folder:
        try:
            r = run(args, Path(folder))
        except Exception:
            print((Path(folder) / "server.log").read_text()[-3000:], file=sys.stderr)
            raise
    late = [t for m, t in r["during"] if m >= 0.75 * r["final_models"]]
    every = [t for _, t in r["during"]]
    add = r["additions"]
    print(
        f"board: {args.start_models} -> {r['final_models']} models, {r['items']:,} items "
        f"({r['per_segment']} per model count), {r['scores']:,} single-score posts, a look every "
        f"{r['look_every']} items (= {r['look_every'] * r['final_models']:,} scores at "
        f"{r['final_models']} models); {r['certified']} certified pairs at the end"
    )
    print("| what | measured | target |\n|---|---|---|")
    print(
        f"| sustained ingest, single-score posts, {args.clients} clients (joins included) | "
        f"**{r['scores'] / r['seconds']:,.0f}** posts/s ({r['seconds']:.1f} s) | >= 2,000 /s |"
    )
    print(f"| server CPU time per post | {1e6 * r['cpu_per_post']:,.0f} us | |")
    print(
        f"| POST .../models during the stream: median / p99 / max ({len(add)} additions) | "
        f"{ms(add, 0.5):.1f} / {ms(add, 0.99):.1f} / {1000 * max(add):.1f} ms | < 100 ms |"
    )
    print(
        f"| leaderboard read during the stream, all: p50 / p99 / max ({len(every)} reads) | "
        f"{ms(every, 0.5):.1f} / {ms(every, 0.99):.1f} / {1000 * max(every):.1f} ms | |"
    )
    if late:
        print(
            f"| ... at >= {int(0.75 * r['final_models'])} models: p50 / p99 / max "
            f"({len(late)} reads) | {ms(late, 0.5):.1f} / **{ms(late, 0.99):.1f}** / "
            f"{1000 * max(late):.1f} ms | < 50 ms |"
        )
    rest = r["at_rest"]
    print(
        f"| leaderboard read at rest at {r['final_models']} models: p50 / p99 / max "
        f"({len(rest)} reads) | {ms(rest, 0.5):.1f} / **{ms(rest, 0.99):.1f}** / "
        f"{1000 * max(rest):.1f} ms | < 50 ms |"
    )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
