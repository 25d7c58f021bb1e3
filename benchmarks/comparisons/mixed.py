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

from . import rpeers
from .harness import Dataset, Row, Run, timed

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

#: R: read the scores (step "read"), then lme4's REML fit of the mixed model (step "fit")
LMER_FIT = r"""
d <- read.csv(file.path(dir, "scores.csv"), colClasses = c("character", "character", "numeric",
                                                           "character"))
d$model <- factor(d$model); d$cluster <- factor(d$cluster); d$item <- factor(d$item)
step("read")
f <- lme4::lmer(score ~ model + (1 | cluster) + (1 | cluster:item), data = d, REML = TRUE)
step("fit")
"""

#: lme4's fit, lmerTest's Satterthwaite F and emmeans' contrasts, each step timed on its own
LME4 = (
    r"""
suppressPackageStartupMessages({ library(lme4); library(lmerTest); library(emmeans) })
emm_options(lmerTest.limit = Inf, disable.pbkrtest = TRUE)  # Satterthwaite df at any size
step("packages")
"""
    + LMER_FIT
    + r"""
ft <- lmerTest::as_lmerModLmerTest(f)  # the Jacobian of vcov(beta) in theta, then the F test
a <- anova(ft, type = 3, ddf = "Satterthwaite")
step("F")
k <- as.integer(args[[2]])  # pairs of the first k models
e <- emmeans(ft, ~ model, lmer.df = "satterthwaite")
if (k < nlevels(d$model)) e <- e[seq_len(k)]
ct <- as.data.frame(summary(pairs(e, adjust = "none")))
ct$p.tukey <- summary(pairs(e, adjust = "tukey"))$p.value
step("emmeans")
v <- as.data.frame(VarCorr(f))
out(data.frame(grp = v$grp, vcov = v$vcov), "vc")
out(data.frame(reml = REMLcrit(f)), "reml")
out(data.frame(F = a[["F value"]], NumDF = a$NumDF, DenDF = a$DenDF, p = a[["Pr(>F)"]]), "anova")
out(ct[, c("contrast", "estimate", "SE", "df", "p.value", "p.tukey")], "contrasts")
finish()
"""
)

#: lme4 stores X densely: the R rows run on as many whole clusters as keep rows x models under
#: this (the ratio is then to rankci on the same clusters)
R_CELLS = 2e7
#: lme4 runs up to this many models (100 models on 5 of 40 clusters took 200 s here)
R_MODELS = 100
#: emmeans' contrasts: all pairs up to this many, else the pairs of the first models
R_PAIRS = 5_000
#: the agreement tolerances of the R rows
TOL_VARIANCE, TOL_F, TOL_DF = 1e-3, 1e-4, 1e-3
TOL_ESTIMATE, TOL_SE, TOL_P = 1e-6, 1e-4, 1e-4


def mixed_model(data: Dataset, run: Run) -> list[Row]:
    task = "mixed model (REML, 2 variance components)"
    own = timed(
        task, data, "rankci mixed_model", lambda: rankci.mixed_model(data.scores, tukey=False), run
    )
    return [own, _statsmodels(task, data, run, own), *_lme4(task, data, run, own)]


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


