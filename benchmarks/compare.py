"""rankci beside the tools users would pick instead: same seeded data, same run, same machine.

For every task and size the run prints each tool's time (best of ``--repeats``), peak memory
(tracemalloc, in a separate pass so it does not slow the timing), the ratio of its time to
rankci's, and -- where the peer computes the same quantity -- the largest difference between its
result and rankci's, so that a fast wrong answer cannot hide. Peers that loop over pairs in Python
are timed on a subset of pairs when the whole would exceed ``--budget`` seconds, and their time is
extrapolated linearly in the number of pairs (marked "≈").

Run:  python benchmarks/compare.py --write     (all sizes; rewrites the table in BENCHMARKS.md)
      python benchmarks/compare.py --quick     (every task once at the smallest size; < 2 minutes)

Peers come from the ``bench`` extra (``pip install -e ".[bench]"``); a missing peer is reported
as skipped with the reason, never silently dropped.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import rankci
from rankci.simulate import simulate_scores

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- compare:start -->", "<!-- compare:end -->"


# ---------------------------------------------------------------------- data
@dataclass
class Dataset:
    name: str
    scores: rankci.Scores
    matrix: np.ndarray  # items x models, complete
    clusters: np.ndarray  # cluster code of each item

    @property
    def shape(self) -> str:
        n_clusters = len(np.unique(self.clusters))
        return f"{self.matrix.shape[1]} × {self.matrix.shape[0]:,} ({n_clusters} clusters)"

    def long_frame(self) -> pd.DataFrame:
        n, m = self.matrix.shape
        return pd.DataFrame(
            {
                "item": np.repeat(np.arange(n), m),
                "model": np.tile([f"m{k:03d}" for k in range(m)], n),
                "score": self.matrix.ravel(),
                "cluster": np.repeat(self.clusters, m),
            }
        )


def synthetic(models: int, items: int, clusters: int, seed: int = 0) -> Dataset:
    ability = np.random.default_rng(seed).normal(0.0, 0.5, models)
    sim = simulate_scores(
        ability,
        items,
        n_clusters=clusters,
        sigma_cluster=0.5,
        sigma_model_cluster=0.2,
        rng=seed + 1,
    )
    units = sim.scores.units("item")
    clusters_of = sim.scores.item_cluster
    return Dataset(f"synthetic {models}×{items}", sim.scores, units.values, clusters_of)


def mmlu_pro() -> Dataset:
    scores = rankci.datasets.load_mmlu_pro()
    units = scores.units("item", "complete")
    item_index = {item: k for k, item in enumerate(scores.items)}
    clusters = scores.item_cluster[[item_index[i] for i in units.labels]]
    return Dataset("MMLU-Pro (bundled)", scores, units.values, clusters)


SIZES = {
    "small": lambda: synthetic(20, 5_000, 40),
    "medium": lambda: synthetic(100, 14_000, 40),
    "large": lambda: synthetic(400, 14_000, 280),
    "mmlu-pro": mmlu_pro,
}


# ---------------------------------------------------------------------- measuring
@dataclass
class Row:
    task: str
    size: str
    tool: str
    seconds: float | None = None
    peak_mib: float | None = None
    agreement: str = ""
    note: str = ""
    extrapolated: bool = False
    result: object = field(default=None, repr=False)


def measure(fn: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    best, result = np.inf, None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20, result


def run_tool(task: str, size: str, tool: str, fn, repeats: int, note: str = "") -> Row:
    try:
        seconds, peak, result = measure(fn, repeats)
    except ImportError as error:
        return Row(task, size, tool, note=f"skipped: {error.name or error} not installed")
    return Row(task, size, tool, seconds, peak, note=note, result=result)


# ---------------------------------------------------------------------- tasks
def _two_sided_holm(pvalue: np.ndarray) -> np.ndarray:
    """Holm-adjusted two-sided p-values of the unordered pairs j < l (row-major)."""
    j, l = np.triu_indices(pvalue.shape[0], 1)
    two_sided = np.minimum(1.0, 2 * np.minimum(pvalue[j, l], pvalue[l, j]))
    return rankci.adjust_pvalues(two_sided, "holm")


def task_paired_tests(data: Dataset, size: str, repeats: int, budget: float) -> list[Row]:
    name = "paired t, all pairs + Holm"
    x = data.matrix
    m = x.shape[1]
    units = rankci.Scores.from_matrix(x).units("item")
    rows = [
        run_tool(
            name,
            size,
            "rankci",
            lambda: _two_sided_holm(rankci.pairwise_tests(units, "t").pvalue),
            repeats,
        )
    ]
    reference = rows[0].result
    pairs = list(zip(*np.triu_indices(m, 1)))

    def scipy_loop(subset):
        from scipy import stats
        from statsmodels.stats.multitest import multipletests

        p = np.array([stats.ttest_rel(x[:, a], x[:, b]).pvalue for a, b in subset])
        return multipletests(p, method="holm")[1] if len(subset) == len(pairs) else p

    rows.append(
        _looped(
            name,
            size,
            "scipy ttest_rel loop + statsmodels Holm",
            scipy_loop,
            pairs,
            repeats,
            budget,
            reference,
        )
    )

    def pingouin(models_used):
        import pingouin as pg

        frame = data.long_frame()
        frame = frame[frame["model"].isin([f"m{k:03d}" for k in models_used])]
        out = pg.pairwise_tests(
            data=frame, dv="score", within="model", subject="item", padjust="holm"
        )
        return (out["p_corr"] if "p_corr" in out else out["p_unc"]).to_numpy()

    rows.append(
        _looped_models(
            name, size, "pingouin pairwise_tests", pingouin, m, repeats, budget, reference
        )
    )
    return rows


def _agreement(result, reference) -> str:
    if result is None or reference is None or np.shape(result) != np.shape(reference):
        return ""
    return f"max abs Δp = {np.max(np.abs(np.asarray(result) - reference)):.1e}"


def _looped(task, size, tool, fn, pairs, repeats, budget, reference) -> Row:
    """Time a per-pair loop; over budget, time a subset of pairs and extrapolate."""
    try:
        probe = max(1, min(len(pairs), 20))
        fn(pairs[:1])  # warm up: imports and caches are not the peer's per-pair cost
        start = time.perf_counter()
        fn(pairs[:probe])
        per_pair = (time.perf_counter() - start) / probe
    except ImportError as error:
        return Row(task, size, tool, note=f"skipped: {error.name} not installed")
    if per_pair * len(pairs) <= budget:
        row = run_tool(task, size, tool, lambda: fn(pairs), repeats)
        row.agreement = _agreement(row.result, reference)
        return row
    k = max(probe, int(budget / 4 / per_pair))
    seconds, peak, _ = measure(lambda: fn(pairs[:k]), 1)
    return Row(
        task,
        size,
        tool,
        seconds * len(pairs) / k,
        peak,
        extrapolated=True,
        note=f"timed on {k:,} of {len(pairs):,} pairs",
    )


def _looped_models(task, size, tool, fn, m, repeats, budget, reference) -> Row:
    """Like _looped for peers that take a set of models: time m' models, scale by pairs."""
    try:
        fn(range(2))  # warm up
        start = time.perf_counter()
        fn(range(min(m, 4)))
        per_pair = (time.perf_counter() - start) / (min(m, 4) * (min(m, 4) - 1) / 2)
    except ImportError as error:
        return Row(task, size, tool, note=f"skipped: {error.name} not installed")
    total_pairs = m * (m - 1) / 2
    if per_pair * total_pairs <= budget:
        row = run_tool(task, size, tool, lambda: fn(range(m)), repeats)
        row.agreement = _agreement(row.result, reference)
        return row
    sub = max(4, int((1 + np.sqrt(1 + 8 * budget / 4 / per_pair)) / 2))
    seconds, peak, _ = measure(lambda: fn(range(sub)), 1)
    return Row(
        task,
        size,
        tool,
        seconds * total_pairs / (sub * (sub - 1) / 2),
        peak,
        extrapolated=True,
        note=f"timed on {sub} of {m} models",
    )


