"""Peeking (docs/monitor.md): fixed-sample Holm re-run at every look against the monitor, under
both sampling models; and what the monitor knows after all N items of a fixed benchmark.

Part 1, peeking. Six equally good models; item difficulty d_i ~ N(0, 1) shared by the models;
model j correct with probability sigmoid(0.5 - d_i) (rcs-examples E, "all_tied"); N = 2,000;
alpha = 0.05. Two sampling models:

* ``iid`` (model S): every replicate is a fresh i.i.d. stream of N items; the truth is a six-way
  tie of the expected scores;
* ``finite`` (model F): every replicate draws a benchmark of N items as above, then makes the six
  means over the benchmark exactly equal (each model's number of correct answers is set to the
  rounded average of the six counts by flipping randomly chosen answers of that model: at most a
  few dozen of the 2,000), and reveals the benchmark in one uniformly random order shared by the
  models. The truth is a six-way tie of the benchmark means.

Looks every 1 % (every 20 items, 100 looks) or at every item (2,000 looks). A run is wrong when
some statement "j better than l" is made at some look (every statement is false here):

* naive: Holm at alpha over the 30 one-sided paired tests, re-run from scratch at every look, as
  if that look were the only one: the exact McNemar (sign) test on the discordant items, rankci's
  default paired t, and the paired z (both with rankci's rule for a zero variance of the
  differences: Hoeffding's exact bound; the vectorised p-values are checked against
  ``rankci.pairwise_tests`` in the first replicate);
* the monitor: ``rankci.sequential.Monitor`` with its defaults (exact certifier for 6 models,
  mixture bet) and ``sampling`` matching the data, ``look_every`` 20 or 1; wrong when it ever
  certified a pair (certified pairs are kept) or recorded the <= alpha event.

Part 2, after all N items under ``finite``. Two models on a benchmark of N = 2,000 items (drawn as
above, then the second model's count set to the first's minus g by flipping random answers), so
the benchmark means differ by g / N; replayed through the default monitor (looks every 1 %).
Reported: how often "first better than second" is certified after the last item.

Run:  OMP_NUM_THREADS=1 python validation/peeking.py   (1,500 runs per sampling model for the
      naive rules and the 1 % monitor, 300 for the monitor at every item, 300 per gap in part 2;
      12 minutes on the shared 2-core machine)
      python validation/peeking.py --quick              (a few runs, seconds)
"""

from __future__ import annotations

import argparse
import time
import warnings
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from scipy import special

import rankci
from rankci.data import UnitScores
from rankci.evidence.moments import MIN_CERTIFYING_UNITS, variance_is_zero
from rankci.evidence.pairwise import bounded_pvalue, pairwise_tests
from rankci.sequential import Monitor

RESULTS = Path(__file__).resolve().parent / "results" / "peeking.json"
N = 2000
M = 6
ALPHA = 0.05
ABILITY = 0.5
SCHEDULES = {"every 1 %": 20, "every item": 1}
NAIVE = ("holm_mcnemar", "holm_t", "holm_z")
GAPS = (0, 1, 2, 3, 5, 10, 20)
FULL = dict(chunks=10, reps=150, item_monitor=30, gap_reps=300)
QUICK = dict(chunks=1, reps=4, item_monitor=1, gap_reps=3)


def draw(rng, n=N, m=M):
    d = rng.standard_normal(n)
    return (rng.random((n, m)) < special.expit(ABILITY - d)[:, None]).astype(float)


def set_count(rng, column: np.ndarray, target: int) -> np.ndarray:
    """Flip randomly chosen answers so that the column has exactly ``target`` ones."""
    column = column.copy()
    extra = int(column.sum()) - target
    if extra > 0:
        column[rng.choice(np.flatnonzero(column == 1), extra, replace=False)] = 0.0
    elif extra < 0:
        column[rng.choice(np.flatnonzero(column == 0), -extra, replace=False)] = 1.0
    return column


def finite_benchmark(rng):
    x = draw(rng)
    target = int(round(x.sum(axis=0).mean()))
    bench = np.column_stack([set_count(rng, x[:, j], target) for j in range(M)])
    return bench[rng.permutation(N)]


