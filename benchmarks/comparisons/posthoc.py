"""Tukey's HSD after the repeated-measures ANOVA: rankci against R's emmeans.

The peer is ``emmeans(lm(score ~ model + item), pairwise ~ model, adjust = "tukey")``: the
two-way additive model has the RM-ANOVA's error mean square on (n-1)(k-1) df, so its Tukey
contrasts are the same quantity as :func:`rankci.tukey_hsd`. ``lm`` builds a dense design with
one column per item, so it runs on the first items that keep the rows under :data:`ROWS`, and
its ratio is to rankci on the same items. No Python library has this within-subjects Tukey
(statsmodels' and pingouin's are between-subjects), so R is the only peer.
"""

from __future__ import annotations

import numpy as np

import rankci

from . import rpeers
from .harness import Dataset, Row, Run, timed

EMMEANS = r"""
suppressPackageStartupMessages(library(emmeans))
step("packages")
d <- read.csv(file.path(dir, "scores.csv"), colClasses = c("character", "character", "numeric"))
d$model <- factor(d$model); d$item <- factor(d$item)
step("read")
f <- lm(score ~ model + item, data = d)
e <- emmeans(f, ~ model, nuisance = "item")
ct <- as.data.frame(summary(pairs(e, adjust = "tukey")))
step("tukey")
out(ct[, c("contrast", "estimate", "SE", "df", "p.value")], "contrasts")
finish()
"""

#: rows of the long table the R peer fits (its design has one column per item)
ROWS = 10_000
#: ... in --quick, which checks that the peer runs and agrees, not its time: lm's dense QR on
#: 10,000 rows x 1,000 item columns is 7 of the quick run's 42 s, on 2,000 rows (200 items) 0.3 s
QUICK_ROWS = 2_000
#: pairs emmeans takes: beyond, the first models' (79,800 pairs of 400 models ran > 10 min)
PAIRS = 5_000
#: tolerances: estimates (absolute), SE and df (relative), Tukey p-values (absolute). R's
#: ``ptukey`` is accurate to a few 1e-6 (at q = 3.96, k = 100, df = 9,801 it gives 0.9752246,
#: where scipy's ``studentized_range.sf`` and rankci give 0.9752229), and above 25,000 df it uses
#: the infinite-df range, where rankci and scipy switch at 100,000 df (a 2e-5 difference at
#: df = 95,000, k = 20); hence 1e-4, not rounding
TOL_ESTIMATE, TOL_SE, TOL_P = 1e-10, 1e-8, 1e-4


def tukey(data: Dataset, run: Run) -> list[Row]:
    task = "Tukey HSD (post-hoc, RM design)"
    own = timed(task, data, "rankci tukey_hsd", lambda: rankci.tukey_hsd(data.units), run)
    tool = "R emmeans pairs (lm, adjust = 'tukey')"
    path = rpeers.rscript("emmeans")
    if path is None:
        return [own, Row(task, data.label, tool, note=rpeers.missing_reason("emmeans"))]
    models = data.n_models
    while models * (models - 1) // 2 > PAIRS:
        models -= 1
    k = min(data.n_items, max(10, (QUICK_ROWS if run.quick else ROWS) // models))
    part = (
        data
        if (k, models) == (data.n_items, data.n_models)
        else Dataset(
            f"{data.label}, first {k:,} items of the first {models} models",
            data.matrix[:k, :models],
            data.clusters[:k],
        )
    )
    same = timed(task, part, "rankci tukey_hsd", lambda: rankci.tukey_hsd(part.units), run)
    frame = part.frame[["item", "model", "score"]]
    result = rpeers.run(path, EMMEANS, {"scores": frame}, ("contrasts",))
    row = Row(
        task,
        data.label,
        tool,
        result.seconds("tukey"),
        None,
        note=f"on the first {k:,} items"
        + (f" of the first {models} models" if models < data.n_models else "")
        + f" (rankci there: {same.seconds:.2g} s): lm's dense "
        f"design has a column per item; {result.setup_note}",
        rankci_seconds=same.seconds,
    )
    table, ours = result.tables["contrasts"], same.result
    pairs = table["contrast"].str.split(" - ", expand=True)
    mine = ours.table.set_index(["first", "second"]).reindex(list(zip(pairs[0], pairs[1])))
    if mine["estimate"].isna().any():
        row.agreement, row.disagrees = "the contrasts do not name the same pairs DISAGREES", True
        return [own, row]
    se_gap = float(np.max(np.abs(table["SE"].to_numpy() / mine["se"].to_numpy() - 1)))
    df_gap = float(np.max(np.abs(table["df"].to_numpy() / ours.df - 1)))
    p_gap = float(np.max(np.abs(table["p.value"].to_numpy() - mine["p_adjusted"].to_numpy())))
    row.agree(
        "estimate",
        float(np.max(np.abs(table["estimate"].to_numpy() - mine["estimate"].to_numpy()))),
        TOL_ESTIMATE,
        f"; \\|Δ SE\\| {se_gap:.0e}, \\|Δ df\\| {df_gap:.0e} (relative), "
        f"\\|Δ Tukey p\\| {p_gap:.0e} over {len(table):,} pairs",
    )
    if not (se_gap <= TOL_SE and df_gap <= TOL_SE and p_gap <= TOL_P):
        row.disagrees = True
        row.agreement += f" DISAGREES (SE and df {TOL_SE:g}, p {TOL_P:g})"
    return [own, row]
