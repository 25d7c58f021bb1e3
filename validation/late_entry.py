"""Models that join later (``MonitorSpec(entry="open")``): validity and the power cost.

On the bundled MMLU-Pro and ChemBench (per-item correctness), each replication

1. picks K models at random, in random order (the entry order);
2. draws T items i.i.d. (with replacement) from the benchmark's items that every model answered
   (model S; the abilities are the means over those items, so the truth is known);
3. runs an **open** board: the first M0 models at creation, the other K - M0 joining at uniformly
   random item counts in [0, T) (sorted, in the entry order), a look every ``look_every`` items;
4. on the same draws, a **closed** board that had all K models from the start (e-Bonferroni,
   threshold K(K-1)/alpha), and an **open board with everyone at creation** (M0 = K), which
   separates the cost of the levels from the cost of the missing items.

Two designs: ``real`` (the models' own scores) and ``tied`` (K copies of one model, each scored
on its own i.i.d. item draws: every pair is tied, so every certification is an error).
Reported per dataset and design: the error at any look (some certified pair false, or the
<= alpha event, at some look) with its Monte-Carlo SE and a one-sided 95% Clopper-Pearson upper
bound, for the open board; and the certified true pairs at the
end for the three boards, over all pairs and over the pairs of late entrants.

Usage::

    nice -n 19 env OMP_NUM_THREADS=1 PYTHONPATH=src python validation/late_entry.py
    python validation/late_entry.py --quick      # seconds; writes a scratch copy only

Results: ``validation/results/late_entry.json`` (full run), summarised in validation/README.md.
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

from rankci._base import RankciWarning  # noqa: E402
from rankci.datasets import load_chembench, load_mmlu_pro  # noqa: E402
from rankci.sequential import Monitor, OpenMonitor  # noqa: E402

RECORDED = Path(__file__).resolve().parent / "results" / "late_entry.json"
FULL = {"reps": 200, "n": 4000, "k": 8, "m0": 3, "look_every": 100}
QUICK = {"reps": 6, "n": 600, "k": 5, "m0": 2, "look_every": 100}


def wide(frame) -> tuple[list[str], np.ndarray]:
    """Models and the items x models matrix of the items every model answered."""
    table = frame.pivot_table(index="item", columns="model", values="score", aggfunc="mean")
    table = table.dropna(axis=0, how="any")
    return [str(c) for c in table.columns], table.to_numpy(dtype=float)


def false_pairs(theta: np.ndarray) -> np.ndarray:
    """M x M: True where ``(j, l)`` certified would be false (``theta_j <= theta_l``)."""
    out = theta[:, None] <= theta[None, :]
    np.fill_diagonal(out, False)
    return out


def _final(mon) -> np.ndarray:
    return mon._dominance.copy()


def one_rep(
    x: np.ndarray, rng: np.random.Generator, cfg: dict, alpha: float, design: str = "real"
) -> dict:
    k, n, m0, every = cfg["k"], cfg["n"], cfg["m0"], cfg["look_every"]
    if design == "tied":  # K copies of one model, each on its own i.i.d. item draws: all tied
        col = x[:, rng.integers(x.shape[1])]
        theta = np.full(k, col.mean())
        draws = col[rng.integers(0, x.shape[0], size=(n, k))]
    else:
        cols = rng.choice(x.shape[1], size=k, replace=False)  # random models, random order
        theta = x[:, cols].mean(axis=0)
        draws = x[rng.integers(0, x.shape[0], size=n)][:, cols]
    joins = np.sort(rng.integers(0, n, size=k - m0))
    names = [f"m{j}" for j in range(k)]
    wrong = false_pairs(theta)
    # open board with late entrants
    mon = OpenMonitor(names[:m0], sampling="iid", entry="open", alpha=alpha, look_every=every)
    t, error = 0, False
    for j, at in enumerate(joins):
        if at > t:
            mon.update_block(draws[t:at, : mon.n_models])
            t = at
        error |= _any_wrong(mon, wrong)
        mon.add_model(names[m0 + j])
    mon.update_block(draws[t:, :k])
    mon.ranking()
    error |= _any_wrong(mon, wrong) or mon.alpha_event is not None
    late = np.zeros((k, k), dtype=bool)
    late[m0:, :] = late[:, m0:] = True
    np.fill_diagonal(late, False)
    true_pairs = ~wrong & ~np.eye(k, dtype=bool)
    boards = {"open_late": _final(mon)}
    closed = Monitor(names, sampling="iid", certifier="bonferroni", alpha=alpha, look_every=every)
    closed.update_block(draws)
    closed.ranking()
    boards["closed_from_start"] = _final(closed)
    start = OpenMonitor(names, sampling="iid", entry="open", alpha=alpha, look_every=every)
    start.update_block(draws)
    start.ranking()
    boards["open_from_start"] = _final(start)
    out = {
        "error": bool(error),
        "n_true": int(true_pairs.sum()),
        "n_true_late": int((true_pairs & late).sum()),
    }
    for name, d in boards.items():
        out[name] = int((d & true_pairs).sum())
        out[name + "_late"] = int((d & true_pairs & late).sum())
    return out


def _any_wrong(mon, wrong: np.ndarray) -> bool:
    """Some look so far certified a false pair (the certified set only grows: read it now)."""
    m = mon.n_models
    return bool((mon._dominance & wrong[:m, :m]).any())


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
        summary = {
            "design": design,
            "n_models_available": len(models),
            "n_items": int(x.shape[0]),
            "error_any_look": rate,
            "mc_se": math.sqrt(rate * (1 - rate) / len(reps)),
            "error_upper95": float(stats.beta.ppf(0.95, count + 1, len(reps) - count)),
            "true_pairs_mean": float(np.mean([r["n_true"] for r in reps])),
            "true_late_pairs_mean": float(np.mean([r["n_true_late"] for r in reps])),
        }
        for board in ("open_late", "closed_from_start", "open_from_start"):
            summary[board] = float(np.mean([r[board] for r in reps]))
            summary[board + "_late"] = float(np.mean([r[board + "_late"] for r in reps]))
        out[f"{name}_{design}"] = summary
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
        "study": "late_entry",
        "command": "nice -n 19 env OMP_NUM_THREADS=1 PYTHONPATH=src python validation/late_entry.py"
        + (" --quick" if args.quick else ""),
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
