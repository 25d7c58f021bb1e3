"""Power study: rank-interval length and simultaneous coverage of five constructions.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python validation/power_maxt.py [--reps 2000]
(about 25 minutes on two loaded cores; the 40-model design is capped at 1,000 replicates)

Methods (alpha = 0.05, simultaneous intervals unless said otherwise):

* ``holm_t``          rankci.rank default: one-sided paired t + Holm over all ordered pairs
* ``holm_wilcoxon``   the same with the Wilcoxon signed-rank test
* ``maxt_gauss``      max-t step-down, N(0, Sigma) critical values (1,000 draws), small-sample form
* ``maxt_boot``       max-t step-down, nonparametric bootstrap critical values (1,000 resamples)
* ``maxt_wald``       max-t Gaussian without the small-sample form (csranks' statistics), shown to
                      explain why rankci applies it
* ``pct_boot``        what peer packages report: the 2.5 % and 97.5 % percentiles of each model's
                      rank over 1,000 bootstrap resamples (floor / ceiling); per-model intervals,
                      evaluated here for simultaneous coverage like the others

In the clustered design every method works at the cluster level (cluster units for Holm, a
cluster-robust Sigma and cluster resampling for max-t, clusters resampled for the percentile
bootstrap); ``*_items`` rows show the item-level versions that ignore the clustering.

Data: 0/1 scores with ``P(x_ij = 1) = theta_j`` exactly, from a Gaussian copula
``x_ij = 1{Phi(sqrt(r) Z_i + sqrt(1 - r) E_ij) < theta_j}``: Z_i is the item's shared difficulty
(r = 0.3 makes the pairwise statistics strongly correlated, as on real leaderboards). The clustered
design adds a cluster effect shared by all models and a model x cluster interaction, so that new
clusters differ from the observed ones:
``sqrt(0.15) C_c + sqrt(0.2) Z_i + sqrt(0.1) G_jc + sqrt(0.55) E_ij``.
True rank: ``1 + #{l : theta_l > theta_j}`` (tied models share the better rank).

Results go to ``validation/results/power_maxt.csv`` and a markdown table on stdout. ``--quick``
(the CI smoke run, seconds): 5 replicates per design, the CSV written to a temporary folder (the
recorded results stay as they are) unless ``--out`` is given.

Replicates run on local worker processes (``--executor serial``: here; ``--scheduler
tcp://host:8786``: on a Dask cluster, to which this file is uploaded). Replicate i of design k
draws from the i-th child of ``SeedSequence(seed + k)`` (:func:`rankci.parallel.map_replicates`),
so the table is the same on any executor and any number of workers.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

import rankci
from rankci import Scores, UnitScores
from rankci.certify.holm import certify_holm
from rankci.certify.maxt import certify_maxt
from rankci.commands.tables import markdown_table
from rankci.evidence.bootstrap import resample_counts
from rankci.evidence.covariance import unit_clusters
from rankci.evidence.pairwise import pairwise_tests
from rankci.parallel import (
    DaskExecutor,
    add_executor_arguments,
    executor_from_arguments,
    executor_scope,
    map_replicates,
)

ALPHA = 0.05
DRAWS = 1000
RESULTS = Path(__file__).parent / "results" / "power_maxt.csv"
QUICK_REPS = 5


@dataclass(frozen=True)
class Design:
    name: str
    theta: np.ndarray
    n_items: int
    n_clusters: int = 0  # 0: independent items
    max_reps: int | None = None  # cap on the replicates (the slowest design)


DESIGNS = [
    Design("well-separated (10 models, gap 0.04, 500 items)", np.linspace(0.45, 0.81, 10), 500),
    Design("near ties (10 models, gap 0.01, 500 items)", np.linspace(0.60, 0.69, 10), 500),
    Design("exact ties (10 tied models, 500 items)", np.full(10, 0.7), 500),
    Design(
        "ties + others (10 tied at 0.7, 5 at 0.55-0.63, 500 items)",
        np.r_[np.full(10, 0.7), np.linspace(0.55, 0.63, 5)],
        500,
    ),
    Design("small n (10 models, gap 0.04, 60 items)", np.linspace(0.45, 0.81, 10), 60),
    Design(
        "many models (40 models, gap 0.005, 2,000 items)",
        np.linspace(0.5, 0.695, 40),
        2000,
        max_reps=1000,
    ),
    Design(
        "clustered (10 models, gap 0.02, 30 clusters x 20 items)",
        np.linspace(0.55, 0.73, 10),
        600,
        30,
    ),
]


def true_ranks(theta: np.ndarray) -> np.ndarray:
    return 1 + (theta[None, :] > theta[:, None]).sum(axis=1)


def simulate(design: Design, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    n, m = design.n_items, design.theta.size
    if design.n_clusters:
        g = design.n_clusters
        cluster = np.repeat(np.arange(g), n // g)
        latent = (
            np.sqrt(0.15) * rng.standard_normal(g)[cluster, None]
            + np.sqrt(0.2) * rng.standard_normal(n)[:, None]
            + np.sqrt(0.1) * rng.standard_normal((g, m))[cluster]
            + np.sqrt(0.55) * rng.standard_normal((n, m))
        )
    else:
        cluster = None
        latent = np.sqrt(0.3) * rng.standard_normal(n)[:, None] + np.sqrt(0.7) * (
            rng.standard_normal((n, m))
        )
    return (special.ndtr(latent) < design.theta[None, :]).astype(float), cluster


def percentile_bootstrap(x: np.ndarray, groups, rng) -> tuple[np.ndarray, np.ndarray]:
    """Peers' construction: percentiles of each model's rank over bootstrap resamples."""
    if groups is None:
        sums, counts = x, np.ones((x.shape[0], 1))
    else:
        codes = np.unique(groups, return_inverse=True)[1]
        sums = np.zeros((codes.max() + 1, x.shape[1]))
        np.add.at(sums, codes, x)
        counts = np.bincount(codes)[:, None].astype(float)
    w = resample_counts(rng, DRAWS, sums.shape[0]).astype(float)
    means = (w @ sums) / (w @ counts)
    ranks = 1 + (means[:, None, :] > means[:, :, None]).sum(axis=2)
    lower = np.floor(np.quantile(ranks, ALPHA / 2, axis=0)).astype(int)
    upper = np.ceil(np.quantile(ranks, 1 - ALPHA / 2, axis=0)).astype(int)
    return lower, upper


def units_of(x: np.ndarray) -> UnitScores:
    n, m = x.shape
    return UnitScores(
        x,
        tuple(f"m{k:02d}" for k in range(m)),
        tuple(f"i{k:04d}" for k in range(n)),
        "item",
        "complete",
        {},
        True,
    )


def run_replicate(design: Design, rng: np.random.Generator) -> dict[str, tuple]:
    """Each method's (lower, upper) for one simulated data set."""
    x, cluster = simulate(design, rng)
    out: dict[str, tuple] = {}

    def keep(name, certification):
        ranking = certification.ranking()
        out[name] = (ranking.lower, ranking.upper)

    if cluster is None:
        units = units_of(x)
        keep("holm_t", certify_holm(pairwise_tests(units, "t"), ALPHA))
        keep("holm_wilcoxon", certify_holm(pairwise_tests(units, "wilcoxon"), ALPHA))
        keep("maxt_gauss", certify_maxt(units, draws=DRAWS, rng=rng))
        keep("maxt_boot", certify_maxt(units, resampling="bootstrap", draws=DRAWS, rng=rng))
        keep("maxt_wald", certify_maxt(units, draws=DRAWS, rng=rng, small_sample=False))
        out["pct_boot"] = percentile_bootstrap(x, None, rng)
        return out
    scores = Scores.from_matrix(x, clusters=[f"c{c:02d}" for c in cluster])
    item_units = scores.units("item")
    groups = unit_clusters(scores, item_units)
    cluster_units = scores.units("cluster")
    keep("holm_t", certify_holm(pairwise_tests(cluster_units, "t"), ALPHA))
    keep("holm_wilcoxon", certify_holm(pairwise_tests(cluster_units, "wilcoxon"), ALPHA))
    keep("maxt_gauss", certify_maxt(item_units, groups=groups, draws=DRAWS, rng=rng))
    keep(
        "maxt_boot",
        certify_maxt(item_units, groups=groups, resampling="bootstrap", draws=DRAWS, rng=rng),
    )
    keep(
        "maxt_wald",
        certify_maxt(item_units, groups=groups, draws=DRAWS, rng=rng, small_sample=False),
    )
    out["pct_boot"] = percentile_bootstrap(x, groups, rng)
    keep("holm_t_items", certify_holm(pairwise_tests(item_units, "t"), ALPHA))
    keep("maxt_gauss_items", certify_maxt(item_units, draws=DRAWS, rng=rng))
    out["pct_boot_items"] = percentile_bootstrap(x, None, rng)
    return out


