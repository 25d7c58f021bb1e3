"""Calibration of ``rankci check`` (issue 19): wrong decisions, alone and jointly, under nulls.

Designs put every claim ON the boundary of its hypotheses, where a wrong decision is most likely:

* ``A > B`` with theta_A = theta_B: "supported" (A better) and "contradicted" (B better) are
  both wrong;
* ``A >= B - m`` with theta_A - theta_B = -m exactly: both outcomes are wrong (the check
  certifies the strict statements theta_A - theta_B > -m, or < -m);
* ``A ~ B within e`` with |theta_A - theta_B| = e: both outcomes are wrong;
* ``A is best`` with A tied at the top with another model: "supported" (A strictly better than
  every other) and "contradicted" (someone strictly better than A) are both wrong;
* ``A in top 2`` with two models strictly above A: "supported" is wrong.

A replicate is wrong when ANY claim of the call is decided wrongly; rankci's guarantee is that
this happens with probability at most alpha (Holm over one family, docs/check.md). Reported per
design: the joint rate with its Monte-Carlo standard error, and each claim's own rate.

Scores: ``x_ij = theta_j + u_i + e_ij`` (item effect u ~ N(0, 0.15^2), noise e ~ N(0, 0.25^2),
unbounded, so the means are exactly theta), and a binary design (Bernoulli(theta_j + u_i), u a
small item effect in [-0.1, 0.1]). Designs with few items probe the t test's small-sample
behaviour on skewed binary differences.

Run:  python validation/check_calibration.py          (2,000 replicates per design, minutes)
      python validation/check_calibration.py --quick  (40 replicates: the CI smoke run, seconds)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from rankci._progress import progress
from rankci.analyses.claims import check_claims, parse_claim
from rankci.data import Scores

MODELS = ["m0", "m1", "m2", "m3", "m4", "m5"]
#: theta: m0 = m1 tied top; m2 = m3 tied third (two strictly above); m4 = m2 + 0.02; m5 = m3 - 0.02
THETA = np.array([0.60, 0.60, 0.55, 0.55, 0.57, 0.53])
CLAIMS = [
    ("m0 > m1", ("supported", "contradicted")),
    ("m5 >= m3 - 0.02", ("supported", "contradicted")),
    ("m4 ~ m2 within 0.02", ("supported", "contradicted")),
    ("m0 is best", ("supported", "contradicted")),
    ("m2 in top 2", ("supported",)),
]
#: the claims decided together in one call (the family grows with the rank claims' pairs)
CLAIM_SETS = {
    "all five claims": CLAIMS,
    "the three pair claims": CLAIMS[:3],
    "one claim, m0 > m1": CLAIMS[:1],
}
DESIGNS = {
    "continuous, 200 items": {"n": 200, "kind": "continuous"},
    "continuous, 30 items": {"n": 30, "kind": "continuous"},
    "binary, 500 items": {"n": 500, "kind": "binary"},
}
ALPHA = 0.05


def draw(kind: str, n: int, rng: np.random.Generator) -> Scores:
    if kind == "continuous":
        x = THETA + rng.normal(0, 0.15, (n, 1)) + rng.normal(0, 0.25, (n, THETA.size))
        return Scores.from_matrix(x, models=MODELS, bounds=None)
    u = rng.uniform(-0.1, 0.1, (n, 1))
    u -= u.mean()  # the item effect averages to 0 over the items: the means are theta
    x = (rng.random((n, THETA.size)) < THETA + u).astype(float)
    return Scores.from_matrix(x, models=MODELS)


def study(reps: int, seed: int) -> dict:
    out = {}
    for d, (name, design) in enumerate(DESIGNS.items()):
        for c, (set_name, chosen) in enumerate(CLAIM_SETS.items()):
            claims = [parse_claim(text) for text, _ in chosen]
            rng = np.random.default_rng([seed, d, c])
            wrong = np.zeros((reps, len(chosen)), dtype=bool)
            for r in progress(range(reps), desc=f"{name}, {set_name}"):
                check = check_claims(draw(design["kind"], design["n"], rng), claims, alpha=ALPHA)
                wrong[r] = [res.result in bad for res, (_, bad) in zip(check.results, chosen)]
            joint = wrong.any(axis=1).mean()
            out[f"{name}, {set_name}"] = {
                "reps": reps,
                "family_size": check.family_size,
                "joint": float(joint),
                "joint_se": float(np.sqrt(joint * (1 - joint) / reps)),
                "per_claim": {t: float(x) for (t, _), x in zip(chosen, wrong.mean(axis=0))},
            }
    return out


def table(results: dict) -> str:
    lines = [
        f"alpha = {ALPHA}; a replicate is wrong when any claim of the call is decided wrongly",
        "",
    ]
    width = max(len(text) for text, _ in CLAIMS)
    for name, r in results.items():
        verdict = "ok" if r["joint"] <= ALPHA + 2 * r["joint_se"] else "ABOVE ALPHA"
        lines.append(
            f"{name} (Holm over {r['family_size']}): {r['reps']} replicates, joint "
            "wrong-decision rate "
            f"{r['joint']:.4f} (MC se {r['joint_se']:.4f}) {verdict}"
        )
        lines += [f"    {text:<{width}}  {rate:.4f}" for text, rate in r["per_claim"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--quick", action="store_true", help="40 replicates (CI smoke run)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    reps = 40 if args.quick else args.reps
    start = time.monotonic()
    results = study(reps, args.seed)
    print(table(results))
    print(f"\n{time.monotonic() - start:.0f} s")
    if args.out is not None and not args.quick:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    worst = max(r["joint"] - 2 * r["joint_se"] for r in results.values())
    return 0 if args.quick or worst <= ALPHA else 1


if __name__ == "__main__":
    sys.exit(main())
