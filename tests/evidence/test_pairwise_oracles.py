"""Pairwise tests against R (pairwise.t.test, pairwise.wilcox.test, binom.test), oracle data."""

import numpy as np
import pytest
from conftest import oracle_table

import rankci


def _two_sided(pw, a, b):
    j, l = pw.models.index(a), pw.models.index(b)
    return min(1.0, 2 * min(pw.pvalue[j, l], pw.pvalue[l, j])), j, l


def test_paired_t_matches_r(oracle):
    name, scores = oracle
    pw = rankci.pairwise_tests(scores.units("item", "complete"), "t")
    raw = oracle_table(name, "pairwise_raw_stats")
    for row in raw.itertuples():
        p, j, l = _two_sided(pw, row.group1, row.group2)
        assert pw.statistic[j, l] == pytest.approx(row.t, rel=1e-10)
        assert pw.estimate[j, l] == pytest.approx(row.mean_diff, rel=1e-10, abs=1e-14)
        assert pw.df[j, l] == row.df
        assert p == pytest.approx(row.p_t, rel=1e-8)


def test_wilcoxon_matches_r_with_and_without_continuity_correction(oracle):
    name, scores = oracle
    units = scores.units("item", "complete")
    corrected = rankci.pairwise_tests(units, "wilcoxon", correction=True, distribution="approx")
    plain = rankci.pairwise_tests(units, "wilcoxon", correction=False, distribution="approx")
    raw = oracle_table(name, "pairwise_raw_stats")
    for row in raw.itertuples():
        p_cc, j, l = _two_sided(corrected, row.group1, row.group2)
        p_nocc, _, _ = _two_sided(plain, row.group1, row.group2)
        assert corrected.statistic[j, l] == pytest.approx(row.wilcox_V, rel=1e-12)
        assert p_cc == pytest.approx(row.p_wilcox_cc, rel=1e-8)
        assert p_nocc == pytest.approx(row.p_wilcox_nocc, rel=1e-8)


def test_sign_test_matches_r_binom_test(oracle):
    name, scores = oracle
    pw = rankci.pairwise_tests(scores.units("item", "complete"), "sign")
    raw = oracle_table(name, "pairwise_raw_stats")
    for row in raw.itertuples():
        p, j, l = _two_sided(pw, row.group1, row.group2)
        assert pw.statistic[j, l] == row.n_a_wins and pw.statistic[l, j] == row.n_b_wins
        assert p == pytest.approx(row.p_sign_binom, rel=1e-8)


@pytest.mark.parametrize(
    "table,test", [("pairwise_t_paired", "t"), ("pairwise_wilcox_paired", "wilcoxon")]
)
@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_adjusted_pairwise_pvalues_match_r(oracle, table, test, method):
    name, scores = oracle
    options = {"correction": True, "distribution": "approx"} if test == "wilcoxon" else {}
    pw = rankci.pairwise_tests(scores.units("item", "complete"), test, **options)
    reference = oracle_table(name, table)
    reference = reference[reference.p_adjust_method == method]
    two_sided = np.array(
        [_two_sided(pw, a, b)[0] for a, b in zip(reference.group1, reference.group2)]
    )
    np.testing.assert_allclose(rankci.adjust_pvalues(two_sided, method), reference.p_adj, rtol=1e-8)


def test_complete_case_counts_match_r():
    from conftest import oracle_scores

    units = oracle_scores("unbalanced").units("item", "complete")
    info = oracle_table("unbalanced", "complete_case_info")
    assert units.n_units == info.n_items_complete[0]
    assert (
        units.excluded["observations_excluded"] == info.n_items_total[0] - info.n_items_complete[0]
    )
