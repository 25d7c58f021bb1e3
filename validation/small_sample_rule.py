"""A small-sample rule that keeps its power (issue 25, item 3): level and power at n = 5-50 units.

For every n in 5, 8, 10, 15, 20, 25, 30, 31, 35, 40, 50 units, the one-sided paired tests of
``H_jl: theta_j <= theta_l``:

* ``t``: the plain paired t (``rankci.pairwise_tests(units, "t", exact_bound_n=0)``);
* ``t + floor``: today's default, ``p = max(p_t, p_Hoeffding)`` for <= 30 units
  (``exact_bound_n=30``);
* ``mcnemar``: the exact McNemar test on discordant units
  (``rankci.evidence.exact_small.mcnemar_tests``; 0/1 units only), and its mid-p variant
  (``mid-p``; shown to measure by how much it is *not* valid);
* ``sign-flip``: the sign-flip randomisation test of the mean difference
  (``rankci.evidence.exact_small.signflip_pvalue``): all 2^n sign vectors for n <= 16, else
  4,999 random ones, ``(1 + #)/(B + 1)``; one draw of sign vectors serves a batch of
  replicates (each test is valid; the rates' SE ignores this slight dependence);
* ``wilcoxon``: rankci's signed-rank test (zeros dropped, normal approximation with ties).
  It tests the pseudo-median, not the mean: shown for comparison;
* ``auto``: the rule this study chose, rankci's default since (``rankci.pairwise_tests(units)``,
  ``test="auto"``): the exact McNemar test on pairs of 0/1 units, the plain t elsewhere. It
  must equal ``mcnemar`` on the 0/1 designs and ``t`` on the others (the study checks it).

Designs (each replicate draws n units; the truth is known exactly):

1. **Simulated 0/1 items**, Gaussian copula as in ``tiny_designs.py`` (``z = sqrt(rho) w_i +
   sqrt(1 - rho) e_ij``, ``x = 1[Phi(z) < theta_j]``; rho = 0.5 is a shared item difficulty):
   ties of M = 3 models (theta = 0.5 with rho = 0 and 0.5, theta = 0.8 with rho = 0.5), and
   pairs with gaps 0.05, 0.10, 0.15, 0.20 around 0.5 (rho = 0.5).
2. **The tiny-design study's worst tied designs** (``tiny_designs.py``, plain t down to 0.863):
   binary theta = 0.5, rho = 0, M = 8; beta with kappa 0.5-20 (tied means, different shapes),
   theta = 0.3, M = 3 with rho = 0 and 0.5, and M = 8 with rho = 0.
3. **Real data subsampled**, MMLU-Pro (32 models, 10,298 items, 14 categories) and ChemBench (35
   systems, 2,788 items, 9 topics), two unit types: *items* (0/1; n items drawn i.i.d. from the
   pool) and *ten-item cluster means* (each unit: a category drawn with probability
   proportional to its size, then 10 of its items with replacement; the unit's mean has
   expectation the pool mean). Truth: the pool means. Ties: the 3 models whose pool means are
   closest (a range of 0.001-0.003); power: for each target gap, the pair of models whose pool
   gap is closest to it.

Reported per design, n and test, each with its Monte-Carlo SE: on ties, the type-I error of a
one-sided test at alpha = 0.05 and at alpha/(M(M-1)) (Holm's first threshold; 0.05/6 for M = 3),
averaged over the false ordered pairs (pairs with theta_j <= theta_l; SE from the replicates),
and the family-wise error of Holm at 0.05 over the M(M-1) ordered pairs (on an exact tie: one
minus the tiny-design study's simultaneous coverage); on gaps, the power at 0.05 and at 0.05/6.

Run:  OMP_NUM_THREADS=1 nice -n 19 python validation/small_sample_rule.py  (2,000 replicates per
      tie, 1,000 per gap; results to validation/results/small_sample_rule.json)
      python validation/small_sample_rule.py --quick   (few replicates and sizes; results to a
      temporary folder, never over the recorded file)
"""

from __future__ import annotations