def study(design: Design, reps: int, seed: int, executor=None) -> pd.DataFrame:
    truth = true_ranks(design.theta)
    rows: dict[str, dict] = {}
    found = map_replicates(
        partial(run_replicate, design), reps, rng=seed, executor=executor, desc=design.name
    )
    for replicate in found:
        for name, (lower, upper) in replicate.items():
            row = rows.setdefault(
                name, {"covered": 0, "length": 0.0, "best_size": 0.0, "best_covered": 0}
            )
            row["covered"] += bool(np.all((lower <= truth) & (truth <= upper)))
            row["length"] += float(np.mean(upper - lower + 1))
            row["best_size"] += int((lower <= 1).sum())
            row["best_covered"] += bool(np.all(lower[truth == 1] <= 1))
    frame = pd.DataFrame(
        [
            {
                "design": design.name,
                "method": name,
                "reps": reps,
                "coverage": row["covered"] / reps,
                "mean_length": row["length"] / reps,
                "best_set_size": row["best_size"] / reps,
                "best_set_coverage": row["best_covered"] / reps,
            }
            for name, row in rows.items()
        ]
    )
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--designs", type=int, nargs="*", help="indices into DESIGNS")
    parser.add_argument(
        "--out", help=f"CSV of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REPS} replicates per design (CI smoke run)"
    )
    add_executor_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.reps = QUICK_REPS
    chosen = [DESIGNS[i] for i in args.designs] if args.designs else DESIGNS
    frames = []
    with executor_scope(executor_from_arguments(args)) as pool:
        if isinstance(pool, DaskExecutor):  # the workers import run_replicate from this file
            pool.client.upload_file(__file__)
        for design in chosen:
            start = time.perf_counter()
            reps = min(args.reps, design.max_reps or args.reps)
            frames.append(study(design, reps, args.seed + DESIGNS.index(design), pool))
            print(f"{design.name}: {time.perf_counter() - start:.0f} s", flush=True)
    result = pd.concat(frames, ignore_index=True)
    if args.quick and args.out is None:
        with tempfile.TemporaryDirectory() as scratch:  # keep the recorded full-study results
            write_csv(result, Path(scratch) / RESULTS.name)
    else:
        write_csv(result, Path(args.out) if args.out else RESULTS)
    print(f"rankci {rankci.__version__}, {args.reps} replicates per design, alpha = {ALPHA}")
    print(markdown_table(result, floatfmt=".3f"))


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)


if __name__ == "__main__":
    main()
