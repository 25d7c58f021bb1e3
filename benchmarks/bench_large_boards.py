"""Large boards outside `rank` (issue 30): check, scores, report, resampling memory, Tukey.

Every command runs in a fresh subprocess, timed from outside, its peak resident memory its own
(``os.wait4``'s ``ru_maxrss``), and is given as a ratio against ``rankci rank --format json`` on
the same board in the same run:

* board of 2,461 models x 693 items (synthetic, ``bench_large._board``; the real board of that
  size behaves the same, issue 30): ``rank``, ``check`` with three claims (``in top 3``, ``>``,
  ``~ within``), ``scores`` (JSON, its size);
* 300 models x 1,000 items: ``report`` against ``rank``;
* MMLU-Pro (bundled): ``rank --test bootstrap`` and ``scores --method bootstrap`` against
  ``rank`` (peak memory);
* in process, one BLAS thread: ``mixed_model`` on ChemBench with its default Tukey p-values
  against the fit without them (best of 3).

``--src DIR`` runs the commands with ``PYTHONPATH=DIR`` (e.g. the code before the change) for a
before/after comparison. The load average before and after is printed; run under ``nice`` on a
shared machine.

Run:  nice -n 10 python benchmarks/bench_large_boards.py             (the sizes above)
      nice -n 10 python benchmarks/bench_large_boards.py --quick     (400 x 300, 60 x 300; CI)
      nice -n 10 python benchmarks/bench_large_boards.py --src OLD/src --no-check   (before)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLAIMS = ["{0} in top 3", "{1} > {2}", "{3} ~ {4} within 0.05"]


def _env(src: str | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if src:
        env["PYTHONPATH"] = src
    return env


def _run(argv: list[str], env: dict) -> dict:
    """Wall time and peak RSS (MiB) of one fresh ``python -m rankci`` process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rankci", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # check exits 1 when a claim is not supported
        raise RuntimeError(f"rankci {' '.join(argv)} failed ({code}): {err[-2000:]}")
    return {"seconds": elapsed, "peak_mib": usage.ru_maxrss / 1024}


def _board(models: int, items: int, path: str, env: dict) -> None:
    code = "import sys; sys.path.insert(0, sys.argv[1]); import bench_large as b; "
    code += "b._board(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])"
    subprocess.run([sys.executable, "-c", code, HERE, str(models), str(items), path], env=env,
                   check=True)  # fmt: skip


def _names(models: int) -> list[str]:
    width = len(str(models - 1))
    return [f"m{j:0{width}d}" for j in range(5)]


def _tukey(env: dict) -> dict:
    code = (
        "import json, time, rankci\n"
        "from rankci.mixed.model import mixed_model\n"
        "s = rankci.datasets.load_chembench()\n"
        "mixed_model(s, tukey=False)\n"
        "best = {}\n"
        "for _ in range(3):\n"
        "    for tukey in (False, True):\n"
        "        t0 = time.perf_counter(); mixed_model(s, tukey=tukey)\n"
        "        t = time.perf_counter() - t0\n"
        "        best[tukey] = min(best.get(tukey, t), t)\n"
        "print(json.dumps({'without': best[False], 'with': best[True]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small boards only (CI)")
    parser.add_argument("--src", default=None, help="PYTHONPATH of the rankci to measure")
    parser.add_argument(
        "--no-check", action="store_true", help="skip check (the old code took 7 min on 2,461)"
    )
    args = parser.parse_args(argv)
    env = _env(args.src)
    big = (400, 300) if args.quick else (2_461, 693)
    wide = (60, 300) if args.quick else (300, 1_000)
    load_before = os.getloadavg()
    rows = []

    def row(case, data, command, result, base, extra=""):
        rows.append(
            (case, data, command, result["seconds"], result["peak_mib"],
             result["seconds"] / base["seconds"], extra)
        )  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "board.parquet")
        _board(*big, path, env)
        data = f"{big[0]:,} × {big[1]:,} (synthetic)"
        out = os.path.join(tmp, "out.json")
        rank = _run(["rank", path, "--format", "json", "-o", out], env)
        row("large board", data, "rank --format json", rank, rank,
            f"JSON {os.path.getsize(out) / 1e6:.1f} MB")  # fmt: skip
        claims = [c.format(*_names(big[0])) for c in CLAIMS]
        argv = ["check", path, *[a for c in claims for a in ("--claim", c)], "--format", "json"]
        if not args.no_check:
            check = _run([*argv, "-o", out], env)
            row("large board", data, "check (3 claims: top 3, >, ~ within)", check, rank)
        scores = _run(["scores", path, "--format", "json", "-o", out], env)
        row("large board", data, "scores --format json", scores, rank,
            f"JSON {os.path.getsize(out) / 1e6:.1f} MB")  # fmt: skip

        path = os.path.join(tmp, "wide.parquet")
        _board(*wide, path, env)
        data = f"{wide[0]:,} × {wide[1]:,} (synthetic)"
        rank = _run(["rank", path, "--format", "json", "-o", out], env)
        row("report", data, "rank --format json", rank, rank)
        page = os.path.join(tmp, "report.html")
        report = _run(["report", path, "-o", page], env)
        row("report", data, "report", report, rank, f"page {os.path.getsize(page) / 1e6:.1f} MB")

    mmlu = "mmlu_pro"
    data = "MMLU-Pro (32 × 12,032)"
    code = "import rankci, sys; print(rankci.datasets.__path__[0])"
    folder = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True).stdout.strip()  # fmt: skip
    path = os.path.join(folder, f"{mmlu}.parquet")
    rank = _run(["rank", path, "--format", "json", "-o", os.devnull], env)
    row("resampling memory", data, "rank (t)", rank, rank)
    boot = _run(["rank", path, "--test", "bootstrap", "--format", "json", "-o", os.devnull], env)
    row("resampling memory", data, "rank --test bootstrap", boot, rank)
    argv = ["scores", path, "--method", "bootstrap", "--format", "json", "-o", os.devnull]
    row("resampling memory", data, "scores --method bootstrap", _run(argv, env), rank)

    tukey = _tukey(env)
    print(json.dumps({"mixed_model_chembench": tukey}), flush=True)
    load_after = os.getloadavg()

    print()
    print("| case | data (models × items) | command | time (s) | peak RSS (MiB) | × rank | note |")
    print("|---|---|---|---|---|---|---|")
    for case, data, command, seconds, peak, ratio, extra in rows:
        print(
            f"| {case} | {data} | {command} | {seconds:.2f} | {peak:.0f} | {ratio:.2f} | {extra} |"
        )
    print(
        f"| Tukey post-hoc | ChemBench (35 × 2,788) | mixed_model, default Tukey p | "
        f"{tukey['with']:.3f} | — | {tukey['with'] / tukey['without']:.2f} × the fit without "
        f"Tukey ({tukey['without']:.3f} s) | in process, best of 3 |"
    )
    print()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"{stamp}; {os.cpu_count()} cores, one BLAS thread per process; load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after; rankci from "
        f"{args.src or 'the installed/PYTHONPATH package'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