import argparse
import time
import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from tiny_designs import draw as copula_draw  # validation/tiny_designs.py

import rankci
from rankci.certify.holm import adjust_pvalues
from rankci.evidence.exact_small import mcnemar_tests, signflip_pvalue

RESULTS = Path(__file__).resolve().parent / "results" / "small_sample_rule.json"
ALPHA = 0.05
SIZES = (5, 8, 10, 15, 20, 25, 30, 31, 35, 40, 50)
QUICK_SIZES = (5, 20, 31)
GAPS = (0.05, 0.10, 0.15, 0.20)
TIE_REPS, GAP_REPS = 2000, 1000
QUICK_REPS = 40
BATCH_COLUMNS = 150  # replicates x models per call of pairwise_tests
SIGNFLIP_REPS = 4999
BINARY_TESTS = ("t", "t + floor", "mcnemar", "mid-p", "sign-flip", "wilcoxon", "auto")
MEAN_TESTS = ("t", "t + floor", "sign-flip", "wilcoxon", "auto")


# ---------------------------------------------------------------------- designs
class Simulated:
    def __init__(self, name, law, theta, rho):
        self.name, self.law, self.theta, self.rho = name, law, np.asarray(theta, float), rho
        self.binary = law == "binary"

    def draw(self, rng, reps, n):
        return np.stack([copula_draw(rng, self.law, self.theta, n, self.rho) for _ in range(reps)])


class Pool:
    """Units drawn from a real item pool: single items, or ten-item means within a category."""

    def __init__(self, name, items, cluster, columns, cluster_size):
        self.name = name
        self.items = items[:, columns]
        self.theta = self.items.mean(axis=0)
        self.cluster_size = cluster_size
        self.binary = cluster_size == 1
        codes, self.members_start, sizes = np.unique(
            np.sort(cluster), return_index=True, return_counts=True
        )
        self.order = np.argsort(cluster, kind="stable")
        self.sizes = sizes
        self.weights = sizes / sizes.sum()

    def draw(self, rng, reps, n):
        if self.cluster_size == 1:
            rows = rng.integers(0, self.items.shape[0], size=(reps, n))
            return self.items[rows]
        group = rng.choice(self.sizes.size, size=(reps, n), p=self.weights)
        offset = (rng.random((reps, n, self.cluster_size)) * self.sizes[group][..., None]).astype(
            np.int64
        )
        rows = self.order[self.members_start[group][..., None] + offset]
        return self.items[rows].mean(axis=2)


def real_pools():
    out = {}
    for label, loader in (("MMLU-Pro", rankci.datasets.load_mmlu_pro),
                          ("ChemBench", rankci.datasets.load_chembench)):  # fmt: skip
        scores = loader()
        units = scores.units("item")
        position = {item: i for i, item in enumerate(scores.items)}
        cluster = np.asarray(scores.item_cluster)[[position[i] for i in units.labels]]
        out[label] = (units.values, cluster)
    return out


def closest_triple(theta: np.ndarray) -> list[int]:
    order = np.argsort(theta)
    ranges = theta[order[2:]] - theta[order[:-2]]
    start = int(np.argmin(ranges))
    return [int(j) for j in order[start : start + 3]]


def closest_pair(theta: np.ndarray, gap: float) -> list[int]:
    best, pair = np.inf, (0, 1)
    for j, l in combinations(range(theta.size), 2):
        diff = abs(abs(theta[j] - theta[l]) - gap)
        if diff < best:
            best, pair = diff, (j, l)
    j, l = pair
    return [j, l] if theta[j] > theta[l] else [l, j]


