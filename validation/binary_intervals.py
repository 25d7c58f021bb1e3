"""Binary score intervals at the boundary (issue 25, item 5): exact coverage, no Monte Carlo.

A model scores k of n 0/1 items, k ~ Binomial(n, p). For an interval rule [L_k, U_k] the
coverage at p is exactly ``C(p) = sum_k P(Bin(n, p) = k) 1[L_k <= p <= U_k]``, so it is computed,
not simulated, for every n = 10 ... 100 and every p on a grid of [0, 1] that includes 0 and 1 and
is refined near both ends (4,001 equally spaced points plus 400 geometric points in
[1e-6, 0.05] and their mirror images). Rules, at alpha = 0.05:

* ``normal``: what ``rankci.score_intervals(method="normal")`` gives for 0/1 scores,
  ``p_hat -+ z sqrt(p_hat (1 - p_hat) / (n - 1))`` with z = Phi^-1(0.975) (ddof = 1 in the
  standard error, the normal quantile, no clipping); the script checks this against
  ``score_intervals`` for every k at two n before using it;
* ``bootstrap``: the percentile bootstrap with infinitely many resamples. The bootstrap law of
  the mean of n resampled 0/1 scores is exactly Binomial(n, k/n)/n, and numpy's
  linear-interpolation quantile of B draws converges, as B grows, to the left-continuous
  quantile ``F^-1(q) = min{x: F(x) >= q}`` of that law (the law has no atom whose cdf is
  exactly q = 0.025 or 0.975 here), so the bounds are ``binom.ppf(0.025, n, k/n)/n`` and
  ``binom.ppf(0.975, n, k/n)/n``; checked against ``score_intervals(method="bootstrap",
  reps=200000)`` at n = 25;
* ``wilson`` and ``clopper-pearson``: :mod:`rankci.analyses.binomial`.

Reported per rule and n: the minimum coverage over the grid (and where), the mean coverage over
the equally spaced points (p uniform on [0, 1]), the mean width over the same points (the
expected width ``sum_k pmf U_k - L_k``, with each interval clipped to [0, 1]), and the counts k
that give a zero-width interval; the mean coverage and the share of p with coverage below 0.95
use the equally spaced points only.

Run:  python validation/binary_intervals.py          (every n = 10..100; about a minute)
      python validation/binary_intervals.py --quick  (n = 10, 25, 100, a coarser grid; results
      to a temporary folder, never over validation/results/binary_intervals.json)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from scipy import special, stats

import rankci
from rankci.analyses.binomial import clopper_pearson_interval, wilson_interval

RESULTS = Path(__file__).resolve().parent / "results" / "binary_intervals.json"
ALPHA = 0.05
METHODS = ("normal", "bootstrap", "wilson", "clopper-pearson")
SHOWN = (10, 15, 20, 25, 30, 40, 50, 60, 75, 100)


def normal_bounds(n: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n + 1)
    p_hat = k / n
    z = special.ndtri(1.0 - ALPHA / 2.0)
    se = np.sqrt(p_hat * (1.0 - p_hat) / (n - 1.0))
    return p_hat - z * se, p_hat + z * se


def bootstrap_bounds(n: int) -> tuple[np.ndarray, np.ndarray]:
    p_hat = np.arange(n + 1) / n
    lower = stats.binom.ppf(ALPHA / 2.0, n, p_hat) / n
    upper = stats.binom.ppf(1.0 - ALPHA / 2.0, n, p_hat) / n
    return lower, upper


def bounds(method: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n + 1)
    if method == "normal":
        return normal_bounds(n)
    if method == "bootstrap":
        return bootstrap_bounds(n)
    if method == "wilson":
        return wilson_interval(k, n, ALPHA)
    return clopper_pearson_interval(k, n, ALPHA)


def every_count(n: int) -> rankci.Scores:
    """n items x (n + 1) models; model ``m{k}`` has exactly k correct items."""
    x = (np.arange(n)[:, None] < np.arange(n + 1)[None, :]).astype(float)
    return rankci.Scores.from_matrix(x, models=[f"m{k}" for k in range(n + 1)])


def rankci_bounds(n: int, method: str, **options) -> tuple[np.ndarray, np.ndarray]:
    frame = rankci.score_intervals(every_count(n), method, verdict=False, **options).to_frame()
    frame = frame.set_index("model").loc[[f"m{k}" for k in range(n + 1)]]
    return frame["lower"].to_numpy(), frame["upper"].to_numpy()


def check_against_rankci(quick: bool) -> list[str]:
    """The normal rule is rankci's normal method exactly; the bootstrap limit is what rankci's
    percentile bootstrap gives with many resamples."""
    notes = []
    for n in (10, 37):
        ours, theirs = normal_bounds(n), rankci_bounds(n, "normal")
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    notes.append("normal: identical to rankci.score_intervals(method='normal') for every k at "
                 "n = 10 and 37 (|difference| <= 1e-12)")  # fmt: skip
    n, reps = 25, 20_000 if quick else 200_000
    ours, theirs = bootstrap_bounds(n), rankci_bounds(n, "bootstrap", reps=reps, rng=1)
    same = int(sum(np.isclose(a, b, atol=1e-12).sum() for a, b in zip(ours, theirs)))
    notes.append(
        f"bootstrap: rankci.score_intervals(method='bootstrap', reps={reps}) at n = {n} "
        f"equals the infinite-resample bounds in {same} of {2 * (n + 1)} bounds"
    )
    return notes


def grid(quick: bool) -> tuple[np.ndarray, np.ndarray]:
    """(all grid points, the equally spaced ones)."""
    even = np.linspace(0.0, 1.0, 401 if quick else 4001)
    near = np.geomspace(1e-6, 0.05, 40 if quick else 400)
    return np.unique(np.concatenate([even, near, 1.0 - near])), even


def coverage(lower, upper, n: int, p: np.ndarray) -> np.ndarray:
    pmf = stats.binom.pmf(np.arange(n + 1)[None, :], n, p[:, None])  # points x counts
    inside = (lower[None, :] <= p[:, None]) & (p[:, None] <= upper[None, :])
    return (pmf * inside).sum(axis=1)


def study(n: int, method: str, p: np.ndarray, even: np.ndarray) -> dict:
    lower, upper = bounds(method, n)
    cover = coverage(lower, upper, n, p)
    worst = int(np.argmin(cover))
    width = np.clip(upper, 0, 1) - np.clip(lower, 0, 1)
    pmf = stats.binom.pmf(np.arange(n + 1)[None, :], n, even[:, None])
    inner = (p >= 0.05) & (p <= 0.95)
    on_even = coverage(lower, upper, n, even)
    return {
        "n": n,
        "method": method,
        "min_coverage": float(cover[worst]),
        "p_at_min": float(p[worst]),
        "min_coverage_05_95": float(cover[inner].min()),
        "mean_coverage": float(on_even.mean()),
        "mean_width": float((pmf @ width).mean()),
        "share_below_095": float((on_even < 0.95 - 1e-12).mean()),
        "zero_width_k": [int(k) for k in np.flatnonzero(width <= 1e-12)],
    }


def table(rows: list[dict], sizes) -> str:
    lines = [
        "| n | " + " | ".join(f"{m}: min cov (p) / mean cov / mean width" for m in METHODS) + " |",
        "|---:|" + "---|" * len(METHODS),
    ]
    keyed = {(r["n"], r["method"]): r for r in rows}
    for n in sizes:
        cells = []
        for m in METHODS:
            r = keyed[n, m]
            cells.append(f"{r['min_coverage']:.3f} ({r['p_at_min']:.3g}) / "
                         f"{r['mean_coverage']:.3f} / {r['mean_width']:.3f}")  # fmt: skip
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    lines = [
        "| method | min coverage, all n and p | min on p in [0.05, 0.95] | mean coverage "
        "(range over n) | share of p below 0.95 (mean over n) | zero-width intervals |",
        "|---|---:|---:|---|---:|---|",
    ]
    for m in METHODS:
        mine = [r for r in rows if r["method"] == m]
        worst = min(mine, key=lambda r: r["min_coverage"])
        means = [r["mean_coverage"] for r in mine]
        zero = sorted({tuple(r["zero_width_k"]) == (0, r["n"]) for r in mine})
        zero_text = (
            "never"
            if not any(r["zero_width_k"] for r in mine)
            else "k = 0 and k = n (every n)"
            if zero == [True]
            else "; ".join(sorted({str(r["zero_width_k"]) for r in mine if r["zero_width_k"]}))
        )
        lines.append(
            f"| {m} | {worst['min_coverage']:.4f} (n = {worst['n']}, p = {worst['p_at_min']:.3g}) "
            f"| {min(r['min_coverage_05_95'] for r in mine):.4f} | "
            f"{min(means):.4f}–{max(means):.4f} | "
            f"{np.mean([r['share_below_095'] for r in mine]):.3f} | {zero_text} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", help=f"JSON of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument("--quick", action="store_true", help="n = 10, 25, 100, coarse grid")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    notes = check_against_rankci(args.quick)
    sizes = (10, 25, 100) if args.quick else tuple(range(10, 101))
    p, even = grid(args.quick)
    rows = [study(n, m, p, even) for n in sizes for m in METHODS]
    elapsed = time.perf_counter() - start
    print(f"Exact coverage of 95 % intervals for a proportion, n = {sizes[0]}..{sizes[-1]}, "
          f"{p.size} values of p ({elapsed:.0f} s)\n")  # fmt: skip
    for note in notes:
        print("* " + note)
    print()
    print(table(rows, [n for n in SHOWN if n in sizes]))
    print()
    print(summary(rows))
    record = {
        "alpha": ALPHA,
        "grid_points": int(p.size),
        "seconds": round(elapsed),
        "checks": notes,
        "rows": rows,
    }
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
