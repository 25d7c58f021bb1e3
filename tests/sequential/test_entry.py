"""Models that join later (MonitorSpec(entry="open"), rankci.sequential.entry)."""

import hashlib
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from rankci.sequential import Monitor, MonitorSpec
from rankci.sequential.entry import OpenMonitor, level_sum, pair_level

ALPHA = Fraction(1, 20)


# ------------------------------------------------------------------ the levels
@pytest.mark.parametrize("m0", [2, 3, 5, 12])
def test_levels_sum_to_at_most_alpha_over_a_long_sequence_of_entrants(m0):
    # independent closed form: alpha (1 - 1/M0) + alpha sum_{m=M0+1}^{n} 1/((m-1) m)
    # = alpha (1 - 1/M0) + alpha (1/M0 - 1/n) = alpha (1 - 1/n)
    total = Fraction(0)
    for n in range(2, 400):
        total += 2 * (n - 1) * pair_level(ALPHA, m0, n)
        if n >= m0:
            assert total == ALPHA * (1 - Fraction(1, n))
        assert total <= ALPHA
    assert level_sum(ALPHA, m0, 399) == total


def test_initial_pairs_and_entrant_pairs_levels():
    assert pair_level(ALPHA, 4, 2) == pair_level(ALPHA, 4, 4) == ALPHA / 16
    assert pair_level(ALPHA, 4, 5) == ALPHA / (2 * 5 * 16)
    with pytest.raises(ValueError, match="entrant must be an integer >= 2"):
        pair_level(ALPHA, 4, 1)


def test_monitor_thresholds_are_the_pair_levels_and_sum_to_at_most_alpha():
    mon = OpenMonitor(["m0", "m1", "m2"], sampling="iid", entry="open", alpha=0.05)
    for j in range(3, 60):
        mon.add_model(f"m{j}")
    levels = np.exp(-mon.log_thresholds())
    m = mon.n_models
    for j in range(m):
        for l in range(m):
            if j != l:
                want = float(pair_level(ALPHA, 3, max(j, l) + 1))
                assert levels[j, l] == pytest.approx(want, rel=1e-12)
    assert np.nansum(levels) <= 0.05 * (1 - 1 / m) * (1 + 1e-12)
    assert [e["threshold"] for e in mon.entrants[3:5]] == [
        pytest.approx(2 * 4 * 9 / 0.05),
        pytest.approx(2 * 5 * 16 / 0.05),
    ]


# ------------------------------------------------------------------ the e-processes
def _loop_log_wealth(x, j, l, grid):
    """Direct oracle: log mean_k prod_t (1 + lambda_k (x_tj - x_tl)) (model S, constant bets)."""
    products = []
    for lam in grid:
        p = 1.0
        for row in x:
            p *= 1.0 + lam * (row[j] - row[l])
        products.append(p)
    return math.log(sum(products) / len(products))


def test_an_entrants_pairs_start_at_its_first_item():
    rng = np.random.default_rng(7)
    before = (rng.random((300, 3)) < [0.7, 0.5, 0.4]).astype(float)
    after = (rng.random((400, 4)) < [0.7, 0.5, 0.4, 0.6]).astype(float)
    grid = (0.05, 0.2, 0.5)
    mon = OpenMonitor(["a", "b", "c"], sampling="iid", entry="open", grid=grid)
    mon.update_block(before)
    mon.add_model("d")
    assert mon.entrants[3]["t"] == 300
    mon.update_block(after)
    lw = mon.log_wealth()
    for j in range(3):
        assert lw[j, 3] == pytest.approx(_loop_log_wealth(after, j, 3, grid), abs=1e-9)
        assert lw[3, j] == pytest.approx(_loop_log_wealth(after, 3, j, grid), abs=1e-9)
    # the initial pairs saw every item
    both = np.vstack([before, after[:, :3]])
    assert lw[0, 1] == pytest.approx(_loop_log_wealth(both, 0, 1, grid), abs=1e-9)


