"""The plain per-item baseline of benchmarks/monitor_baseline.py agrees with rankci's replay.

The baseline is the paper's algorithm written as a NumPy loop over items; rankci's monitor is
block-processed. On the same data and item order both must give the same pairwise log-wealths
(up to rounding) and the same rank intervals at every look. The baseline is itself checked
against the worked numbers of the reference examples (rcs-examples.md, sections A and D).
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from rcs_reference import EXAMPLE_A, PAIRS_A

import rankci
from rankci.sequential import Monitor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import monitor_baseline as mb  # noqa: E402

REL = 1e-9


def _binary(n, m, seed):
    rng = np.random.default_rng(seed)
    p = np.linspace(0.75, 0.55, m)
    return (rng.random((n, m)) < p).astype(float)


def _continuous(n, m, seed):
    rng = np.random.default_rng(seed)
    mean = np.linspace(0.65, 0.45, m)
    shared = rng.normal(0.0, 0.15, (n, 1))  # item difficulty shared by every model
    return np.clip(mean + shared + rng.normal(0.0, 0.2, (n, m)), 0.0, 1.0)


def _check(x, **kw):
    base = mb.baseline_replay(x, **kw)
    run, log_wealth = mb.rankci_replay(x, **kw)
    delta = mb.agreement((run, log_wealth), base)  # raises if any look's intervals differ
    scale = np.nanmax(np.abs(log_wealth))
    assert delta <= REL * max(1.0, scale)
    rel = np.abs(log_wealth - base["log_wealth"]) / np.maximum(1.0, np.abs(log_wealth))
    assert np.nanmax(rel) <= REL
    assert base["certifier"] == run.config["certifier"]
    assert base["looks"] == len(run.looks)
    assert [r["n_certified"] for r in base["look_records"]] == [r["n_certified"] for r in run.looks]
    np.testing.assert_array_equal(base["dominance"], run.ranking.dominance)
    return base, run


@pytest.mark.parametrize("certifier", ["auto", "shortcut", "bonferroni"])
def test_binary_six_models(certifier):
    x = _binary(400, 6, seed=11)
    base, run = _check(x, certifier=certifier, order_seed=3)
    assert base["looks"] == 100
    counts = [r["n_certified"] for r in base["look_records"]]
    assert 0 < counts[len(counts) // 2] < counts[-1]  # certification is gradual here
    if certifier == "auto":  # M <= 8: the exact enumeration, with rank sets
        assert base["certifier"] == "exact"
        sets = run.ranking.details["rank_sets"]
        assert [sets[m] for m in run.ranking.models] == base["rank_sets"]


@pytest.mark.parametrize("certifier", ["auto", "shortcut"])
def test_continuous_scores(certifier):
    x = _continuous(400, 6, seed=5)
    assert not np.isin(x, [0.0, 1.0]).all()
    _check(x, certifier=certifier, order_seed=1, look_every=10)


def test_more_than_eight_models_uses_the_shortcut():
    x = _binary(300, 12, seed=2)
    base, _ = _check(x, order_seed=4)
    assert base["certifier"] == "shortcut"


def test_agreement_with_a_monitor_fed_item_by_item():
    x = _binary(200, 4, seed=9)
    base = mb.baseline_replay(x, look_every=20, order_seed=6)
    mon = Monitor([f"m{j}" for j in range(4)], n_items=200, look_every=20)
    for row in x[mb.item_order(200, 6)]:
        mon.update(row)
    assert mb.agreement(mon, base) < 1e-9


def test_agreement_needs_the_wealths_of_a_monitor_run():
    x = _binary(100, 3, seed=1)
    base = mb.baseline_replay(x)
    run = rankci.sequential.replay(rankci.Scores.from_matrix(x))
    with pytest.raises(ValueError, match="log_wealth"):
        mb.agreement(run, base)


def test_agreement_reports_different_intervals():
    x = _binary(400, 5, seed=11)
    run, log_wealth = mb.rankci_replay(x)
    base = mb.baseline_replay(x, alpha=0.5)  # a different level certifies differently
    with pytest.raises(ValueError, match="rank intervals differ"):
        mb.agreement(run, base, log_wealth)


def test_item_order_is_the_replay_contract():
    x = _binary(1200, 3, seed=0)
    run = rankci.sequential.replay(rankci.Scores.from_matrix(x), order_seed=8)
    order = mb.item_order(1200, 8)
    assert [int(label[1:]) for label in run.order] == order.tolist()
    np.testing.assert_array_equal(order, np.random.default_rng(8).permutation(1200))


# ---------------------------------------------------------------------- reference numbers
STREAM, PAIRS = EXAMPLE_A, PAIRS_A  # rcs-examples.md, A


@pytest.mark.parametrize(
    "sampling, expected",
    [
        ("iid", [0.695044, 0.695044, -0.655081, -0.176783, -0.655081, -0.176783]),
        ("finite", [9.728764, 9.704816, -0.819412, -0.366540, -0.770118, -0.110247]),
    ],
)
def test_baseline_mixture_wealth_on_the_tiny_stream(sampling, expected):
    x = np.empty_like(STREAM)
    x[mb.item_order(10, 0)] = STREAM  # so that the replay order is the stream's order
    log_wealth = mb.baseline_replay(x, sampling=sampling, look_every=1)["log_wealth"]
    np.testing.assert_allclose([log_wealth[p] for p in PAIRS], expected, atol=1e-6)


@pytest.mark.parametrize(
    "certifier, expected",
    [
        ("exact", [0, 4, 5, 7, 8, 10]),
        ("shortcut", [0, 3, 5, 7, 8, 10]),
        ("bonferroni", [0, 3, 5, 7, 8, 10]),
    ],
)
def test_baseline_on_the_simulated_benchmark(certifier, expected):
    rng = np.random.default_rng(20260101)
    x = (rng.random((2000, 5)) < [0.72, 0.70, 0.66, 0.60, 0.50]).astype(float)
    base = mb.baseline_replay(x, certifier=certifier, order_seed=7, look_every=50)
    counts = {r["t"]: r["n_certified"] for r in base["look_records"]}
    assert [counts[t] for t in (100, 250, 500, 1000, 1500, 2000)] == expected
    assert base["lower"].tolist() == base["upper"].tolist() == [1, 2, 3, 4, 5]


# ---------------------------------------------------------------------- bundled data
@pytest.mark.parametrize("freeze", [False, True])
def test_bundled_mmlu_pro_agrees_with_the_baseline_at_every_look(freeze):
    """32 real models: the exact mode must agree look for look; the frozen mode (the default
    above 8 models) may differ only as rankci.sequential.freezing allows, and on these data it
    gives the same rank intervals at every look too."""
    from rankci.datasets import load_mmlu_pro

    units = load_mmlu_pro().units("item", missing="pairwise").values
    x = units[np.isfinite(units).all(axis=1)]
    base = mb.baseline_replay(x, certifier="shortcut")
    run, log_wealth = mb.rankci_replay(x, certifier="shortcut", freeze=freeze)
    looks = [(r["t"], r["lower"], r["upper"]) for r in run.looks]
    assert looks == [(r["t"], r["lower"], r["upper"]) for r in base["look_records"]]
    if not freeze:
        _check(x, certifier="shortcut")
