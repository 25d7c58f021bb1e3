"""Every "nothing certified" explains itself (issue 25, item 4): marginal and simultaneous Holm,
max-t, tau-best, rank_benchmarks, check and the end of a monitor replay warn, say what would be
needed and name what changes it (the opt-in exact floor ``exact_bound_n`` when it is what
blocks; since issue 25, item 3 it is off by default, so these tests ask for it); a board that
certifies something gets no such word.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci import RankciWarning
from rankci.analyses.best import tau_best
from rankci.analyses.claims import check_claims
from rankci.analyses.multibench import rank_benchmarks
from rankci.certify.holm import certify_holm
from rankci.certify.maxt import certify_maxt
from rankci.commands.messages import cli_message
from rankci.evidence.pairwise import pairwise_tests
from rankci.method import MethodSpec
from rankci.sequential.replay import replay

NOTHING = "nothing is certified"


def _explanations(record) -> list[str]:
    return [str(w.message) for w in record if NOTHING in str(w.message)]


def _clustered(n_clusters: int = 14, gap: float = 0.15, size: int = 5, seed: int = 0):
    """Four models ``gap`` apart, ``size`` items per cluster, little noise."""
    rng = np.random.default_rng(seed)
    n = n_clusters * size
    x = 0.2 + gap * np.arange(4)[::-1][None, :] + rng.normal(0, 0.05, (n, 4))
    clusters = [f"c{i // size:02d}" for i in range(n)]
    return rankci.Scores.from_matrix(np.clip(x, 0, 1), clusters=clusters)


def _tied(n: int = 40, seed: int = 0):
    """Four models with one law: nothing separates them."""
    rng = np.random.default_rng(seed)
    return rankci.Scores.from_matrix(rng.normal(0.5, 0.2, (n, 4)).clip(0, 1))


def _separated(n: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = 0.2 + 0.2 * np.arange(4)[::-1][None, :] + rng.normal(0, 0.05, (n, 4))
    return np.clip(x, 0, 1)


def test_fourteen_cluster_units_marginal_names_the_exact_floor():
    units = _clustered().units("cluster")
    assert units.n_units == 14
    with pytest.warns(RankciWarning, match=NOTHING) as record:
        c = certify_holm(pairwise_tests(units, "t", exact_bound_n=30), 0.05, "marginal")
    assert (c.lower == 1).all() and (c.upper == 4).all()
    (message,) = _explanations(record)
    assert "exact_bound_n=0" in message and "14 cluster units" in message
    assert "asymptotic" in message and "every law" in message  # what turning it off costs
    assert "exact_bound_n=0" in c.details["nothing_certified"]
    flags = cli_message(message)
    assert "--exact-bound-n 0" in flags and "exact_bound_n" not in flags
    assert "--alpha" in flags
    # the plain t certifies the full order on the same units, with no such word
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        c0 = certify_holm(pairwise_tests(units, "t", exact_bound_n=0), 0.05, "marginal")
        default = certify_holm(pairwise_tests(units), 0.05, "marginal")  # auto: the plain t
    assert c0.lower.tolist() == [1, 2, 3, 4] and not _explanations(plain)
    assert "nothing_certified" not in c0.details
    assert default.lower.tolist() == [1, 2, 3, 4] and "nothing_certified" not in default.details


def test_simultaneous_holm_explains_and_says_what_is_needed():
    with pytest.warns(RankciWarning, match=NOTHING) as record:
        c = certify_holm(pairwise_tests(_tied().units(), "t", exact_bound_n=0), 0.05)
    assert not c.dominance.any()
    (message,) = _explanations(record)
    assert "40 item units" in message and "first Holm threshold" in message
    assert "larger differences" in message and "alpha" in message


def test_the_cli_names_the_floor_as_a_flag(tmp_path):
    path = tmp_path / "k14.csv"
    _clustered(size=1).to_frame().to_csv(path, index=False)
    out = subprocess.run(
        [sys.executable, "-m", "rankci", "rank", str(path), "--coverage", "marginal",
         "--test", "t", "--exact-bound-n", "30"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert NOTHING in out.stderr + out.stdout
    assert "--exact-bound-n 0" in out.stderr + out.stdout


@pytest.mark.parametrize("coverage", ["simultaneous", "marginal"])
# the subject is the nothing-certified explanation; max-t's small-sample caution is a second note
@pytest.mark.filterwarnings("ignore:max-t with only:rankci.RankciWarning")
def test_maxt_explains_with_the_largest_t_against_the_critical_value(coverage):
    with pytest.warns(RankciWarning, match=NOTHING) as record:
        c = certify_maxt(_tied().units(), coverage=coverage, rng=1)
    (message,) = _explanations(record)
    assert "largest |t|" in message and "critical value" in message
    assert c.details["nothing_certified"] == message


def test_tau_best_of_every_model_says_why():
    with pytest.warns(RankciWarning, match=NOTHING):
        t = tau_best(_tied(), 1)
    assert len(t.members) == 4
    assert t.note is not None and NOTHING in t.note
    assert NOTHING in t.to_dict()["note"]


def test_rank_benchmarks_explains_each_empty_table():
    a, b = _tied(seed=1).to_frame(), _tied(seed=2).to_frame()
    frame = pd.concat([a.assign(benchmark="a"), b.assign(benchmark="b")], ignore_index=True)
    with pytest.warns(RankciWarning, match=NOTHING) as record:
        result = rank_benchmarks(frame, overall=False)
    messages = _explanations(record)
    assert any("table 'a'" in m for m in messages) and any("table 'b'" in m for m in messages)
    assert NOTHING in result.rankings["a"].details["nothing_certified"]


def test_check_with_no_claim_decided_names_the_floor():
    scores = _clustered(size=1)  # 14 items, gaps of 0.15
    floored = MethodSpec(test="t", test_options={"exact_bound_n": 30})  # the opt-in floor
    with pytest.warns(RankciWarning, match="no claim is decided") as record:
        check = check_claims(scores, ["m0 > m1"], spec=floored)
    assert check.results[0].result == "not decided"
    (message,) = _explanations(record)
    assert "exact_bound_n=0" in message
    assert NOTHING in check.to_dict()["details"]["nothing_certified"]
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        check0 = check_claims(scores, ["m0 > m1"])  # the default: auto, the plain t here
    assert check0.results[0].result == "supported" and not _explanations(plain)


def test_replay_that_certifies_no_pair_explains_itself():
    rng = np.random.default_rng(0)
    x = np.repeat((rng.random((60, 1)) < 0.5).astype(float), 3, axis=1)  # three equal models
    with pytest.warns(RankciWarning, match=NOTHING) as record:
        run = replay(rankci.Scores.from_matrix(x))
    assert not run.ranking.dominance.any()
    (message,) = _explanations(record)
    assert "e-value" in message and "M(M-1)/alpha" in message
    assert run.to_dict()["final"]["nothing_certified"] == message


def test_boards_that_certify_something_say_nothing():
    x = _separated()
    scores = rankci.Scores.from_matrix(x)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        units = scores.units()
        certify_holm(pairwise_tests(units), 0.05)
        certify_holm(pairwise_tests(units), 0.05, "marginal")
        certify_maxt(units, rng=1)
        tau_best(scores, 1)
        check_claims(scores, ["m0 > m1"])
        frame = scores.to_frame()
        rank_benchmarks(
            pd.concat([frame.assign(benchmark="a"), frame.assign(benchmark="b")]), overall=False
        )
        replay(rankci.Scores.from_matrix(x[:60]))
    assert not _explanations(record)
    assert not [w for w in record if "tau-best set is every model" in str(w.message)]


def test_the_unreachable_warning_names_the_floor_when_more_units_than_it_are_needed():
    # with a margin of 0.8 the floor's smallest p-value is 0.9^n: 14 units cannot reach
    # 0.05 / 12, and the floor alone would need more than 30 units
    units = _clustered(size=1).units()
    with pytest.warns(RankciWarning, match="nothing can be certified") as record:
        certify_holm(pairwise_tests(units, "t", delta=0.8, exact_bound_n=30), 0.05)
    message = next(str(w.message) for w in record if "nothing can" in str(w.message))
    assert "exact_bound_n=0" in message and "asymptotic" in message
