"""Kenward-Roger's F test of the mixed model: rankci against R's pbkrtest, in the same run.

``rankci.mixed_model(..., df="kenward-roger")`` computes the type-III F test of "all model means
equal" with Kenward-Roger's adjusted covariance, scaled F and denominator df; R's anchor is
lme4's fit of ``score ~ model + (1|cluster) + (1|cluster:item)`` followed by
``pbkrtest::KRmodcomp(fit, L)`` with ``L`` the K - 1 treatment contrasts of the model effects
(the same hypothesis as ``KRmodcomp(fit, update(fit, . ~ . - model))``, which
``validation/kenward_roger_oracle.R`` uses, without refitting the null model).

Kenward-Roger needs each cluster's covariance densely (rankci refuses designs above
``rankci.mixed.kenward_roger.MAX_PADDED``; pbkrtest inverts the whole n x n covariance), so the
rows run on a part of each data set: the first items of every cluster up to :data:`KR_ROWS` rows,
made unbalanced as the oracle script makes its subsets (Kenward-Roger and Satterthwaite coincide
on balanced designs): every third row of the third model and the sixth model in the first four
clusters are dropped. The unbalanced ChemBench subset (the issue's example) is measured once per
run, with the first data set.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import rankci

from . import rpeers
from .harness import Dataset, Row, Run, measure
from .mixed import LMER_FIT

#: the Kenward-Roger parts have at most this many rows (pbkrtest inverts n x n densely)
KR_ROWS = 3_000
#: up to this many models: rankci's Kenward-Roger algebra grows as models^2 x blocks x rows^2
#: (100 models on 10 clusters of 300 rows took 180 s here, against seconds for 20 or 32 models)
KR_MODELS = 40
#: agreement with pbkrtest: F, its denominator df (relative) and p (absolute)
TOL_F, TOL_DF, TOL_P = 1e-6, 1e-6, 1e-6
#: ChemBench subset: the first CHEM_MODELS systems, 1 in CHEM_SHARE items of each topic
CHEM_MODELS, CHEM_SHARE = 10, 25

TASK = "mixed model, Kenward–Roger F (REML)"
TOOL = "R lme4::lmer + pbkrtest::KRmodcomp (Kenward–Roger F)"

#: lme4's fit, then pbkrtest's Kenward-Roger F test of the model effects, each step timed
KR_R = (
    r"""
suppressPackageStartupMessages({ library(lme4); library(pbkrtest) })
step("packages")
"""
    + LMER_FIT
    + r"""
k <- nlevels(d$model)
L <- cbind(0, diag(k - 1))  # every treatment effect zero: all model means equal
kr <- KRmodcomp(f, L)
step("KR")
st <- kr$stats
out(data.frame(F = st$Fstat, F_unscaled = st$FstatU, scale = st$F.scaling, df_num = st$ndf,
               df_den = st$ddf, p = st$p.value), "ftest")
