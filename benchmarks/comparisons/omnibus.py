"""Repeated-measures ANOVA and Friedman's test: rankci against pingouin, statsmodels and scipy."""

from __future__ import annotations

import warnings

import rankci

from .harness import Dataset, Row, Run, timed

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
    return rows


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