def designs(quick: bool) -> list[tuple[str, str, object]]:
    """(family, kind, design) with kind 'tie' or 'gap'."""
    out = [
        ("simulated 0/1 items", "tie", Simulated("tie theta 0.5, rho 0", "binary", [0.5] * 3, 0.0)),
        ("simulated 0/1 items", "tie",
         Simulated("tie theta 0.5, rho 0.5", "binary", [0.5] * 3, 0.5)),
        ("simulated 0/1 items", "tie",
         Simulated("tie theta 0.8, rho 0.5", "binary", [0.8] * 3, 0.5)),
    ]  # fmt: skip
    for gap in GAPS:
        theta = [0.5 + gap / 2, 0.5 - gap / 2]
        pair = Simulated(f"gap {gap:.2f}", "binary", theta, 0.5)
        out.append(("simulated 0/1 items", "gap", pair))
    tiny = [
        Simulated("binary tie, M 8, rho 0", "binary", [0.5] * 8, 0.0),
        Simulated("beta 0.5-20 tie, M 3, rho 0", "beta, kappa 0.5-20", [0.3] * 3, 0.0),
        Simulated("beta 0.5-20 tie, M 3, rho 0.5", "beta, kappa 0.5-20", [0.3] * 3, 0.5),
        Simulated("beta 0.5-20 tie, M 8, rho 0", "beta, kappa 0.5-20", [0.3] * 8, 0.0),
    ]
    out += [("tiny-design worst ties", "tie", d) for d in (tiny[:2] if quick else tiny)]
    pools = real_pools()
    for label in (("ChemBench",) if quick else ("MMLU-Pro", "ChemBench")):
        items, cluster = pools[label]
        theta = items.mean(axis=0)
        for size, unit in ((1, "items"), (10, "ten-item cluster means")):
            family = f"{label} {unit}"
            triple = closest_triple(theta)
            out.append((family, "tie", Pool("closest 3 models", items, cluster, triple, size)))
            for gap in GAPS:
                pair = closest_pair(theta, gap)
                out.append((family, "gap", Pool(f"gap {gap:.2f}", items, cluster, pair, size)))
    return out


# ---------------------------------------------------------------------- tests
def _blocks(full: np.ndarray, reps: int, m: int) -> np.ndarray:
    """The replicates' own M x M blocks of a (reps M) x (reps M) matrix."""
    r = np.arange(reps)
    return full.reshape(reps, m, reps, m)[r, :, r, :]


