"""At the floor (issue 30, items 1 and 4): `rankci rank` beside reading its input, in one run.

For every synthetic Parquet board (binary scores from :func:`rankci.simulate.simulate_scores`),
each row in a fresh subprocess, its peak resident memory (``ru_maxrss`` from ``os.wait4``) its
own:

* ``floor``: a fresh Python process reads the file with pyarrow, turns the model and item
  columns into integer codes (dictionary encoding), scatters the scores into the N x M matrix
  and does one M x M Gram product. Nothing can rank the board faster than it can read it.
* ``command``: ``rankci rank BOARD --test t --format json -o FILE``, the whole command
  (start-up, reading, validation, statistics, JSON written), timed from outside.
* ``scipy loop``: ``scipy.stats.ttest_rel`` over the pairs, on a sample of at most
  ``--pairs`` pairs, extrapolated to all M (M - 1) / 2 pairs (the matrix read is not timed).
* ``numpy`` and ``rankci.rank``: in one process, on the same :class:`rankci.Scores` already
  read: the hand-written NumPy version a competent user would write (:func:`hand_numpy`:
  covariance from the Gram, ``scipy.special.stdtr``, Holm by one sort, closure, counting)
  against ``rankci.rank(scores, test="t")``; best of several calls; the answers (rank intervals)
  are compared.

``--test t`` is used throughout so that every row computes the same paired t statistics (the
default ``auto`` test is the exact McNemar test on 0/1 scores, which the hand version does not
do).

Run:  python benchmarks/bench_floor.py                 (30 x 1,000; 300 x 14,000; 2,461 x 693;
                                                        10,000 x 1,000; writes BENCHMARKS.md)
      python benchmarks/bench_floor.py --quick --json FILE   (small boards; for CI)
      python benchmarks/bench_floor.py --sizes 30x1000,300x14000,2461x693   (a subset)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = [(30, 1_000), (300, 14_000), (2_461, 693), (10_000, 1_000)]
QUICK = [(30, 200), (120, 300)]
#: the ratio targets of issue 30
COMMAND_TARGET, LOOP_TARGET, INPROCESS_TARGET = 2.0, 5.0, 1.0

FLOOR_CODE = r"""
import sys, time
t0 = time.perf_counter()
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
table = pq.read_table(sys.argv[1], columns=["model", "item", "score"])
model = pc.dictionary_encode(table.column("model")).combine_chunks()
item = pc.dictionary_encode(table.column("item")).combine_chunks()
m, n = len(model.dictionary), len(item.dictionary)
x = np.full((n, m), np.nan)
x[item.indices.to_numpy(), model.indices.to_numpy()] = table.column("score").to_numpy()
gram = x.T @ x
print(gram.shape[0], time.perf_counter() - t0)
"""


def make_board(models: int | str, items: int | str, path: str) -> None:
    """Write a synthetic board: ``models`` abilities N(0, 0.5^2), binary scores on ``items``."""
    import numpy as np

    from rankci.simulate import simulate_scores

    ability = np.random.default_rng(0).normal(0.0, 0.5, int(models))
    simulate_scores(ability, int(items), rng=1).scores.to_frame().to_parquet(path)


def hand_numpy(x, alpha: float = 0.05):
    """Simultaneous rank intervals by paired t + Holm + closure, in plain NumPy (the peer).

    ``x`` is the N x M matrix (items x models, complete). Returns (lower, upper) ranks.
    """
    import numpy as np
    from scipy import special

    n, m = x.shape
    mu = x.mean(axis=0)
    cov = (x.T @ x - n * np.outer(mu, mu)) / (n - 1)
    v = np.diag(cov)
    var = np.maximum(v[:, None] + v[None, :] - 2 * cov, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (mu[:, None] - mu[None, :]) / np.sqrt(var / n)
    p = special.stdtr(n - 1, -t)
    np.fill_diagonal(p, np.nan)
    finite = np.isfinite(p)
    k = int(finite.sum())
    cand = np.sort(p[finite & (p <= alpha)])
    passes = cand <= alpha / (k - np.arange(cand.size))
    r = cand.size if passes.all() else int(np.argmin(passes))
    d = finite & (p <= cand[r - 1]) if r else np.zeros((m, m), bool)
    while True:
        f = d.astype(np.float32)
        grown = d | (f @ f > 0.5)
        if np.array_equal(grown, d):
            break
        d = grown
    return 1 + d.sum(axis=0), m - d.sum(axis=1)


def _best(call, budget: float, most: int = 7, autorange: float = 0.5) -> tuple[float, object]:
    """The best wall time of repeated calls (at least 2, at most ``most``, within ``budget`` s).

    A call under 10 ms is repeated for about ``autorange`` seconds (half a second; up to 500
    calls), as ``timeit``'s autorange does: the best of 7 sub-millisecond calls still carries
    the first calls' cold caches and the timer's jitter, on both sides of a ratio."""
    times, result, spent = [], None, 0.0
    while len(times) < 2 or (len(times) < most and spent < budget):
        if len(times) == 2 and times[1] < 0.01:  # the second call: past first-call imports
            most = max(most, min(500, int(autorange / max(times[1], 1e-6))))
        start = time.perf_counter()
        result = call()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
    return min(times), result


def in_process(path: str, budget: str = "20", autorange: str = "0.5") -> dict:
    """The in-process pair: the hand NumPy version against ``rankci.rank`` on one Scores."""
    import warnings

    import numpy as np

    import rankci

    scores = rankci.read_scores(path)
    x = scores.units("item").values
    warnings.simplefilter("ignore")
    budget, autorange = float(budget), float(autorange)
    rank_s, ranking = _best(lambda: rankci.rank(scores, test="t", rng=0), budget, 7, autorange)
    numpy_s, (lower, upper) = _best(lambda: hand_numpy(x), budget, 7, autorange)
    return {
        "numpy_s": numpy_s,
        "rank_s": rank_s,
        "equal": bool(
            np.array_equal(lower, ranking.lower) and np.array_equal(upper, ranking.upper)
        ),
        "lower": ranking.lower.tolist(),
        "upper": ranking.upper.tolist(),
        "models": list(ranking.models),
    }


def scipy_loop(path: str, pairs: str = "2000") -> dict:
    """``scipy.stats.ttest_rel`` over a sample of pairs, extrapolated to every pair."""
    import numpy as np
    from scipy import stats

    import rankci

    x = rankci.read_scores(path).units("item").values
    m = x.shape[1]
    i, j = np.triu_indices(m, 1)
    total = i.size
    take = np.random.default_rng(0).permutation(total)[: int(pairs)]
    start = time.perf_counter()
    for a, b in zip(i[take], j[take], strict=True):
        stats.ttest_rel(x[:, a], x[:, b])
    elapsed = time.perf_counter() - start
    return {"loop_s": elapsed * total / take.size, "loop_pairs_timed": int(take.size)}


def _run_child(argv: list[str]) -> tuple[float, float, str]:
    """Run ``argv``; (wall seconds, peak RSS in GiB, stdout) of that child alone (``os.wait4``)."""
    import threading

    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    chunks: dict[str, str] = {}

    def drain(name, stream):
        chunks[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout)),
        threading.Thread(target=drain, args=("err", proc.stderr)),
    ]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    for reader in readers:
        reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{argv[:5]} failed: {chunks.get('err', '')[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024**2, chunks.get("out", "")


def _python(function: str, *args: str) -> list[str]:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_floor as b;"
        f"print(json.dumps(b.{function}(*sys.argv[2:])))"
    )
    return [sys.executable, "-c", code, str(HERE), *args]


def measure(
    models: int, items: int, tmp: str, pairs: int, budget: float, autorange: float = 0.5
) -> dict:
    """Every row for one board size."""
    path = os.path.join(tmp, f"b{models}x{items}.parquet")
    subprocess.run(_python("make_board", str(models), str(items), path), check=True)
    row: dict = {"models": models, "items": items, "load_before": os.getloadavg()[0]}
    row["floor_s"], row["floor_gib"], _ = _run_child([sys.executable, "-c", FLOOR_CODE, path])
    out = os.path.join(tmp, "out.json")
    command = [sys.executable, "-m", "rankci", "rank", path, "--test", "t", "--format", "json"]
    row["command_s"], row["command_gib"], _ = _run_child([*command, "-o", out])
    with open(out, encoding="utf-8") as handle:
        written = {
            m["model"]: (m["rank_lower"], m["rank_upper"]) for m in json.load(handle)["models"]
        }
    elapsed, row["loop_gib"], text = _run_child(_python("scipy_loop", path, str(pairs)))
    row.update(json.loads(text.strip().splitlines()[-1]))
    child = _python("in_process", path, str(budget), str(autorange))
    elapsed, row["inprocess_gib"], text = _run_child(child)
    inner = json.loads(text.strip().splitlines()[-1])
    row["command_equal"] = written == {
        m: (lo, up)
        for m, lo, up in zip(inner["models"], inner["lower"], inner["upper"], strict=True)
    }
    row.update({k: inner[k] for k in ("numpy_s", "rank_s", "equal")})
    row["load_after"] = os.getloadavg()[0]
    row["command_over_floor"] = row["command_s"] / row["floor_s"]
    row["loop_over_command"] = row["loop_s"] / row["command_s"]
    row["rank_over_numpy"] = row["rank_s"] / row["numpy_s"]
    return row


def table(rows: list[dict], threads: str, date: str) -> str:
    """The Markdown section for BENCHMARKS.md."""
    lines = [
        f"Measured {date} by `python benchmarks/bench_floor.py`, {threads}, "
        f"{platform.machine()}, Python {platform.python_version()}, one run; each row a fresh "
        "subprocess, peak RSS its own (`os.wait4`). `--test t` throughout. Targets: command "
        f"≤ {COMMAND_TARGET:g}× the floor and ≥ {LOOP_TARGET:g}× faster than the scipy loop; "
        f"`rankci.rank` ≤ {INPROCESS_TARGET:g}× the NumPy version.",
        "",
        "| models × items | load | floor (s, GiB) | command (s, GiB) | command ÷ floor | "
        "scipy loop (s) | loop ÷ command | NumPy in process (s) | `rankci.rank` (s) | "
        "rank ÷ NumPy | peak GiB: loop, in process | same answers |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['models']:,} × {r['items']:,} | {r['load_before']:.1f}–{r['load_after']:.1f} "
            f"| {r['floor_s']:.2f}, {r['floor_gib']:.2f} | {r['command_s']:.2f}, "
            f"{r['command_gib']:.2f} | {r['command_over_floor']:.2f} | {r['loop_s']:.1f} | "
            f"{r['loop_over_command']:.0f} | {r['numpy_s']:.4f} | {r['rank_s']:.4f} | "
            f"{r['rank_over_numpy']:.2f} | {r['loop_gib']:.2f}, {r['inprocess_gib']:.2f} | "
            f"{'yes' if r['equal'] and r['command_equal'] else 'NO'} |"
        )
    lines += [
        "",
        "The scipy loop times `ttest_rel` on a random sample of at most "
        f"{max(r['loop_pairs_timed'] for r in rows):,} pairs and scales to all M (M − 1) / 2 "
        "pairs. "
        "In process: best of up to 7 calls on the same `Scores`; the answers compared are the "
        "rank intervals (the command's JSON too).",
    ]
    return "\n".join(lines) + "\n"


SECTION = "## At the floor (issue 30, items 1 and 4) — `benchmarks/bench_floor.py`"


def write_benchmarks(text: str, path: Path) -> None:
    """Replace (or append) the section between its heading and the next ``## `` heading."""
    body = path.read_text(encoding="utf-8")
    block = f"{SECTION}\n\n<!-- bench_floor:start -->\n{text}<!-- bench_floor:end -->\n"
    pattern = re.compile(
        re.escape(SECTION) + r"\n\n<!-- bench_floor:start -->\n.*?<!-- bench_floor:end -->\n",
        re.S,
    )
    if pattern.search(body):
        body = pattern.sub(lambda _: block, body)
    else:
        body = body.rstrip("\n") + "\n\n" + block
    path.write_text(body, encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small boards only (CI)")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument(
        "--pairs", type=int, help="pairs the scipy loop times (default 2000; --quick: 200)"
    )
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per in-process row")
    parser.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone")
    parser.add_argument(
        "--sizes",
        help="the boards to measure, MODELSxITEMS separated by commas (default: "
        + ",".join(f"{m}x{n}" for m, n in SIZES)
        + "), for example --sizes 30x1000,300x14000,2461x693 to skip the largest",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    if args.pairs is None:
        args.pairs = 200 if args.quick else 2000
    # --quick: each in-process best of 1 s at most, a sub-10 ms call repeated for 0.05 s
    budget, autorange = (1.0, 0.05) if args.quick else (args.budget, 0.5)
    if args.sizes:
        try:
            sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
        except ValueError:
            parser.error(f"--sizes: MODELSxITEMS separated by commas, got {args.sizes!r}")
    threads = (
        ", ".join(
            f"{k}={os.environ[k]}"
            for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            if k in os.environ
        )
        or f"BLAS threads unset, {os.cpu_count()} cores"
    )
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for models, items in sizes:
            row = measure(models, items, tmp, args.pairs, budget, autorange)
            row.update(threads=threads, date=date)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    text = table(rows, threads, date)
    print(text)
    if not args.quick and not args.no_write:
        write_benchmarks(text, HERE.parent / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