out(data.frame(theta = getME(f, "theta")), "theta")
finish()
"""
)


def kenward_roger(data: Dataset, run: Run) -> list[Row]:
    """Rows of the Kenward-Roger part of ``data`` (and, once per run, of ChemBench's subset)."""
    rows = _compare(*_part(data), run)
    if "kr-chembench" not in run.done:
        run.done.add("kr-chembench")
        rows += _compare(*chembench_subset(), run)
    return rows


def _unbalance(frame: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Drop every third row of the third model and the sixth model's rows in the first four
    clusters (as ``validation/kenward_roger_oracle.R`` does to its small design)."""
    keep = np.ones(len(frame), dtype=bool)
    if len(models) > 2:
        third = np.flatnonzero(frame["model"].to_numpy() == models[2])
        keep[third[2::3]] = False
    if len(models) > 5:
        first = sorted(frame["cluster"].unique())[:4]
        keep &= ~((frame["model"] == models[5]) & frame["cluster"].isin(first)).to_numpy()
    return frame[keep].reset_index(drop=True)


def _part(data: Dataset) -> tuple[str, pd.DataFrame | None, str]:
    """(label, long frame or None, where: the part or why not) of the Kenward-Roger part of
    ``data``: the first 3 or more items of as many clusters as keep it within :data:`KR_ROWS`
    rows, unbalanced by :func:`_unbalance`."""
    k = data.n_models
    if k > KR_MODELS:
        return (
            data.label,
            None,
            (
                f"skipped: more than {KR_MODELS} models (rankci's Kenward–Roger algebra grows as "
                "models² × clusters × rows per cluster²)"
            ),
        )
    clusters = min(data.n_clusters, KR_ROWS // (3 * k))
    per = KR_ROWS // (clusters * k)
    first_items = (
        data.frame[["item", "cluster"]].drop_duplicates().groupby("cluster").head(per)["item"]
    )
    frame = data.frame[data.frame["item"].isin(first_items) & (data.frame["cluster"] < clusters)]
    frame = frame.assign(cluster="c" + frame["cluster"].astype(str).str.zfill(3))
    frame = frame.assign(item=frame["cluster"] + ":" + frame["item"].astype(str))
    frame = _unbalance(frame, data.model_names)
    where = f"on the first {per} items of {clusters} clusters, unbalanced ({len(frame):,} rows)"
    return data.label, frame[["item", "model", "score", "cluster"]], where


def chembench_subset() -> tuple[str, pd.DataFrame, str]:
    """ChemBench's first :data:`CHEM_MODELS` systems (by name) on the first 1 in
    :data:`CHEM_SHARE` questions of each topic (at least one), made unbalanced as above."""
    frame = rankci.datasets.load_chembench(as_frame=True)
    frame = frame.astype({"model": str, "item": str, "cluster": str, "score": float})
    models = sorted(frame["model"].unique())[:CHEM_MODELS]
    items = frame[["item", "cluster"]].drop_duplicates().sort_values(["cluster", "item"])
    sizes = items.groupby("cluster")["item"].transform("size")
    rank = items.groupby("cluster").cumcount()
    chosen = items.loc[rank < np.ceil(sizes / CHEM_SHARE), "item"]
    part = frame[frame["model"].isin(models) & frame["item"].isin(chosen)]
    part = part.sort_values(["cluster", "item", "model"]).reset_index(drop=True)
    part = part.assign(item=part["cluster"] + ":" + part["item"].astype(str))
    part = _unbalance(part[["item", "model", "score", "cluster"]], models)
    n_items, n_topics = part["item"].nunique(), part["cluster"].nunique()
    label = f"ChemBench subset ({len(models)} × {n_items}, {n_topics} topics)"
    where = (
        f"1 in {CHEM_SHARE} questions of each topic, the first {len(models)} systems by name, "
        f"unbalanced ({len(part):,} rows)"
    )
    return label, part, where


def _fit(frame: pd.DataFrame, theta=None):
    scores = rankci.Scores.from_frame(frame, cluster="cluster")
    return rankci.mixed_model(scores, df="kenward-roger", tukey=False, theta=theta)


def _compare(label: str, frame: pd.DataFrame | None, where: str, run: Run) -> list[Row]:
    """rankci's row and pbkrtest's on ``frame`` (``where`` says which part; or why none)."""
    own_tool = "rankci mixed_model(df='kenward-roger')"
    if frame is None:
        return [Row(TASK, label, own_tool, note=where), Row(TASK, label, TOOL, note=where)]
    seconds, peak, fit = measure(lambda: _fit(frame), run.repeats)
    own = Row(TASK, label, own_tool, seconds, peak, note=where, result=fit)
    path = rpeers.rscript("lme4", "pbkrtest")
    if path is None:
        return [own, Row(TASK, label, TOOL, note=rpeers.missing_reason("lme4", "pbkrtest"))]
    result = rpeers.run(path, KR_R, {"scores": frame}, ("ftest", "theta"))
    row = Row(
        TASK,
        label,
        TOOL,
        result.seconds("fit", "KR"),
        None,
        note=f"{where}; fit {result.timings['fit']:.3g} s + KRmodcomp "
        f"{result.timings['KR']:.3g} s; " + result.setup_note,
    )
    _agree(row, result, own.result, frame)
    return [own, row]


def _gaps(theirs: pd.Series, test: dict) -> dict[str, float]:
    return {
        "F": abs(theirs["F"] - test["F"]) / abs(theirs["F"]),
        "df": abs(theirs["df_den"] - test["df_den"]) / abs(theirs["df_den"]),
        "p": abs(theirs["p"] - test["p"]),
    }


def _agree(row: Row, result: rpeers.RResult, ours, frame: pd.DataFrame) -> None:
    """F, denominator df (relative) and p of rankci's own fit against pbkrtest's; the same at
    lme4's theta (the Kenward-Roger algebra alone, without the two optimisers' tolerance)."""
    theirs = result.tables["ftest"].iloc[0]
    own = _gaps(theirs, ours.model_test)
    at_theta = _gaps(theirs, _fit(frame, result.tables["theta"]["theta"].to_numpy()).model_test)
    tolerance = {"F": TOL_F, "df": TOL_DF, "p": TOL_P}
    ratios = [gaps[key] / tolerance[key] for gaps in (own, at_theta) for key in tolerance]
    row.agree(
        "F (relative)",
        own["F"],
        TOL_F,
        f"; F {theirs['F']:.6g} on ({theirs['df_num']:g}, {theirs['df_den']:.6g}) df, "
        f"scale {theirs['scale']:.6g}, p {theirs['p']:.3g}; \\|Δ df\\| {own['df']:.0e} "
        f"(relative), \\|Δ p\\| {own['p']:.0e}; at lme4's theta: \\|Δ F\\| {at_theta['F']:.0e}, "
        f"\\|Δ df\\| {at_theta['df']:.0e}, \\|Δ p\\| {at_theta['p']:.0e}; "
        f"Satterthwaite's df on the same fit {_satterthwaite_df(frame):.4g}",
    )
    # the F gap alone decided ``agree``; the df and p gaps, and all three at lme4's theta, too
    if not all(ratio <= 1 for ratio in ratios) and not row.disagrees:  # (NaN fails)
        row.disagrees = True
        row.agreement += f" DISAGREES (F {TOL_F:g}, df {TOL_DF:g}, p {TOL_P:g})"


def _satterthwaite_df(frame: pd.DataFrame) -> float:
    scores = rankci.Scores.from_frame(frame, cluster="cluster")
    return float(rankci.mixed_model(scores, tukey=False).model_test["df_den"])
