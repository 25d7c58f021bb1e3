"""Paired tests for every pair of models + Holm: rankci against scipy loops and pingouin."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import rankci

from .harness import Dataset, Row, Run, scaled, timed


def two_sided(pvalue: np.ndarray) -> np.ndarray:
    """Two-sided p-values of the unordered pairs j < l (row-major order) from rankci's one-sided
    ``p[j, l]``: ``min(1, 2 min(p_jl, p_lj))``."""
    j, l = np.triu_indices(pvalue.shape[0], 1)
    return np.minimum(1.0, 2 * np.minimum(pvalue[j, l], pvalue[l, j]))


def _all_pairs(units: rankci.UnitScores, test: str) -> tuple[np.ndarray, np.ndarray]:
    """rankci's task: every pair's two-sided p-value, and the same Holm-adjusted."""
    p = two_sided(rankci.pairwise_tests(units, test).pvalue)
    return p, rankci.adjust_pvalues(p, "holm")


def _agree(row: Row, full: np.ndarray, part: Callable[[int], np.ndarray]) -> Row:
    """Compare with rankci's Holm-adjusted p-values ``full``, or, when the peer ran on its first
    k units only, with ``part(k)``."""
    if row.result is None:
        return row
    if row.extrapolated:
        k, result = row.result
        expected = part(k)
        row.note += "; agreement on that part"
    else:
        result, expected = row.result, full
    row.agree("p", float(np.max(np.abs(np.asarray(result) - expected))), 1e-8)
    return row


def _scipy_loop(x: np.ndarray, test: str):
    """``fn(k)``: the scipy test on the first k pairs (j < l, row-major), Holm when k is all."""
    j, l = np.triu_indices(x.shape[1], 1)

    def fn(k: int) -> np.ndarray:
        from scipy import stats
        from statsmodels.stats.multitest import multipletests

        if test == "t":
            p = [stats.ttest_rel(x[:, a], x[:, b]).pvalue for a, b in zip(j[:k], l[:k])]
        else:
            p = [
                stats.wilcoxon(x[:, a], x[:, b], zero_method="wilcox", method="approx").pvalue
                for a, b in zip(j[:k], l[:k])
            ]
        p = np.asarray(p)
        return multipletests(p, method="holm")[1] if k == len(j) else p

    return fn, len(j)


def _all_pairs_task(data: Dataset, run: Run, task: str, test: str, scipy_tool: str) -> list[Row]:
    """rankci, then a scipy loop over the pairs (unadjusted p-values on a part)."""
    own = timed(task, data, "rankci", lambda: _all_pairs(data.units, test), run)
    unadjusted, holm = own.result
    fn, n_pairs = _scipy_loop(data.matrix, test)
    row = scaled(task, data, scipy_tool, fn, n_pairs, run)
    return [own, _agree(row, holm, lambda k: unadjusted[:k])]


def paired_t(data: Dataset, run: Run) -> list[Row]:
    task = "paired t, all pairs + Holm"
    rows = _all_pairs_task(data, run, task, "t", "scipy ttest_rel loop + statsmodels Holm")

    def pingouin(k: int) -> np.ndarray:
        import pingouin as pg

        frame = data.frame[data.frame["model"].isin(data.model_names[:k])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # overflow in its Bayes factors for large t
            out = pg.pairwise_tests(
                data=frame, dv="score", within="model", subject="item", padjust="holm"
            )
        return out["p_corr" if "p_corr" in out else "p_unc"].to_numpy()  # one pair: no p_corr

    def first_models(k: int) -> np.ndarray:
        return _all_pairs(rankci.Scores.from_matrix(data.matrix[:, :k]).units("item"), "t")[1]

    peer = scaled(
        task,
        data,
        "pingouin pairwise_tests",
        pingouin,
        data.n_models,
        run,
        cost=lambda k: k * (k - 1) / 2,
        probe=4,
        unit="models' pairs",
    )
    rows.append(_agree(peer, rows[0].result[1], first_models))
    return rows


def wilcoxon(data: Dataset, run: Run) -> list[Row]:
    task = "Wilcoxon signed-rank, all pairs + Holm"
    return _all_pairs_task(data, run, task, "wilcoxon", "scipy wilcoxon loop + statsmodels Holm")
