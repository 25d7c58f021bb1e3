"""The paired t / z p-values computed where they are read (issue 30: `rankci.rank` in process).

``rankci.evidence.ttest.TailPValues`` stands for the M x M p-values of the t and z tests until
they are read: Holm asks it only which p-values are at most a threshold and the values of the
few that decide, and every reader of ``Pairwise.pvalue`` gets the whole array. Checked here:

* every answer it gives (the whole array, ``at_most``, ``values``, ``finite``) is the eager
  path's (``lazy=False``, the code of main before this change) bit for bit, on boards with
  ties, zero variances (exact bound and unbounded), the z test and a margin; a board with
  missing cells keeps the eager path;
* Holm's and Bonferroni's decisions from it equal those from the eager array and those of
  statsmodels' ``multipletests`` on the same p-values;
* ``rankci.rank`` certifies what Holm certifies on the eager p-values, and its tiers (computed
  on first read) equal a longest-chain count written here;
* ``DeferredField`` / ``peek`` and the reuse of a method specification made from keywords.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import special, stats
from statsmodels.stats.multitest import multipletests

import rankci
from rankci._base import Deferred, DeferredField, peek
from rankci.certify.holm import reject
from rankci.evidence import ttest
from rankci.evidence.moments import scan_range
from rankci.leaderboard import resolve_spec
from rankci.method import MethodSpec
from rankci.simulate import simulate_scores


def _binary(m: int, n: int, seed: int) -> np.ndarray:
    ability = np.random.default_rng(seed).normal(0.0, 0.5, m)
    return simulate_scores(ability, n, rng=seed).scores.units("item").values.copy()


def _boards():
    """(name, units x models matrix, bounded) with the cases the lazy path must get right."""
    x = _binary(40, 300, 1)
    yield "binary", x, True
    ties = _binary(25, 80, 2)
    ties[:, 3] = ties[:, 2]  # identical models: zero variance, exact bound
    ties[:, 7] = 1.0  # constant models: zero variance against each other
    ties[:, 8] = 1.0
    ties[:, 9] = 0.0
    ties[:, 11] = ties[:, 10]
    ties[:5, 11] = 1.0 - ties[:5, 10]
    yield "ties", ties, True
    rng = np.random.default_rng(3)
    cont = rng.uniform(size=(60, 30)) * 0.6 + np.linspace(0.0, 0.4, 30)
    cont[:, 4] = cont[:, 5]
    yield "continuous", cont, True
    free = rng.normal(size=(50, 20)) * 2.0 + np.arange(20) * 0.4
    free[:, 6] = free[:, 5] + 0.5  # a constant difference: zero variance, unbounded scores
    yield "unbounded", free, False
    yield "small", _binary(12, 6, 4), True  # few units: t statistics near the thresholds


def _eager_and_lazy(x, delta, normal):
    scanned = scan_range(x)
    eager = ttest.t_or_z_complete(x.copy(), delta, normal, 0, scanned=scanned)
    lazy = ttest.t_or_z_complete(x.copy(), delta, normal, 0, scanned=scanned, lazy=True)
    return eager, lazy


CASES = [
    (name, delta, normal)
    for name, _, _ in _boards()
    for delta in (0.0, 0.03)
    for normal in (False, True)
]


@pytest.mark.parametrize("name, delta, normal", CASES)
def test_lazy_p_values_are_the_eager_ones_bit_for_bit(name, delta, normal):
    x = next(b for n, b, _ in _boards() if n == name)
    eager, lazy = _eager_and_lazy(x, delta, normal)
    tail = lazy[2]
    assert isinstance(tail, ttest.TailPValues)
    for a, b in zip(eager, lazy):  # every other output is unchanged
        if isinstance(b, ttest.TailPValues):
            continue
        if a is None:
            assert b is None
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    p = eager[2]
    for diagonal in (False, True):
        if diagonal:
            tail.fill_diagonal_nan()
            p = p.copy()
            np.fill_diagonal(p, np.nan)
        assert tail.compute().tobytes() == p.tobytes()
        np.testing.assert_array_equal(tail.finite(), np.isfinite(p))
        assert tail.count_finite() == int(np.isfinite(p).sum())
        finite = p[np.isfinite(p)]
        thresholds = [0.05, 0.01, 0.05 / finite.size, 1e-6, 0.2, 0.3, 0.9, *np.unique(finite)[:40]]
        for c in thresholds:  # the p-values themselves: ties with the threshold
            np.testing.assert_array_equal(tail.at_most(float(c)), p <= c, err_msg=f"{c}")
        mask = (p > 1e-4) & (p < 0.5)
        assert tail.values(mask).tobytes() == p[mask].tobytes()
        index = np.flatnonzero(np.isfinite(p) | np.isnan(p))
        got, want = tail.values(index), p.ravel()[index]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert got[~np.isnan(got)].tobytes() == want[~np.isnan(want)].tobytes()


def test_the_lazy_tail_is_scipys_one_sided_t():
    x = _binary(15, 200, 5)
    units = rankci.Scores.from_matrix(x).units()
    pw = rankci.pairwise_tests(units, "t")
    assert isinstance(pw.pvalue_source(), ttest.TailPValues)
    j, l = 2, 9
    ref = stats.ttest_rel(x[:, j], x[:, l], alternative="greater")
    assert pw.pvalue[j, l] == pytest.approx(ref.pvalue, rel=1e-10)
    assert isinstance(pw.pvalue_source(), np.ndarray)  # read once: the array from now on
    assert np.isnan(np.diag(pw.pvalue)).all()


def test_the_opt_in_floor_and_missing_cells_keep_the_eager_arrays():
    x = _binary(10, 40, 6)
    units = rankci.Scores.from_matrix(x).units()
    floored = rankci.pairwise_tests(units, "t", exact_bound_n=100)
    assert isinstance(floored.pvalue_source(), np.ndarray)
    x[3, 2] = np.nan
    frame = rankci.Scores.from_matrix(x).to_frame().dropna()
    gaps = rankci.Scores.from_frame(frame).units("item", "pairwise")
    assert isinstance(rankci.pairwise_tests(gaps, "t").pvalue_source(), np.ndarray)


@pytest.mark.parametrize("name", [name for name, _, _ in _boards()])
@pytest.mark.parametrize("alpha", [0.05, 0.2, 0.01, 0.5])
def test_holm_decides_the_same_from_lazy_and_eager_p_values(name, alpha):
    x = next(b for n, b, _ in _boards() if n == name)
    for normal in (False, True):
        eager, lazy = _eager_and_lazy(x, 0.0, normal)
        p = eager[2].copy()
        np.fill_diagonal(p, np.nan)
        tail = lazy[2]
        tail.fill_diagonal_nan()
        for method in ("holm", "bonferroni"):
            got = reject(tail, alpha, method)
            np.testing.assert_array_equal(got, reject(p, alpha, method))
            finite = np.isfinite(p)
            decided, *_ = multipletests(p[finite], alpha=alpha, method=method)
            np.testing.assert_array_equal(got[finite], decided)
            assert not got[~finite].any()


def test_holm_at_the_boundary_when_every_candidate_passes_or_none_does():
    x = _binary(20, 120, 7)
    eager, lazy = _eager_and_lazy(x, 0.0, False)
    p = eager[2].copy()
    np.fill_diagonal(p, np.nan)
    lazy[2].fill_diagonal_nan()
    finite = np.sort(p[np.isfinite(p)])
    k = finite.size
    # alphas placed at the Holm thresholds of the sorted p-values: a tie decides there
    for i in range(0, 120, 7):
        alpha = float(finite[i] * (k - i))
        if not 0 < alpha < 1:
            continue
        decided, *_ = multipletests(p[np.isfinite(p)], alpha=alpha, method="holm")
        got = reject(lazy[2], alpha, "holm")
        np.testing.assert_array_equal(got[np.isfinite(p)], decided)
        np.testing.assert_array_equal(got, reject(p, alpha, "holm"))


def _longest_chains(closed: np.ndarray) -> np.ndarray:
    """Tiers by their definition, written independently: a memoised longest path."""
    m = closed.shape[0]
    memo: dict[int, int] = {}

    def tier(j: int) -> int:
        if j not in memo:
            memo[j] = 1 + max((tier(i) for i in range(m) if closed[i, j]), default=0)
        return memo[j]

    return np.array([tier(j) for j in range(m)])


@pytest.mark.parametrize("test", ["t", "z", "auto"])
def test_rank_certifies_what_holm_certifies_on_the_eager_p_values(test):
    x = _binary(35, 250, 8)
    x[:, 4] = x[:, 3]
    scores = rankci.Scores.from_matrix(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranking = rankci.rank(scores, test=test)
    d = reject(ranking.pairwise.pvalue, 0.05, "holm")
    closed = rankci.ranking.transitive_closure(d)
    np.testing.assert_array_equal(ranking.dominance, closed)
    np.testing.assert_array_equal(ranking.lower, 1 + closed.sum(axis=0))
    np.testing.assert_array_equal(ranking.tier, _longest_chains(closed))
    assert ranking.to_dict()["models"][0]["tier"] == 1


def test_tiers_on_relations_with_many_levels():
    rng = np.random.default_rng(9)
    for m in (1, 2, 7, 40):
        score = rng.normal(size=m)
        d = (score[:, None] > score[None, :] + 0.3) & (rng.uniform(size=(m, m)) < 0.6)
        closed = rankci.ranking.transitive_closure(d)
        np.testing.assert_array_equal(rankci.ranking.tiers(closed), _longest_chains(closed))


def test_a_deferred_field_is_computed_once_on_first_read():
    from dataclasses import FrozenInstanceError, dataclass

    calls = []

    @dataclass(frozen=True)
    class Box:
        first: int
        value: object = DeferredField()
        last: int = 0

    box = Box(1, Deferred(lambda: calls.append(1) or special.stdtr(5.0, -2.0)))
    assert isinstance(peek(box, "value"), Deferred) and not calls
    assert box.value == special.stdtr(5.0, -2.0) and box.value == box.value
    assert calls == [1] and peek(box, "value") == box.value
    assert Box(2, 3).value == 3
    with pytest.raises(FrozenInstanceError):
        box.value = 4
    with pytest.raises(TypeError):
        Box(1)  # the field has no default


def test_a_spec_made_from_the_same_keywords_is_reused_and_still_checked():
    keywords = dict(
        unit="item",
        test="t",
        coverage="simultaneous",
        alpha=0.05,
        delta=0.0,
        missing="complete",
        multiplicity="holm",
    )
    first, _ = resolve_spec(None, None, keywords, {}, "rank")
    again, _ = resolve_spec(None, None, dict(keywords), {}, "rank")
    assert again is first and first == MethodSpec(test="t")
    with pytest.raises(ValueError, match="exact_bound_n"):
        resolve_spec(None, None, keywords, {"exact_bound_n": True}, "rank")
    one, _ = resolve_spec(None, None, keywords, {"exact_bound_n": 1}, "rank")
    assert one.test_options["exact_bound_n"] == 1
    with pytest.raises(ValueError, match="exact_bound_n"):
        resolve_spec(None, None, keywords, {"exact_bound_n": True}, "rank")
    negative, _ = resolve_spec(None, None, {**keywords, "delta": -0.0}, {}, "rank")
    assert str(first.delta) == "0.0" and str(negative.delta) == "-0.0"


def test_results_pickle_before_their_deferred_fields_are_read():
    import pickle

    scores = rankci.Scores.from_matrix(_binary(12, 90, 10))
    ranking = rankci.rank(scores, test="t")
    tiers = peek(ranking, "tier")  # (a Ranking's MethodSpec holds mapping proxies: no pickle)
    pairwise = ranking.pairwise
    assert isinstance(tiers, Deferred)
    assert isinstance(pairwise.pvalue_source(), ttest.TailPValues)
    pairwise_copy, tiers_copy = pickle.loads(pickle.dumps((pairwise, tiers)))
    assert isinstance(pairwise_copy.pvalue_source(), ttest.TailPValues)
    np.testing.assert_array_equal(tiers_copy.compute(), ranking.tier)
    assert pairwise_copy.pvalue.tobytes() == pairwise.pvalue.tobytes()


def _many_blocks(m: int = 300) -> np.ndarray:
    """A board of more than one row block (ROW_BLOCK = 256) with zero variances in both."""
    x = _binary(m, 60, 11)
    x[:, 3] = x[:, 2]  # identical models in the first block
    x[:, 280] = x[:, 5]  # identical models across the blocks
    x[:, 290] = 1.0  # constant models in the last block
    x[:, 291] = 1.0
    return x


@pytest.mark.parametrize("block", [256, 16, 7])
@pytest.mark.parametrize("delta, normal", [(0.0, False), (0.03, False), (0.0, True)])
def test_large_boards_defer_the_mean_differences_and_keep_every_number(
    monkeypatch, block, delta, normal
):
    """Row blocks written in place, and the M x M estimate computed on first read: the eager
    path's arrays bit for bit (blocks of 256, 16 and 7 rows: a partial last block)."""
    x = _many_blocks()
    monkeypatch.setattr(ttest, "ROW_BLOCK", block)
    eager, lazy = _eager_and_lazy(x, delta, normal)
    estimate = lazy[0]
    assert isinstance(estimate, ttest.MeanDifferences)
    assert estimate.shape == (300, 300)
    assert estimate.compute().tobytes() == np.subtract.outer(x.mean(0), x.mean(0)).tobytes()
    assert estimate.compute().tobytes() == eager[0].tobytes()
    for a, b in zip(eager[1:], lazy[1:]):
        if isinstance(b, ttest.TailPValues):
            assert b.compute().tobytes() == a.tobytes()
        elif a is None:
            assert b is None
        else:
            assert np.asarray(b).tobytes() == np.asarray(a).tobytes()
    # the eager path itself is unchanged by the in-place blocks: single-block arrays
    monkeypatch.setattr(ttest, "ROW_BLOCK", 1024)
    single = ttest.t_or_z_complete(x.copy(), delta, normal, 0, scanned=scan_range(x))
    for a, b in zip(single, eager):
        if a is None:
            assert b is None
        else:
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_rank_never_computes_the_deferred_estimate_and_readers_get_it_with_a_nan_diagonal(
    monkeypatch,
):
    scores = rankci.Scores.from_matrix(_many_blocks())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranking = rankci.rank(scores, test="t", rng=0)
        monkeypatch.setattr(ttest, "ROW_BLOCK", 1024)  # one block: the estimate is stored
        eager = rankci.rank(scores, test="t", rng=0)
    pairwise = ranking.pairwise
    assert isinstance(peek(pairwise, "estimate"), ttest.MeanDifferences)
    assert not isinstance(peek(eager.pairwise, "estimate"), Deferred)
    np.testing.assert_array_equal(ranking.lower, eager.lower)
    np.testing.assert_array_equal(ranking.upper, eager.upper)
    estimate = pairwise.estimate  # the first read computes it, NaN on the diagonal
    assert np.isnan(np.diag(estimate)).all()
    mu = scores.units("item").values.mean(axis=0)
    off = ~np.eye(mu.size, dtype=bool)
    assert estimate[off].tobytes() == np.subtract.outer(mu, mu)[off].tobytes()
    assert pairwise.estimate is estimate  # kept
    frame = pairwise.to_frame()
    assert len(frame) == 300 * 299
