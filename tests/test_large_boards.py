"""Large boards (issue 18): the fast paths give the old answers, and the compact JSON.

* the paired t / z in row blocks with the t tail computed once per unordered pair
  (``ttest.t_or_z_complete``, ``t_upper_tail``) against the general M x M formulas;
* Holm's step-down with the sure rejections counted, not sorted, against a plain sort;
* the closure in blocks of the score order against the general product loop;
* the compact ``dominance`` (docs/json.md) against the pair list, and against its JSON schema.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import special

import rankci
from rankci.certify.holm import reject
from rankci.cli import main
from rankci.evidence import moments, ttest
from rankci.ranking import CLOSURE_BLOCK, DominanceCycleError, transitive_closure
from rankci.simulate import simulate_scores

jsonschema = pytest.importorskip("jsonschema")


def _board(m: int, n: int, seed: int) -> rankci.Scores:
    ability = np.random.default_rng(seed).normal(0.0, 0.5, m)
    return simulate_scores(ability, n, rng=seed).scores


def _reference_t(x: np.ndarray, delta: float, normal: bool):
    """The general formulas on whole M x M arrays (the path before issue 18)."""
    n, mean, var, scale = moments.paired_moments(x)
    zero = var <= 1e-12 * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(var / n)
    stat = moments.studentize(mean, delta, se, zero)
    df = (n - 1).astype(float)
    p = special.ndtr(-stat) if normal else special.stdtr(np.maximum(df, 1.0), -stat)
    p = ttest.exact_floor(x, p, mean, delta, n, zero, 0)
    return mean, np.where(n >= 2, stat, np.nan), np.where(n >= 2, p, 1.0), se


@pytest.mark.parametrize("delta", [0.0, 0.02])
@pytest.mark.parametrize("test", ["t", "z"])
def test_blocked_paired_tests_equal_the_whole_matrix_formulas(test, delta):
    scores = _board(600, 150, 3)  # more than two row blocks
    units = scores.units("item")
    x = units.values.copy()
    x[:, 5] = x[:, 4]  # a pair with zero variance: the exact bound applies
    units = rankci.Scores.from_matrix(x).units()
    got = rankci.pairwise_tests(units, test, delta=delta)
    mean, stat, p, se = _reference_t(units.values, delta, test == "z")
    for a in (mean, stat, p):
        np.fill_diagonal(a, np.nan)
    np.testing.assert_array_equal(got.estimate, mean)
    np.testing.assert_array_equal(got.statistic, stat)
    np.testing.assert_array_equal(got.pvalue, p)
    np.testing.assert_array_equal(got.se, se)
    assert got.pvalue[4, 5] > 0  # never "certain" from a zero variance


def test_t_tail_once_per_pair_equals_stdtr_everywhere():
    rng = np.random.default_rng(0)
    stat = rng.normal(0, 4, (700, 700))
    stat = stat - stat.T  # antisymmetric, as with delta = 0
    stat[3, 9] = np.inf
    stat[9, 3] = -np.inf
    stat[1, 2] = np.nan
    stat[10, 20] += 1e-9  # an asymmetric entry is computed directly
    df = np.full(stat.shape, 37.0)
    df[50, 60] = 12.0
    for d in (37.0, df):
        expected = special.stdtr(d, -stat)
        np.testing.assert_array_equal(ttest.t_upper_tail(stat, d), expected)


def test_missing_cells_take_the_general_path_with_the_same_tail():
    rng = np.random.default_rng(1)
    x = (rng.random((120, 300)) < np.linspace(0.8, 0.3, 300)).astype(float)
    x[rng.random(x.shape) < 0.1] = np.nan
    n, mean, var, scale = moments.paired_moments(x)
    zero = var <= 1e-12 * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = moments.studentize(mean, 0.0, np.sqrt(var / n), zero)
    df = np.maximum((n - 1).astype(float), 1.0)
    got = ttest.t_or_z(x, 0.0, normal=False)[2]
    expected = ttest.exact_floor(
        x, special.stdtr(df, -stat), mean, 0.0, n, zero, 0
    )
    np.testing.assert_array_equal(got, np.where(n >= 2, expected, 1.0))


def _plain_holm(p: np.ndarray, alpha: float) -> np.ndarray:
    finite = np.isfinite(p)
    k = int(finite.sum())
    candidates = np.sort(p[finite & (p <= alpha)])
    if candidates.size == 0:
        return np.zeros(p.shape, dtype=bool)
    passes = candidates <= alpha / (k - np.arange(candidates.size))
    r = candidates.size if passes.all() else int(np.argmin(passes))
    return finite & (p <= candidates[r - 1]) if r else np.zeros(p.shape, dtype=bool)


@pytest.mark.parametrize("seed", range(6))
def test_holm_with_sure_rejections_counted_equals_the_plain_sort(seed):
    rng = np.random.default_rng(seed)
    p = rng.random((80, 80)) ** rng.uniform(1, 40)
    p[rng.random(p.shape) < 0.05] = 1e-9  # ties at and around alpha / K
    p[0, 1] = 0.05 / (80 * 79)
    np.fill_diagonal(p, np.nan)
    for alpha in (0.05, 0.001, 1e-7):
        np.testing.assert_array_equal(reject(p, alpha), _plain_holm(p, alpha))


def _random_order(m: int, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((m, m)) < density, 1)
    perm = rng.permutation(m)
    relation = np.zeros((m, m), dtype=bool)
    relation[np.ix_(perm, perm)] = upper
    return relation, perm


@pytest.mark.parametrize("density", [0.0005, 0.003, 0.05])
def test_blocked_closure_equals_the_general_closure(density):
    m = 2 * CLOSURE_BLOCK + 37
    relation, perm = _random_order(m, density, 7)
    expected = transitive_closure(relation)
    np.testing.assert_array_equal(transitive_closure(relation, order=perm), expected)
    wrong = np.arange(m)  # not an order of the relation: falls back to the general loop
    np.testing.assert_array_equal(transitive_closure(relation, order=wrong), expected)


@pytest.mark.parametrize("density", [0.0005, 0.003, 0.05])
@pytest.mark.parametrize("products", ["holes", "blocks"])
def test_closure_in_order_equals_reachability_by_breadth_first_search(
    density, products, monkeypatch
):
    """Both paths of the order hint (the products over the candidate pairs, and the block
    products they fall back to beyond HOLE_PRODUCT_ELEMENTS) against scipy's graph search."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    import rankci.ranking as ranking

    if products == "blocks":
        monkeypatch.setattr(ranking, "HOLE_PRODUCT_ELEMENTS", 0)
    m = 2 * CLOSURE_BLOCK + 37
    relation, perm = _random_order(m, density, 11)
    reachable = np.isfinite(shortest_path(csr_matrix(relation), unweighted=True))
    np.fill_diagonal(reachable, False)
    closed = transitive_closure(relation, order=perm)
    assert closed.sum() > relation.sum()  # paths were added: the products ran
    np.testing.assert_array_equal(closed, reachable)


