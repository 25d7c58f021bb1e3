"""Claims: the grammar, decisions against scipy / statsmodels, known answers and known truths."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import rankci
from rankci import Scores
from rankci.analyses.claims import check_claims, parse_claim


# ---------------------------------------------------------------------- grammar
@pytest.mark.parametrize(
    "text, expected",
    [
        ("A > B", ("better", "A", "B", 0.0, None)),
        ("A>B", ("better", "A", "B", 0.0, None)),
        ("A > B + 0.01", ("better", "A", "B", 0.01, None)),
        ("A >= B - 0.01", ("better", "A", "B", -0.01, None)),
        ("A >= B -1e-2", ("better", "A", "B", -0.01, None)),
        ("A < B", ("better", "B", "A", 0.0, None)),
        ("A <= B + 0.05", ("better", "B", "A", -0.05, None)),
        ("A ~ B within 0.02", ("equivalent", "A", "B", 0.02, None)),
        ("A in top 3", ("top", "A", None, 0.0, 3)),
        ("A is in top 2", ("top", "A", None, 0.0, 2)),
        ("A is best", ("top", "A", None, 0.0, 1)),
        ("'gpt-4o [dir]' > llama", ("better", "gpt-4o [dir]", "llama", 0.0, None)),
        ('"it\'s" ~ \'say "hi"\' within .5', ("equivalent", "it's", 'say "hi"', 0.5, None)),
        (r"'a\'b' is best", ("top", "a'b", None, 0.0, 1)),
        ("gpt-4o-mini >= gpt-4o - 0.1", ("better", "gpt-4o-mini", "gpt-4o", -0.1, None)),
    ],
)
def test_the_grammar(text, expected):
    claim = parse_claim(text)
    assert (claim.kind, claim.first, claim.second, claim.margin, claim.k) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text, position, words",
    [
        ("A >", 4, "ends where a model name"),
        ("A > > B", 5, "expected a model name, found '>'"),
        ("A = B", 3, "'=' alone"),
        ("'A > B", 1, "not closed"),
        ("A > B 0.1", 7, "'+ NUMBER'"),
        ("A > B + x", 9, "a number after '+'"),
        ("A ~ B 0.1", 7, "within"),
        ("A ~ B within 0", 14, "positive"),
        ("A in top 0", 10, "positive whole number"),
        ("A in top 2 please", 12, "unexpected 'please'"),
        ("my model > B", 4, "quote a model name"),
        ("'' > B", 1, "empty model name"),
    ],
)
def test_a_bad_claim_names_itself_and_the_position(text, position, words):
    with pytest.raises(ValueError) as error:
        parse_claim(text)
    message = str(error.value)
    assert message.startswith(f"claim {text!r} at position {position}:") and words in message
    assert message.splitlines()[-1] == "    " + " " * (position - 1) + "^"


# ---------------------------------------------------------------------- against references
def _scores(n=300, means=(0.5, 0.52, 0.6, 0.45), seed=3):
    rng = np.random.default_rng(seed)
    item = rng.normal(0, 0.1, size=(n, 1))
    x = np.clip(np.asarray(means) + item + rng.normal(0, 0.15, size=(n, len(means))), 0, 1)
    return Scores.from_matrix(x, models=["a", "b", "c", "d"]), x


def test_pair_claims_are_holm_over_scipy_one_sided_t_tests():
    scores, x = _scores()
    claims = ["c > a", "b >= a - 0.02", "a ~ b within 0.05", "c > d + 0.1"]
    check = check_claims(scores, claims)
    col = {"a": 0, "b": 1, "c": 2, "d": 3}

    def p(j, l, c):  # H: theta_j - theta_l <= c
        return stats.ttest_rel(x[:, col[j]] - c, x[:, col[l]], alternative="greater").pvalue

    family = [
        ("c", "a", 0),
        ("a", "c", 0),
        ("b", "a", -0.02),
        ("a", "b", 0.02),
        ("a", "b", -0.05),
        ("b", "a", -0.05),
        ("a", "b", 0.05),
        ("b", "a", 0.05),
        ("c", "d", 0.1),
        ("d", "c", -0.1),
    ]
    # ("a", "b", 0.02) appears for "b >= a - 0.02" (its opposite) only once: the family has 10
    pvalues = np.array([p(*h) for h in family])
    assert check.family_size == len(family)
    reject, adjusted, _, _ = multipletests(pvalues, alpha=0.05, method="holm")
    expect = {
        "c > a": "supported" if reject[0] else ("contradicted" if reject[1] else "not decided"),
        "b >= a - 0.02": "supported"
        if reject[2]
        else "contradicted"
        if reject[3]
        else "not decided",
        "a ~ b within 0.05": "supported"
        if reject[4] and reject[5]
        else "contradicted"
        if reject[6] or reject[7]
        else "not decided",
        "c > d + 0.1": "supported" if reject[8] else "contradicted" if reject[9] else "not decided",
    }
    got = {r.claim.text: r.result for r in check.results}
    assert got == expect
    first = check.results[0].details
    assert first["pvalue"] == pytest.approx(pvalues[0], rel=1e-9)
    assert first["adjusted_pvalue"] == pytest.approx(adjusted[0], rel=1e-9)
    tost = check.results[2].details
    assert tost["adjusted_pvalue"] == pytest.approx(max(adjusted[4], adjusted[5]), rel=1e-9)


def test_rank_claims_alone_read_rankci_rank_exactly():
    scores = rankci.datasets.load_chembench()
    top = scores.models[0]
    check = check_claims(scores, [f"'{top}' in top 5"])
    ranking = rankci.rank(scores)
    own = check.rankings[""]
    assert own.lower.tolist() == ranking.lower.tolist()
    assert own.upper.tolist() == ranking.upper.tolist()
    assert check.family_size == scores.n_models * (scores.n_models - 1)


def test_known_answers_on_mmlu_pro():
    """MMLU-Pro (bundled): gemini-3.1-pro has the simultaneous rank interval [1, 1]
    (docs/guide.md), Yi-6B is far below the top 3, and 'Yi-6B > Llama-2-7b-hf' (0.268 against
    0.195 on 10,298 shared items) is decided at any reasonable level."""
    check = check_claims(
        rankci.datasets.load_mmlu_pro(),
        [
            "'gemini-3.1-pro [merged dir]' is best",
            "Yi-6B in top 3",
            "Yi-6B > Llama-2-7b-hf",
            "Llama-2-7b-hf > Yi-6B",
        ],
    )
    assert [r.result for r in check.results] == [
        "supported",
        "contradicted",
        "supported",
        "contradicted",
    ]
    assert check.results[1].details["rank_interval"][0] > 3


def test_synthetic_truth_is_found():
    """Known truth, large n: a > b by 0.1, b = c, d 0.005 below c."""
    rng = np.random.default_rng(11)
    n = 4000
    x = np.column_stack(
        [rng.random(n) < 0.6, rng.random(n) < 0.5, rng.random(n) < 0.5, rng.random(n) < 0.495]
    ).astype(float)
    scores = Scores.from_matrix(x, models=["a", "b", "c", "d"])
    check = check_claims(
        scores,
        [
            "a is best",
            "a > b + 0.02",
            "d >= c - 0.05",
            "b ~ c within 0.06",
            "b > a",
            "a ~ b within 0.02",
        ],
    )
    assert [r.result for r in check.results] == [
        "supported",
        "supported",
        "supported",
        "supported",
        "contradicted",
        "contradicted",
    ]
    assert check.all_supported is False
    assert "all at once" in check.guarantee and "Holm at level 0.05" in check.guarantee


def test_unknown_models_and_self_comparisons_are_refused():
    scores, _ = _scores()
    with pytest.raises(ValueError, match=r"no model 'e' in the data"):
        check_claims(scores, ["a > e"])
    with pytest.raises(ValueError, match=r"did you mean 'abcd'"):
        check_claims(Scores.from_matrix(np.eye(3)[:, :2], models=["abcd", "x"]), ["abce > x"])
    with pytest.raises(ValueError, match="compared with itself"):
        check_claims(scores, ["a > a"])
    with pytest.raises(ValueError, match="no claim"):
        check_claims(scores, [])


def test_results_render_in_notebooks():
    scores, _ = _scores()
    check = check_claims(scores, ["c is best", "c > a"])
    page = check._repr_html_()
    assert "<table" in page and "all at once" in page
    assert check.to_dict()["claims"][0]["statement"] == "c is the best model"