def test_statements_about_other_models_unchanged_before_entry():
    rng = np.random.default_rng(3)
    x = (rng.random((2000, 3)) < [0.8, 0.5, 0.3]).astype(float)
    plain = OpenMonitor(["a", "b", "c"], sampling="iid", entry="open", look_every=100)
    plain.update_block(x)
    joined = OpenMonitor(["a", "b", "c"], sampling="iid", entry="open", look_every=100)
    joined.update_block(x[:1000])
    looks_before = [dict(r) for r in joined.looks]
    joined.add_model("d")
    joined.update_block(np.column_stack([x[1000:], rng.random(1000) < 0.5]))
    assert joined.looks[:10] == looks_before == plain.looks[:10]
    assert joined.ranking().details["entrants"][3]["look"] == 10


# ------------------------------------------------------------------ closed boards
def test_closed_boards_are_byte_identical_to_before_entry_existed():
    # digests made by the code before this change (commit 6a6a76e):
    #   git archive 6a6a76e src | tar -x -C /tmp/base && PYTHONPATH=/tmp/base/src python <this body>
    rng = np.random.default_rng(2029)
    x = (rng.random((3000, 4)) < [0.62, 0.55, 0.5, 0.4]).astype(float)
    out = []
    for spec in (
        MonitorSpec(sampling="iid", look_every=100),
        MonitorSpec(n_items=3000, look_every=150, certifier="bonferroni"),
    ):
        mon = Monitor(["a", "b", "c", "d"], spec)
        assert type(mon) is Monitor
        mon.update_block(x)
        r = mon.ranking()
        blob = json.dumps(
            {"r": r.to_dict(), "looks": mon.looks, "lw": mon.log_wealth().round(12).tolist()},
            sort_keys=True,
            default=str,
        )
        out.append(hashlib.sha256(blob.encode()).hexdigest())
    assert out == [
        "f8f637560971e46ddaf8fdda65dfc9056216a3059c4cf289da88d3a8f3f0e405",
        "f717d518aeb4da43b651792d489cba94c1b6f5ef56448cc68048aff409169f21",
    ]


def test_closed_spec_dict_and_old_dicts():
    assert "entry" not in MonitorSpec().to_dict()
    old = {"flow": "anytime", "version": 1, "alpha": 0.1}
    assert MonitorSpec.from_dict(old).entry == "closed"
    spec = MonitorSpec(sampling="iid", entry="open")
    assert spec.to_dict()["entry"] == "open"
    assert MonitorSpec.from_dict(spec.to_dict()) == spec


def test_add_model_on_a_closed_board_is_refused_naming_the_setting():
    mon = Monitor(["a", "b"], sampling="iid")
    with pytest.raises(ValueError, match=r"entry='closed'.*MonitorSpec\(entry='open'\)"):
        mon.add_model("c")
    with pytest.raises(ValueError, match=r"entry='open'.*OpenMonitor\(models, spec\)"):
        Monitor(["a", "b"], MonitorSpec(sampling="iid", entry="open"))


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"sampling": "finite", "n_items": 100}, "needs sampling='iid'"),
        ({"sampling": "iid", "certifier": "exact"}, "needs certifier='bonferroni'"),
        ({"sampling": "iid", "freeze": True}, "does not freeze"),
    ],
)
def test_open_entry_refuses_what_it_is_not_proved_for(settings, words):
    with pytest.raises(ValueError, match=words):
        MonitorSpec(entry="open", **settings)


def test_add_model_errors():
    mon = OpenMonitor(["a", "b"], sampling="iid", entry="open")
    with pytest.raises(ValueError, match="'a' is on the board already"):
        mon.add_model("a")
    with pytest.raises(ValueError, match="non-empty string"):
        mon.add_model("")


# ------------------------------------------------------------------ validity
def test_monte_carlo_error_at_any_look_with_late_entrants_on_tied_models():
    # every model has the same ability, so every certified pair is an error; alpha = 0.3 so that
    # the check has power to see a wrong level (an unweighted threshold 1/alpha would fail)
    alpha, reps, n = 0.3, 300, 600
    rng = np.random.default_rng(11)
    errors = 0
    for _ in range(reps):
        mon = OpenMonitor(["m0", "m1"], sampling="iid", entry="open", alpha=alpha, look_every=20)
        joins = np.sort(rng.integers(0, n, size=4))
        t = 0
        for k, at in enumerate(joins):
            if at > t:
                mon.update_block((rng.random((at - t, mon.n_models)) < 0.5).astype(float))
                t = at
            mon.add_model(f"late{k}")
        mon.update_block((rng.random((n - t, mon.n_models)) < 0.5).astype(float))
        errors += any(r["n_certified"] or r.get("alpha_event") for r in mon.looks)
    rate = errors / reps
    se = math.sqrt(max(rate * (1 - rate), 1e-4) / reps)
    assert rate <= alpha + 2 * se
    assert isinstance(mon, OpenMonitor)


