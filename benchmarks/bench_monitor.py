"""Speed and memory of the anytime-valid monitor (issues 3 and 18).

Targets: <= 10 us per streamed item for 20 models (single items are buffered until something
reads the state); the 395 models x 14,042 items replay with the shortcut at every 1 % in <= 5 s
(synthetic data of that shape; settled pairs frozen, ``freeze="auto"``); 300 x 3,000 at >= 10x the
plain per-item loop of ``benchmarks/monitor_baseline.py`` in the same run, with the same rank
intervals at every look; exact certification at M = 8 in <= 5 ms per look after <= 1 s of set-up;
memory under 4 GiB throughout.

Cases (each runs in its own subprocess, so that its peak resident memory is its own):

* ``stream``  - 20 models, mixture bet, models F and S: ``Monitor.update`` with one item per call
  (array, mapping), the wealth update alone, and ``Monitor.update_block`` with blocks of 10, 100
  and 1,000 items (time per item, amortised over the block). No looks in these timings.
* ``replay``  - ``replay()`` of 395 models x 14,042 binary items (logistic model), shortcut, a look
  every 1 % (141 items: 100 looks), model F; building the Scores table is timed separately.
* ``exact``   - M = 8: building the table of 545,835 weak orders (cold), a look with every order
  alive (the worst case), and the looks of a 5,000-item run with a look every 10 items.
* ``ilp``     - M = 20: integer-program looks of a 3,000-item run with a look every 100 items.
* ``baseline`` - 300 models x 3,000 items, a look every 1 %: the plain NumPy per-item loop
  (``monitor_baseline.baseline_replay``) against ``replay`` with frozen pairs (the default above
  8 models) and in the exact mode (``freeze=False``), with the number of looks whose rank
  intervals are identical to the baseline's.
* ``auto``    - time per look of the integer program and of the shortcut for M = 10 ... 30
  (3,000 items, a look every 30), the measurement behind ``auto``'s rule.

Run: ``python benchmarks/bench_monitor.py [--repeat 3] [--case stream]``. Times are the best of
``--repeat`` runs (the machine may be shared with other work); each case reports its wall time and
its CPU time (``time.process_time``, less inflated than the wall time when other work shares the
cores) and the load average. ``--quick`` runs every case at small sizes (one repeat), so that the
harness cannot rot (``tests/sequential/test_bench_monitor.py``); its times mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np
from scipy import special

CASES = ("stream", "replay", "exact", "ilp", "baseline", "auto")
QUICK = False  # --quick: small sizes (set in the child process)
AUTO_FAST_MS = 50.0  # "fast" for the auto rule: a mean time per look under this
CPU = {}  # the CPU time of the last best() of each label


def size(full, quick):
    return quick if QUICK else full


def best(fn, repeat, label=None):
    """Best wall time of ``repeat`` runs (and the CPU time of that run in ``CPU[label]``)."""
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    if label is not None:
        CPU[label] = cpu[int(np.argmin(times))]
    return min(times)


def binary_matrix(n_items, n_models, seed, spread=1.0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, spread, n_models)
    d = rng.normal(0.0, 1.5, n_items)
    return (rng.random((n_items, n_models)) < special.expit(ability - d[:, None])).astype(float)


def case_stream(repeat):
    from rankci.sequential import Monitor, PairWealth

    m, n = 20, size(20000, 2000)
    x = binary_matrix(n, m, 1)
    names = [f"m{j:02d}" for j in range(m)]
    n_map = min(n, 5000)
    mappings = [dict(zip(names, row.tolist())) for row in x[:n_map]]
    out, cpu = {}, {}
    for sampling in ("finite", "iid"):

        def fresh(sampling=sampling):
            return Monitor(names, sampling=sampling, n_items=n if sampling == "finite" else None)

        def one_array():
            mon = fresh()
            for row in x:
                mon.update(row)

        def one_mapping():
            mon = fresh()
            for item in mappings:
                mon.update(item)

        def wealth_only(sampling=sampling):
            w = PairWealth(m, sampling=sampling, n_items=n)
            for row in x:
                w.update(row)

        label = f"{sampling}: update(array), one item per call"
        out[label] = best(one_array, repeat, label) / n
        cpu[label] = CPU[label] / n
        out[f"{sampling}: update(mapping), one item per call"] = best(one_mapping, repeat) / n_map
        out[f"{sampling}: PairWealth.update, one item per call"] = best(wealth_only, repeat) / n
        for block in (10, 100, 1000):

            def blocks(block=block):
                mon = fresh()
                for start in range(0, n, block):
                    mon.update_block(x[start : start + block])

            out[f"{sampling}: update_block, blocks of {block}"] = best(blocks, repeat) / n
    result = {key: f"{value * 1e6:.2f} us/item" for key, value in out.items()}
    for key, value in cpu.items():
        result[key] += f" (CPU {value * 1e6:.2f} us/item)"
    return result


def case_replay(repeat):
    import rankci
    from rankci.sequential import replay

    n, m = size(14042, 1000), size(395, 40)
    x = binary_matrix(n, m, 2, spread=1.0)
    start = time.perf_counter()
    scores = rankci.Scores.from_matrix(x)
    build = time.perf_counter() - start
    replay(rankci.Scores.from_matrix(x[:60, :12]))  # imports and caches outside the timings
    runs = []

    def once():
        runs.append(replay(scores, certifier="shortcut", look_every="1%"))

    seconds = best(once, repeat, "replay")
    run = runs[-1]
    start = time.perf_counter()
    plain = replay(scores, certifier="shortcut", look_every="1%", freeze=False)
    unfrozen = time.perf_counter() - start
    same = sum(
        (a["lower"], a["upper"]) == (b["lower"], b["upper"]) for a, b in zip(run.looks, plain.looks)
    )
    return {
        "size": f"{m} models x {n} items",
        "Scores.from_matrix": f"{build:.1f} s",
        "replay, shortcut, look every 1 %, settled pairs frozen": (
            f"{seconds:.2f} s (CPU {CPU['replay']:.2f} s)"
        ),
        "the same, freeze=False (every wealth updated; one run)": f"{unfrozen:.1f} s",
        "looks": len(run.looks),
        "looks with the same rank intervals frozen / unfrozen": f"{same} of {len(run.looks)}",
        "certified pairs at the end": f"{run.looks[-1]['n_certified']} of {m * (m - 1)}",
    }


def case_baseline(repeat):
    import rankci
    from rankci.sequential import replay

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import monitor_baseline as mb

    x = mb.binary_matrix(size(3000, 300), size(300, 30), seed=300)
    scores = rankci.Scores.from_matrix(x)
    replay(rankci.Scores.from_matrix(x[:60, :12]))  # imports and caches outside the timings
    start, start_cpu = time.perf_counter(), time.process_time()
    base = mb.baseline_replay(x)
    t_base, cpu_base = time.perf_counter() - start, time.process_time() - start_cpu
    out = {"plain NumPy per-item loop (baseline)": f"{t_base:.2f} s, CPU {cpu_base:.2f} s"}
    theirs = [(r["t"], r["lower"], r["upper"]) for r in base["look_records"]]
    for label, freeze in (("frozen pairs (default)", True), ("exact mode, freeze=False", False)):
        runs = []

        def once(freeze=freeze, runs=runs):
            runs.append(replay(scores, freeze=freeze))

        seconds = best(once, repeat, label)
        ours = [(r["t"], r["lower"], r["upper"]) for r in runs[-1].looks]
        same = sum(a == b for a, b in zip(ours, theirs))
        out[f"rankci replay, {label}"] = (
            f"{seconds:.2f} s, CPU {CPU[label]:.2f} s ({t_base / seconds:.1f}x the baseline, "
            f"{cpu_base / CPU[label]:.1f}x in CPU time; rank intervals identical "
            f"at {same} of {len(theirs)} looks)"
        )
    return out


def case_auto(repeat):
    import warnings

    from rankci.ranking import transitive_closure
    from rankci.sequential import PairWealth, make_certifier

    warnings.simplefilter("ignore")
    out = {}
    n = size(3000, 600)
    fast = []
    for m in size((10, 12, 16, 20, 24, 30), (10, 12)):
        x = binary_matrix(n, m, 4, spread=0.5)
        for name in ("ilp", "shortcut"):
            wealth = PairWealth(m, sampling="finite", n_items=n)
            certifier = make_certifier(name, m, 0.05)
            known = np.zeros((m, m), dtype=bool)
            times = []
            for start_item in range(0, n, 30):
                wealth.update(x[start_item : start_item + 30])
                lw = wealth.log_wealth()
                t0 = time.perf_counter()
                known = certifier.look(lw, known)
                times.append(time.perf_counter() - t0)
            if name == "ilp" and np.mean(times) * 1e3 <= AUTO_FAST_MS:
                fast.append(m)
            closed = transitive_closure(known)
            width = float(np.mean((m - closed.sum(axis=1)) - (1 + closed.sum(axis=0))))
            out[f"M = {m}, {name}"] = (
                f"mean {np.mean(times) * 1e3:.1f} ms, max {np.max(times) * 1e3:.0f} ms per look; "
                f"final mean width {width:.2f}"
            )
    out[f"largest M with the integer program under {AUTO_FAST_MS:g} ms per look on average"] = (
        max(fast) if fast else None
    )
    return out


def case_exact(repeat):
    from rankci.sequential import Monitor, make_certifier, order_table

    start = time.perf_counter()
    order_table(8)
    setup = time.perf_counter() - start
    # every order alive: wealths of a tied start (nothing eliminated at the look)
    lw = np.zeros((8, 8))
    np.fill_diagonal(lw, np.nan)

    certifier = make_certifier("exact", 8, 0.05)
    worst = best(lambda: certifier.look(lw), repeat)  # nothing is eliminated: all stay alive
    assert certifier.n_surviving == 545835
    n = size(5000, 500)
    x = binary_matrix(n, 8, 3, spread=0.4)
    per_look = []
    for _ in range(repeat):
        mon = Monitor([f"m{j}" for j in range(8)], n_items=n, certifier="exact")
        certifier, wealth = mon._certifier, mon._wealth
        times = []
        for start_item in range(0, n, 10):
            wealth.update(x[start_item : start_item + 10])
            lw = wealth.log_wealth()
            t0 = time.perf_counter()
            certifier.look(lw)
            times.append(time.perf_counter() - t0)
        per_look.append(times)
    times = np.min(np.array(per_look), axis=0)
    return {
        "set-up: table of 545,835 weak orders (cold)": f"{setup:.2f} s",
        "look with every order alive": f"{worst * 1e3:.2f} ms",
        f"{n // 10} looks of a {n}-item run: mean": f"{times.mean() * 1e3:.2f} ms",
        "first 10 looks, mean": f"{times[:10].mean() * 1e3:.2f} ms",
        "slowest look": f"{times.max() * 1e3:.2f} ms",
        "orders alive at the end": int(certifier.n_surviving),
    }


def case_ilp(repeat):
    from rankci.sequential import PairWealth, make_certifier

    n, m = size(3000, 600), size(20, 10)
    x = binary_matrix(n, m, 4, spread=0.5)
    results = []
    for _ in range(repeat):
        wealth = PairWealth(m, sampling="finite", n_items=n)
        ilp = make_certifier("ilp", m, 0.05)
        times = []
        for start_item in range(0, n, 100):
            wealth.update(x[start_item : start_item + 100])
            lw = wealth.log_wealth()
            t0 = time.perf_counter()
            ilp.look(lw)
            times.append(time.perf_counter() - t0)
        results.append((sum(times), times, ilp.n_solves))
    total, times, solves = min(results, key=lambda r: r[0])
    return {
        f"M = {m}, {len(times)} looks of a {n}-item run: mean per look": (
            f"{np.mean(times) * 1e3:.0f} ms"
        ),
        "max per look": f"{np.max(times) * 1e3:.0f} ms",
        "integer programs solved": solves,
    }


def run_case(name, repeat):
    start = os.getloadavg()[0]
    result = globals()[f"case_{name}"](repeat)
    result["load average (start, end)"] = f"{start:.1f}, {os.getloadavg()[0]:.1f}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    result["peak resident memory"] = f"{peak:.2f} GiB"
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", choices=CASES, action="append")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    if args.child:
        global QUICK
        QUICK = args.quick
        print(json.dumps(run_case(args.child, args.repeat)))
        return
    import numpy

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, NumPy {numpy.__version__}; best of {args.repeat}"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    for name in args.case or CASES:
        child = [sys.executable, __file__, "--child", name, "--repeat", str(args.repeat)]
        if args.quick:
            child.append("--quick")
        done = subprocess.run(child, capture_output=True, text=True, env=env, check=True)
        print(f"\n[{name}]")
        for key, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
