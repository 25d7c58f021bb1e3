"""Repeated trials (issue 28, item 1): coverage of pass@k / pass^k score and rank intervals.

Population. Per-item success probabilities from the bundled MMLU-Pro table
(``rankci.datasets.load_mmlu_pro``, 32 models x 12,032 items of real 0/1 correctness): eight
models spread over the accuracy order (every fourth by accuracy), the items all eight answered;
each item's difficulty is its smoothed accuracy over all 32 models, ``b_i = logit((c_i + 0.5) /
(m_i + 1))``, each model's ability its accuracy ``a_j = logit(acc_j)``, and

    p_ij = expit(a_j + b_i - mean_i b_i)

(an additive-logit, Rasch-like surface: hard items hard for every model, with the spread of
the real items). The true pass@k of model j is ``mean_i 1 - (1 - p_ij)^k`` over the pool, and
pass^k ``mean_i p_ij^k`` (the pool is the population of items).

One replicate draws I items from the pool (uniformly, without replacement) and n Bernoulli
trials per (model, item), reads them with ``rankci.read_scores(..., per_item=RULE)`` (the
unbiased estimators, :mod:`rankci.trials`), and computes

* the score intervals of ``rankci.score_intervals`` (default method ``auto``: Clopper-Pearson
  when every per-item score is 0/1, else the percentile bootstrap): coverage of each model's
  true pass@k / pass^k over the population (new items and new trials), marginal per model
  (averaged over the models, and the lowest model's rate with its true value), and
  of the same items' truth (``mean`` over the drawn items: the rerun target);
* the simultaneous rank intervals of ``rankci.rank`` (defaults: paired t + Holm): the share of
  replicates in which every model's true rank lies in its interval, and the intervals' mean
  length U - L + 1 (1: the rank is pinned; 8: nothing said).

Every rate is given with its Monte-Carlo SE: the SD over replicates of the replicate's value (the
share of models covered, or the 0/1 rank event) over ``sqrt(R)``; for a 0/1 event this is
``sqrt(c (1 - c) / R)``.

Run:  nice -n 19 env OMP_NUM_THREADS=1 python validation/trials_coverage.py   (full: R = 600)
      python validation/trials_coverage.py --quick   (R = 20, one design; scratch results)
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _results import save_record  # validation/_results.py
from scipy import special

import rankci
from rankci.datasets import load_mmlu_pro
from rankci.trials import parse_per_item

RESULTS = Path(__file__).resolve().parent / "results" / "trials_coverage.json"
ALPHA = 0.05
N_MODELS = 8


def population() -> tuple[list[str], np.ndarray]:
    """(models, p) with p the items x models success probabilities (see the docstring)."""
    frame = load_mmlu_pro(as_frame=True)
    wide = frame.pivot(index="item", columns="model", values="score")
    accuracy = wide.mean(axis=0).sort_values()
    models = list(accuracy.index[2::4][:N_MODELS])
    counts = wide.notna().sum(axis=1)
    difficulty = special.logit((wide.sum(axis=1) + 0.5) / (counts + 1)).to_numpy()
    pool = wide[models].notna().all(axis=1).to_numpy()
    b = difficulty[pool]
    a = special.logit(accuracy[models].to_numpy())
    p = special.expit(a[None, :] + (b - b.mean())[:, None])
    return models, p


def truth(p: np.ndarray, rule: str) -> np.ndarray:
    kind, k = parse_per_item(rule)
    if kind == "mean":
        return p.mean(axis=0)
    per_item = 1 - (1 - p) ** k if kind == "pass@" else p**k
    return per_item.mean(axis=0)


def true_ranks(values: np.ndarray) -> np.ndarray:
    """1 + the number of models with a larger true value (no ties in a continuous truth)."""
    return 1 + (values[None, :] > values[:, None]).sum(axis=1)


def replicate(p, models, n_items, n_trials, rules, rng):
    pool, m = p.shape
    chosen = rng.choice(pool, size=n_items, replace=False)
    sub = p[chosen]
    outcomes = rng.uniform(size=(n_items, n_trials, m)) < sub[:, None, :]
    item, trial, model = np.meshgrid(
        np.arange(n_items), np.arange(n_trials), np.arange(m), indexing="ij"
    )
    table = pd.DataFrame(
        {
            "model": np.asarray(models, dtype=object)[model.ravel()],
            "item": np.char.add("q", item.ravel().astype(str)),
            "trial": trial.ravel(),
            "score": outcomes.ravel().astype(float),
        }
    )
    base = rankci.read_scores(table)
    out = {}
    for rule in rules:
        scores = base.per_item(rule)
        intervals = rankci.score_intervals(scores, rng=rng, verdict=False, reps=500)
        frame = intervals.to_frame().set_index("model").loc[models]
        lower, upper = frame["lower"].to_numpy(), frame["upper"].to_numpy()
        ranking = rankci.rank(scores)
        order = [ranking.models.index(x) for x in models]
        out[rule] = {
            "lower": lower,
            "upper": upper,
            "same_items": truth(sub, rule),
            "rank_lower": ranking.lower[order],
            "rank_upper": ranking.upper[order],
            "method": intervals.method,
        }
    return out


def study(designs, rules, reps, seed):
    models, p = population()
    rows = []
    rng = np.random.default_rng(seed)
    for n_items, n_trials in designs:
        usable = [r for r in rules if (parse_per_item(r)[1] or 1) <= n_trials]
        hits = {
            r: {
                "score": [],
                "same": [],
                "rank": [],
                "width": [],
                "rank_width": [],
                "by_model": np.zeros(len(models)),
            }
            for r in usable
        }
        methods = {r: set() for r in usable}
        for _ in range(reps):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", rankci.RankciWarning)
                result = replicate(p, models, n_items, n_trials, usable, rng)
            for rule, r in result.items():
                target = truth(p, rule)
                inside = (r["lower"] <= target) & (target <= r["upper"])
                same = (r["lower"] <= r["same_items"]) & (r["same_items"] <= r["upper"])
                ranks = true_ranks(target)
                h = hits[rule]
                h["score"].append(inside.mean())
                h["by_model"] += inside
                h["same"].append(same.mean())
                h["rank"].append(
                    float(np.all((r["rank_lower"] <= ranks) & (ranks <= r["rank_upper"])))
                )
                h["width"].append(float(np.mean(r["upper"] - r["lower"])))
                h["rank_width"].append(float(np.mean(r["rank_upper"] - r["rank_lower"] + 1)))
                methods[rule].add(r["method"])
        for rule in usable:
            h = hits[rule]
            row = {"items": n_items, "trials": n_trials, "rule": rule, "reps": reps}
            for key in ("score", "same", "rank"):
                # per-model rates are each replicate's share of the M models covered: their
                # Monte-Carlo SE is the SD of those shares over replicates / sqrt(R) (for the
                # simultaneous rank event, a 0/1 per replicate, this is sqrt(c (1 - c) / R))
                values = np.asarray(h[key])
                row[f"coverage_{key}"] = float(values.mean())
                row[f"mc_se_{key}"] = float(values.std(ddof=0) / np.sqrt(reps))
            row["mean_width"] = float(np.mean(h["width"]))
            row["mean_rank_interval"] = float(np.mean(h["rank_width"]))
            by_model = h["by_model"] / reps
            worst = int(np.argmin(by_model))
            row["min_model_coverage_score"] = float(by_model[worst])
            row["min_model"] = models[worst]
            row["min_model_truth"] = float(truth(p, rule)[worst])
            row["score_methods"] = sorted(methods[rule])
            rows.append(row)
            print(
                f"I={n_items:4d} n={n_trials:2d} {rule:7s}  score {row['coverage_score']:.3f} "
                f"(±{row['mc_se_score']:.3f})  same-items {row['coverage_same']:.3f}  "
                f"ranks {row['coverage_rank']:.3f} (±{row['mc_se_rank']:.3f})  "
                f"min {row['min_model_coverage_score']:.3f} ({row['min_model_truth']:.2f})  "
                f"width {row['mean_width']:.3f}  "
                f"rank interval {row['mean_rank_interval']:.2f}  "
                f"[{', '.join(row['score_methods'])}]",
                flush=True,
            )
    return models, p, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int)
    parser.add_argument("--seed", type=int, default=2028)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.quick:
        designs, rules, reps = [(100, 5)], ["mean", "pass@2", "pass^2"], args.reps or 20
    else:
        designs = [(50, 5), (200, 5), (100, 10)]
        rules = ["mean", "pass@2", "pass@5", "pass^2", "pass^5"]
        reps = args.reps or 600
    start = time.time()
    models, p, rows = study(designs, rules, reps, args.seed)
    record = {
        "study": "trials_coverage",
        "alpha": ALPHA,
        "models": models,
        "pool_items": int(p.shape[0]),
        "seed": args.seed,
        "quick": args.quick,
        "seconds": round(time.time() - start, 1),
        "rows": rows,
    }
    save_record(record, RESULTS, args.out, args.quick)
    print(f"{len(rows)} rows in {record['seconds']} s")


if __name__ == "__main__":
    main()
