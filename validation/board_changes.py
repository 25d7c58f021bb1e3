"""Boards that change while they run: late entrants, withdrawals and item growth, with voids.

On the bundled MMLU-Pro and ChemBench (per-item correctness, the items every model answered),
each replication runs an **open** board (``entry="open"``, model S, a look every ``look_every``
items) fed one named item at a time (:meth:`rankci.sequential.Monitor.update_item`):

1. **late entrants:** K models in random order, the first M0 at creation, the others joining at
   uniformly random item counts;
2. **item growth:** items are drawn i.i.d. from a pool that starts as a random half of the
   benchmark's items and grows to all of them at a random item count (new item names enter the
   shared order as they arrive);
3. **a withdrawal:** at a random look, the owner of the model with the *lowest observed mean so
   far* withdraws it (a rule that reads the data: the guarantee claims it is allowed);
4. **voids:** at a random look, the items seen so far among a random 10% of the benchmark are
   voided (a rule that does not read the scores), their later observations skipped.

Each run's benchmark is a random ``pool`` of the items every model answered, drawn i.i.d. ``n``
times, so that an item name recurs (about ``n / pool`` times) and a void has observations to
skip.

Two designs. ``real``: the models' own scores. ``tied``: every model's score on item i is an
independent Bernoulli(p_i), p_i the mean correctness of all the benchmark's models on item i, so
every pair is tied on every set of items and every certification is an error.

The error at any look counts a certified pair that is false under **any** of the abilities in
force during the run (the means over the initial pool, over the whole benchmark, and over the
items not voided), or the <= alpha event: a conservative count. Reported with its Monte-Carlo SE
and a one-sided 95% Clopper-Pearson upper bound; and the power (certified true pairs at the end,
true under every one of those abilities) against the **fixed-model board** that had the K models
from the start with no change (e-Bonferroni, the same draws, the voided items kept).

Usage::

    nice -n 19 env OMP_NUM_THREADS=1 PYTHONPATH=src python validation/board_changes.py
    python validation/board_changes.py --quick      # seconds; writes a scratch copy only

Results: ``validation/results/board_changes.json`` (full run), summarised in validation/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import save_record  # noqa: E402
from late_entry import false_pairs, wide  # noqa: E402

from rankci._base import RankciWarning  # noqa: E402
from rankci.datasets import load_chembench, load_mmlu_pro  # noqa: E402
from rankci.sequential import Monitor, OpenMonitor  # noqa: E402

RECORDED = Path(__file__).resolve().parent / "results" / "board_changes.json"
FULL = {"reps": 200, "n": 2000, "k": 6, "m0": 3, "look_every": 100, "pool": 200, "void_share": 0.1}
QUICK = {"reps": 4, "n": 400, "k": 4, "m0": 2, "look_every": 100, "pool": 100, "void_share": 0.1}


def abilities(p: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Per-model means over ``items`` (rows of the items x models matrix ``p``)."""
    return p[items].mean(axis=0)


def wrong_under_any(thetas: list[np.ndarray]) -> np.ndarray:
    """M x M: True where ``(j, l)`` is false under at least one of the abilities ``thetas``."""
    out = np.zeros((thetas[0].size,) * 2, dtype=bool)
    for theta in thetas:
        out |= false_pairs(theta)
    return out


