"""Load benchmark of `rankci serve` (issue 10).

A 50-model x 5,000-item evaluation (binary scores, logistic model) is streamed through the JSON
API from this process into a server running in its own process on loopback, in the board's shared
order, in batches of ``--batch`` scores over ``--clients`` keep-alive connections (request bodies
are encoded before the clock starts, so the client's JSON encoding is not what is timed). While
the scores stream in, a third process reads the leaderboard every ``--read-every`` seconds; after
the stream, it reads it ``--reads`` more times at rest. Then the server is restarted and the time
until the board answers again (rebuilt from the stored scores) is measured.

Targets: >= 5,000 scores/s ingested with SQLite; leaderboard reads under 100 ms (p99) at that size.

Run: ``python benchmarks/bench_service.py [--repeat 3] [--postgres postgresql://...]``; with
``--rate 5000`` the posts are paced at the target rate, to see read latency under that load.

``--flood``: instead, 60 concurrent clients (``--flood-clients``) in another process post scores
with a wrong token for ``--flood-seconds`` seconds, while a valid reader in this process reads a
public board's leaderboard back to back and, in another thread, a valid writer (from 127.0.0.2,
so not behind the flood's rate limit) posts single scores; reported: the reader's and writer's
p50 / p99 / max and the flood's answers by status (target: reader p99 under 100 ms). Loopback
only, bounded in time.
Reported: best and median sustained scores/s over the repeats, read latencies (p50/p99/max)
during and after ingestion, the server's CPU time (user + system, from ``/proc``) per post during
ingestion - a figure that depends much less than the rates on what else the machine runs - the
server's peak resident memory, restart time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from scipy import special


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: str, port: int, log: Path, extra=()) -> subprocess.Popen:
    """``rankci serve`` (with the arguments ``extra``) on ``port``, once it answers."""
    command = [sys.executable, "-m", "rankci", "serve", "--db", db, "--port", str(port)]
    command += ["--no-access-log", "--log-level", "warning", "--open-boards"]  # local use
    command += list(extra)
    with open(log, "ab") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(log.read_text()[-2000:])
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/health")
            if conn.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request(conn, method, path, body=None, token=None, server_times=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {data[:300]!r}")
    if server_times is not None:
        timing = response.getheader("Server-Timing", "app;dur=nan")
        server_times.append(float(timing.split("dur=")[1]) / 1000.0)
    return data


def post_raw(port: int, board: str, token: str, bodies) -> None:
    """Post each body in turn on one keep-alive connection, written as raw HTTP/1.1 (the request
    bytes are made before the first post; the answer is read by its Content-Length): a client
    that costs the shared machine about 30 us per post, against about 200 us for ``http.client``,
    so that the server, not the clients, is what is measured on 2 cores."""
    head = (
        f"POST /api/boards/{board}/scores HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nAuthorization: Bearer {token}\r\n"
    ).encode()
    requests = [head + b"Content-Length: %d\r\n\r\n" % len(body) + body for body in bodies]
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = b""
        for raw in requests:
            sock.sendall(raw)
            while True:
                end = pending.find(b"\r\n\r\n")
                if end >= 0:
                    header = pending[:end].lower()
                    at = header.index(b"content-length:") + 15
                    stop = header.find(b"\r\n", at)
                    size = int(header[at : stop if stop >= 0 else len(header)])
                    if len(pending) >= end + 4 + size:
                        if not header.startswith(b"http/1.1 200"):
                            raise RuntimeError(f"POST scores: {pending[: end + 4 + size]!r}")
                        pending = pending[end + 4 + size :]
                        break
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("the server closed the connection")
                pending += chunk


def reader(port: int, path: str, every: float, stop, out) -> None:
    """Read the leaderboard until told to stop; record each read's latency (seconds)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, inside = [], []
    while not stop.is_set():
        start = time.perf_counter()
        request(conn, "GET", path, server_times=inside)
        times.append(time.perf_counter() - start)
        time.sleep(every)
    out.put((times, inside))


