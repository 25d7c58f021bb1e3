"""The data, the measuring and the table shared by every comparison task.

A task is a function ``task(data, run) -> list[Row]``: it times rankci on ``data``, then each peer
on the same arrays, and records where the peer's answer differs from rankci's.

* Time is the best of ``run.repeats`` calls; peak memory is measured in a separate call under
  :mod:`tracemalloc` (NumPy reports its buffers to it), so tracing does not slow the timing.
* A peer whose work grows with a count (pairs, models, clusters) is first timed on a small part.
  If the whole would exceed ``run.budget`` seconds, it runs on the largest part that fits in a
  quarter of the budget and its time is scaled up by the work (marked "≈", with the part named).
* Agreement: ``max |Δ ...|`` between the peer's and rankci's results on the same quantity, with a
  tolerance; a difference above it is printed as ``DISAGREES`` and fails the run.
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

import rankci
from rankci.simulate import simulate_scores


# ---------------------------------------------------------------------- data
@dataclass
class Dataset:
    """The same scores as every tool needs them: a complete items x models matrix, the cluster of
    each item, rankci's validated table and the long frame the formula-based peers read."""

    label: str
    matrix: np.ndarray  # items x models, complete
    clusters: np.ndarray  # cluster code of each item (row of matrix)

    @property
    def n_items(self) -> int:
        return self.matrix.shape[0]

    @property
    def n_models(self) -> int:
        return self.matrix.shape[1]

    @property
    def n_clusters(self) -> int:
        return len(np.unique(self.clusters))

    @property
    def model_names(self) -> list[str]:
        return [f"m{k:03d}" for k in range(self.n_models)]

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Long form: one row per (item, model), item-major."""
        n, m = self.matrix.shape
        return pd.DataFrame(
            {
                "item": np.repeat(np.arange(n), m),
                "model": np.tile(self.model_names, n),
                "score": self.matrix.ravel(),
                "cluster": np.repeat(self.clusters, m),
            }
        )

    @cached_property
    def units(self) -> rankci.UnitScores:
        """Item units of :attr:`scores` (the input of the all-pairs and omnibus tests)."""
        return self.scores.units("item")

    @cached_property
    def scores(self) -> rankci.Scores:
        labels = np.array([f"c{c:03d}" for c in range(self.clusters.max() + 1)])
        return rankci.Scores.from_matrix(
            self.matrix, models=self.model_names, clusters=labels[self.clusters]
        )

    def items_subset(self, k: int) -> Dataset:
        return Dataset(f"{self.label}, first {k:,} items", self.matrix[:k], self.clusters[:k])

    def clusters_subset(self, g: int) -> Dataset:
        keep = self.clusters < g  # cluster codes are 0, 1, ..., G - 1
        return Dataset(f"{self.label}, {g} clusters", self.matrix[keep], self.clusters[keep])


def synthetic(models: int, items: int, clusters: int, seed: int = 0) -> Dataset:
    """Binary scores from :func:`rankci.simulate.simulate_scores` (abilities ~ N(0, 0.5²),
    cluster and model-by-cluster effects), items ordered by cluster."""
    ability = np.random.default_rng(seed).normal(0.0, 0.5, models)
    sim = simulate_scores(
        ability,
        items,
        n_clusters=clusters,
        sigma_cluster=0.5,
        sigma_model_cluster=0.2,
        rng=seed + 1,
    )
    return _from_units(f"{models} × {items:,}, {clusters} clusters", sim.scores.units("item"))


def mmlu_pro() -> Dataset:
    """The bundled MMLU-Pro leaderboard, items every model answered (complete matrix)."""
    units = rankci.datasets.load_mmlu_pro().units("item", "complete")
    n, m = units.values.shape
    return _from_units(f"MMLU-Pro ({m} × {n:,}, 14 subjects)", units)


def _from_units(label: str, units: rankci.UnitScores) -> Dataset:
    """Item units with clusters numbered 0, 1, ... in order of appearance, sorted by cluster."""
    codes = pd.factorize(units.unit_cluster)[0]
    order = np.argsort(codes, kind="stable")
    return Dataset(label, units.values[order], codes[order])


# ---------------------------------------------------------------------- measuring
@dataclass
class Run:
    """Settings of one comparison run."""

    repeats: int = 3
    budget: float = 30.0
    #: ``compare.py --quick``: every task and peer runs and agrees; a task may shrink what only
    #: its peer's time needs (the rows shown say which part was used)
    quick: bool = False
    #: (task, tool) -> (seconds, data label) of a peer that already exceeded the budget
    slow: dict = field(default_factory=dict)
    #: measurements a task makes once per run, whatever the data (the ChemBench subset)
    done: set = field(default_factory=set)


@dataclass
class Row:
    task: str
    data: str
    tool: str
    seconds: float | None = None
    peak_mib: float | None = None
    agreement: str = ""
    note: str = ""
    extrapolated: bool = False
    #: the peer did not finish: ``seconds`` is a lower bound on its time
    lower_bound: bool = False
    #: rankci's time on the same input, when the peer ran on a part of the data
    rankci_seconds: float | None = None
    disagrees: bool = False
    result: object = field(default=None, repr=False)

    def agree(self, what: str, difference: float, tolerance: float, extra: str = "") -> None:
        """Record ``max |Δ what|`` against rankci; above ``tolerance`` the row DISAGREES."""
        self.disagrees = not difference <= tolerance
        verdict = f" DISAGREES (tolerance {tolerance:g})" if self.disagrees else ""
        self.agreement = f"max \\|Δ {what}\\| = {difference:.1e}{verdict}{extra}"


def measure(fn: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    """Best wall time of ``repeats`` calls, then the peak traced memory (MiB) of one more."""
    best, result = np.inf, None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return best, peak / 2**20, result


def missing_peer(task: str, data: Dataset, tool: str, error: ImportError) -> Row:
    name = error.name or str(error)
    return Row(task, data.label, tool, note=f"skipped: {name} not installed (`.[bench]` extra)")


def timed(task: str, data: Dataset, tool: str, fn: Callable[[], object], run: Run) -> Row:
    """Time a call that does the whole task at once (rankci, or a vectorised peer).

    A peer that exceeded the budget on a smaller data set is not run again on larger ones."""
    if (task, tool) in run.slow:
        seconds, where = run.slow[(task, tool)]
        return Row(task, data.label, tool, note=f"skipped: took {seconds:.0f} s on {where}")
    try:
        seconds, peak, result = measure(fn, run.repeats)
    except ImportError as error:
        return missing_peer(task, data, tool, error)
    if seconds > run.budget and not tool.startswith("rankci"):
        run.slow[(task, tool)] = (seconds, data.label)
    return Row(task, data.label, tool, seconds, peak, result=result)


def scaled(
    task: str,
    data: Dataset,
    tool: str,
    fn: Callable[[int], object],
    total: int,
    run: Run,
    *,
    cost: Callable[[int], float] = float,
    probe: int = 20,
    warm: int | None = 2,
    unit: str = "pairs",
) -> Row:
    """Time ``fn(total)``, or ``fn(k)`` on the first k units and scale by ``cost(total)/cost(k)``.

    ``fn(k)`` runs the peer on the first ``k`` of ``total`` units (pairs, models, clusters) and
    ``cost(k)`` is the work that takes (k for a loop over pairs, k(k-1)/2 for k models' pairs).
    ``fn(warm)`` runs once first (imports, caches); ``warm=None`` skips that for costly peers.
    The row's ``result`` is ``(k, fn(k))`` when the peer ran on a part, else ``fn(total)``.
    """
    probe = min(probe, total)
    try:
        if warm is not None:
            fn(min(warm, total))  # imports and caches are not the per-unit cost
        start = time.perf_counter()
        probe_result = fn(probe)
        per_cost = (time.perf_counter() - start) / cost(probe)
    except ImportError as error:
        return missing_peer(task, data, tool, error)
    if per_cost * cost(total) <= run.budget:
        seconds, peak, result = measure(lambda: fn(total), run.repeats)
        return Row(task, data.label, tool, seconds, peak, result=result)
    k = probe
    while k < total and per_cost * cost(k + 1) <= run.budget / 4:
        k += 1
    if k == probe:  # the probe is already the largest part: time it again only for memory
        seconds, peak, result = measure(lambda: fn(k), 0)
        seconds, result = per_cost * cost(probe), probe_result
    else:
        seconds, peak, result = measure(lambda: fn(k), 1)
    return Row(
        task,
        data.label,
        tool,
        seconds * cost(total) / cost(k),
        peak,
        extrapolated=True,
        note=f"timed on {k:,} of {total:,} {unit}, scaled up",
        result=(k, result),
    )


def rscript_with(package: str) -> str | None:
    """Path of Rscript when it exists and can load ``package``, else None."""
    path = shutil.which("Rscript")
    if path is None:
        return None
    done = subprocess.run(
        [path, "-e", f"quit(status = !requireNamespace('{package}', quietly = TRUE))"],
        capture_output=True,
        timeout=120,
    )
    return path if done.returncode == 0 else None


def run_r(rscript: str, code: str) -> tuple[float, float]:
    """Run R ``code`` whose last output is its own timing (``cat(system.time(...)[[3]])``):
    returns (seconds inside R, wall seconds of the Rscript process)."""
    start = time.perf_counter()
    done = subprocess.run([rscript, "-e", code], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1]), time.perf_counter() - start


def r_unavailable(task: str, data: Dataset, tool: str, package: str) -> Row:
    reason = "Rscript not found" if shutil.which("Rscript") is None else f"R lacks {package}"
    return Row(task, data.label, tool, note=f"skipped: {reason} on this machine")


# ---------------------------------------------------------------------- table
COLUMNS = (
    "| task | data (models × items) | tool | time (s) | peak memory (MiB) | × rankci time "
    "| agreement with rankci | note |"
)


def markdown(rows: list[Row]) -> str:
    lines = [COLUMNS, "|---|---|---|---:|---:|---:|---|---|"]
    base: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.tool.startswith("rankci") and row.seconds is not None:
            base.setdefault((row.task, row.data), row.seconds)
    for row in rows:
        if row.seconds is None:
            time_text = ratio = memory = "—"
        else:
            mark = "> " if row.lower_bound else "≈ " if row.extrapolated else ""
            time_text = f"{mark}{row.seconds:.3g}"
            memory = f"{row.peak_mib:.0f}" if row.peak_mib is not None else "—"
            rankci_time = row.rankci_seconds or base.get((row.task, row.data))
            if row.tool.startswith("rankci"):
                ratio = "1"
            elif rankci_time:
                ratio = f"{mark}{row.seconds / rankci_time:.3g}"
            else:
                ratio = "—"
        lines.append(
            f"| {row.task} | {row.data} | {row.tool} | {time_text} | {memory} | {ratio} | "
            f"{row.agreement} | {row.note} |"
        )
    return "\n".join(lines)
