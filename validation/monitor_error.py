"""Error under monitoring (rcs-examples E): ever-wrong rates with 1 and 200 looks.

Simulation (the source's experiment E1): item difficulty d_i ~ N(0, 1) shared by all models; model
j correct with probability sigmoid(a_j - d_i); n = 2000 i.i.d. items; alpha = 0.05; equally spaced
looks. "Ever wrong" = some false statement at some look:

* ours (sampling model S, mixture bet, looks every n/looks items): a certified "j better than l"
  with a_j <= a_l (after transitive closure; certified pairs are kept for good). For the exact
  certifier we also report how often the true weak order is eliminated (then some rank *set* is
  wrong even if no dominance is);
* fixed-sample Holm at every look over the M(M-1) one-sided paired tests (exact McNemar = sign
  test on the discordant items, and the paired z-test): a rejected H_jl with a_j <= a_l.

Run:  python validation/monitor_error.py                (2,000 replicates per row, ~12 minutes)
      python validation/monitor_error.py --reps 200     (a quick look)
      python validation/monitor_error.py --quick        (10 replicates: the CI smoke run, seconds)
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy import special, stats

from rankci.ranking import transitive_closure
from rankci.sequential import PairWealth, make_certifier

SCENARIOS = {
    "all_tied": [0.5] * 6,
    "tied_leaders": [1.0, 1.0, 0.6, 0.6, 0.2, -0.2],
    "near_ties": [1.00, 0.98, 0.62, 0.60, 0.22, 0.20],
}
ROWS = [("all_tied", 1), ("all_tied", 200), ("tied_leaders", 200), ("near_ties", 200)]
# rcs-examples.md, E (5,000 replicates each)
TARGETS = {
    ("all_tied", 1): {"holm_mcnemar": 0.033, "holm_z": 0.0356, "exact": 0.0012,
                      "shortcut": 0.001, "bonferroni": 0.001},
    ("all_tied", 200): {"holm_mcnemar": 0.304, "holm_z": 0.5072, "exact": 0.0164,
                        "shortcut": 0.0148, "bonferroni": 0.0148},
    ("tied_leaders", 200): {"holm_mcnemar": 0.0972, "holm_z": 0.18, "exact": 0.003,
                            "shortcut": 0.0008, "bonferroni": 0.0008},
    ("near_ties", 200): {"holm_mcnemar": 0.0456, "holm_z": 0.1168, "exact": 0.0022,
                         "shortcut": 0.0012, "bonferroni": 0.0012},
}  # fmt: skip
TARGET_REPS = 5000
QUICK_REPS = 10
METHODS = ["holm_mcnemar", "holm_z", "exact", "shortcut", "bonferroni"]


def simulate(ability, n, rng):
    d = rng.normal(size=n)
    p = special.expit(np.asarray(ability)[None, :] - d[:, None])
    return (rng.random(p.shape) < p).astype(float)


def holm_reject(pvalues, alpha):
    """Holm over the last axis (the pairs), vectorised over the leading axes."""
    k = pvalues.shape[-1]
    order = np.argsort(pvalues, axis=-1)
    sorted_p = np.take_along_axis(pvalues, order, axis=-1)
    passes = sorted_p <= alpha / (k - np.arange(k))
    n_reject = np.where(passes.all(axis=-1), k, np.argmin(passes, axis=-1))
    rejected_sorted = np.arange(k) < n_reject[..., None]
    out = np.zeros_like(rejected_sorted)
    np.put_along_axis(out, order, rejected_sorted, axis=-1)
    return out


def holm_ever_wrong(x, look_times, false_pair, alpha):
    """(McNemar, z) ever wrong over the looks, for one replicate."""
    m = x.shape[1]
    j, l = np.nonzero(~np.eye(m, dtype=bool))
    d = x[:, j] - x[:, l]  # items x ordered pairs
    plus = np.cumsum(d > 0, axis=0)[look_times - 1]
    minus = np.cumsum(d < 0, axis=0)[look_times - 1]
    s1 = np.cumsum(d, axis=0)[look_times - 1]
    s2 = np.cumsum(d * d, axis=0)[look_times - 1]
    n = look_times[:, None].astype(float)
    # exact McNemar (sign test): P(Bin(plus + minus, 1/2) >= plus)
    p_sign = stats.binom.sf(plus - 1, plus + minus, 0.5)
    p_sign[(plus + minus) == 0] = 1.0
    mean = s1 / n
    var = np.maximum(s2 / n - mean**2, 0.0) * n / np.maximum(n - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = mean / np.sqrt(var / n)
    p_z = np.where(var > 0, stats.norm.sf(z), np.where(mean > 0, 0.0, 1.0))
    wrong = false_pair[j, l]
    return (
        bool((holm_reject(p_sign, alpha) & wrong).any()),
        bool((holm_reject(p_z, alpha) & wrong).any()),
    )


def ours_ever_wrong(x, look_times, false_pair, true_levels, alpha):
    """Ever wrong for exact / shortcut / e-Bonferroni on one wealth path (model S, mixture)."""
    m = x.shape[1]
    wealth = PairWealth(m, sampling="iid", bet="mixture")
    certifiers = {
        name: make_certifier(name, m, alpha) for name in ("exact", "shortcut", "bonferroni")
    }
    table = certifiers["exact"].table
    truth = int(np.flatnonzero((table.levels == true_levels).all(axis=1))[0])
    dominance = {name: np.zeros((m, m), dtype=bool) for name in certifiers}
    wrong = dict.fromkeys(certifiers, False)
    order_lost = False
    start = 0
    for t in look_times:
        wealth.update(x[start:t])
        start = t
        lw = wealth.log_wealth()
        for name, certifier in certifiers.items():
            if wrong[name]:
                continue
            certified = certifier.look(lw, known=dominance[name])
            union = dominance[name] | certified
            if (union & false_pair).any():
                wrong[name] = True
                continue
            dominance[name] = transitive_closure(union)
        if not order_lost:
            order_lost = truth not in set(certifiers["exact"].alive.tolist())
    return wrong, order_lost


def true_levels_of(ability):
    values = np.unique(ability)[::-1]
    return np.searchsorted(-values, -np.asarray(ability))


def run_row(scenario, looks, reps, seed, n=2000, alpha=0.05):
    ability = np.asarray(SCENARIOS[scenario])
    false_pair = ability[:, None] <= ability[None, :]
    np.fill_diagonal(false_pair, False)
    levels = true_levels_of(ability)
    look_times = np.linspace(n / looks, n, looks).round().astype(int)
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys([*METHODS, "exact_order_lost"], 0)
    for _ in range(reps):
        x = simulate(ability, n, rng)
        mcnemar, z = holm_ever_wrong(x, look_times, false_pair, alpha)
        ours, lost = ours_ever_wrong(x, look_times, false_pair, levels, alpha)
        counts["holm_mcnemar"] += mcnemar
        counts["holm_z"] += z
        for name, value in ours.items():
            counts[name] += value
        counts["exact_order_lost"] += lost
    return {name: c / reps for name, c in counts.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20260102)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates per row (CI smoke run)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.reps = QUICK_REPS
    results = {}
    print(f"{args.reps} replicates per row; targets from {TARGET_REPS} replicates; "
          "z = (ours - target) / SE of the difference (pooled two-proportion)")  # fmt: skip
    for row, (scenario, looks) in enumerate(ROWS):
        start = time.perf_counter()
        rates = run_row(scenario, looks, args.reps, args.seed + row)
        results[f"{scenario}, {looks}"] = rates
        print(f"\n{scenario}, {looks} looks ({time.perf_counter() - start:.0f} s)")
        for method in METHODS:
            p, q = rates[method], TARGETS[scenario, looks][method]
            pooled = (p * args.reps + q * TARGET_REPS) / (args.reps + TARGET_REPS)
            se = np.sqrt(pooled * (1 - pooled) * (1 / args.reps + 1 / TARGET_REPS))
            print(f"  {method:13s} {p:.4f}  target {q:.4f}  SE {se:.4f}  z {(p - q) / se:+.2f}")
        print(f"  exact, true order eliminated (rank sets wrong): {rates['exact_order_lost']:.4f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"reps": args.reps, "seed": args.seed, "results": results}, handle, indent=1)


if __name__ == "__main__":
    main()