def one_run(args, n_models, n_items, folder: Path, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, 0.6, n_models)
    difficulty = rng.normal(0.0, 1.5, n_items)
    x = (rng.random((n_items, n_models)) < special.expit(ability - difficulty[:, None])).astype(
        float
    )
    models = [f"model-{j:02d}" for j in range(n_models)]
    items = [f"item-{i:05d}" for i in range(n_items)]
    clusters = [f"topic-{i % 14:02d}" for i in range(n_items)]
    db = args.postgres or str(folder / f"bench-{seed}.sqlite")
    port = free_port()
    log = folder / "server.log"
    server = start_server(db, port, log)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        spec = {
            "benchmark": "bench",
            "run": f"run-{seed}-{time.time_ns()}",
            "models": models,
            "items": [{"id": it, "cluster": c} for it, c in zip(items, clusters)],
            "order_seed": seed,
            "look_every": "1%",
        }
        created = json.loads(request(conn, "POST", "/api/boards", json.dumps(spec).encode()))
        board, token = created["board"]["id"], created["write_token"]
        order = np.argsort(np.asarray(items, dtype=str), kind="stable")
        order = order[np.random.default_rng(seed).permutation(n_items)]
        cells = [(i, j) for i in order for j in range(n_models)]  # the shared order
        bodies = []
        for start in range(0, len(cells), args.batch):
            chunk = cells[start : start + args.batch]
            scores = [{"model": models[j], "item": items[i], "score": x[i, j]} for i, j in chunk]
            bodies.append(json.dumps({"scores": scores}).encode())
        path = f"/api/boards/{board}/leaderboard"
        stop, out = mp.Event(), mp.Queue()
        probe = mp.Process(target=reader, args=(port, path, args.read_every, stop, out))
        probe.start()
        time.sleep(0.5)

        pace = args.batch * args.clients / args.rate if args.rate else 0.0  # s per batch

        def post_all(share):
            if args.raw_clients:
                return post_raw(port, board, token, share)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for n, body in enumerate(share):
                if pace:
                    time.sleep(max(0.0, start + n * pace - time.perf_counter()))
                request(c, "POST", f"/api/boards/{board}/scores", body, token)
            c.close()

        cpu0 = cpu_seconds(server.pid)
        client0 = time.process_time()
        start = time.perf_counter()
        # with several clients each takes every k-th batch, so they stay near the frontier
        threads = [
            threading.Thread(target=post_all, args=(bodies[k :: args.clients],))
            for k in range(args.clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(server.pid) - cpu0
        client_cpu = time.process_time() - client0  # this process: the posting clients
        stop.set()
        during, during_server = out.get()
        probe.join()
        conn.close()  # idle past uvicorn's keep-alive timeout: open a fresh one
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        final = json.loads(request(conn, "GET", path))
        assert final["progress"]["state"] == "finished", final["progress"]
        at_rest = []
        for _ in range(args.reads):
            t0 = time.perf_counter()
            request(conn, "GET", path)
            at_rest.append(time.perf_counter() - t0)
        conn.close()
        rss = peak_rss_mib(server.pid)
    finally:
        server.terminate()
        server.wait(30)
    # restart: the board is rebuilt from the stored scores
    t0 = time.perf_counter()
    server = start_server(db, port, log)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        request(conn, "GET", path)
        restart = time.perf_counter() - t0
        conn.close()
    finally:
        server.terminate()
        server.wait(30)
    return {
        "scores": len(cells),
        "seconds": elapsed,
        "rate": len(cells) / elapsed,
        "cpu_per_post": cpu / len(bodies),
        "client_cpu_per_post": client_cpu / len(bodies),
        "during": during,
        "during_server": during_server,
        "at_rest": at_rest,
        "rss_mib": rss,
        "restart_s": restart,
        "certified": len(final["certified_pairs"]),
    }


_FLOOD = """
import http.client, json, sys, threading, time
port, board, seconds, n = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
stop = time.monotonic() + seconds
counts, lock = {}, threading.Lock()
def flood():
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"model": "model-00", "item": "item-00000", "score": 1.0})
    headers = {"Authorization": "Bearer rkci_" + "w" * 43, "Content-Type": "application/json"}
    while time.monotonic() < stop:
        try:
            conn.request("POST", f"/api/boards/{board}/scores", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            with lock:
                counts[response.status] = counts.get(response.status, 0) + 1
        except OSError:
            conn.close()
threads = [threading.Thread(target=flood) for _ in range(n)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps(counts))
"""


def flood_run(args, folder: Path) -> dict:
    """A wrong-token flood against one server; a valid reader and writer measured meanwhile."""
    port = free_port()
    db = args.postgres or str(folder / "flood.sqlite")
    server = start_server(db, port, folder / "server.log")
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        items = [f"item-{i:05d}" for i in range(2000)]
        spec = {
            "benchmark": "flood",
            "run": f"run-{time.time_ns()}",
            "models": [f"model-{j:02d}" for j in range(10)],
            "items": items,
            "look_every": 50,
        }
        created = json.loads(request(conn, "POST", "/api/boards", json.dumps(spec).encode()))
        board, token = created["board"]["id"], created["write_token"]
        path = f"/api/boards/{board}/leaderboard"
        flood = subprocess.Popen(
            [sys.executable, "-c", _FLOOD, str(port), board, str(args.flood_seconds)]
            + [str(args.flood_clients)],
            stdout=subprocess.PIPE,
            text=True,
        )
        reads, writes = [], []
        try:
            time.sleep(1.0)  # the flood is under way
            stop = time.monotonic() + max(args.flood_seconds - 2.0, 1.0)

            def read_all():
                while time.monotonic() < stop:
                    t0 = time.perf_counter()
                    request(conn, "GET", path)
                    reads.append(time.perf_counter() - t0)

            def write_all():
                writer = http.client.HTTPConnection(
                    "127.0.0.1", port, timeout=60, source_address=("127.0.0.2", 0)
                )
                n = 0
                while time.monotonic() < stop:
                    cell = {"model": f"model-{n % 10:02d}", "item": items[n // 10], "score": 1.0}
                    t0 = time.perf_counter()
                    request(writer, "POST", f"/api/boards/{board}/scores", json.dumps(cell), token)
                    writes.append(time.perf_counter() - t0)
                    n += 1
                writer.close()

            threads = [threading.Thread(target=read_all), threading.Thread(target=write_all)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            out, _ = flood.communicate(timeout=args.flood_seconds + 60)
        finally:
            if flood.poll() is None:
                flood.kill()
                flood.wait(10)
        conn.close()
    finally:
        server.terminate()
        server.wait(30)
    counts = {int(k): v for k, v in json.loads(out).items()}
    return {"reads": reads, "writes": writes, "counts": counts}


def report_flood(args, runs) -> None:
    reads = [t for r in runs for t in r["reads"]]
    writes = [t for r in runs for t in r["writes"]]
    counts: dict[int, int] = {}
    for r in runs:
        for k, v in r["counts"].items():
            counts[k] = counts.get(k, 0) + v
    rate = sum(counts.values()) / (len(runs) * args.flood_seconds)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(
        f"{backend}, wrong-token flood: {args.flood_clients} clients for {args.flood_seconds:g} s"
        f" x {len(runs)} run(s), {rate:,.0f} refused requests/s {dict(sorted(counts.items()))}; "
        f"{platform.processor() or 'cpu'}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print("| what | measured | target |\n|---|---|---|")
    print(
        f"| valid leaderboard read during the flood: p50 / p99 / max ({len(reads)} reads) | "
        f"{ms(reads, 0.5):.1f} / **{ms(reads, 0.99):.1f}** / {1000 * max(reads):.1f} ms "
        "| p99 < 100 ms |"
    )
    print(
        f"| valid single-score post during the flood: p50 / p99 / max ({len(writes)} posts) | "
        f"{ms(writes, 0.5):.1f} / {ms(writes, 0.99):.1f} / {1000 * max(writes):.1f} ms | |"
    )


def ms(values, q):
    return 1000 * float(np.quantile(values, q)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=1000, help="scores per post (default 1000)")
    parser.add_argument("--clients", type=int, default=1, help="concurrent connections posting")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="pace the posts at this many scores/s (0: flat out)"
    )
    parser.add_argument(
        "--raw-clients",
        action="store_true",
        help="post with raw-socket HTTP/1.1 clients (about 30 us of client CPU per post)",
    )
    parser.add_argument("--read-every", type=float, default=0.05, help="seconds between reads")
    parser.add_argument("--reads", type=int, default=200, help="reads at rest after the stream")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", help="a postgresql:// URL instead of a SQLite file")
    parser.add_argument("--flood", action="store_true", help="the wrong-token flood scenario")
    parser.add_argument("--flood-clients", type=int, default=60)
    parser.add_argument("--flood-seconds", type=float, default=6.0)
    args = parser.parse_args()
    runs = []
    if args.flood:
        with tempfile.TemporaryDirectory() as folder:
            for r in range(args.repeat):
                try:
                    runs.append(flood_run(args, Path(folder)))
                except Exception:
                    print((Path(folder) / "server.log").read_text()[-3000:], file=sys.stderr)
                    raise
                print(
                    f"run {r + 1}: reader p99 {ms(runs[-1]['reads'], 0.99):.1f} ms "
                    f"(n={len(runs[-1]['reads'])}), flood {runs[-1]['counts']}",
                    flush=True,
                )
        report_flood(args, runs)
        return
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.repeat):
            try:
                runs.append(one_run(args, args.models, args.items, Path(folder), seed=r))
            except Exception:
                print((Path(folder) / "server.log").read_text()[-3000:], file=sys.stderr)
                raise
            run = runs[-1]
            print(
                f"run {r + 1}: {run['rate']:,.0f} scores/s ({run['seconds']:.1f} s); reads during"
                f" ingest p50 {ms(run['during'], 0.5):.1f} ms p99 {ms(run['during'], 0.99):.1f} "
                f"ms (n={len(run['during'])}); at rest p99 {ms(run['at_rest'], 0.99):.1f} ms; "
                f"restart {run['restart_s']:.1f} s; peak RSS {run['rss_mib']:.0f} MiB; server CPU "
                f"{1e6 * run['cpu_per_post']:,.0f} us/post (clients "
                f"{1e6 * run['client_cpu_per_post']:,.0f} us/post); load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    rates = [r["rate"] for r in runs]
    during = [t for r in runs for t in r["during"]]
    rest = [t for r in runs for t in r["at_rest"]]
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print()
    print(
        f"{backend}, {args.models} models x {args.items} items = {runs[0]['scores']:,} scores, "
        f"batches of {args.batch}, {args.clients} "
        + ("raw-socket " if args.raw_clients else "http.client ")
        + "client(s), "
        + (f"paced at {args.rate:,.0f} scores/s; " if args.rate else "flat out; ")
        + f"{platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    print("| what | measured | target |\n|---|---|---|")
    print(
        f"| sustained ingest (best / median of {len(runs)}) | **{max(rates):,.0f}** / "
        f"{np.median(rates):,.0f} scores/s | >= 5,000 scores/s |"
    )
    print(
        f"| leaderboard read during ingest: p50 / p99 / max ({len(during)} reads) | "
        f"{ms(during, 0.5):.1f} / **{ms(during, 0.99):.1f}** / {1000 * max(during):.1f} ms "
        f"| < 100 ms |"
    )
    inside = [t for r in runs for t in r["during_server"]]
    print(
        f"| ... of which inside the server (Server-Timing): p50 / p99 / max | "
        f"{ms(inside, 0.5):.1f} / {ms(inside, 0.99):.1f} / {1000 * max(inside):.1f} ms | |"
    )
    print(
        f"| leaderboard read at rest: p50 / p99 ({len(rest)} reads) | {ms(rest, 0.5):.1f} / "
        f"**{ms(rest, 0.99):.1f}** ms | < 100 ms |"
    )
    print(
        f"| restart until the board answers (rebuilt from storage) | "
        f"{min(r['restart_s'] for r in runs):.1f} s | |"
    )
    cpu = [1e6 * r["cpu_per_post"] for r in runs]
    print(
        f"| server CPU time per post during ingest (best / median) | {min(cpu):,.0f} / "
        f"{np.median(cpu):,.0f} us | |"
    )
    client = [1e6 * r["client_cpu_per_post"] for r in runs]
    print(
        f"| the posting clients' CPU time per post (median; same machine) | "
        f"{np.median(client):,.0f} us | |"
    )
    print(f"| server peak resident memory | {max(r['rss_mib'] for r in runs):.0f} MiB | |")


if __name__ == "__main__":
    main()