def task_rank_intervals(data: Dataset, size: str, repeats: int, budget: float) -> list[Row]:
    name = "rank intervals"
    x = data.matrix
    scores = rankci.Scores.from_matrix(x)
    rows = [
        run_tool(
            name,
            size,
            "rankci (paired t + Holm, simultaneous)",
            lambda: rankci.rank(scores),
            repeats,
        )
    ]
    width = float(np.mean(rows[0].result.upper - rows[0].result.lower))
    rows[0].agreement = f"mean width {width:.2f}"

    def honestboard():
        import honestboard

        board = honestboard.Board([f"m{k}" for k in range(x.shape[1])], x.T)
        return board.rank_summary(B=1000)

    row = run_tool(
        name,
        size,
        "honestboard rank_summary (percentile bootstrap of ranks, B=1000)",
        honestboard,
        repeats,
    )
    if row.result is not None:
        width = np.mean([r["rank_hi"] - r["rank_lo"] for r in row.result])
        row.agreement = f"mean width {width:.2f} (different method: no coverage guarantee)"
    rows.append(row)
    rows.append(Row(name, size, "R csranks", note="skipped: Rscript not available on this machine"))
    return rows


TASKS = {
    "paired-tests": task_paired_tests,
    "rank-intervals": task_rank_intervals,
}


