"""Family-wise error of max-t rank intervals when every model is tied, from few to many units.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python validation/fwer_maxt.py [--reps 2000]

Ten models with the same population accuracy 0.6: every certified dominance is false, so the
family-wise error rate (FWER) is the fraction of simulated leaderboards with at least one; a valid
simultaneous method keeps it at or below alpha = 0.05. Data as in ``power_maxt.py`` (Gaussian
copula with a shared item difficulty; in the clustered designs a cluster effect and a model x
cluster interaction, 20 items per cluster, analysed with a cluster-robust Sigma / cluster
resampling / cluster units).

Methods: max-t with the small-sample (null-restricted) form, Gaussian and bootstrap; the plain
Wald max-t (``small_sample=False``, csranks' statistics), Gaussian and bootstrap; Holm with the
paired t test. Results go to ``validation/results/fwer_maxt.csv``.

``--quick`` (the CI smoke run, seconds): 10 replicates per design, the CSV written to a temporary
folder (the recorded results stay as they are) unless ``--out`` is given.

Replicates run on local worker processes (``--executor serial``: here; ``--scheduler
tcp://host:8786``: on a Dask cluster, to which ``power_maxt.py`` is uploaded). Replicate i of
design k draws from the i-th child of ``SeedSequence(seed + k)``
(:func:`rankci.parallel.map_replicates`), so the table is the same on any executor and any number
of workers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

import power_maxt  # noqa: E402
from power_maxt import Design, simulate, units_of  # noqa: E402

from rankci.certify.holm import certify_holm  # noqa: E402
from rankci.certify.maxt import certify_maxt  # noqa: E402
from rankci.commands.tables import markdown_table  # noqa: E402
from rankci.evidence.pairwise import pairwise_tests  # noqa: E402
from rankci.parallel import (  # noqa: E402
    DaskExecutor,
    add_executor_arguments,
    executor_from_arguments,
    executor_scope,
    map_replicates,
)

RESULTS = Path(__file__).parent / "results" / "fwer_maxt.csv"
QUICK_REPS = 10
THETA = np.full(10, 0.6)
DESIGNS = [Design(f"{n} items", THETA, n) for n in (30, 50, 100, 300, 1000)] + [
    Design(f"{g} clusters x 20 items", THETA, 20 * g, g) for g in (15, 30, 60)
]


def errors(design: Design, rng: np.random.Generator) -> dict[str, bool]:
    x, cluster = simulate(design, rng)
    units = units_of(x)
    out = {}
    for name, resampling, small in (
        ("maxt_gauss", "gaussian", True),
        ("maxt_boot", "bootstrap", True),
        ("maxt_wald_gauss", "gaussian", False),
        ("maxt_wald_boot", "bootstrap", False),
    ):
        ranking = certify_maxt(
            units, groups=cluster, resampling=resampling, small_sample=small, draws=1000, rng=rng
        ).ranking()
        out[name] = bool(ranking.dominance.any())
    if cluster is not None:
        sums = np.zeros((cluster.max() + 1, x.shape[1]))
        np.add.at(sums, cluster, x)
        units = units_of(sums / np.bincount(cluster)[:, None])
    out["holm_t"] = bool(certify_holm(pairwise_tests(units, "t")).ranking().dominance.any())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20240602)
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
    rows = []
    with executor_scope(executor_from_arguments(args)) as pool:
        if isinstance(pool, DaskExecutor):  # the workers import this sibling module by name
            pool.client.upload_file(power_maxt.__file__)
        for k, design in enumerate(DESIGNS):
            if args.designs and k not in args.designs:
                continue
            start = time.perf_counter()
            counts: dict[str, int] = {}
            found = map_replicates(
                partial(errors, design), args.reps, rng=args.seed + k, executor=pool
            )
            for replicate in found:
                for name, err in replicate.items():
                    counts[name] = counts.get(name, 0) + err
            rows.append(
                {
                    "design": design.name,
                    "reps": args.reps,
                    **{name: c / args.reps for name, c in counts.items()},
                }
            )
            print(f"{design.name}: {time.perf_counter() - start:.0f} s", flush=True)
    frame = pd.DataFrame(rows)
    if args.quick and args.out is None:
        with tempfile.TemporaryDirectory() as scratch:  # keep the recorded full-study results
            write_csv(frame, Path(scratch) / RESULTS.name)
    else:
        write_csv(frame, Path(args.out) if args.out else RESULTS)
    print(markdown_table(frame, floatfmt=".3f"))


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)


if __name__ == "__main__":
    main()
