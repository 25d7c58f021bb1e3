"""The vectorised Holm family of ``decide_claims`` (issue 30) against the old per-pair loop.

The loop below is the old code's reading of the family, written out: every ordered pair
``(a, b)`` of a group with a rank claim, in the models' order, then each claim hypothesis once;
Holm over the lot; the dominance matrix filled pair by pair; rank intervals counted from it.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankci import Scores
from rankci.analyses.claims import check_claims
from rankci.certify.holm import adjust_pvalues, reject
from rankci.evidence.pairwise import pairwise_tests, signed_margin_tests


def _board(binary: bool, m: int = 7, n: int = 60) -> Scores:
    rng = np.random.default_rng(3)
    skill = np.linspace(-0.8, 0.8, m)
    if binary:
        x = (rng.random((n, m)) < 1 / (1 + np.exp(-skill - rng.normal(0, 1, (n, 1))))) * 1.0
    else:
        x = skill * 0.3 + rng.normal(0, 1, (n, 1)) + rng.normal(0, 0.6, (n, m))
    return Scores.from_matrix(x, models=[f"m{j}" for j in range(m)], bounds=None)


def _old_loop(scores: Scores, test: str):
    """The family by the old double loop (pairs, then the claims' margin hypotheses)."""
    units = scores.units("item")
    models = list(units.models)
    pw = pairwise_tests(units, test)
    keys, pvalues = {}, []

    def key(pw, a, b, margin):
        k = (a, b, margin)
        if k not in keys:
            p = float(pw.pvalue[pw.models.index(a), pw.models.index(b)])
            pvalues.append(p if np.isfinite(p) else 1.0)
            keys[k] = len(pvalues) - 1
        return keys[k]

    pairs = {(a, b): key(pw, a, b, 0.0) for a in models for b in models if a != b}
    better = key(pw, "m1", "m2", 0.0)
    margin = {c: signed_margin_tests(units, c, test) for c in (-0.05, 0.05)}
    eq_support = [key(margin[-0.05], "m3", "m4", -0.05), key(margin[-0.05], "m4", "m3", -0.05)]
    eq_contra = [key(margin[0.05], "m3", "m4", 0.05), key(margin[0.05], "m4", "m3", 0.05)]
    p = np.array(pvalues)
    rejected = reject(p, 0.05)
    dominance = np.zeros((len(models), len(models)), dtype=bool)
    for (a, b), index in pairs.items():
        dominance[models.index(a), models.index(b)] = rejected[index]
    lower = 1 + dominance.sum(axis=0)
    upper = len(models) - dominance.sum(axis=1)
    adjusted = adjust_pvalues(p)
    return {
        "size": len(p),
        "lower": lower,
        "upper": upper,
        "better": adjusted[better],
        "equivalent": max(adjusted[i] for i in eq_support),
        "equivalent_opposite": min(adjusted[i] for i in eq_contra),
    }


@pytest.mark.parametrize(
    "binary, test, n",
    # 60 units: the margin tests on the claims' models alone; 20: on all (the few-units warning)
    [(True, "auto", 60), (False, "auto", 60), (False, "z", 60), (False, "t", 20)],
)
@pytest.mark.filterwarnings("ignore:20 item units of continuous")
def test_the_family_matches_the_old_loop(binary, test, n):
    scores = _board(binary, n=n)
    check = check_claims(
        scores, ["m5 in top 3", "m1 > m2", "m3 ~ m4 within 0.05"], test=test
    )
    old = _old_loop(scores, test)
    assert check.family_size == old["size"] == 7 * 6 + 4
    ranking = check.rankings[""]
    np.testing.assert_array_equal(ranking.lower, old["lower"])
    np.testing.assert_array_equal(ranking.upper, old["upper"])
    better, equivalent = check.results[1].details, check.results[2].details
    assert better["adjusted_pvalue"] == old["better"]
    assert equivalent["adjusted_pvalue"] == old["equivalent"]
    assert equivalent["opposite_adjusted_pvalue"] == old["equivalent_opposite"]
    j = ranking.models.index("m5")
    assert check.results[0].details["rank_interval"] == [old["lower"][j], old["upper"][j]]


def test_a_pair_claim_without_rank_claims_keeps_its_family():
    scores = _board(False)
    check = check_claims(scores, ["m1 > m2", "m6 > m0"], test="t")
    units = scores.units("item")
    pw = pairwise_tests(units, "t")
    p = np.array([pw.pvalue[1, 2], pw.pvalue[6, 0], pw.pvalue[2, 1], pw.pvalue[0, 6]])
    assert check.family_size == 4
    assert check.results[1].details["adjusted_pvalue"] == adjust_pvalues(p)[1]
