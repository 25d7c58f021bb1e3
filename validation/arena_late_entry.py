"""Models that join an arena later (``ArenaMonitor``, ``entry="open"``): validity and power cost.

Simulated arenas (docs/monitor.md, "Models that join a vote board later"): K = 8 models with
Bradley-Terry (BT) truth, P(a beats b | decisive) = sigmoid(beta_a - beta_b), ties with
probability 0.1 (counted half). M0 = 3 models at creation; the other five join at uniformly random
batch boundaries of the stream (sorted, entry order random), and no vote names a model before it
joins. A stream of N = 6,000 votes in batches of 100, a look after every batch; alpha = 0.05.
Each batch draws its votes' pairs from the pairs of the models present. Designs:

* ``null_uniform``: all K models equal (every ordered pair is a true null: every certification is
  an error), pairs uniform;
* ``null_adaptive``: all equal, each batch samples the pair with the largest current wealth ten
  times as often as the others, and the next model joins early as soon as some pair's wealth
  reaches 10 (entries and sampling chosen from the data, as the proof allows);
* ``bt_uniform``: beta = (0.6, 0.6, 0.3, 0.0, 0.0, -0.4, 0.9, -0.2) assigned to the entry slots in
  a random order per replicate (ties among the betas are true nulls both ways), pairs uniform.

Boards, on the same votes:

* ``open_late``: the open arena, the late models added when they join (the levels of
  :func:`rankci.sequential.entry.pair_level`, fixed at entry);
* ``closed_from_start``: a closed arena with all K models from the start (e-Bonferroni,
  threshold K(K-1)/alpha), fed the same votes;
* ``open_from_start``: an open arena with all K at creation (M0 = K: levels alpha/K^2), which
  separates the price of the entry levels from that of the votes a late model never had.

Reported per design: the error at any look (some false "j beats l", beta_j <= beta_l, certified
at some look; the certified set is the union over looks, so it is read at the end) with its
Monte-Carlo SE and a one-sided 95% Clopper-Pearson upper bound, for each board; and the certified
true pairs at the end, over all pairs and over the pairs of late entrants.

Usage::

    nice -n 19 env OMP_NUM_THREADS=1 PYTHONPATH=src python validation/arena_late_entry.py
    python validation/arena_late_entry.py --quick      # seconds; writes a scratch copy only

Results: ``validation/results/arena_late_entry.json`` (full run), in validation/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import save_record  # noqa: E402

from rankci.sequential.spec import MonitorSpec  # noqa: E402
from rankci.votes.sequential import ArenaMonitor  # noqa: E402
from rankci.votes.table import Votes  # noqa: E402

RECORDED = Path(__file__).resolve().parent / "results" / "arena_late_entry.json"
FULL = {"reps": 2000, "n_votes": 6000, "batch": 100, "k": 8, "m0": 3}
QUICK = {"reps": 4, "n_votes": 1000, "batch": 100, "k": 5, "m0": 2}
TIE = 0.1
BETA_BT = np.array([0.6, 0.6, 0.3, 0.0, 0.0, -0.4, 0.9, -0.2])
DESIGNS = ("null_uniform", "null_adaptive", "bt_uniform")
BOARDS = ("open_late", "closed_from_start", "open_from_start")


def false_pairs(beta: np.ndarray) -> np.ndarray:
    """K x K: True where "j beats l" certified would be false (``beta_j <= beta_l``)."""
    out = beta[:, None] <= beta[None, :]
    np.fill_diagonal(out, False)
    return out


def batch_votes(rng, present: int, beta: np.ndarray, size: int, weights=None):
    """``size`` votes among models ``0..present-1``: codes a, b and outcomes (0: a won, 1: b won,
    2: tie), the pair of each vote drawn with ``weights`` over the unordered pairs (uniform by
    default), the side shown first at random."""
    pairs = np.array([(j, l) for j in range(present) for l in range(j + 1, present)])
    p = None if weights is None else weights / weights.sum()
    pick = pairs[rng.choice(len(pairs), size=size, p=p)]
    flip = rng.random(size) < 0.5
    a = np.where(flip, pick[:, 1], pick[:, 0])
    b = np.where(flip, pick[:, 0], pick[:, 1])
    u = rng.random(size)
    win_a = special.expit(beta[a] - beta[b])
    outcome = np.where(u < TIE, 2, np.where(u < TIE + (1 - TIE) * win_a, 0, 1))
    return a, b, outcome


def adaptive_weights(mon: ArenaMonitor, present: int) -> np.ndarray:
    """Ten times the weight for the unordered pair with the largest current wealth (either way)."""
    lw = mon.log_wealth()[:present, :present]
    pairs = [(j, l) for j in range(present) for l in range(j + 1, present)]
    best = np.array([max(lw[j, l], lw[l, j]) for j, l in pairs])
    weights = np.ones(len(pairs))
    weights[int(np.argmax(best))] = 10.0
    return weights


def one_rep(rng, cfg: dict, alpha: float, design: str) -> dict:
    k, m0, n, size = cfg["k"], cfg["m0"], cfg["n_votes"], cfg["batch"]
    n_batches = n // size
    beta = np.zeros(k) if design.startswith("null") else rng.permutation(BETA_BT[:k])
    names = [f"m{j}" for j in range(k)]
    # the scheduled entry batches of the late models (sorted): uniform over the batches
    joins = list(np.sort(rng.integers(0, n_batches, size=k - m0)))
    spec = MonitorSpec(sampling="iid", entry="open", alpha=alpha)
    late = ArenaMonitor(names[:m0], spec)
    closed = ArenaMonitor(names, MonitorSpec(sampling="iid", alpha=alpha))
    start = ArenaMonitor(names, spec)
    for batch in range(n_batches):
        early = design == "null_adaptive" and float(np.nanmax(late.log_wealth())) >= math.log(10)
        while joins and (joins[0] <= batch or early) and late.n_models < k:
            late.add_model(names[late.n_models])
            joins.pop(0)
            early = False
        present = late.n_models
        weights = adaptive_weights(late, present) if design == "null_adaptive" else None
        a, b, outcome = batch_votes(rng, present, beta, size, weights)
        for mon in (late, closed, start):
            mon.update(Votes.from_arrays(a, b, outcome, models=mon.models))
            mon.look()
    wrong = false_pairs(beta)
    true_pairs = ~wrong & ~np.eye(k, dtype=bool)
    is_late = np.zeros((k, k), dtype=bool)
    is_late[m0:, :] = is_late[:, m0:] = True
    np.fill_diagonal(is_late, False)
    out = {"n_true": int(true_pairs.sum()), "n_true_late": int((true_pairs & is_late).sum())}
    for name, mon in zip(BOARDS, (late, closed, start)):
        certified = np.zeros((k, k), dtype=bool)
        certified[: mon.n_models, : mon.n_models] = mon.certified()  # every model joined
        out[name + "_error"] = bool((certified & wrong).any())
        out[name] = int((certified & true_pairs).sum())
        out[name + "_late"] = int((certified & true_pairs & is_late).sum())
    out["entrant_t"] = [e["t"] for e in late.entrants[m0:]]
    return out


def upper95(count: int, reps: int) -> float:
    """One-sided 95% Clopper-Pearson upper bound of a proportion."""
    return 1.0 if count == reps else float(stats.beta.ppf(0.95, count + 1, reps - count))


def run(cfg: dict, alpha: float, seed: int) -> dict:
    out = {}
    for i, design in enumerate(DESIGNS):
        rng = np.random.default_rng([seed, i])
        reps = [one_rep(rng, cfg, alpha, design) for _ in range(cfg["reps"])]
        summary = {
            "true_pairs_mean": float(np.mean([r["n_true"] for r in reps])),
            "true_late_pairs_mean": float(np.mean([r["n_true_late"] for r in reps])),
            "entrant_t_mean": float(np.mean([np.mean(r["entrant_t"]) for r in reps])),
        }
        for board in BOARDS:
            errors = np.array([r[board + "_error"] for r in reps], dtype=float)
            rate, count = float(errors.mean()), int(errors.sum())
            summary[board] = {
                "error_any_look": rate,
                "mc_se": math.sqrt(rate * (1 - rate) / len(reps)),
                "error_upper95": upper95(count, len(reps)),
                "true_certified": float(np.mean([r[board] for r in reps])),
                "true_certified_late": float(np.mean([r[board + "_late"] for r in reps])),
            }
        out[design] = summary
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds (CI)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=2029)
    parser.add_argument("--out", help="write the JSON here (default: validation/results/)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    begin = time.perf_counter()
    results = run(cfg, args.alpha, args.seed)
    record = {
        "study": "arena_late_entry",
        "command": "nice -n 19 env OMP_NUM_THREADS=1 PYTHONPATH=src python "
        "validation/arena_late_entry.py" + (" --quick" if args.quick else ""),
        "alpha": args.alpha,
        "seed": args.seed,
        "config": cfg,
        "results": results,
        "seconds": round(time.perf_counter() - begin, 1),
    }
    save_record(record, RECORDED, args.out, args.quick)
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