def one_rep(
    x: np.ndarray, rng: np.random.Generator, cfg: dict, alpha: float, design: str = "real"
) -> dict:
    k, n, m0, every = cfg["k"], cfg["n"], cfg["m0"], cfg["look_every"]
    bench = rng.choice(x.shape[0], size=cfg["pool"], replace=False)  # this run's benchmark
    n_items = bench.size
    if design == "tied":
        p = np.repeat(x[bench].mean(axis=1, keepdims=True), k, axis=1)  # every model: p_i
    else:
        p = x[bench][:, rng.choice(x.shape[1], size=k, replace=False)]  # random models
    initial = rng.choice(n_items, size=n_items // 2, replace=False)
    grow_at = int(rng.integers(1, n))
    draws = np.where(
        np.arange(n) < grow_at,
        initial[rng.integers(0, initial.size, size=n)],
        rng.integers(0, n_items, size=n),
    )
    scores = (rng.random((n, k)) < p[draws]).astype(float) if design == "tied" else p[draws]
    to_void = rng.choice(n_items, size=max(1, int(cfg["void_share"] * n_items)), replace=False)
    n_looks = n // every
    void_look = int(rng.integers(1, n_looks))
    withdraw_look = int(rng.integers(1, n_looks))
    joins = dict(zip(np.sort(rng.integers(0, n, size=k - m0)).tolist(), range(m0, k)))
    names = [f"m{j}" for j in range(k)]
    mon = OpenMonitor(names[:m0], sampling="iid", entry="open", alpha=alpha, look_every=every)
    withdrawn = False
    voided: list[int] = []
    skipped = 0
    for t in range(n):
        while t in joins:  # entrants at this item count (several may share it)
            mon.add_model(names[joins.pop(t)])
        looks = len(mon.looks)
        if not voided and looks >= void_look:  # the items seen so far among the chosen ones
            voided = [int(i) for i in to_void if f"q{i}" in mon.item_positions] or [-1]
            for i in voided:
                if i >= 0:
                    mon.void_item(f"q{i}")
        if not withdrawn and looks >= withdraw_look and int(mon.active.sum()) > 2:
            means = mon.ranking().score  # right after a look: that look's ranking, no new one
            active = np.flatnonzero(mon.active)
            worst = active[np.nanargmin(means[active])]
            mon.withdraw_model(names[worst])
            withdrawn = True
        if mon.finished:
            break
        skipped += not mon.update_item(f"q{draws[t]}", scores[t, : mon.n_models])
    mon.ranking()
    # the abilities in force during the run; the certified set only grows (until the <= alpha
    # event, counted as an error), so the final set holds every look's statements
    kept = np.setdiff1d(np.arange(n_items), [i for i in voided if i >= 0])
    thetas = [abilities(p, initial), abilities(p, np.arange(n_items)), abilities(p, kept)]
    wrong = wrong_under_any(thetas)
    true_pairs = ~wrong & ~np.eye(k, dtype=bool)
    m = mon.n_models
    final = np.zeros((k, k), dtype=bool)
    final[:m, :m] = mon._dominance
    error = bool((final & wrong).any()) or mon.alpha_event is not None
    fixed = Monitor(names, sampling="iid", certifier="bonferroni", alpha=alpha, look_every=every)
    fixed.update_block(scores)
    fixed.ranking()
    return {
        "error": bool(error),
        "n_true": int(true_pairs.sum()),
        "changing": int((final & true_pairs).sum()),
        "fixed": int((fixed._dominance & true_pairs).sum()),
        "skipped": int(skipped),
        "withdrawn": bool(withdrawn),
    }


def run(cfg: dict, alpha: float, seed: int) -> dict:
    out = {}
    data = {"mmlu_pro": load_mmlu_pro, "chembench": load_chembench}
    for name, design in (
        ("mmlu_pro", "real"),
        ("chembench", "real"),
        ("mmlu_pro", "tied"),
        ("chembench", "tied"),
    ):
        models, x = wide(data[name](as_frame=True))
        rng = np.random.default_rng([seed, len(out)])
        reps = [one_rep(x, rng, cfg, alpha, design) for _ in range(cfg["reps"])]
        errors = np.array([r["error"] for r in reps], dtype=float)
        rate, count = float(errors.mean()), int(errors.sum())
        out[f"{name}_{design}"] = {
            "design": design,
            "n_models_available": len(models),
            "n_items": int(x.shape[0]),
            "error_any_look": rate,
            "mc_se": math.sqrt(rate * (1 - rate) / len(reps)),
            "error_upper95": float(stats.beta.ppf(0.95, count + 1, len(reps) - count)),
            "true_pairs_mean": float(np.mean([r["n_true"] for r in reps])),
            "certified_true_changing": float(np.mean([r["changing"] for r in reps])),
            "certified_true_fixed": float(np.mean([r["fixed"] for r in reps])),
            "skipped_voided_mean": float(np.mean([r["skipped"] for r in reps])),
            "withdrawals": int(sum(r["withdrawn"] for r in reps)),
        }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds (CI)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--out", help="write the JSON here (default: validation/results/)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    begin = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        results = run(cfg, args.alpha, args.seed)
    record = {
        "study": "board_changes",
        "command": "nice -n 19 env OMP_NUM_THREADS=1 PYTHONPATH=src python "
        "validation/board_changes.py" + (" --quick" if args.quick else ""),
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
