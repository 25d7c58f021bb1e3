"""Tiny designs (issue 16): simultaneous coverage of ``rankci.rank`` at n = 2 ... 30 units.

``rankci.rank(scores)`` with its defaults (item units, one-sided paired t tests, Holm over the
M(M-1) ordered pairs, simultaneous coverage, alpha = 0.05). For scores in [0, 1] and at most
``exact_bound_n = 30`` units, the default t test's p-value is never below Hoeffding's exact bound
(``p = max(p_t, p_exact)``, ``rankci.evidence.pairwise.bounded_pvalue``), valid for every law of
the differences; ``--exact-bound-n 0`` runs the plain paired t instead (with only the rule that a
zero variance takes the exact bound), recorded in ``results/tiny_designs_plain_t.json``. A
replicate covers when every model's interval
[L, U] contains its whole true rank set ``{1 + #{l: theta_l > theta_j}, ..., #{l: theta_l >=
theta_j}}`` (tied models: every rank the tie allows), i.e. when no certified "j better than l"
is false.

Scores are bounded, in [0, 1], and drawn through a Gaussian copula: for item i and model j,
``z_ij = sqrt(rho) w_i + sqrt(1 - rho) e_ij`` (w_i, e_ij i.i.d. N(0, 1)) and
``x_ij = F_j^{-1}(Phi(z_ij))``, so model j's scores have exactly the law F_j, and rho is the latent
correlation of two models on the same item (rho = 0: independent models; rho = 0.5: a shared item
difficulty). Laws F_j:

* ``binary``: Bernoulli(theta_j) (``x = 1`` when ``Phi(z) < theta_j``);
* ``beta, kappa 0.5-20``: Beta(theta_j kappa_j, (1 - theta_j) kappa_j), mean theta_j, concentration
  kappa_j geometric from 0.5 (U-shaped, almost 0/1: judge probabilities, calibrated scores) to 20
  (concentrated) across the models, so that the models differ in shape even where their means
  are equal;
* ``beta, kappa 4``: the same with kappa_j = 4 for every model (unimodal, spread; one shape).

Truths: ``equal`` (binary theta_j = 0.5, beta theta_j = 0.3: one M-way tie, every certified
statement is false) and ``spaced`` (theta_j = linspace(0.8, 0.2, M)). Designs: n = 2, 3, 5, 10,
20, 30 items x M = 3, 8 models x the three laws x the two truths x rho = 0, 0.5 (144 designs).

Reported per design: simultaneous coverage with its Monte-Carlo SE, how often anything was
certified, the mean interval width U - L, and how often rank() warned (a small design that
certified nothing says why). ``--power-cost`` prints, from the two recorded files, what the floor
costs on the spaced truths (how often anything is certified, the mean width, per n and M).

Run:  OMP_NUM_THREADS=1 python validation/tiny_designs.py   (1,000 replicates per design, SE
      <= 0.007 near 0.95; about 12 minutes on 2 cores)
      OMP_NUM_THREADS=1 python validation/tiny_designs.py --exact-bound-n 0 \
          --out validation/results/tiny_designs_plain_t.json   (the plain t, for the power cost)
      python validation/tiny_designs.py --power-cost         (the comparison table; no run)
      python validation/tiny_designs.py --quick              (5 replicates per design, seconds;
      results to a temporary folder, never over validation/results/tiny_designs.json)
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from itertools import product
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from scipy import special, stats

import rankci

RESULTS = Path(__file__).resolve().parent / "results" / "tiny_designs.json"
PLAIN = RESULTS.with_name("tiny_designs_plain_t.json")  # the same study with exact_bound_n=0
SIZES = (2, 3, 5, 10, 20, 30)
MODELS = (3, 8)
LAWS = ("binary", "beta, kappa 0.5-20", "beta, kappa 4")
TRUTHS = ("equal", "spaced")
RHOS = (0.0, 0.5)
FULL_REPS = 1000
QUICK_REPS = 5


def means_of(law: str, truth: str, m: int) -> np.ndarray:
    if truth == "spaced":
        return np.linspace(0.8, 0.2, m)
    return np.full(m, 0.5 if law == "binary" else 0.3)


def concentrations(law: str, m: int) -> np.ndarray:
    return np.full(m, 4.0) if law == "beta, kappa 4" else np.geomspace(0.5, 20.0, m)


def draw(rng, law, theta, n, rho):
    m = theta.size
    z = np.sqrt(rho) * rng.standard_normal((n, 1)) + np.sqrt(1 - rho) * rng.standard_normal((n, m))
    u = special.ndtr(z)
    if law == "binary":
        return (u < theta[None, :]).astype(float)
    kappa = concentrations(law, m)
    return stats.beta.ppf(u, theta * kappa, (1 - theta) * kappa)


def true_rank_sets(theta: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    above = (theta[None, :] > theta[:, None] + tol).sum(axis=1)
    at_least = (theta[None, :] >= theta[:, None] - tol).sum(axis=1)
    return 1 + above, at_least


def run_design(task) -> dict:
    (n, m, law, truth, rho), reps, seed, options = task
    rng = np.random.default_rng(seed)
    theta = means_of(law, truth, m)
    best, worst = true_rank_sets(theta)
    cover = certified = warned = 0
    width = 0.0
    test_options: dict = {}
    models = [f"m{j}" for j in range(m)]
    for _ in range(reps):
        x = draw(rng, law, theta, n, rho)
        scores = rankci.Scores.from_matrix(x, models=models)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", rankci.RankciWarning)
            ranking = rankci.rank(scores, **options)
        warned += any(issubclass(w.category, rankci.RankciWarning) for w in caught)
        cover += bool(((ranking.lower <= best) & (ranking.upper >= worst)).all())
        certified += bool(ranking.dominance.any())
        width += float((ranking.upper - ranking.lower).mean())
        test_options = dict(ranking.procedure["test_options"])
    coverage = cover / reps
    return {
        "n": n,
        "M": m,
        "law": law,
        "truth": truth,
        "rho": rho,
        "theta": theta.round(4).tolist(),
        "reps": reps,
        "seed": seed,
        "coverage": coverage,
        "se": float(np.sqrt(coverage * (1 - coverage) / reps)),
        "any_certified": certified / reps,
        "mean_width": width / reps,
        "warned": warned / reps,
        "test_options": test_options,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| law | truth | M | rho | " + " | ".join(f"n = {n}" for n in SIZES) + " |",
        "|---|---|---:|---:|" + "---|" * len(SIZES),
    ]
    keyed = {(r["law"], r["truth"], r["M"], r["rho"], r["n"]): r for r in rows}
    for law, truth, m, rho in product(LAWS, TRUTHS, MODELS, RHOS):
        cells = []
        for n in SIZES:
            r = keyed[law, truth, m, rho, n]
            flag = "**" if r["coverage"] < 0.95 else ""
            cells.append(f"{flag}{r['coverage']:.3f}{flag} ± {r['se']:.3f}")
        lines.append(f"| {law} | {truth} | {m} | {rho:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def detail(rows: list[dict]) -> str:
    lines = [
        "| law | truth | M | rho | n | coverage ± SE | any certified | mean U - L | warned |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['law']} | {r['truth']} | {r['M']} | {r['rho']:g} | {r['n']} | "
            f"{r['coverage']:.3f} ± {r['se']:.3f} | {r['any_certified']:.3f} | "
            f"{r['mean_width']:.2f} | {r['warned']:.3f} |"
        )
    return "\n".join(lines)


def power_cost(floor: dict, plain: dict) -> str:
    """The spaced truths, per n and M: how often anything was certified, and the mean width,
    with the plain t (``plain``) and with rankci's default floor (``floor``); averaged over the
    three laws and the two rho (6 designs, ``reps`` replicates each)."""
    lines = [
        "| n | M | any certified: plain t | with the floor | mean U - L: plain t | with the floor"
        " |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, m in product(SIZES, MODELS):
        cells = []
        for key in ("any_certified", "mean_width"):
            for record in (plain, floor):
                values = [
                    r[key]
                    for r in record["rows"]
                    if r["truth"] == "spaced" and r["n"] == n and r["M"] == m
                ]
                cells.append(f"{np.mean(values):.3f}" if key == "any_certified" else
                             f"{np.mean(values):.2f}")  # fmt: skip
        lines.append(f"| {n} | {m} | " + " | ".join(cells) + " |")
    return "Spaced truths, mean over the 3 laws and 2 rho:\n\n" + "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=FULL_REPS)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--out", help=f"JSON of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument(
        "--exact-bound-n",
        type=int,
        metavar="N",
        help="pass exact_bound_n=N to rankci.rank (default: rankci's own default, 30); 0 is the "
        f"plain paired t of {PLAIN.name} (then --out is required)",
    )
    parser.add_argument(
        "--power-cost",
        action="store_true",
        help=f"run nothing: print the power cost of the exact floor from {RESULTS.name} "
        f"against {PLAIN.name}",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates per design (CI smoke run)"
    )
    args = parser.parse_args(argv)
    if args.power_cost or args.quick:
        if RESULTS.exists() and PLAIN.exists():
            print(power_cost(json.loads(RESULTS.read_text()), json.loads(PLAIN.read_text())))
            print()
        if args.power_cost:
            return 0
    if args.exact_bound_n is not None and args.out is None and not args.quick:
        parser.error(f"--exact-bound-n needs --out (the default file, {RESULTS}, holds the study "
                     "with rankci's defaults)")  # fmt: skip
    if args.quick:
        args.reps, args.workers = QUICK_REPS, 1
    start = time.perf_counter()
    designs = list(product(SIZES, MODELS, LAWS, TRUTHS, RHOS))
    options = {} if args.exact_bound_n is None else {"exact_bound_n": args.exact_bound_n}
    tasks = [(d, args.reps, args.seed + k, options) for k, d in enumerate(designs)]
    if args.workers > 1:
        with Pool(args.workers) as pool:
            rows = pool.map(run_design, tasks, chunksize=4)
    else:
        rows = [run_design(task) for task in tasks]
    elapsed = time.perf_counter() - start
    how = f"exact_bound_n={args.exact_bound_n}" if options else "defaults"
    print(f"{args.reps} replicates per design, alpha = 0.05, rankci.rank {how} "
          f"({elapsed:.0f} s)\n")  # fmt: skip
    print("Simultaneous coverage ± SE (bold: below 0.95)\n")
    print(table(rows))
    print("\n" + detail(rows))
    record = {"reps": args.reps, "seed": args.seed, "seconds": round(elapsed), "rows": rows}
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
