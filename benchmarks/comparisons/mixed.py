"""The mixed model score ~ model + (1|cluster) + (1|cluster:item): rankci against statsmodels
MixedLM (a variance component for the items) and, when R is here, lme4/lmerTest.

statsmodels' fit can take hours on the larger data sets, and a fit cannot be interrupted from
inside the process, so it runs in a child process with a time limit: first on 2 clusters (a
probe), then on all clusters if the probe says that fits the budget, else on as many clusters as
fit a quarter of it, scaled up by clusters. A probe that does not finish gives a lower bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import rankci

from .harness import Dataset, Row, Run, r_unavailable, rscript_with, run_r, timed

#: the child: fit, then print seconds, peak-RSS growth (MiB) and the estimates as JSON
CHILD = """
import json, sys, time, warnings
import pandas as pd
import statsmodels.formula.api as smf


def status(field):  # kB figures of this process from /proc/self/status
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))


frame = pd.read_parquet(sys.argv[1])
before = status("VmRSS:")
try:  # reset the peak resident size, so that VmHWM is the fit's own peak
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    reset = True
except OSError:
    reset = False
start = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # convergence chatter of its optimisers
    fit = smf.mixedlm("score ~ 0 + C(model)", frame, groups="cluster", re_formula="1",
                      vc_formula={"item": "0 + C(item)"}).fit(reml=True)
seconds = time.perf_counter() - start
peak = (status("VmHWM:") - before) / 1024 if reset else None
print(json.dumps({"seconds": seconds, "peak_mib": peak, "fe": fit.fe_params.tolist(),
                  "item": float(fit.vcomp[0]), "residual": float(fit.scale),
                  "reml_criterion": -2 * float(fit.llf)}))
"""

LME4 = """
d <- read.csv("{dir}/scores.csv")
d$model <- factor(d$model); d$cluster <- factor(d$cluster); d$item <- factor(d$item)
t <- system.time(f <- lmerTest::lmer(score ~ model + (1 | cluster) + (1 | cluster:item),
                                     data = d, REML = TRUE))[["elapsed"]]
v <- as.data.frame(lme4::VarCorr(f))
write.csv(v[, c("grp", "vcov")], "{dir}/vc.csv", row.names = FALSE)
cat(t)
"""


def mixed_model(data: Dataset, run: Run) -> list[Row]:
    task = "mixed model (REML, 2 variance components)"
    own = timed(
        task, data, "rankci mixed_model", lambda: rankci.mixed_model(data.scores, tukey=False), run
    )
    return [own, _statsmodels(task, data, run, own), _lme4(task, data, own)]


def _fit_in_child(data: Dataset, clusters: int, timeout: float) -> dict | None:
    """statsmodels' fit on the first ``clusters`` clusters; None when it exceeds ``timeout``."""
    part = data.clusters_subset(clusters) if clusters < data.n_clusters else data
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores.parquet"
        part.frame.to_parquet(path)
        try:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(path)],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return None
    return json.loads(done.stdout.splitlines()[-1])


def _statsmodels(task: str, data: Dataset, run: Run, own: Row) -> Row:
    tool = "statsmodels MixedLM (vc_formula for items)"
    total, probe = data.n_clusters, min(2, data.n_clusters)
    limit = max(4 * run.budget, 60.0)  # a probe on 2 small clusters can take 20 s under load
    fit = _fit_in_child(data, probe, limit)
    if fit is None:
        return Row(
            task,
            data.label,
            tool,
            limit * total / probe,
            lower_bound=True,
            note=f"{probe} of {total} clusters did not finish in {limit:g} s",
        )
    per_cluster, used = fit["seconds"] / probe, probe
    # all clusters if the probe says they fit the budget, else as many as fit a quarter of it
    more = total if per_cluster * total <= run.budget else int(run.budget / 4 / per_cluster)
    if probe < more <= total:
        bigger = _fit_in_child(data, more, limit)
        if bigger is not None:  # else keep the probe (the part that finished)
            fit, used = bigger, more
    scaled = used < total
    seconds = fit["seconds"] * (total / used if scaled else 1.0)
    row = Row(
        task,
        data.label,
        tool,
        seconds,
        fit["peak_mib"],
        extrapolated=scaled,
        note="peak memory: the child's peak resident size during the fit",
    )
    if scaled:
        row.note = (
            f"timed on {used} of {total} clusters, scaled up (iterations may differ); "
            "agreement on that part; " + row.note
        )
    reference = own.result
    if scaled:
        reference = rankci.mixed_model(data.clusters_subset(used).scores, tukey=False)
    difference = float(np.max(np.abs(np.asarray(fit["fe"]) - reference.emmean)))
    vc = reference.variance_components
    relative = max(
        abs(fit["item"] - vc["item"]) / vc["item"],
        abs(fit["residual"] - vc["residual"]) / vc["residual"],
    )
    row.agree(
        "model means",
        difference,
        1e-6,  # unbalanced parts: GLS means move with the variance estimates (optimiser tolerance)
        f"; item and residual variance within {relative:.0e} (relative)",
    )
    if difference > 1e-6 or relative > 1e-3:
        # two REML fits of the same model differ: the one with the lower -2 log L_R is right
        ours, theirs = reference.reml_criterion, fit["reml_criterion"]
        if ours < theirs - 1e-6 * abs(theirs):
            row.disagrees = False
            row.agreement = (
                f"statsmodels stopped short of the REML optimum: −2 log L_R {theirs:.3f} against "
                f"rankci's {ours:.3f} (max \\|Δ model means\\| = {difference:.1e}, variances "
                f"{relative:.0e} relative)"
            )
        else:
            row.disagrees = True
            row.agreement += (
                f" DISAGREES (variance tolerance 1e-3; −2 log L_R {theirs:.3f} "
                f"against rankci's {ours:.3f})"
            )
    return row


def _lme4(task: str, data: Dataset, own: Row) -> Row:
    tool = "R lmerTest::lmer"
    rscript = rscript_with("lmerTest")
    if rscript is None:
        return r_unavailable(task, data, tool, "lmerTest")
    with tempfile.TemporaryDirectory() as tmp:
        frame = data.frame.assign(cluster="c" + data.frame["cluster"].astype(str))
        frame = frame.assign(item=frame["cluster"] + ":" + frame["item"].astype(str))
        frame.to_csv(Path(tmp) / "scores.csv", index=False)
        inside, _ = run_r(rscript, LME4.format(dir=tmp))
        vc = pd.read_csv(Path(tmp) / "vc.csv").set_index("grp")["vcov"]
    row = Row(
        task,
        data.label,
        tool,
        inside,
        None,
        note="time inside R, excluding reading the CSV",
    )
    if own.result is not None:
        ours = own.result.variance_components
        row.agree(
            "residual variance (relative)",
            abs(vc["Residual"] - ours["residual"]) / ours["residual"],
            1e-4,
        )
    return row