def _relative(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def _r_part(data: Dataset) -> tuple[Dataset, int]:
    """The whole data, or its first clusters (at least 2) within :data:`R_CELLS`."""
    cells = np.cumsum(np.bincount(data.clusters) * data.n_models) * data.n_models
    fits = int(np.searchsorted(cells, R_CELLS, side="right"))
    used = min(data.n_clusters, max(2, fits))
    return (data if used == data.n_clusters else data.clusters_subset(used)), used


def _lme4(task: str, data: Dataset, run: Run, own: Row) -> list[Row]:
    """lme4 + lmerTest (fit, Satterthwaite F) and emmeans (pairwise contrasts) on the same data."""
    fit_tool, emm_tool = "R lme4::lmer + lmerTest anova (Satterthwaite F)", "R emmeans pairs"
    path = rpeers.rscript("lme4", "lmerTest", "emmeans")
    if path is None:
        reason = rpeers.missing_reason("lme4", "lmerTest", "emmeans")
        return [Row(task, data.label, tool, note=reason) for tool in (fit_tool, emm_tool)]
    part, used = _r_part(data)
    if data.n_models > R_MODELS:
        note = (
            f"skipped: more than {R_MODELS} models (lme4's and lmerTest's work grows with "
            f"rows × models², {part.n_items * part.n_models:,} rows even on {used} clusters)"
        )
        return [Row(task, data.label, tool, note=note) for tool in (fit_tool, emm_tool)]
    k = data.n_models
    while k * (k - 1) // 2 > R_PAIRS:
        k -= 1
    frame = part.frame.assign(cluster="c" + part.frame["cluster"].astype(str))
    frame = frame.assign(item=frame["cluster"] + ":" + frame["item"].astype(str))
    result = rpeers.run(
        path,
        LME4,
        {"scores": frame[["item", "model", "score", "cluster"]]},
        ("vc", "reml", "anova", "contrasts"),
        args=(str(k),),
    )
    if part is data:
        reference, where = own.result, ""
    else:  # rankci on the same clusters, timed as its own row would be
        same = timed(task, part, "rankci mixed_model", lambda: _fit(part, False), run)
        reference = same.result
        where = (
            f"on the first {used} of {data.n_clusters} clusters "
            f"(rankci there: {same.seconds:.3g} s); "
        )
    fit_row = Row(
        task,
        data.label,
        fit_tool,
        result.seconds("fit", "F"),
        None,
        note=f"{where}fit {result.timings['fit']:.3g} s + F {result.timings['F']:.3g} s; "
        + result.setup_note,
    )
    emm_row = Row(
        task,
        data.label,
        emm_tool,
        result.seconds("emmeans"),
        None,
        note=f"{where}{len(result.tables['contrasts']):,} pairs"
        + (f" of the first {k} models" if k < data.n_models else "")
        + ", Satterthwaite df, on the lmer fit; ratio to rankci's whole fit",
    )
    if part is not data:
        fit_row.rankci_seconds = emm_row.rankci_seconds = same.seconds
    _agree_fit(fit_row, result, reference)
    _agree_contrasts(emm_row, result, _fit(part, True) if k == data.n_models else reference)
    return [fit_row, emm_row]


def _fit(data: Dataset, tukey: bool):
    return rankci.mixed_model(data.scores, tukey=tukey)


def _agree_fit(row: Row, result: rpeers.RResult, ours) -> None:
    names = {"cluster:item": "item", "cluster": "cluster", "Residual": "residual"}
    vc = result.tables["vc"].assign(grp=lambda t: t["grp"].map(names)).set_index("grp")["vcov"]
    keys = [key for key in ("cluster", "item", "residual") if key in vc.index]
    variance = _relative([vc[key] for key in keys], [ours.variance_components[key] for key in keys])
    anova = result.tables["anova"].iloc[0]
    test = ours.model_test
    f_gap = _relative(anova["F"], test["F"])
    df_gap = _relative(anova["DenDF"], test["df_den"])
    theirs, mine = float(result.tables["reml"]["reml"].iloc[0]), ours.reml_criterion
    row.agree(
        "variance components (relative)",
        variance,
        TOL_VARIANCE,
        f"; F {anova['F']:.6g} on ({anova['NumDF']:g}, {anova['DenDF']:.6g}) df, "
        f"\\|Δ F\\| {f_gap:.0e}, \\|Δ df\\| {df_gap:.0e} (relative); "
        f"−2 log L_R {theirs:.6g} against {mine:.6g}",
    )
    if f_gap > TOL_F or df_gap > TOL_DF or abs(theirs - mine) > 1e-6 * max(abs(mine), 1.0):
        row.disagrees = True
        row.agreement += f" DISAGREES (F tolerance {TOL_F:g}, df {TOL_DF:g}, −2 log L_R 1e-6)"
    # the three variance components as lme4 gave them, for the reader
    row.agreement += "; lme4: " + ", ".join(f"{key} {vc[key]:.4g}" for key in keys)


def _agree_contrasts(row: Row, result: rpeers.RResult, ours) -> None:
    table = result.tables["contrasts"]
    pairs = table["contrast"].str.split(" - ", expand=True)
    mine = ours.contrasts.set_index(["first", "second"])
    both = mine.reindex(pd.MultiIndex.from_arrays([pairs[0], pairs[1]]))
    if both["estimate"].isna().any():
        row.agreement, row.disagrees = "the contrasts do not name the same pairs DISAGREES", True
        return
    gaps = {
        "estimate": float(np.max(np.abs(table["estimate"].to_numpy() - both["estimate"]))),
        "SE": _relative(table["SE"], both["se"]),
        "df": _relative(table["df"], both["df"]),
        "p": float(np.max(np.abs(table["p.value"].to_numpy() - both["p"]))),
    }
    extra = (
        f"; \\|Δ SE\\| {gaps['SE']:.0e}, \\|Δ df\\| {gaps['df']:.0e} (relative), "
        f"\\|Δ p\\| {gaps['p']:.0e}"
    )
    if both["p_tukey"].notna().all():
        gaps["p_tukey"] = float(np.max(np.abs(table["p.tukey"].to_numpy() - both["p_tukey"])))
        extra += f", \\|Δ Tukey p\\| {gaps['p_tukey']:.0e}"
    row.agree("estimate", gaps["estimate"], TOL_ESTIMATE, extra)
    worst = max(
        gaps["SE"] / TOL_SE,
        gaps["df"] / TOL_DF,
        gaps["p"] / TOL_P,
        gaps.get("p_tukey", 0.0) / TOL_P,
    )
    if worst > 1:
        row.disagrees = True
        row.agreement += f" DISAGREES (SE {TOL_SE:g}, df {TOL_DF:g}, p {TOL_P:g})"
