"""δ chosen from the data (issue 26, seed 000): the error rate of the sample split and of the
α split, against the plug-in that reuses the data without spending α.

Design. M = 6 models, n = 400 items; item i, model j: x_ij = θ_j + u_i + e_ij with
u_i ~ N(0, 0.5²) shared by the models (unbounded scores, so the t tests are the plain paired t).
θ = (0.03, 0, 0.30, 0.27, 0.60, 0.57): models 0 and 1 are the reference pair ("one model at two
seeds"), δ* = |θ_0 − θ_1| = 0.03, and the pairs (2, 3) and (4, 5) sit exactly at the gap δ*,
the boundary of their null hypotheses. α = 0.05, Holm, simultaneous coverage, rankci's default
paired t test. Two scenarios for the noise e_ij:

* ``rerun``: the reference rerun repeats the reference item by item up to a small noise,
  x_i1 = x_i0 − 0.03 + N(0, 0.1²); the other models have e_ij ~ N(0, 0.4²). δ̂ is precise, so the
  boundary pairs are tested right at their boundary.
* ``noisy-reference``: e_ij ~ N(0, 0.4²) for the reference pair, N(0, 0.05²) for the four others.
  δ̂ is noisy and the boundary pairs are measured precisely: the case where reusing the data
  (the plug-in) goes wrong.
* ``ladder``: θ = (0.03, 0, 0.06, 0.09, 0.12, 0.15), so every neighbouring pair of the four
  other models sits at the gap δ* (three boundary pairs) and the others are 0.06 or more apart;
  the reference is a precise rerun as in ``rerun``, the others have e_ij ~ N(0, 0.05²), so δ̂
  lands near δ* and the boundary pairs are measured precisely.

Procedures (``rankci.analyses.delta_choice.choose_delta``), and the error event of each:

* ``split``: half of the items (seeded) give δ̂ = |mean(x_0 − x_1)|; the ranking uses the other
  half at α. Wrong when some certified "j better than l" has θ_j − θ_l ≤ δ̂ (its own claim).
* ``alpha-split``: δ̂ = the (1 − 0.3α) upper confidence bound of |θ_0 − θ_1| from all items; the
  ranking at 0.7α. Wrong when some certified "j better than l" has θ_j − θ_l ≤ δ*.
* ``plug-in`` (not a rankci procedure, the contrast): δ̂ = |mean(x_0 − x_1)| on all items, the
  ranking on all items at α; judged by the α split's claim (θ_j − θ_l > δ*).

Each error rate is reported with its Monte-Carlo SE, sqrt(p (1 − p) / R).

Run:  OMP_NUM_THREADS=1 python validation/delta_split.py      (2,000 replicates per scenario,
      seed 20261202; 85 s on the shared 2-core machine)
      python validation/delta_split.py --quick                 (40 replicates, seconds)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py

import rankci
from rankci import Scores
from rankci._base import RankciWarning
from rankci.analyses.delta_choice import choose_delta

RESULTS = Path(__file__).resolve().parent / "results" / "delta_split.json"
THETA = np.array([0.03, 0.0, 0.30, 0.27, 0.60, 0.57])
LADDER = np.array([0.03, 0.0, 0.06, 0.09, 0.12, 0.15])
MODELS = ["ref", "ref-rerun", "b", "b-minus", "c", "c-minus"]
N_ITEMS = 400
ALPHA = 0.05
SEED = 20261202


SCENARIOS = ("rerun", "noisy-reference", "ladder")


def _theta(scenario: str) -> np.ndarray:
    return LADDER if scenario == "ladder" else THETA


def _scores(generator: np.random.Generator, scenario: str) -> Scores:
    x = _theta(scenario) + generator.normal(0, 0.5, size=(N_ITEMS, 1))
    if scenario == "ladder":
        sd = np.array([0.4, 0.4, 0.05, 0.05, 0.05, 0.05])
        x = x + generator.normal(0, 1.0, size=(N_ITEMS, THETA.size)) * sd
        x[:, 1] = x[:, 0] - 0.03 + generator.normal(0, 0.1, size=N_ITEMS)
    elif scenario == "rerun":
        x = x + generator.normal(0, 0.4, size=(N_ITEMS, THETA.size))
        x[:, 1] = x[:, 0] - 0.03 + generator.normal(0, 0.1, size=N_ITEMS)
    else:
        sd = np.array([0.4, 0.4, 0.05, 0.05, 0.05, 0.05])
        x = x + generator.normal(0, 1.0, size=(N_ITEMS, THETA.size)) * sd
    return Scores.from_matrix(x, models=MODELS, bounds=None)


def _wrong(ranking, margin: float, theta: np.ndarray) -> bool:
    """Some certified 'j better than l' with theta_j - theta_l <= margin."""
    order = [ranking.models.index(m) for m in MODELS]
    d = np.asarray(ranking.dominance)[np.ix_(order, order)]
    gap = theta[:, None] - theta[None, :]
    return bool((d & (gap <= margin + 1e-12)).any())


def replicate(i: int, scenario: str) -> dict:
    k = SCENARIOS.index(scenario)
    generator = np.random.default_rng(np.random.SeedSequence([SEED, k, i]))
    scores = _scores(generator, scenario)
    theta = _theta(scenario)
    delta_star = abs(theta[0] - theta[1])
    split = choose_delta(scores, how="split", reference=("ref", "ref-rerun"), alpha=ALPHA,
                         rng=int(generator.integers(2**32)))
    bound = choose_delta(scores, how="alpha-split", reference=("ref", "ref-rerun"), alpha=ALPHA)
    units = scores.units()
    a, b = units.models.index("ref"), units.models.index("ref-rerun")
    plug = abs(float(np.mean(units.values[:, a] - units.values[:, b])))
    naive = rankci.rank(scores, alpha=ALPHA, delta=plug)
    return {
        "split": _wrong(split.ranking, split.delta, theta),
        "alpha-split": _wrong(bound.ranking, delta_star, theta),
        "plug-in": _wrong(naive, delta_star, theta),
        "delta_split": split.delta,
        "delta_alpha": bound.delta,
        "delta_plug": plug,
        "certified_split": int(np.count_nonzero(split.ranking.dominance)),
        "certified_alpha": int(np.count_nonzero(bound.ranking.dominance)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 replicates (seconds)")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--out", default=None, help="write the JSON here instead")
    args = parser.parse_args(argv)
    reps = args.reps or (40 if args.quick else 2000)
    start = time.time()
    claims = (
        ("split", "theta_j - theta_l > delta_hat (its own delta)"),
        ("alpha-split", "theta_j - theta_l > delta* = |theta_ref - theta_rerun|"),
        ("plug-in", "theta_j - theta_l > delta* (judged by the alpha split's claim)"),
    )
    rows, summary = [], {}
    for scenario in SCENARIOS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RankciWarning)  # "nothing certified" at times
            runs = [replicate(i, scenario) for i in range(reps)]
        for name, claim in claims:
            p = float(np.mean([r[name] for r in runs]))
            rows.append({"scenario": scenario, "procedure": name, "claim": claim,
                         "error_rate": p, "mc_se": math.sqrt(p * (1 - p) / reps)})
        summary[scenario] = {
            "mean_delta": {k: float(np.mean([r[f"delta_{k}"] for r in runs]))
                           for k in ("split", "alpha", "plug")},
            "mean_certified": {k: float(np.mean([r[f"certified_{k}"] for r in runs]))
                               for k in ("split", "alpha")},
        }
    record = {"study": "delta_split", "reps": reps, "seed": SEED, "alpha": ALPHA,
              "n_items": N_ITEMS, "theta": THETA.tolist(), "theta_ladder": LADDER.tolist(),
              "delta_star": 0.03,
              "rows": rows, "summary": summary, "seconds": round(time.time() - start, 1),
              "quick": args.quick}
    print(f"delta chosen from the data: {reps} replicates per scenario, alpha = {ALPHA}")
    print("| scenario | procedure | claim | error rate ± MC SE |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['scenario']} | {row['procedure']} | {row['claim']} | "
              f"{row['error_rate']:.4f} ± {row['mc_se']:.4f} |")
    for scenario, values in summary.items():
        print(f"{scenario}: mean delta {values['mean_delta']}; mean certified pairs "
              f"{values['mean_certified']}")
    print(f"{record['seconds']} s")
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
