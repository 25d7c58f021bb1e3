"""Paired tests for every pair of models + Holm: rankci against scipy loops and pingouin."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import rankci

from .harness import Dataset, Row, Run, scaled, timed


def two_sided_holm(pvalue: np.ndarray) -> np.ndarray:
    """Holm-adjusted two-sided p-values of the unordered pairs j < l (row-major order) from
    rankci's one-sided p-values ``p[j, l]`` (the two-sided p is ``2 min(p_jl, p_lj)``)."""
    return rankci.adjust_pvalues(_unadjusted(pvalue), "holm")


def _units(matrix: np.ndarray) -> rankci.UnitScores:
    return rankci.Scores.from_matrix(matrix).units("item")


def _unadjusted(pvalue: np.ndarray) -> np.ndarray:
    """Two-sided p-values of the unordered pairs j < l (row-major) from one-sided ones."""
    j, l = np.triu_indices(pvalue.shape[0], 1)
    return np.minimum(1.0, 2 * np.minimum(pvalue[j, l], pvalue[l, j]))


def _agree(row: Row, reference: np.ndarray | Callable[[int], np.ndarray]) -> Row:
    """``reference``: rankci's p-values, or ``k -> rankci's p-values on the peer's part``."""
    if row.result is None:
        return row
    k, result = row.result if row.extrapolated else (None, row.result)
    expected = reference(k) if callable(reference) else reference
    row.agree("p", float(np.max(np.abs(np.asarray(result) - expected))), 1e-8)
    if row.extrapolated:
        row.note += "; agreement on that part"
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


def paired_t(data: Dataset, run: Run) -> list[Row]:
    task = "paired t, all pairs + Holm"
    units = _units(data.matrix)
    own = timed(
        task, data, "rankci", lambda: two_sided_holm(rankci.pairwise_tests(units).pvalue), run
    )
    fn, n_pairs = _scipy_loop(data.matrix, "t")
    row = scaled(task, data, "scipy ttest_rel loop + statsmodels Holm", fn, n_pairs, run)
    rows = [
        own,
        _agree(
            row, lambda k: _unadjusted(rankci.pairwise_tests(units).pvalue)[:k] if k else own.result
        ),
    ]

    def pingouin(k: int) -> np.ndarray:
        import pingouin as pg

        frame = data.frame[data.frame["model"].isin(data.model_names[:k])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # overflow in its Bayes factors for large t
            out = pg.pairwise_tests(
                data=frame, dv="score", within="model", subject="item", padjust="holm"
            )
        return out["p_corr" if "p_corr" in out else "p_unc"].to_numpy()  # one pair: no p_corr

    rows.append(
        _agree(
            scaled(
                task,
                data,
                "pingouin pairwise_tests",
                pingouin,
                data.n_models,
                run,
                cost=lambda k: k * (k - 1) / 2,
                probe=4,
                unit="models' pairs",
            ),
            lambda k: (
                two_sided_holm(rankci.pairwise_tests(_units(data.matrix[:, :k])).pvalue)
                if k
                else own.result
            ),
        )
    )
    return rows


def wilcoxon(data: Dataset, run: Run) -> list[Row]:
    task = "Wilcoxon signed-rank, all pairs + Holm"
    units = _units(data.matrix)
    own = timed(
        task,
        data,
        "rankci",
        lambda: two_sided_holm(rankci.pairwise_tests(units, "wilcoxon").pvalue),
        run,
    )
    fn, n_pairs = _scipy_loop(data.matrix, "wilcoxon")
    row = scaled(task, data, "scipy wilcoxon loop + statsmodels Holm", fn, n_pairs, run)
    pvalue = lambda k: _unadjusted(rankci.pairwise_tests(units, "wilcoxon").pvalue)[:k]  # noqa: E731
    return [own, _agree(row, pvalue if row.extrapolated else own.result)]
