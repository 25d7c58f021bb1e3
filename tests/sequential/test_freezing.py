"""Incremental certification and closure, frozen pairs, buffered single items (issue 18).

The claim of :mod:`rankci.sequential.freezing`: at every look the frozen run certifies a subset of
what the exact closed test certifies on the unfrozen wealths; with the exact certifiers the frozen
run certifies a subset of the unfrozen run. Checked here look by look, together with a fast
Monte-Carlo check of the error rate of the frozen monitor.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankci.ranking import transitive_closure
from rankci.sequential import Monitor, PairWealth
from rankci.sequential.certifier import (
    boolean_product,
    capped_wealth,
    may_reach,
    shortcut_statistic,
)
from rankci.sequential.freezing import close_incremental, resolve_freeze

ALPHA = 0.05


def _looks(x, block, **kw):
    """Certified pairs (closed) at every look of a monitor fed ``block`` items at a time."""
    names = [f"m{j}" for j in range(x.shape[1])]
    mon = Monitor(names, n_items=x.shape[0], **kw)
    out = []
    for start in range(0, x.shape[0], block):
        mon.update_block(x[start : start + block])
        out.append(mon.ranking().dominance.copy())
    return mon, out


def _board(n, m, seed, spread=0.25):
    rng = np.random.default_rng(seed)
    p = np.clip(0.6 + rng.normal(0.0, spread, m) * 0.3, 0.05, 0.95)
    return (rng.random((n, m)) < p).astype(float)


def test_boolean_product_and_incremental_closure_match_the_full_closure():
    rng = np.random.default_rng(0)
    for m in (3, 17, 70):
        a, b = rng.random((m, m + 5)) < 0.1, rng.random((m + 5, m)) < 0.1
        assert np.array_equal(boolean_product(a, b), (a.astype(int) @ b.astype(int)) > 0)
        order = rng.permutation(m)  # a random strict order, revealed in batches
        truth = np.zeros((m, m), dtype=bool)
        closed = np.zeros((m, m), dtype=bool)
        for _ in range(6):
            new = np.zeros((m, m), dtype=bool)
            i, j = rng.integers(0, m, (2, 3 * m))
            keep = order[i] < order[j]
            new[i[keep], j[keep]] = True
            truth |= new
            closed = close_incremental(closed, new)
            assert np.array_equal(closed, transitive_closure(truth))


def test_the_pruning_bound_never_drops_a_pair_the_statistic_certifies():
    rng = np.random.default_rng(1)
    for m in (5, 30, 80):
        threshold = m * (m - 1) / ALPHA
        for _ in range(20):
            lw = rng.normal(0.0, 1.0, (m, m)) * rng.choice([1.0, 6.0, 14.0])
            capped = capped_wealth(lw, threshold)
            every = ~np.eye(m, dtype=bool)
            reach = shortcut_statistic(capped, every) >= threshold
            kept = may_reach(capped, threshold, every)
            assert not (reach & ~kept).any()


def test_the_pruning_bound_on_part_of_the_pairs_keeps_every_pair_the_statistic_certifies():
    # sparse and dense candidate sets, whole rows missing: both ways of evaluating the bounds
    # (the whole matrix, or the block of the rows and columns involved) and both ways of
    # looking for a third model (the whole boolean product, or the block)
    rng = np.random.default_rng(11)
    for m in (6, 40, 120):
        threshold = m * (m - 1) / ALPHA
        for _ in range(25):
            lw = rng.normal(0.0, 1.0, (m, m)) * rng.choice([1.0, 6.0, 14.0])
            capped = capped_wealth(lw, threshold)
            pairs = rng.random((m, m)) < rng.choice([0.02, 0.2, 0.7, 1.0])
            if rng.random() < 0.5:
                pairs[rng.random(m) < 0.6] = False
            np.fill_diagonal(pairs, False)
            reach = shortcut_statistic(capped, pairs) >= threshold
            kept = may_reach(capped, threshold, pairs)
            assert not (kept & ~pairs).any()
            assert not (reach & pairs & ~kept).any()


def test_items_since_commit_per_pair_agrees_with_the_dense_count():
    rng = np.random.default_rng(12)
    m, n = 7, 500
    x = (rng.random((n, m)) < 0.5).astype(float)
    wealth = PairWealth(m, n_items=n)
    flat = np.flatnonzero(~np.eye(m, dtype=bool))
    for step, block in enumerate(range(0, n, 37)):
        wealth.update(x[block : block + 37])
        if step == 3:
            wealth.freeze_pairs(rng.random((m, m)) < 0.3)  # every model still active
        if step == 6:
            wealth.retire([2])
        dense = wealth._pair_items_since_commit().ravel()[flat]
        assert np.array_equal(wealth._items_since_commit_at(flat), dense)


@pytest.mark.parametrize("bet", ["mixture", "agrapa", "ons"])
def test_frozen_pairs_keep_their_wealth_and_the_others_keep_their_bits(bet):
    rng = np.random.default_rng(2)
    m, n = 8, 600
    x = (rng.random((n, m)) < np.linspace(0.3, 0.8, m)).astype(float)
    plain = PairWealth(m, n_items=n, bet=bet)
    frozen = PairWealth(m, n_items=n, bet=bet)
    plain.update(x[:250])
    frozen.update(x[:250])
    at_freeze = plain.log_wealth()
    mask = rng.random((m, m)) < 0.5
    assert frozen.freeze_pairs(mask) == int((mask & ~np.eye(m, dtype=bool)).sum())
    for start in range(250, n, 41):
        plain.update(x[start : start + 41])
        frozen.update(x[start : start + 41])
    on = ~mask & ~np.eye(m, dtype=bool)
    assert np.array_equal(plain.log_wealth()[on], frozen.log_wealth()[on])  # bit for bit
    off = mask & ~np.eye(m, dtype=bool)
    np.testing.assert_allclose(frozen.log_wealth()[off], at_freeze[off], rtol=1e-12, atol=1e-12)
    again = PairWealth.from_state(frozen.state())
    assert np.array_equal(again.log_wealth(), frozen.log_wealth(), equal_nan=True)


def _swapping_board(n, m, seed):
    """A board; in every third seed the best and the worst model swap their columns after a
    third of the items (a stream that violates the sampling models, so that the <= alpha event
    happens in some runs)."""
    x = _board(n, m, seed, spread=1.0)
    if seed % 3 == 0:
        means = x.mean(axis=0)
        j, l = int(np.argmax(means)), int(np.argmin(means))
        x[n // 3 :, [j, l]] = x[n // 3 :, [l, j]]
    return x


def _pair_of_runs(x, seed, **kw):
    """The same stream through a frozen and an unfrozen monitor, block by block (one look each),
    with the certified set at every look: model F in even seeds, S in odd ones."""
    import warnings

    n, m = x.shape
    sampling = "finite" if seed % 2 == 0 else "iid"
    out = []
    for freeze in (True, False):
        mon = Monitor([f"m{j}" for j in range(m)], sampling=sampling,
                      n_items=n if sampling == "finite" else None, freeze=freeze,
                      look_every=25, **kw)  # fmt: skip
        sets = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the <= alpha event's warning
            for start in range(0, n, 25):
                mon.update_block(x[start : start + 25])
                sets.append(mon._dominance.copy())
        out.append((mon, sets))
    return out


@pytest.mark.parametrize("certifier, m, seeds", [("exact", 5, 24), ("bonferroni", 12, 24),
                                                 ("ilp", 9, 9)])  # fmt: skip
def test_frozen_exact_ilp_and_bonferroni_runs_are_identical_to_unfrozen_runs(certifier, m, seeds):
    """Issue 25: with the exact, integer-program and e-Bonferroni certifiers freezing changes no
    answer (freezing.py): the same look records (certified counts, rank bounds, surviving orders,
    the <= alpha event) and rank sets, over many streams, some of which meet the event."""
    events = 0
    for seed in range(seeds):
        x = _swapping_board(600, m, seed)
        (frozen, _), (plain, _) = _pair_of_runs(x, seed, certifier=certifier, alpha=0.2)
        assert frozen.freeze and not plain.freeze and len(frozen.looks) == 24
        assert frozen.looks == plain.looks
        assert frozen.alpha_event == plain.alpha_event
        a, b = frozen.ranking(), plain.ranking()
        assert a.dominance_pairs() == b.dominance_pairs()
        assert a.details.get("rank_sets") == b.details.get("rank_sets")
        assert frozen.n_frozen_pairs > 0 or frozen.alpha_event is not None
        events += frozen.alpha_event is not None
    assert 0 < events < seeds  # runs with and without the event were compared


def test_the_frozen_shortcut_certifies_a_superset_and_meets_the_event_no_later():
    """The frozen shortcut's certified set contains the unfrozen one's at every look (a third
    model's term may read the cap, and nothing else changes), so the <= alpha event comes at the
    same look or earlier, and from then on neither reports anything."""
    events = 0
    for seed in range(12):
        x = _swapping_board(600, 24, seed)
        (frozen, f_sets), (plain, p_sets) = _pair_of_runs(x, seed, certifier="shortcut",
                                                          alpha=0.2)  # fmt: skip
        t_frozen = np.inf if frozen.alpha_event is None else frozen.alpha_event["t"]
        t_plain = np.inf if plain.alpha_event is None else plain.alpha_event["t"]
        assert t_frozen <= t_plain
        for look, f, p in zip(frozen.looks, f_sets, p_sets):
            if look["t"] < t_frozen:
                assert not (p & ~f).any()
            else:
                assert not f.any() and look.get("alpha_event")
        events += plain.alpha_event is not None
    assert events > 0


@pytest.mark.parametrize("m, exact", [(6, "exact"), (10, "ilp")])
def test_the_frozen_shortcut_never_goes_beyond_the_exact_test_on_unfrozen_wealths(m, exact):
    for seed in range(3):
        x = _board(800, m, 10 + seed)
        mon, frozen = _looks(x, 25, certifier="shortcut", freeze=True)
        _, reference = _looks(x, 25, certifier=exact, freeze=False)
        assert all(not (f & ~r).any() for f, r in zip(frozen, reference))
        assert mon.freeze and mon.n_frozen_pairs > 0  # pairs were frozen


def test_freeze_auto_is_on_above_eight_models():
    assert resolve_freeze("auto", 8) is False and resolve_freeze("auto", 9) is True
    assert Monitor([f"m{j}" for j in range(9)], sampling="iid").freeze
    with pytest.raises(ValueError, match="freeze"):
        resolve_freeze("sometimes", 9)


@pytest.mark.parametrize("certifier", ["shortcut", "exact"])
def test_frozen_monitor_error_rate_stays_below_alpha(certifier):
    """All models tied (model S): any certified pair is false; the frozen monitor with looks
    every 10 items must err in at most alpha + 3 Monte-Carlo standard errors of the runs."""
    rng = np.random.default_rng(77)
    reps, n, m = 120, 300, 4
    wrong = 0
    for _ in range(reps):
        d = rng.normal(size=n)[:, None]
        x = (rng.random((n, m)) < 1 / (1 + np.exp(d - 0.3))).astype(float)
        mon = Monitor(list("abcd"), sampling="iid", certifier=certifier, look_every=10,
                      freeze=True)  # fmt: skip
        mon.update_block(x)
        wrong += bool(any(look["n_certified"] for look in mon.looks)) or mon.alpha_event is not None
    assert wrong / reps <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)


@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_buffered_single_items_give_the_same_bits_and_looks(sampling, tmp_path):
    rng = np.random.default_rng(5)
    m, n = 20, 700
    x = (rng.random((n, m)) < np.linspace(0.8, 0.4, m)).astype(float)
    names = [f"m{j}" for j in range(m)]
    kw = {"sampling": sampling, "n_items": n if sampling == "finite" else None, "look_every": 50}
    one, block = Monitor(names, **kw), Monitor(names, **kw)
    for row in x[:333]:
        one.update(row)
    assert one.t == 333  # buffered items count
    one.save(tmp_path / "state.npz")  # saving consumes the buffer first
    restored = Monitor.restore(tmp_path / "state.npz")
    for row in x[333:]:
        one.update(row)
        restored.update(row)
    block.update_block(x)
    for mon in (one, restored):
        assert np.array_equal(mon.log_wealth(), block.log_wealth(), equal_nan=True)
        assert mon.looks == block.looks
        assert mon.ranking().dominance_pairs() == block.ranking().dominance_pairs()
