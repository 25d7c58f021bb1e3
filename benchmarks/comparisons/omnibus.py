"""Repeated-measures ANOVA and Friedman's test: rankci against pingouin, statsmodels, scipy and
(when R is here) car's ``Anova`` with the Greenhouse-Geisser and Huynh-Feldt corrections."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

import rankci

from . import rpeers
from .harness import Dataset, Row, Run, timed

#: car's RM-ANOVA: the multivariate linear model Y ~ 1 on the items x models matrix, the model
#: factor as its within-design; univariate tests with sphericity corrections and Mauchly's test
CAR = r"""
suppressPackageStartupMessages(library(car))
step("packages")
Y <- as.matrix(read.csv(file.path(dir, "wide.csv"), check.names = FALSE))
step("read")
fit <- lm(Y ~ 1)
idata <- data.frame(model = factor(colnames(Y), levels = colnames(Y)))
a <- Anova(fit, idata = idata, idesign = ~ model, type = 3)
s <- suppressWarnings(summary(a, multivariate = FALSE))
step("anova")
u <- s$univariate.tests["model", ]; g <- s$pval.adjustments["model", ]
w <- s$sphericity.tests["model", ]
out(data.frame(F = u[["F value"]], num_df = u[["num Df"]], den_df = u[["den Df"]],
               p = u[["Pr(>F)"]], gg = g[["GG eps"]], p_gg = g[["Pr(>F[GG])"]],
               hf = g[["HF eps"]], p_hf = g[["Pr(>F[HF])"]], mauchly_w = w[["Test statistic"]],
               mauchly_p = w[["p-value"]]), "anova")
finish()
"""
#: car's agreement tolerance (relative on F, epsilons and W; absolute on p-values)
TOL_CAR = 1e-8

#: rows of statsmodels' AnovaRM design: it builds a dense (rows x rows) matrix of every
#: item-by-model cell, so it runs on as many items as keep that under 32 MiB
ANOVARM_ROWS = 2_000


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def rm_anova(data: Dataset, run: Run) -> list[Row]:
    task = "repeated-measures ANOVA"
    own = timed(task, data, "rankci rm_anova", lambda: rankci.rm_anova(data.units), run)
    rows = [own]

    def pingouin():
        import pingouin as pg

        return pg.rm_anova(data.frame, dv="score", within="model", subject="item", correction=True)

    peer = timed(task, data, "pingouin rm_anova (with sphericity)", pingouin, run)
    if peer.result is not None:
        table = peer.result.iloc[0]
        peer.agree(
            "F, GG ε (relative)",
            max(
                _relative(table["F"], own.result.F), _relative(table["eps"], own.result.gg_epsilon)
            ),
            1e-9,
        )
    rows.append(peer)

    k = max(2, ANOVARM_ROWS // data.n_models)
    part = data.items_subset(k)
    own_part = timed(task, part, "rankci rm_anova", lambda: rankci.rm_anova(part.units), run)

    def anovarm():
        from statsmodels.stats.anova import AnovaRM

        return AnovaRM(part.frame, "score", "item", within=["model"]).fit().anova_table

    peer = timed(task, data, "statsmodels AnovaRM", anovarm, run)
    full_gib = (data.n_items * data.n_models) ** 2 * 8 / 2**30
    peer.note = (
        f"on the first {k:,} items only (rankci there: {own_part.seconds:.2g} s): its "
        f"dense design needs {full_gib:,.0f} GiB for all"
    )
    peer.rankci_seconds = own_part.seconds
    if peer.result is not None:
        peer.agree(
            "F (relative)", _relative(peer.result["F Value"].iloc[0], own_part.result.F), 1e-9
        )
    rows.append(peer)
    rows.append(_car(task, data, own))
    return rows


def _car(task: str, data: Dataset, own: Row) -> Row:
    tool = "R car::Anova (type III, GG/HF, Mauchly)"
    path = rpeers.rscript("car")
    if path is None:
        return Row(task, data.label, tool, note=rpeers.missing_reason("car"))
    wide = pd.DataFrame(data.matrix, columns=data.model_names)
    result = rpeers.run(path, CAR, {"wide": wide}, ("anova",))
    row = Row(task, data.label, tool, result.seconds("anova"), None, note=result.setup_note)
    theirs, ours = result.tables["anova"].iloc[0], own.result
    relative = {
        "F": _relative(theirs["F"], ours.F),
        "GG ε": _relative(theirs["gg"], ours.gg_epsilon),
        "HF ε": _relative(theirs["hf"], ours.hf_epsilon),
    }
    p_names, p_ours = ["p", "p_gg", "p_hf"], [ours.p, ours.p_gg, ours.p_hf]
    extra = ""
    if np.isfinite(theirs["mauchly_w"]):
        relative["W"] = _relative(theirs["mauchly_w"], ours.mauchly_w)
        p_names.append("mauchly_p")
        p_ours.append(ours.mauchly_p)
    else:  # car takes det() of the unscaled error SSP matrix, which overflows for many models
        extra = (
            f"; car's Mauchly W overflowed ({theirs['mauchly_w']:g}, p = "
            f"{theirs['mauchly_p']:.3g}): not compared (rankci: W = {ours.mauchly_w:.4g}, "
            f"p = {ours.mauchly_p:.2g})"
        )
    p_gap = float(np.max(np.abs(theirs[p_names].to_numpy(float) - np.array(p_ours))))
    row.agree(
        f"{', '.join(relative)} (relative)",
        max(relative.values()),
        TOL_CAR,
        f"; \\|Δ {', '.join(p_names)}\\| = {p_gap:.0e}; car: GG ε {theirs['gg']:.4f}, "
        f"HF ε {theirs['hf']:.4f}{extra}",
    )
    if not p_gap <= TOL_CAR:
        row.disagrees = True
        row.agreement += f" DISAGREES (p tolerance {TOL_CAR:g})"
    return row


def friedman(data: Dataset, run: Run) -> list[Row]:
    task = "Friedman test"
    own = timed(task, data, "rankci friedman", lambda: rankci.friedman(data.units), run)
    rows = [own]

    def scipy_friedman():
        from scipy import stats

        return stats.friedmanchisquare(*data.matrix.T)

    peer = timed(task, data, "scipy friedmanchisquare", scipy_friedman, run)
    if peer.result is not None:
        peer.agree("χ² (relative)", _relative(peer.result.statistic, own.result.chi2), 1e-9)
    rows.append(peer)

    def pingouin():
        import pingouin as pg

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pg.friedman(data.frame, dv="score", within="model", subject="item")

    peer = timed(task, data, "pingouin friedman", pingouin, run)
    if peer.result is not None:
        q = float(peer.result["Q"].iloc[0])
        peer.agree("χ² (relative)", _relative(q, own.result.chi2), 1e-9)
    rows.append(peer)
    return rows
