"""The flat look path of the frozen monitor and the faster wealth kernels against the dense ones.

Issue 18: under ``freeze`` a look computes the open pairs' log-wealths only
(``PairWealth.log_wealth_at``), certifies from them (``Certifier.look_frozen``; the shortcut and
e-Bonferroni on the open pairs, ``certify_shortcut_open``), freezes the newly settled pairs by flat
index (``PairWealth.freeze_flat``) and closes with a semi-naive ``close_incremental``. Each piece
is compared here, bit for bit or set for set, with the dense computation it replaces (the
functions the monitor used before: ``frozen_view``, ``certify_shortcut``, ``may_reach``,
``freeze_pairs``, a full closure), and whole monitors with a reference look loop built from those
dense pieces.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankci.sequential import Monitor, PairWealth
from rankci.sequential.certifier import (
    _may_reach_at,
    capped_wealth,
    certify_shortcut,
    certify_shortcut_open,
    frozen_log_wealth,
    may_reach,
)
from rankci.sequential.certify import make_certifier
from rankci.sequential.freezing import close_incremental, frozen_view

ALPHA = 0.05


def _closure(x):
    """Transitive closure by repeated boolean squaring (cycles allowed: a True diagonal)."""
    out = x.copy()
    while True:
        grown = out | ((out.astype(np.int64) @ out.astype(np.int64)) > 0)
        if np.array_equal(grown, out):
            return out
        out = grown


def _closed_known(rng, m, density):
    """A transitively closed strict partial order: a random DAG on a random order, closed."""
    rank = rng.permutation(m)
    edges = (rng.random((m, m)) < density) & (rank[:, None] < rank[None, :])
    return _closure(edges)


def _frozen_case(rng, m):
    """Open pairs' log-wealths around the thresholds and a closed known set. The open pairs are
    the uncertified ones (the monitor's list: reverses of known pairs included) or, in half the
    cases, those settled neither way (the pairs not listed then read 0)."""
    threshold = m * (m - 1) / ALPHA
    known = _closed_known(rng, m, rng.choice([0.0, 0.02, 0.1, 0.4]))
    unsettled = ~(known | known.T) if rng.random() < 0.5 else ~known
    np.fill_diagonal(unsettled, False)
    open_pairs = np.flatnonzero(unsettled)
    scale = rng.choice([1.0, 4.0, 9.0, 14.0])
    values = rng.normal(np.log(threshold) * rng.choice([0.2, 0.6, 0.9]), scale, open_pairs.size)
    return threshold, known, unsettled, open_pairs, values


def test_frozen_log_wealth_is_the_frozen_view_of_the_unsettled_log_wealths():
    rng = np.random.default_rng(20)
    m, n = 9, 400
    x = (rng.random((n, m)) < np.linspace(0.2, 0.8, m)).astype(float)
    wealth = PairWealth(m, n_items=n)
    wealth.update(x[:250])
    known = _closed_known(rng, m, 0.3)
    uncertified = ~known
    np.fill_diagonal(uncertified, False)
    flat = np.flatnonzero(uncertified)
    dense, candidates = frozen_view(wealth.log_wealth(uncertified), known)
    built = frozen_log_wealth(wealth.log_wealth_at(flat), flat, known)
    assert np.array_equal(built, dense, equal_nan=True)
    assert np.array_equal(candidates, uncertified)
    reverse = known.T  # the reverses of certified pairs read their own wealth
    assert np.array_equal(built[reverse], wealth.log_wealth()[reverse])


@pytest.mark.parametrize("bet", ["mixture", "fixed", "agrapa", "ons"])
@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_log_wealth_at_has_the_bits_of_log_wealth(bet, sampling):
    rng = np.random.default_rng(21)
    m, n = 7, 500
    x = rng.random((n, m))
    wealth = PairWealth(m, n_items=n, sampling=sampling, bet=bet)
    flat = np.flatnonzero(~np.eye(m, dtype=bool))
    for step, start in enumerate(range(0, n, 53)):
        wealth.update(x[start : start + 53])
        if step == 2:
            wealth.freeze_pairs(rng.random((m, m)) < 0.3)
        if step == 5:
            wealth.retire([4])
        pick = np.sort(rng.choice(flat, size=20, replace=False))
        assert np.array_equal(wealth.log_wealth_at(pick), wealth.log_wealth().ravel()[pick])
        unfrozen = flat[wealth._pair_stop.ravel()[flat] < 0]  # the count of items in one go
        assert np.array_equal(wealth.log_wealth_at(unfrozen), wealth.log_wealth().ravel()[unfrozen])
        dense = wealth._pair_items_since_commit().ravel()
        assert np.array_equal(wealth._items_since_commit_at(unfrozen), dense[unfrozen])


def test_freeze_flat_is_freeze_pairs_by_index():
    rng = np.random.default_rng(22)
    m, n = 8, 600
    x = (rng.random((n, m)) < np.linspace(0.3, 0.7, m)).astype(float)
    by_mask, by_index = PairWealth(m, n_items=n), PairWealth(m, n_items=n)
    off = np.flatnonzero(~np.eye(m, dtype=bool))
    for start in range(0, n, 60):
        for wealth in (by_mask, by_index):
            wealth.update(x[start : start + 60])
        flat = np.sort(rng.choice(off, size=6, replace=False))  # some frozen already
        mask = np.zeros(m * m, dtype=bool)
        mask[flat] = True
        assert by_mask.freeze_pairs(mask.reshape(m, m)) == by_index.freeze_flat(flat)
        assert np.array_equal(by_mask._pair_stop, by_index._pair_stop)
        assert by_mask.n_frozen_pairs == by_index.n_frozen_pairs
    assert np.array_equal(by_mask.log_wealth(), by_index.log_wealth(), equal_nan=True)
    assert by_index.freeze_flat(np.array([off[3], off[3], off[1]])) == 0  # repeats, all frozen
    with pytest.raises(ValueError, match="diagonal"):
        by_index.freeze_flat(np.array([0]))
    with pytest.raises(ValueError, match="flat pair indices"):
        by_index.freeze_flat(np.array([m * m]))


@pytest.mark.parametrize("m", [4, 12, 50, 130])
def test_the_open_pair_pruning_keeps_exactly_the_pairs_may_reach_keeps(m):
    rng = np.random.default_rng(23 + m)
    for _ in range(30):
        threshold, known, unsettled, open_pairs, values = _frozen_case(rng, m)
        capped = capped_wealth(frozen_log_wealth(values, open_pairs, known), threshold)
        passed = values >= np.log(threshold)
        todo = np.zeros(m * m, dtype=bool)
        todo[open_pairs[~passed]] = True
        expected = np.flatnonzero(may_reach(capped, threshold, todo.reshape(m, m)))
        tau = threshold / (4.0 * m)
        big_open = open_pairs[capped.ravel()[open_pairs] >= tau]
        got = _may_reach_at(capped, threshold, open_pairs[~passed], known, big_open)
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("m", [3, 10, 40, 100])
def test_the_open_pair_shortcut_certifies_what_the_dense_shortcut_certifies(m):
    rng = np.random.default_rng(30 + m)
    certified = 0
    for _ in range(40):
        threshold, known, unsettled, open_pairs, values = _frozen_case(rng, m)
        dense = certify_shortcut(
            frozen_log_wealth(values, open_pairs, known), threshold, known, unsettled
        )
        got = certify_shortcut_open(values, open_pairs, threshold, known)
        assert np.array_equal(got, dense)
        certified += int((got & ~known).sum())
    assert certified > 0  # new pairs were certified, not only the known ones


@pytest.mark.parametrize("name", ["shortcut", "bonferroni", "ilp"])
def test_look_frozen_is_look_on_the_frozen_view(name):
    rng = np.random.default_rng(40)
    m = 10
    for _ in range(10):
        threshold, known, unsettled, open_pairs, values = _frozen_case(rng, m)
        flat, dense = make_certifier(name, m, ALPHA), make_certifier(name, m, ALPHA)
        lw = frozen_log_wealth(values, open_pairs, known)
        expected = dense.look(lw, known=known, candidates=unsettled)
        assert np.array_equal(flat.look_frozen(values, open_pairs, known), expected)
        assert flat.n_looks == dense.n_looks == 1


@pytest.mark.parametrize("m", [2, 5, 33, 64, 65, 140])
def test_incremental_closure_is_the_closure_with_and_without_cycles(m):
    rng = np.random.default_rng(50 + m)
    for _ in range(25):
        base = rng.random((m, m)) < rng.choice([0.0, 0.01, 0.05, 0.3])
        np.fill_diagonal(base, False)
        if rng.random() < 0.5:
            base = np.triu(base, 1)  # acyclic
        closed = _closure(base)
        new = rng.random((m, m)) < rng.choice([0.002, 0.02, 0.1])
        if rng.random() < 0.5:
            rank = rng.permutation(m)
            new &= rank[:, None] < rank[None, :]
        assert np.array_equal(close_incremental(closed.copy(), new), _closure(closed | new))


def _reference_looks(x, every, **kw):
    """The frozen monitor's looks by the dense route: every look reads
    ``frozen_view(log_wealth(uncertified))``, the certifier's dense ``look``, the closure of the
    old and new pairs, and ``freeze_pairs`` of every certified pair (issue 25: the reverses of
    certified pairs are still updated and read)."""
    n, m = x.shape
    wealth = PairWealth(m, n_items=n)
    certifier = make_certifier(kw.get("certifier", "auto"), m, ALPHA)
    known = np.zeros((m, m), dtype=bool)
    looks = []
    for start in range(0, n, every):
        wealth.update(x[start : start + every])
        uncertified = ~known
        np.fill_diagonal(uncertified, False)
        lw, candidates = frozen_view(wealth.log_wealth(uncertified), known)
        certified = certifier.look(lw, known=known, candidates=candidates)
        known = _closure(known | certified)
        assert not known.diagonal().any()
        wealth.freeze_pairs(known)
        looks.append((known.sum(axis=0).tolist(), known.sum(axis=1).tolist()))
    return looks, wealth


@pytest.mark.parametrize("certifier", ["shortcut", "bonferroni", "ilp"])
@pytest.mark.parametrize("sampling_seed", [0, 1])
def test_frozen_monitor_looks_match_the_dense_reference(certifier, sampling_seed):
    rng = np.random.default_rng(60 + sampling_seed)
    m = 12 if certifier == "ilp" else 30
    n, every = 900, 30
    ability = rng.normal(0.0, 1.0, m)
    hard = rng.normal(0.0, 1.5, n)[:, None]
    x = (rng.random((n, m)) < 1.0 / (1.0 + np.exp(hard - ability))).astype(float)
    mon = Monitor([f"m{j}" for j in range(m)], n_items=n, look_every=every,
                  certifier=certifier, freeze=True)  # fmt: skip
    for start in range(0, n, every):
        mon.update_block(x[start : start + every])  # one look
        d = mon._dominance  # the open pairs carried to the next look are the uncertified ones
        uncertified = ~d & ~np.eye(m, dtype=bool)
        assert np.array_equal(mon._open_pairs()[0], np.flatnonzero(uncertified))
    reference, wealth = _reference_looks(x, every, certifier=certifier)
    got = [
        ((np.array(r["lower"]) - 1).tolist(), (m - np.array(r["upper"])).tolist())
        for r in mon.looks
    ]
    assert got == reference
    assert mon.looks[-1]["n_certified"] > 0
    assert np.array_equal(mon._wealth._pair_stop, wealth._pair_stop)
    assert np.array_equal(mon.log_wealth(), wealth.log_wealth(), equal_nan=True)


@pytest.mark.parametrize("bet", ["mixture", "agrapa", "ons"])
@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_pair_list_kernel_keeps_the_dense_bits_for_any_block_sizes(bet, sampling):
    """The pair-list kernel (contiguous numerators and denominators, clipped in one pass, copied
    items x pairs block by block) against the dense kernel, with clipping binding late in F."""
    rng = np.random.default_rng(70)
    # 40 * 39 pairs: segments of up to 110 (F) or 169 (S) items give chunks of 595 or 387 pairs,
    # so several chunks per segment (the last one partial) and several transposition blocks
    m, n = 40, 700
    x = rng.random((n, m)) * (rng.random((n, m)) < 0.8)
    kw = {"n_items": n, "sampling": sampling, "bet": bet}
    plain, frozen = PairWealth(m, **kw), PairWealth(m, **kw)
    frozen.freeze_pairs(np.eye(m, k=1, dtype=bool))  # a few pairs: the pair-list path runs
    start = 0
    for size in [1, 7, 64, 150, 3, 200, 275]:
        plain.update(x[start : start + size])
        frozen.update(x[start : start + size])
        start += size
    assert start == n
    on = ~np.eye(m, k=1, dtype=bool) & ~np.eye(m, dtype=bool)
    assert np.array_equal(plain.log_wealth()[on], frozen.log_wealth()[on])


@pytest.mark.parametrize("retire", ["topk", "resolved", "width"])
def test_carried_open_pairs_match_recomputing_them_at_every_look(retire):
    """The list of open pairs carried from look to look, and the freezing of the newly settled
    pairs by index, against recomputing the list from the certified set and freezing every
    settled pair by mask at every look (the first look's route), with retirement."""
    rng = np.random.default_rng(80)
    m, n, every = 25, 1200, 40
    ability = np.linspace(-1.5, 1.5, m)
    hard = rng.normal(0.0, 1.5, n)[:, None]
    x = (rng.random((n, m)) < 1.0 / (1.0 + np.exp(hard - ability))).astype(float)
    kw = {"n_items": n, "look_every": every, "certifier": "shortcut", "retire": retire}
    kw.update({"k": 5, "width": 2})
    names = [f"m{j}" for j in range(m)]
    carried, recomputed = Monitor(names, **kw), Monitor(names, **kw)
    for start in range(0, n, every):
        if carried.finished:
            break
        carried.update_block(x[start : start + every])
        recomputed._open = None  # forget the list: recomputed, every settled pair frozen by mask
        recomputed.update_block(x[start : start + every])
    assert carried.looks == recomputed.looks
    assert carried.retired and carried.retired == recomputed.retired
    assert np.array_equal(carried._wealth._pair_stop, recomputed._wealth._pair_stop)
    assert np.array_equal(carried.log_wealth(), recomputed.log_wealth(), equal_nan=True)