def pvalues(x: np.ndarray, binary: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """reps x n x M scores -> {test: reps x M x M one-sided p-values}."""
    reps, n, m = x.shape
    out = {name: np.empty((reps, m, m)) for name in (BINARY_TESTS if binary else MEAN_TESTS)}
    per_call = max(1, BATCH_COLUMNS // m)
    rows, cols = np.triu_indices(m, k=1)
    for start in range(0, reps, per_call):
        block = x[start : start + per_call]
        b = block.shape[0]
        wide = block.transpose(1, 0, 2).reshape(n, b * m)  # column r*m + j
        units = rankci.Scores.from_matrix(wide).units()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rankci.RankciWarning)
            calls = {
                "t": ("t", {"exact_bound_n": 0}),
                "t + floor": ("t", {"exact_bound_n": 30}),
                "wilcoxon": ("wilcoxon", {}),
                "auto": ("auto", {}),
            }
            for name, (test, options) in calls.items():
                full = rankci.pairwise_tests(units, test, **options).pvalue
                out[name][start : start + b] = _blocks(full, b, m)
        if binary:
            out["mcnemar"][start : start + b] = _blocks(mcnemar_tests(wide), b, m)
            out["mid-p"][start : start + b] = _blocks(mcnemar_tests(wide, mid=True), b, m)
        d = (block[:, :, rows] - block[:, :, cols]).transpose(1, 0, 2).reshape(n, b * rows.size)
        upper, lower = signflip_pvalue(d, reps=SIGNFLIP_REPS, rng=rng, lower=True)
        flip = np.full((b, m, m), np.nan)
        flip[:, rows, cols] = upper.reshape(b, rows.size)
        flip[:, cols, rows] = lower.reshape(b, rows.size)
        out["sign-flip"][start : start + b] = flip
    same = out["mcnemar"] if binary else out["t"]  # auto is McNemar on 0/1 units, else the t
    if not np.allclose(out["auto"], same, equal_nan=True, rtol=1e-12, atol=1e-15):
        raise AssertionError("test='auto' is not the exact McNemar test on 0/1 units / the t")
    return out


def holm_errors(p: np.ndarray, false: np.ndarray) -> np.ndarray:
    """Per replicate: did Holm at ALPHA over the M(M-1) ordered pairs reject a false pair?"""
    reps, m, _ = p.shape
    off = ~np.eye(m, dtype=bool)
    errors = np.empty(reps, dtype=bool)
    for r in range(reps):
        adjusted = np.full((m, m), np.nan)
        adjusted[off] = adjust_pvalues(p[r][off], "holm")
        errors[r] = bool(np.any((adjusted <= ALPHA) & false))
    return errors


def rate(values: np.ndarray) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return float(values.mean()), float(se)


def run_cell(family, kind, design, n, reps, seed) -> list[dict]:
    rng = np.random.default_rng(seed)
    x = design.draw(rng, reps, n)
    theta = design.theta
    m = theta.size
    results = pvalues(x, design.binary, rng)
    false = theta[:, None] <= theta[None, :] + 1e-12  # H_jl true: theta_j <= theta_l
    np.fill_diagonal(false, False)
    first = ALPHA / (m * (m - 1))
    rows = []
    for test, p in results.items():
        base = {
            "family": family, "design": design.name, "kind": kind, "n": n, "test": test, "M": m,
            "reps": reps, "seed": seed, "theta": np.round(theta, 4).tolist(),
        }  # fmt: skip
        if kind == "tie":
            at_alpha = rate(((p <= ALPHA) & false).sum(axis=(1, 2)) / false.sum())
            at_first = rate(((p <= first) & false).sum(axis=(1, 2)) / false.sum())
            fwer = rate(holm_errors(p, false))
            base.update(level=at_alpha[0], level_se=at_alpha[1], level_first=at_first[0],
                        level_first_se=at_first[1], first_threshold=first, fwer=fwer[0],
                        fwer_se=fwer[1])  # fmt: skip
        else:
            power = rate(p[:, 0, 1] <= ALPHA)
            power_first = rate(p[:, 0, 1] <= ALPHA / 6)
            base.update(gap=float(theta[0] - theta[1]), power=power[0], power_se=power[1],
                        power_first=power_first[0], power_first_se=power_first[1])  # fmt: skip
        rows.append(base)
    return rows


# ---------------------------------------------------------------------- tables
def _cell(value, se, flag=False):
    text = f"{value:.3f} ± {se:.3f}"
    return f"**{text}**" if flag else text


def level_table(rows, key, limit_key, sizes) -> str:
    lines = ["| family | design | test | " + " | ".join(f"n = {n}" for n in sizes) + " |",
             "|---|---|---|" + "---|" * len(sizes)]  # fmt: skip
    keyed = {(r["family"], r["design"], r["test"], r["n"]): r for r in rows if r["kind"] == "tie"}
    seen = dict.fromkeys((r["family"], r["design"], r["test"]) for r in rows if r["kind"] == "tie")
    for family, design, test in seen:
        cells = []
        for n in sizes:
            r = keyed[family, design, test, n]
            limit = ALPHA if limit_key == "alpha" else r["first_threshold"]
            over = r[key] > limit + 2 * r[f"{key}_se"]
            cells.append(_cell(r[key], r[f"{key}_se"], over))
        lines.append(f"| {family} | {design} | {test} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def power_table(rows, key, sizes) -> str:
    lines = ["| family | design (true gap) | test | " + " | ".join(f"n = {n}" for n in sizes)
             + " |", "|---|---|---|" + "---|" * len(sizes)]  # fmt: skip
    keyed = {(r["family"], r["design"], r["test"], r["n"]): r for r in rows if r["kind"] == "gap"}
    seen = dict.fromkeys((r["family"], r["design"], r["test"]) for r in rows if r["kind"] == "gap")
    for family, design, test in seen:
        gap = keyed[family, design, test, sizes[0]]["gap"]
        cells = [_cell(keyed[family, design, test, n][key], keyed[family, design, test, n]
                       [f"{key}_se"]) for n in sizes]  # fmt: skip
        lines.append(f"| {family} | {design} ({gap:.3f}) | {test} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows, sizes) -> str:
    """Per family type and test: the worst level (over designs and n) and the mean power."""
    lines = ["| units | test | max level at 0.05 | max level at alpha/(M(M-1)) (ratio) | "
             "max Holm FWER | mean power at 0.05/6, n <= 30 | n = 31-50 |",
             "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    groups = {"0/1 items": lambda r: "items" in r["family"] or r["family"].startswith("simulated")
              or (r["family"].startswith("tiny") and "binary" in r["design"]),
              "unit means": lambda r: "means" in r["family"] or "beta" in r["design"]}  # fmt: skip
    for label, member in groups.items():
        mine = [r for r in rows if member(r)]
        for test in dict.fromkeys(r["test"] for r in mine):
            ties = [r for r in mine if r["kind"] == "tie" and r["test"] == test]
            gaps = [r for r in mine if r["kind"] == "gap" and r["test"] == test]
            if not ties:
                continue
            worst = max(ties, key=lambda r: r["level"])
            worst_first = max(ties, key=lambda r: r["level_first"] / r["first_threshold"])
            worst_fwer = max(ties, key=lambda r: r["fwer"])
            small = [r["power_first"] for r in gaps if r["n"] <= 30]
            large = [r["power_first"] for r in gaps if r["n"] > 30]
            lines.append(
                f"| {label} | {test} | {worst['level']:.3f} ± {worst['level_se']:.3f} "
                f"({worst['design']}, n = {worst['n']}) | {worst_first['level_first']:.4f} ± "
                f"{worst_first['level_first_se']:.4f} "
                f"({worst_first['level_first'] / worst_first['first_threshold']:.2f}; "
                f"{worst_first['design']}, n = {worst_first['n']}) | "
                f"{worst_fwer['fwer']:.3f} ± {worst_fwer['fwer_se']:.3f} "
                f"({worst_fwer['design']}, n = {worst_fwer['n']}) | "
                f"{np.mean(small) if small else float('nan'):.3f} | "
                f"{np.mean(large) if large else float('nan'):.3f} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261225)
    parser.add_argument(
        "--out", help=f"JSON of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument(
        "--quick", action="store_true",
        help=f"{QUICK_REPS} replicates, n in {QUICK_SIZES} (CI smoke run)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    start = time.perf_counter()
    rows = []
    cells = [(f, k, d, n) for f, k, d in designs(args.quick) for n in sizes]
    for index, (family, kind, design, n) in enumerate(cells):
        reps = QUICK_REPS if args.quick else (TIE_REPS if kind == "tie" else GAP_REPS)
        rows += run_cell(family, kind, design, n, reps, args.seed + index)
    elapsed = time.perf_counter() - start
    print(f"Small-sample rule: {len(cells)} design x n cells, alpha = {ALPHA} ({elapsed:.0f} s)\n")
    print("Summary (levels: worst over the tied designs and n; power: mean over the gap designs)\n")
    print(summary(rows, sizes))
    print("\nType-I error per false ordered pair at alpha = 0.05 (bold: above 0.05 + 2 SE)\n")
    print(level_table(rows, "level", "alpha", sizes))
    print("\nType-I error per false ordered pair at alpha/(M(M-1)) (bold: above it + 2 SE)\n")
    print(level_table(rows, "level_first", "first", sizes))
    print("\nHolm family-wise error at 0.05 over the M(M-1) ordered pairs (bold: above 0.05 + 2 SE)"
          "\n")  # fmt: skip
    print(level_table(rows, "fwer", "alpha", sizes))
    print("\nPower at 0.05/6 (Holm's first threshold for M = 3)\n")
    print(power_table(rows, "power_first", sizes))
    print("\nPower at 0.05\n")
    print(power_table(rows, "power", sizes))
    record = {"alpha": ALPHA, "seed": args.seed, "sizes": list(sizes), "seconds": round(elapsed),
              "signflip_reps": SIGNFLIP_REPS, "rows": rows}  # fmt: skip
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
