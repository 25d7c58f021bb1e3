"""Family-wise error of K = 4 models compared pair by pair without correction (docs/omnibus.md).

The claim checked: with K = 4 models there are 6 pairs, and testing each at alpha = 0.05 makes at
least one false "A beats B" under a true null with probability ... The often-quoted 1 - 0.95^6 =
26.5 % assumes six *independent* tests. On a shared question set the six tests are dependent
(the pairs share models: T_AB and T_AC share A's mean), and the rate is lower.

Every replicate: 4 models with the same true mean on n shared items; each of the 6 pairs gets the
two-sided paired t test at 0.05 (``rankci.pairwise_tests(units, "t")``: the smaller of the two
one-sided p-values <= 0.025); a replicate errs when any pair is declared different. Designs:

* ``normal``: ``x_ij = w_i + e_ij``, item effect w_i ~ N(0, 1) shared by the models,
  e_ij ~ N(0, 1), n = 200 items;
* ``binary``: ``P(x_ij = 1) = expit(w_i)``, w_i ~ N(0, 1.2^2) (question difficulty shared by the
  models), n = 200 and n = 50 items;
* ``independent tests``: as ``binary`` with n = 200, but each pair is tested on its own,
  separate 200 items (six independent tests: the textbook 26.5 %).

Reference for shared items (normal theory, n -> inf): with exchangeable models the six statistics
are the pairwise differences of 4 independent means over sigma sqrt(2), so the error is
``P(Q_{4, inf} > 1.96 sqrt 2)`` for the studentized range Q (scipy.stats.studentized_range).

Run:  python validation/omnibus_uncorrected_fwer.py          (20,000 replicates per design,
      SE <= 0.003; 5 minutes on the shared 2-core machine)
      python validation/omnibus_uncorrected_fwer.py --quick  (200 replicates, seconds)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special, stats

from rankci.data import UnitScores
from rankci.evidence.pairwise import pairwise_tests

K = 4
ALPHA = 0.05
FULL_REPS = 20000
QUICK_REPS = 200
DESIGNS = (
    ("normal, 200 shared items", "normal", 200, False),
    ("binary, 200 shared items", "binary", 200, False),
    ("binary, 50 shared items", "binary", 50, False),
    ("independent tests (each pair on its own 200 binary items)", "binary", 200, True),
)
MODELS = tuple("ABCD")


def draw(rng, law, n):
    if law == "normal":
        return rng.standard_normal((n, 1)) + rng.standard_normal((n, K))
    p = special.expit(1.2 * rng.standard_normal((n, 1)))
    return (rng.random((n, K)) < p).astype(float)


def units_of(x):
    return UnitScores(
        values=x,
        models=MODELS[: x.shape[1]],
        labels=tuple(map(str, range(x.shape[0]))),
        unit="item",
        missing="complete",
        excluded={},
        binary=bool(np.isin(x, (0.0, 1.0)).all()),
    )


def any_false_difference(pvalue: np.ndarray) -> bool:
    """Two-sided at ALPHA: a pair is declared different when either one-sided p <= ALPHA / 2."""
    off = ~np.eye(pvalue.shape[0], dtype=bool)
    return bool((pvalue[off] <= ALPHA / 2).any())


def run(rng, law, n, independent, reps):
    errors = 0
    for _ in range(reps):
        if not independent:
            errors += any_false_difference(pairwise_tests(units_of(draw(rng, law, n)), "t").pvalue)
            continue
        wrong = False
        for j in range(K):
            for l in range(j + 1, K):
                x = draw(rng, law, n)[:, [j, l]]  # a fresh sample of items for this pair only
                wrong |= any_false_difference(pairwise_tests(units_of(x), "t").pvalue)
        errors += wrong
    return errors / reps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=FULL_REPS)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates per design (CI smoke run)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.reps = QUICK_REPS
    start = time.perf_counter()
    reference = float(stats.studentized_range.sf(special.ndtri(1 - ALPHA / 2) * np.sqrt(2), K,
                                                  np.inf))  # fmt: skip
    pairs = K * (K - 1) // 2
    print(f"K = {K} models, {pairs} pairs, each two-sided paired t at {ALPHA}, no correction; "
          f"{args.reps} replicates per design\n")  # fmt: skip
    print("| design | P(at least one false difference) ± SE |\n|---|---|")
    for k, (name, law, n, independent) in enumerate(DESIGNS):
        rate = run(np.random.default_rng(args.seed + k), law, n, independent, args.reps)
        se = np.sqrt(rate * (1 - rate) / args.reps)
        print(f"| {name} | {100 * rate:.1f} % ± {100 * se:.1f} |")
    print(f"\nreference, shared items (normal theory, studentized range): {100 * reference:.1f} %")
    print(f"reference, {pairs} independent tests: 1 - 0.95^{pairs} = "
          f"{100 * (1 - (1 - ALPHA) ** pairs):.1f} %")  # fmt: skip
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