def test_open_board_finds_a_late_strong_model():
    rng = np.random.default_rng(5)
    mon = OpenMonitor(["a", "b"], sampling="iid", entry="open", look_every=200)
    mon.update_block((rng.random((1000, 2)) < [0.5, 0.4]).astype(float))
    mon.add_model("new")
    mon.update_block((rng.random((4000, 3)) < [0.5, 0.4, 0.9]).astype(float))
    r = mon.ranking()
    assert ("new", "a") in r.dominance_pairs() and ("new", "b") in r.dominance_pairs()
    assert r.details["items_by_model"] == {"a": 5000, "b": 5000, "new": 4000}


def test_retirement_on_an_open_board_freezes_the_pairs_of_the_retired_model():
    rng = np.random.default_rng(9)
    mon = OpenMonitor(["a", "b", "c"], sampling="iid", entry="open", look_every=50)
    mon.update_block((rng.random((200, 3)) < [0.6, 0.5, 0.4]).astype(float))
    mon.retire("b")
    frozen = mon.log_wealth()[1].copy()
    mon.add_model("d")  # joins after b left: its pair with b never gets evidence
    block = (rng.random((300, 4)) < [0.6, 0.5, 0.4, 0.7]).astype(float)
    block[:, 1] = np.nan  # a retired model's scores may be left out
    mon.update_block(block)
    lw = mon.log_wealth()
    np.testing.assert_array_equal(lw[1, :3], frozen)
    assert lw[1, 3] == 0.0 and lw[3, 1] == 0.0
    assert mon.needs() == ["a", "c", "d"]
    assert mon.ranking().details["retired"] == {"b": {"t": 200, "reason": "manual"}}
    # a rule: retire once every pair with the active models is settled
    ruled = OpenMonitor(["a", "b"], sampling="iid", entry="open", look_every=100, retire="resolved")
    ruled.add_model("c")
    ruled.update_block((rng.random((5000, 3)) < [0.95, 0.5, 0.05]).astype(float))
    assert set(ruled.retired) == {"a", "b", "c"} and ruled.finished


def _whole_group_log_wealth(mon):
    """The board's log-wealths assembled from each group's whole M_g x M_g matrix (the reading
    before groups were read at their own pairs only)."""
    m = mon.n_models
    out = np.full((m, m), np.nan)
    for group in mon._groups:
        lw = group["wealth"].log_wealth()
        cols, new = group["cols"], group["new"]
        out[np.ix_(cols, new)] = lw[:, group["new_local"]]
        out[np.ix_(new, cols)] = lw[group["new_local"], :]
    np.fill_diagonal(out, np.nan)
    return out


@pytest.mark.parametrize("bet", ["mixture", "fixed", "agrapa"])
def test_reading_each_group_at_its_own_pairs_gives_the_bits_of_the_whole_matrices(bet):
    rng = np.random.default_rng(11)
    mon = OpenMonitor(["m0", "m1", "m2"], sampling="iid", entry="open", bet=bet, look_every=7)
    for j in range(3, 12):
        m = mon.n_models
        mon.update_block((rng.random((int(rng.integers(1, 40)), m)) < 0.5).astype(float))
        if j == 6:
            mon.retire("m4")  # the group of m4 stops: it is read from its saved matrix
        mon.add_model(f"m{j}")
        want = _whole_group_log_wealth(mon)
        assert np.array_equal(mon.log_wealth(), want, equal_nan=True)
    mon.update_block((rng.random((50, mon.n_models)) < 0.6).astype(float))
    assert any(type(g["wealth"]).__name__ == "_Stopped" for g in mon._groups)
    got = mon.log_wealth()
    assert np.array_equal(got, _whole_group_log_wealth(mon), equal_nan=True)
    assert np.isnan(np.diag(got)).all() and np.isfinite(got[~np.eye(12, dtype=bool)]).all()
