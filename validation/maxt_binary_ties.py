"""Family-wise error of max-t on tied 0/1 designs with few items (issue 25, item 3).

``test="auto"`` makes Holm use the exact McNemar (sign) test on 0/1 units, because the plain t's
level failed there (``small_sample_rule.py``: Holm FWER 0.062 at n = 10). max-t has no paired
test of its own: it studentizes the mean differences (the t statistics) and takes its critical
values from their estimated joint law, and the exact floor never reached it. Does it need a
warning (or the sign test) on the same designs? This study measures its family-wise error where
every model is tied, so that every certified dominance is false.

Designs: M = 3 and 8 models with the same accuracy theta, 0/1 items from the Gaussian copula of
``tiny_designs.py`` (``z = sqrt(rho) w_i + sqrt(1 - rho) e_ij``, ``x = 1[Phi(z) < theta]``):
theta = 0.5 with rho = 0 and 0.5, theta = 0.8 with rho = 0.5; n = 5, 8, 10, 15, 20, 25, 30, 40
items. Method: ``rankci.rank(scores, multiplicity="max-t")`` (its defaults: Gaussian multiplier
draws, 1,000 of them, the step-down and the small-sample form; the test "auto", which max-t reads
as the t statistics). Reported: the FWER (share of replicates with at least one certified pair)
with its Monte-Carlo SE, against alpha = 0.05 + 2 SE.

Run:  OMP_NUM_THREADS=1 nice -n 19 python validation/maxt_binary_ties.py   (1,000 replicates per
      design; results to validation/results/maxt_binary_ties.json)
      python validation/maxt_binary_ties.py --quick   (30 replicates, n = 5 and 20, M = 3;
      results to a temporary folder)
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from tiny_designs import draw as copula_draw  # validation/tiny_designs.py

import rankci

RESULTS = Path(__file__).resolve().parent / "results" / "maxt_binary_ties.json"
ALPHA = 0.05
SIZES = (5, 8, 10, 15, 20, 25, 30, 40)
QUICK_SIZES = (5, 20)
MODELS = (3, 8)
TIES = ((0.5, 0.0), (0.5, 0.5), (0.8, 0.5))  # (theta, rho)
REPS, QUICK_REPS = 1000, 30


def run_cell(m: int, theta: float, rho: float, n: int, reps: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    truth = np.full(m, theta)
    models = [f"m{j}" for j in range(m)]
    errors = np.zeros(reps, dtype=bool)
    for r in range(reps):
        x = copula_draw(rng, "binary", truth, n, rho)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rankci.RankciWarning)
            ranking = rankci.rank(
                rankci.Scores.from_matrix(x, models=models), multiplicity="max-t",
                rng=int(rng.integers(2**31)),
            )  # fmt: skip
        errors[r] = bool(ranking.dominance.any())
    fwer = float(errors.mean())
    se = float(errors.std(ddof=1) / np.sqrt(reps))
    return {"M": m, "theta": theta, "rho": rho, "n": n, "reps": reps, "seed": seed,
            "fwer": fwer, "fwer_se": se, "above": fwer > ALPHA + 2 * se}  # fmt: skip


def table(rows: list[dict], sizes) -> str:
    head = "| design | " + " | ".join(f"n = {n}" for n in sizes) + " |"
    lines = [head, "|---|" + "---:|" * len(sizes)]
    for m in MODELS:
        for theta, rho in TIES:
            cells = {r["n"]: r for r in rows if (r["M"], r["theta"], r["rho"]) == (m, theta, rho)}
            if not cells:
                continue
            text = []
            for n in sizes:
                r = cells[n]
                value = f"{r['fwer']:.3f} ± {r['fwer_se']:.3f}"
                text.append(f"**{value}**" if r["above"] else value)
            lines.append(f"| M = {m}, theta {theta}, rho {rho} | " + " | ".join(text) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--out", help=f"JSON of the results (default {RESULTS})")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_REPS} replicates, n in {QUICK_SIZES}, M = 3 (CI smoke run)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    models = MODELS[:1] if args.quick else MODELS
    reps = QUICK_REPS if args.quick else REPS
    start = time.perf_counter()
    rows = []
    cells = [(m, theta, rho, n) for m in models for theta, rho in TIES for n in sizes]
    for index, (m, theta, rho, n) in enumerate(cells):
        rows.append(run_cell(m, theta, rho, n, reps, args.seed + index))
    elapsed = time.perf_counter() - start
    worst = max(rows, key=lambda r: r["fwer"])
    print(f"max-t on tied 0/1 designs: {len(cells)} cells x {reps} replicates, alpha = {ALPHA} "
          f"({elapsed:.0f} s)\n")  # fmt: skip
    print("Family-wise error (bold: above 0.05 + 2 SE)\n")
    print(table(rows, sizes))
    print(f"\nWorst: {worst['fwer']:.3f} ± {worst['fwer_se']:.3f} (M = {worst['M']}, theta "
          f"{worst['theta']}, rho {worst['rho']}, n = {worst['n']}); cells above 0.05 + 2 SE: "
          f"{sum(r['above'] for r in rows)} of {len(rows)}")  # fmt: skip
    record = {"alpha": ALPHA, "seed": args.seed, "sizes": list(sizes), "reps": reps,
              "seconds": round(elapsed), "rows": rows}  # fmt: skip
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