def holm_reject(pvalues, alpha):
    """Holm over the last axis (the pairs), vectorised over the looks."""
    k = pvalues.shape[-1]
    order = np.argsort(pvalues, axis=-1)
    sorted_p = np.take_along_axis(pvalues, order, axis=-1)
    passes = sorted_p <= alpha / (k - np.arange(k))
    n_reject = np.where(passes.all(axis=-1), k, np.argmin(passes, axis=-1))
    return n_reject > 0  # a rejection at a look: every rejection is false here


def naive_pvalues(x, look_times):
    """Looks x ordered pairs p-values of the sign test, rankci's paired t and paired z."""
    j, l = np.nonzero(~np.eye(x.shape[1], dtype=bool))
    d = x[:, j] - x[:, l]
    plus = np.cumsum(d > 0, axis=0)[look_times - 1]
    minus = np.cumsum(d < 0, axis=0)[look_times - 1]
    s1 = np.cumsum(d, axis=0)[look_times - 1]
    s2 = np.cumsum(d * d, axis=0)[look_times - 1]
    n = look_times[:, None].astype(float)
    discordant = plus + minus
    p_sign = np.where(
        plus > 0, special.bdtrc(np.maximum(plus - 1, 0), np.maximum(discordant, 1), 0.5), 1.0
    )  # P(Bin(plus + minus, 1/2) >= plus), the exact McNemar (sign) test
    mean = s1 / n
    var = np.maximum(s2 - n * mean**2, 0.0) / np.maximum(n - 1, 1)
    # rankci's rules: a zero variance (on the absolute scale of 0/1 scores, width 1) is no
    # evidence, and two units never certify: both get at best the exact bound
    zero = variance_is_zero(var / n, 1.0)
    floored = zero | (n < MIN_CERTIFYING_UNITS)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(zero, 0.0, mean / np.sqrt(var / n))
    bound = bounded_pvalue(mean, 0.0, n)
    p_t = special.stdtr(np.maximum(n - 1, 1), -stat)
    p_z = special.ndtr(-stat)
    p_t = np.where(zero, bound, np.where(floored, np.maximum(bound, p_t), p_t))
    p_z = np.where(zero, bound, np.where(floored, np.maximum(bound, p_z), p_z))
    few = n < 2
    return {
        "holm_mcnemar": p_sign,
        "holm_t": np.where(few, 1.0, p_t),
        "holm_z": np.where(few, 1.0, p_z),
    }