def test_an_already_closed_staircase_is_returned_as_it_is_and_as_a_copy():
    """A board's certified relation is usually closed (every row a run of places with a few
    holes that no path fills): the two passes find no candidate, and the input is not changed."""
    m = 2 * CLOSURE_BLOCK + 37
    rng = np.random.default_rng(5)
    place = np.arange(m)
    relation = place[None, :] > place[:, None] + 40  # a staircase: closed
    holes = rng.random((m, m)) < 0.02
    relation &= ~(holes & (place[None, :] < place[:, None] + 60))  # holes next to the stair
    perm = rng.permutation(m)
    shuffled = np.zeros_like(relation)
    shuffled[np.ix_(perm, perm)] = relation
    expected = transitive_closure(shuffled)  # the general product loop
    before = shuffled.copy()
    closed = transitive_closure(shuffled, order=perm)
    np.testing.assert_array_equal(closed, expected)
    np.testing.assert_array_equal(shuffled, before)
    assert closed is not shuffled


def test_closure_hint_still_reports_a_cycle():
    m = 2 * CLOSURE_BLOCK
    relation = np.zeros((m, m), dtype=bool)
    relation[0, 1] = relation[1, 2] = relation[2, 0] = True
    with pytest.raises(DominanceCycleError):
        transitive_closure(relation, order=np.arange(m))


#: The JSON schema of a ranking's ``dominance`` (docs/json.md).
DOMINANCE_SCHEMA = {
    "oneOf": [
        {"type": "null"},
        {
            "type": "object",
            "required": ["form", "n_pairs", "below"],
            "additionalProperties": False,
            "properties": {
                "form": {"const": "runs"},
                "n_pairs": {"type": "integer", "minimum": 0},
                "below": {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 0},
                            "minItems": 2,
                            "maxItems": 2,
                        },
                    },
                },
            },
        },
        {
            "type": "array",
            "items": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 2,
                "maxItems": 2,
            },
        },
    ]
}


def _expand(payload: dict) -> list[list[str]]:
    names = [row["model"] for row in payload["models"]]
    return [
        [names[i], names[c]]
        for i, runs in enumerate(payload["dominance"]["below"])
        for first, last in runs
        for c in range(first, last + 1)
    ]


@pytest.mark.parametrize(
    "scores",
    [
        pytest.param(lambda: rankci.datasets.load_chembench(), id="chembench"),
        pytest.param(lambda: rankci.datasets.load_mmlu_pro(), id="mmlu_pro"),
        pytest.param(lambda: _board(300, 200, 5), id="synthetic"),
    ],
)
def test_compact_dominance_follows_its_schema_and_expands_to_the_pairs(scores):
    ranking = rankci.rank(scores())
    payload = json.loads(json.dumps(ranking.to_dict(), allow_nan=False))
    jsonschema.validate(payload["dominance"], DOMINANCE_SCHEMA)
    below = payload["dominance"]["below"]
    m = ranking.n_models
    assert len(below) == m
    for runs in below:  # increasing, disjoint, maximal runs inside the board
        ends = [v for run in runs for v in run]
        assert ends == sorted(ends) and all(0 <= v < m for v in ends)
        assert all(a <= b for a, b in runs)
        assert all(b + 1 < c for (_, b), (c, _) in zip(runs, runs[1:]))
    pairs = ranking.to_dict(pairs=True)
    jsonschema.validate(pairs["dominance"], DOMINANCE_SCHEMA)
    assert _expand(payload) == pairs["dominance"] == [list(p) for p in ranking.dominance_pairs()]
    assert payload["dominance"]["n_pairs"] == len(pairs["dominance"])
    assert {k: v for k, v in payload.items() if k != "dominance"} == {
        k: v for k, v in pairs.items() if k != "dominance"
    }


def test_rank_command_pairs_option(tmp_path):
    path = tmp_path / "board.parquet"
    _board(60, 300, 2).to_frame().to_parquet(path)
    compact, full = tmp_path / "c.json", tmp_path / "p.json"
    assert main(["rank", str(path), "--format", "json", "-o", str(compact)]) == 0
    argv = ["rank", str(path), "--format", "json", "--pairs", "-o", str(full)]
    assert main(argv) == 0
    a, b = json.loads(compact.read_text()), json.loads(full.read_text())
    assert _expand(a) == b["dominance"] and len(b["dominance"]) == a["dominance"]["n_pairs"]
