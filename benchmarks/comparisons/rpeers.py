"""R's anchors, run in the same run as rankci: lme4/lmerTest, pbkrtest, emmeans and car.

Each R peer is one ``Rscript`` process on data written to a temporary CSV. The script records
``proc.time()`` after each step, so the run separates

* **startup**: R's own start and loading the packages (``library``),
* **read**: ``read.csv`` of the data,
* **the steps timed against rankci**: the fit, the F test, the contrasts, the ANOVA,

and writes its results as CSV files that are read back here (never parsed from printed output).
The rows quote the steps' time; startup and reading are in the note, so a ratio to rankci is the
computation against the computation.

Install (Debian): ``apt-get install r-base-core r-cran-lme4 r-cran-lmertest r-cran-emmeans
r-cran-car r-cran-pbkrtest`` (``.ci/run`` does it in CI). Without ``Rscript`` every R row says
it was skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

#: shared head of every script: the output folder, the step clock and the CSV writer
PROLOGUE = r"""
args <- commandArgs(trailingOnly = TRUE)
dir <- args[[1]]
.clock <- c(startup = proc.time()[["elapsed"]])
.last <- proc.time()[["elapsed"]]
step <- function(name) {
  now <- proc.time()[["elapsed"]]
  .clock[[name]] <<- now - .last
  .last <<- now
}
out <- function(x, name) write.csv(x, file.path(dir, paste0(name, ".csv")), row.names = FALSE)
finish <- function() out(data.frame(step = names(.clock), seconds = unname(.clock)), "timings")
"""


@dataclass
class RResult:
    """What one R script wrote: its step timings (s), its tables, and the process's wall time."""

    timings: dict[str, float]
    tables: dict[str, pd.DataFrame]
    wall: float

    def seconds(self, *steps: str) -> float:
        return float(sum(self.timings[s] for s in steps))

    @property
    def setup_note(self) -> str:
        t = self.timings
        return (
            f"R startup + packages {t['startup'] + t.get('packages', 0.0):.2g} s, read.csv "
            f"{t.get('read', 0.0):.2g} s "
            f"(Rscript process {self.wall:.3g} s in all)"
        )


def rscript(*packages: str) -> str | None:
    """Path of ``Rscript`` when it exists and loads every one of ``packages``, else None."""
    path = shutil.which("Rscript")
    if path is None:
        return None
    test = " && ".join(f"requireNamespace('{p}', quietly = TRUE)" for p in packages) or "TRUE"
    done = subprocess.run(
        [path, "-e", f"quit(status = !({test}))"], capture_output=True, timeout=120
    )
    return path if done.returncode == 0 else None


def missing_reason(*packages: str) -> str:
    """Why :func:`rscript` returned None, as a row's note."""
    if shutil.which("Rscript") is None:
        return "skipped: Rscript not found on this machine"
    return f"skipped: R lacks {' or '.join(packages)} on this machine"


def run(
    path: str,
    body: str,
    inputs: dict[str, pd.DataFrame],
    outputs: tuple[str, ...],
    args: tuple[str, ...] = (),
) -> RResult:
    """Write ``inputs`` as CSV, run ``PROLOGUE + body`` and read back ``outputs`` and timings.

    The script's ``args[[1]]`` is the folder of the CSV files, ``args[[2]], ...`` are ``args``.
    ``body`` loads its packages and calls ``step("packages")``, reads its CSV and calls
    ``step("read")``, then ``step(name)`` after each timed step, and ends with ``finish()``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        for name, frame in inputs.items():
            frame.to_csv(Path(tmp) / f"{name}.csv", index=False)
        script = Path(tmp) / "run.R"
        script.write_text(PROLOGUE + body)
        start = time.perf_counter()
        done = subprocess.run([path, str(script), tmp, *args], capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"Rscript failed:\n{done.stderr[-3000:]}")
        timings = pd.read_csv(Path(tmp) / "timings.csv").set_index("step")["seconds"]
        tables = {name: pd.read_csv(Path(tmp) / f"{name}.csv") for name in outputs}
    return RResult({k: float(v) for k, v in timings.items()}, tables, wall)
