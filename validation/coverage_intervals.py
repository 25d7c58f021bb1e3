"""Coverage of rankci's score intervals, and the overlap flag against the paired verdict.

Data: binary scores from the logistic random-effects model of the oracle datasets,
``P(x_ij = 1) = expit(beta_j + u_c(i) + w_i)``, ``u_c ~ N(0, sigma_c^2)`` shared by the items of
cluster c, ``w_i ~ N(0, sigma_i^2)``. The estimand is each model's population pass rate
``theta_j = E expit(beta_j + u + w)`` (Gauss-Hermite quadrature), the mean score over the population
of items (and clusters) the benchmark is drawn from.

Studies (each cell: R replicates x 3 models; Monte-Carlo SE of a coverage near 95 % with
R = 3000 is about 0.4 percentage points per model, less for the mean of the three):

1. independent items (sigma_c = 0), n = 400 (the source's run size) and n = 100:
   normal, bootstrap percentile (1,000 resamples), BCa;
2. clustered items, G = 30, 60, 120 clusters of 20 items, and G = 30, 60 with unequal
   (log-normal) sizes: the naive intervals (normal, bootstrap) side by side with the clustered
   ones (cluster HC0 z, cluster with the small-sample correction, cluster bootstrap);
3. the overlap flag against the paired verdict: 5 models on 400 independent items; the share of
   truly ordered pairs each rule separates, and how often either makes a false statement;
4. the paired verdict when the models' differences are clustered (a model x cluster effect,
   sd 0.3, 40 clusters of 20 items, 5 equally good models): how often the item-level paired t and
   the clustered verdicts (z, G/(G-1) + t, CR2) certify any (false) ordering.

Run: ``OMP_NUM_THREADS=1 python validation/coverage_intervals.py [--replicates R]``; ``--quick``
runs every study with 10 replicates per cell (the CI smoke run, seconds).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

from rankci.analyses.intervals import interval_arrays
from rankci.analyses.verdicts import paired_verdict
from rankci.certify.holm import reject
from rankci.data import UnitScores
from rankci.evidence.pairwise import pairwise_tests


def true_rates(beta: np.ndarray, sigma_c: float, sigma_i: float) -> np.ndarray:
    nodes, weights = np.polynomial.hermite_e.hermegauss(100)
    scale = np.sqrt(sigma_c**2 + sigma_i**2)
    values = special.expit(beta[:, None] + scale * nodes[None, :])
    return (values * weights).sum(axis=1) / weights.sum()


def simulate(rng, beta, n_clusters, size, sigma_c, sigma_i, unequal=False, sigma_mc=0.0):
    if unequal:
        raw = np.exp(0.8 * rng.standard_normal(n_clusters))
        sizes = np.maximum(3, np.round(size * raw / raw.mean())).astype(int)
    else:
        sizes = np.full(n_clusters, size)
    cluster = np.repeat(np.arange(n_clusters), sizes)
    eta = (sigma_c * rng.standard_normal(n_clusters))[cluster]
    eta = eta + sigma_i * rng.standard_normal(cluster.size)
    logit = eta[:, None] + beta[None, :]
    if sigma_mc:
        logit = logit + (sigma_mc * rng.standard_normal((n_clusters, beta.size)))[cluster]
    p = special.expit(logit)
    return (rng.random(p.shape) < p).astype(float), cluster


def coverage(rng, replicates, beta, methods, **design):
    theta = true_rates(beta, design["sigma_c"], design["sigma_i"])
    hits = {name: np.zeros(len(beta)) for name, _, _ in methods}
    widths = {name: 0.0 for name, _, _ in methods}
    for _ in range(replicates):
        x, cluster = simulate(rng, beta, **design)
        for name, method, small in methods:
            out = interval_arrays(
                x, method, 0.05, reps=1000, generator=rng, cluster=cluster, small_sample=small
            )
            hits[name] += (out["lower"] <= theta) & (theta <= out["upper"])
            widths[name] += np.mean(out["upper"] - out["lower"])
    return {name: (hits[name] / replicates, widths[name] / replicates) for name in hits}


ITEM_METHODS = [
    ("normal", "normal", False),
    ("bootstrap", "bootstrap", False),
    ("bca", "bca", False),
]
CLUSTER_METHODS = [
    ("naive normal", "normal", False),
    ("naive bootstrap", "bootstrap", False),
    ("cluster (HC0, z)", "cluster", False),
    ("cluster, G/(G-1) + t(G-1)", "cluster", "cadjust"),
    ("cluster, CR2 + Satterthwaite df", "cluster", "cr2"),
    ("cluster bootstrap", "cluster-bootstrap", False),
]


def verdicts(rng, replicates, n_items=400):
    """Overlap of 95 % intervals vs paired t + Holm: power on ordered pairs, false statements."""
    beta = np.array([0.0, 0.1, 0.2, 0.3, 0.6])
    null = np.zeros(5)
    out = {}
    for label, effects in (("ordered", beta), ("all equal", null)):
        theta = true_rates(effects, 0.0, 1.2)
        truth = theta[:, None] > theta[None, :] + 1e-12
        sep_overlap = sep_paired = 0.0
        false_overlap = false_paired = 0
        for _ in range(replicates):
            x, _ = simulate(rng, effects, n_items, 1, 0.0, 1.2)
            out_ = interval_arrays(x, "normal", 0.05)
            lo, hi = out_["lower"], out_["upper"]
            overlap_sep = lo[:, None] > hi[None, :]
            units = UnitScores(
                values=x,
                models=tuple("abcde"),
                labels=tuple(map(str, range(n_items))),
                unit="item",
                missing="complete",
                excluded={},
                binary=True,
            )
            paired_sep = reject(pairwise_tests(units, "t").pvalue, 0.05, "holm")
            if truth.any():
                sep_overlap += (overlap_sep & truth).sum() / truth.sum()
                sep_paired += (paired_sep & truth).sum() / truth.sum()
            false_overlap += bool((overlap_sep & ~truth).any())
            false_paired += bool((paired_sep & ~truth).any())
        out[label] = {
            "overlap separates": sep_overlap / replicates,
            "paired separates": sep_paired / replicates,
            "overlap false statement": false_overlap / replicates,
            "paired false statement": false_paired / replicates,
        }
    return out


def clustered_null(rng, replicates):
    """Family-wise error of the paired verdicts when model differences vary by cluster."""
    beta = np.zeros(5)
    counts = {
        "paired t (items independent)": 0,
        "clustered z": 0,
        "clustered, G/(G-1) + t": 0,
        "clustered, CR2": 0,
    }
    names = tuple("abcde")
    for _ in range(replicates):
        x, cluster = simulate(rng, beta, 40, 20, 0.6, 1.0, sigma_mc=0.3)
        units = UnitScores(
            values=x,
            models=names,
            labels=tuple(map(str, range(x.shape[0]))),
            unit="item",
            missing="complete",
            excluded={},
            binary=True,
        )
        counts["paired t (items independent)"] += bool(paired_verdict(units, 0.05)[1].any())
        for label, mode in (
            ("clustered z", False),
            ("clustered, G/(G-1) + t", "cadjust"),
            ("clustered, CR2", "cr2"),
        ):
            counts[label] += bool(paired_verdict(units, 0.05, cluster, mode)[1].any())
    return {k: v / replicates for k, v in counts.items()}


QUICK_REPLICATES = 10


def _row(name, result):
    cover, width = result
    return (
        f"| {name} | {100 * cover.mean():.1f} | "
        + " / ".join(f"{100 * c:.1f}" for c in cover)
        + f" | {width:.4f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=3000)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPLICATES} replicates (CI smoke run)"
    )
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    replicates = QUICK_REPLICATES if args.quick else args.replicates
    rng = np.random.default_rng(args.seed)
    beta = np.array([-0.6, 0.0, 0.9])
    start = time.perf_counter()
    print(
        f"replicates per cell: {replicates}; true rates (sigma_c 0.6, sigma_i 1.0): "
        f"{np.round(true_rates(beta, 0.6, 1.0), 4).tolist()}\n"
    )
    header = "| method | coverage % (mean) | per model % | mean width |\n|---|---:|---|---:|"
    for n in (400, 100):
        print(f"**Independent items, n = {n}**\n\n{header}")
        result = coverage(
            rng, replicates, beta, ITEM_METHODS, n_clusters=n, size=1, sigma_c=0.0, sigma_i=1.2
        )
        print("\n".join(_row(name, r) for name, r in result.items()) + "\n")
    for n_clusters, unequal in ((30, False), (60, False), (120, False), (30, True), (60, True)):
        sizes = "unequal (log-normal) sizes, mean 20" if unequal else "20 items each"
        print(f"**Clustered items, G = {n_clusters} clusters, {sizes}**\n\n{header}")
        result = coverage(
            rng,
            replicates,
            beta,
            CLUSTER_METHODS,
            n_clusters=n_clusters,
            size=20,
            sigma_c=0.6,
            sigma_i=1.0,
            unequal=unequal,
        )
        print("\n".join(_row(name, r) for name, r in result.items()) + "\n")
    print("**Overlap flag vs paired verdict (5 models, 400 independent items)**\n")
    print(
        "| truth | overlap separates | paired verdict separates | overlap: P(any false) "
        "| paired: P(any false) |\n|---|---:|---:|---:|---:|"
    )
    for label, row in verdicts(rng, replicates).items():
        print(
            f"| {label} | {100 * row['overlap separates']:.1f} % | "
            f"{100 * row['paired separates']:.1f} % | "
            f"{100 * row['overlap false statement']:.2f} % | "
            f"{100 * row['paired false statement']:.2f} % |"
        )
    print("\n**Paired verdict under a global null with clustered model differences**\n")
    print("| verdict | P(any false ordering) |\n|---|---:|")
    for label, rate in clustered_null(rng, replicates).items():
        print(f"| {label} | {100 * rate:.2f} % |")
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