# ---------------------------------------------------------------------- output
def markdown(rows: list[Row]) -> str:
    lines = [
        "| task | data | tool | time (s) | peak memory (MiB) | × rankci time | agreement | note |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    base: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.tool.startswith("rankci") and row.seconds is not None:
            base[(row.task, row.size)] = row.seconds
    for row in rows:
        if row.seconds is None:
            time_text = ratio = memory = "—"
        else:
            mark = "≈ " if row.extrapolated else ""
            time_text = f"{mark}{row.seconds:.3g}"
            memory = f"{row.peak_mib:.0f}" if row.peak_mib is not None else "—"
            rankci_time = base.get((row.task, row.size))
            ratio = (
                "1"
                if row.tool.startswith("rankci")
                else (f"{mark}{row.seconds / rankci_time:.3g}" if rankci_time else "—")
            )
        lines.append(
            f"| {row.task} | {row.size} | {row.tool} | {time_text} | {memory} | {ratio} | "
            f"{row.agreement} | {row.note} |"
        )
    return "\n".join(lines)


def write_benchmarks(table: str, header: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    block = f"{START}\n{header}\n\n{table}\n{END}"
    if START in text:
        before, rest = text.split(START, 1)
        text = before + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## rankci beside the alternatives (issue 9) — "
        text += "`benchmarks/compare.py`\n\n" + block + "\n"
    path.write_text(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every task once, smallest size")
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds a looping peer may take before it is extrapolated",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the table in BENCHMARKS.md")
    args = parser.parse_args(argv)
    sizes = ["small"] if args.quick else args.sizes
    repeats = 1 if args.quick else args.repeats
    budget = 5.0 if args.quick else args.budget
    rows: list[Row] = []
    for size in sizes:
        data = SIZES[size]()
        for task in args.tasks:
            start = time.perf_counter()
            new = TASKS[task](data, data.shape, repeats, budget)
            rows += new
            print(f"{task} on {data.shape}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    table = markdown(rows)
    header = (
        f"Run on {time.strftime('%Y-%m-%d')}: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}; "
        f"best of {repeats}; `python benchmarks/compare.py{' --quick' if args.quick else ''}`."
    )
    print(header + "\n\n" + table)
    if args.write:
        write_benchmarks(table, header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
