"""Speed and peak memory of max-t rank intervals (rankci.certify.maxt).

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_maxt.py [--repeat 3]

Target (issue 6): simultaneous max-t rank intervals for 400 models x 14,000 items with 1,000
Gaussian multiplier draws in <= 5 s. Timings are the best of ``--repeat`` runs (the machine is
shared); peak memory is tracemalloc's peak of numpy allocations during one run. The data are 0/1
scores from a logistic model with item difficulty, generated in memory (not timed).
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc

import numpy as np

import rankci
from rankci import Scores, UnitScores
from rankci.certify.maxt import certify_maxt
from rankci.evidence.covariance import units_covariance


def make_units(n_models: int, n_items: int, seed: int = 0, clusters: int = 0):
    rng = np.random.default_rng(seed)
    theta = np.linspace(0.3, 0.8, n_models)
    difficulty = rng.normal(0.0, 1.0, n_items)
    logit = np.log(theta / (1 - theta))[None, :] + difficulty[:, None]
    x = (rng.random((n_items, n_models)) < 1 / (1 + np.exp(-logit))).astype(float)
    units = UnitScores(
        values=x,
        models=tuple(f"m{k:03d}" for k in range(n_models)),
        labels=tuple(f"i{k:05d}" for k in range(n_items)),
        unit="item",
        missing="complete",
        excluded={},
        binary=True,
    )
    groups = np.arange(n_items) % clusters if clusters else None
    return units, groups


def measure(label: str, run, repeat: int) -> None:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    extra = ""
    if hasattr(result, "lower"):
        width = float(np.mean(result.upper - result.lower + 1))
        extra = f"  mean interval length {width:.2f}"
    print(
        f"| {label} | {min(times):.2f} s | {np.median(times):.2f} s | {peak / 2**20:.0f} MiB |"
        f"{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.processor() or '?'}, Python "
        f"{platform.python_version()}, numpy {np.__version__}"
    )
    print("| case | best | median | peak memory |")
    print("|---|---|---|---|")
    units, _ = make_units(400, 14_000)
    measure(
        "Sigma only (400 x 14,000)", lambda: units_covariance(units, small_sample=True), args.repeat
    )
    for draws in (1000, 10_000):
        measure(
            f"simultaneous, gaussian, {draws} draws (400 x 14,000)",
            lambda d=draws: certify_maxt(units, draws=d, rng=1).ranking(),
            args.repeat,
        )
    measure(
        "simultaneous, gaussian, single-step, 1000 draws (400 x 14,000)",
        lambda: certify_maxt(units, draws=1000, rng=1, stepdown=False).ranking(),
        args.repeat,
    )
    measure(
        "simultaneous, item bootstrap, 1000 draws (400 x 14,000)",
        lambda: certify_maxt(units, draws=1000, rng=1, resampling="bootstrap").ranking(),
        args.repeat,
    )
    measure(
        "marginal, gaussian, 1000 draws (400 x 14,000)",
        lambda: certify_maxt(units, draws=1000, rng=1, coverage="marginal").ranking(),
        args.repeat,
    )
    clustered, groups = make_units(400, 14_000, clusters=140)
    measure(
        "simultaneous, cluster bootstrap (140 clusters), 1000 draws (400 x 14,000)",
        lambda: certify_maxt(
            clustered, groups=groups, draws=1000, rng=1, resampling="bootstrap"
        ).ranking(),
        args.repeat,
    )
    scores = Scores.from_matrix(units.values)  # 5.6 million rows (not timed)
    measure(
        "rankci.rank(scores, multiplicity='max-t') end to end from 5.6 M rows (400 x 14,000)",
        lambda: rankci.rank(scores, multiplicity="max-t", rng=1),
        args.repeat,
    )
    small, _ = make_units(12, 2000)
    measure(
        "simultaneous, gaussian, 50,000 draws (12 x 2,000; the csranks oracle size)",
        lambda: certify_maxt(small, draws=50_000, rng=1).ranking(),
        args.repeat,
    )


if __name__ == "__main__":
    main()