def check_against_rankci(x, look_times):
    """The vectorised t and z p-values equal rankci.pairwise_tests' at a few looks."""
    ours = naive_pvalues(x, look_times)
    j, l = np.nonzero(~np.eye(x.shape[1], dtype=bool))
    for k in (0, 1, 4, len(look_times) // 2, len(look_times) - 1):
        t = int(look_times[k])
        units = UnitScores(
            values=x[:t],
            models=tuple(f"m{i}" for i in range(x.shape[1])),
            labels=tuple(map(str, range(t))),
            unit="item",
            missing="complete",
            excluded={},
            binary=True,
        )
        for name, test in (("holm_t", "t"), ("holm_z", "z")):
            # the plain asymptotic tests a peeker uses (no exact floor for few units)
            theirs = pairwise_tests(units, test, exact_bound_n=0).pvalue[j, l]
            if not np.allclose(ours[name][k], theirs, rtol=1e-9, atol=1e-12):
                raise AssertionError(f"{test} p-values differ from rankci at look {t}")


def monitor_wrong(x, sampling, look_every) -> bool:
    mon = Monitor(
        [f"m{i}" for i in range(x.shape[1])],
        sampling=sampling,
        n_items=N if sampling == "finite" else None,
        look_every=look_every,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)  # the <= alpha event is counted
        mon.update_block(x)
    return mon.alpha_event is not None or bool(mon.ranking().dominance.any())


def peeking_chunk(task) -> dict:
    sampling, chunk, reps, item_monitor, seed = task
    rng = np.random.default_rng(seed)
    looks = {name: np.arange(every, N + 1, every) for name, every in SCHEDULES.items()}
    counts = {f"{rule}, {name}": 0 for name in SCHEDULES for rule in (*NAIVE, "monitor")}
    for r in range(reps):
        x = draw(rng) if sampling == "iid" else finite_benchmark(rng)
        if chunk == 0 and r == 0:
            check_against_rankci(x, looks["every item"])
        for name, times in looks.items():
            for rule, p in naive_pvalues(x, times).items():
                counts[f"{rule}, {name}"] += bool(holm_reject(p, ALPHA).any())
        counts["monitor, every 1 %"] += monitor_wrong(x, sampling, SCHEDULES["every 1 %"])
        if r < item_monitor:
            counts["monitor, every item"] += monitor_wrong(x, sampling, 1)
    return {"sampling": sampling, "reps": reps, "item_monitor": item_monitor, "counts": counts}


def gap_task(task) -> dict:
    gap, reps, seed = task
    rng = np.random.default_rng(seed)
    certified = events = 0
    for _ in range(reps):
        x = draw(rng, m=2)
        second = set_count(rng, x[:, 1], int(x[:, 0].sum()) - gap)
        bench = np.column_stack([x[:, 0], second])[rng.permutation(N)]
        mon = Monitor(["first", "second"], n_items=N, look_every=N // 100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rankci.RankciWarning)
            mon.update_block(bench)
        certified += bool(mon.ranking().dominance[0, 1])
        events += mon.alpha_event is not None
    return {"gap_items": gap, "gap": gap / N, "reps": reps, "certified": certified / reps,
            "alpha_event": events / reps}  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--out", help=f"JSON of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument("--quick", action="store_true", help="a few runs (CI smoke run)")
    args = parser.parse_args(argv)
    size = QUICK if args.quick else FULL
    workers = 1 if args.quick else args.workers
    start = time.perf_counter()
    tasks = [
        (sampling, c, size["reps"], size["item_monitor"], args.seed + 1000 * s + c)
        for s, sampling in enumerate(("iid", "finite"))
        for c in range(size["chunks"])
    ]
    gaps = [(g, size["gap_reps"], args.seed + 5000 + g) for g in GAPS]
    if workers > 1:
        with Pool(workers) as pool:
            chunks = pool.map(peeking_chunk, tasks, chunksize=1)
            gap_rows = pool.map(gap_task, gaps, chunksize=1)
    else:
        chunks = [peeking_chunk(t) for t in tasks]
        gap_rows = [gap_task(t) for t in gaps]
    rates = {}
    for sampling in ("iid", "finite"):
        mine = [c for c in chunks if c["sampling"] == sampling]
        reps = sum(c["reps"] for c in mine)
        item_reps = sum(min(c["item_monitor"], c["reps"]) for c in mine)
        for key in mine[0]["counts"]:
            total = sum(c["counts"][key] for c in mine)
            r = item_reps if key == "monitor, every item" else reps
            p = total / r
            rates[f"{sampling}: {key}"] = {"rate": p, "se": float(np.sqrt(p * (1 - p) / r)),
                                           "runs": r}  # fmt: skip
    elapsed = time.perf_counter() - start
    print(f"Part 1: six tied models, N = {N}, alpha = {ALPHA}; P(some false statement at some "
          f"look) ± SE ({elapsed:.0f} s)\n")  # fmt: skip
    print("| sampling | looks | Holm McNemar | Holm t (rankci default test) | Holm z | monitor |")
    print("|---|---|---|---|---|---|")
    for sampling in ("iid", "finite"):
        for name in SCHEDULES:
            cells = []
            for rule in (*NAIVE, "monitor"):
                v = rates[f"{sampling}: {rule}, {name}"]
                cells.append(f"{v['rate']:.3f} ± {v['se']:.3f}")
            runs = rates[f"{sampling}: monitor, {name}"]["runs"]
            print(f"| {sampling} | {name} | " + " | ".join(cells) + f" (runs: {runs}) |")
    print(
        f"\nPart 2: two models, benchmark means differing by g of N = {N} items, default "
        "monitor (sampling='finite', looks every 1 %)\n"
    )
    print("| gap g (items) | gap in mean score | certified after item N | <= alpha event |")
    print("|---:|---:|---:|---:|")
    for row in gap_rows:
        print(f"| {row['gap_items']} | {row['gap']:.4f} | {row['certified']:.3f} | "
              f"{row['alpha_event']:.3f} |")  # fmt: skip
    record = {"seed": args.seed, "seconds": round(elapsed), "size": size, "peeking": rates,
              "after_all_items": gap_rows}  # fmt: skip
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
