"""Aggregates over benchmarks (issue 28, item 3): HELM's win rate, MTEB's Borda count, the
Open LLM Leaderboard's normalised mean, and their simultaneous rank intervals.

Oracles: the definitions recomputed here by direct loops written from the sources
(HELM ``compute_aggregate_row_win_rates``: per column, wins = models strictly below + (ties - 1)/2
over n_present - 1, columns with < 2 values skipped, mean over the columns a row has; MTEB
``borda_count``: sort a task's models by score, pop from the best giving M - 1, M - 2, ...
points, a tied group shares its points equally, a missing model gets nothing), hand-computed
numbers on small tables, and the bootstrap step-down against a direct loop on the same draws.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.analyses import aggregates as agg
from rankci.cli import main
from rankci.evidence.bootstrap import resample_counts

NAN = float("nan")
# 3 scenarios x 4 models, ties in scenario 0 and model d missing scenario 2
TABLE = np.array(
    [
        [0.8, 0.6, 0.6, 0.2],
        [0.5, 0.7, 0.1, 0.3],
        [0.9, 0.4, 0.4, NAN],
    ]
)


def helm_loop(table):
    """HELM's mean win rate, row = model, column = scenario, by plain loops."""
    n_b, m = table.shape
    per_model = [[] for _ in range(m)]
    for b in range(n_b):
        values = [table[b, j] for j in range(m) if not math.isnan(table[b, j])]
        if len(values) < 2:
            continue
        for j in range(m):
            v = table[b, j]
            if math.isnan(v):
                continue
            below = sum(1 for u in values if u < v)
            ties = sum(1 for u in values if u == v)
            per_model[j].append((below + (ties - 1) / 2) / (len(values) - 1))
    return [sum(w) / len(w) if w else None for w in per_model]


def mteb_loop(table):
    """MTEB's tournament Borda count: each task pops its models best first."""
    n_b, m = table.shape
    points = [0.0] * m
    for b in range(n_b):
        results = sorted(
            [(j, table[b, j]) for j in range(m) if not math.isnan(table[b, j])],
            key=lambda r: r[1],
        )
        available = list(range(m))  # points 0 .. M-1, the best pops M-1
        prev, group, score = None, [], 0.0
        while results:
            current = results.pop()
            if prev is None or current[1] == prev[1]:
                score += available.pop()
                group.append(current)
            else:
                for j, _ in group:
                    points[j] += score / len(group)
                group, score = [current], available.pop()
            prev = current
        for j, _ in group:
            points[j] += score / len(group)
    return points


# ---------------------------------------------------------------------- the definitions
def test_win_rate_matches_helm_by_hand():
    # scenario 0: a beats 3 -> 1; b, c: 1 below + 1/2 tie -> 1.5/3 = 0.5; d 0
    # scenario 1: a 2/3, b 1, c 0, d 1/3; scenario 2 (3 present): a 1, b, c 0.5/2 = 0.25
    expected = [(1 + 2 / 3 + 1) / 3, (0.5 + 1 + 0.25) / 3, (0.5 + 0 + 0.25) / 3, (0 + 1 / 3) / 2]
    assert np.allclose(helm_loop(TABLE), expected)
    assert np.allclose(agg.aggregate_scores(TABLE, "win-rate"), expected)


def test_borda_matches_mteb_by_hand():
    # M = 4. scenario 0: a 3, b c share 2 + 1 -> 1.5 each, d 0; scenario 1: b 3, a 2, d 1, c 0;
    # scenario 2 (d missing): a 3, b c share 2 + 1 -> 1.5, d 0
    expected = [3 + 2 + 3, 1.5 + 3 + 1.5, 1.5 + 0 + 1.5, 0 + 1 + 0]
    assert np.allclose(mteb_loop(TABLE), expected)
    assert np.allclose(agg.aggregate_scores(TABLE, "borda"), expected)


@pytest.mark.parametrize("seed", range(5))
def test_win_rate_and_borda_match_the_loops_on_random_tables_with_ties(seed):
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 4, size=(6, 7)) / 4.0  # many ties
    table[rng.random(table.shape) < 0.15] = np.nan
    helm = helm_loop(table)
    ours = agg.aggregate_scores(table, "win-rate")
    for h, o in zip(helm, ours):
        assert (h is None and np.isnan(o)) or math.isclose(h, o)
    assert np.allclose(agg.aggregate_scores(table, "borda"), mteb_loop(table))


def test_a_stack_of_tables_gives_each_tables_aggregate():
    rng = np.random.default_rng(3)
    stack = rng.integers(0, 3, size=(4, 5, 6)) / 2.0
    for name in ("win-rate", "borda"):
        whole = agg.aggregate_scores(stack, name)
        assert np.allclose(whole, [agg.aggregate_scores(t, name) for t in stack])


def test_normalised_is_clipped_as_the_open_llm_leaderboard_does():
    scores = np.array([[0.25, 0.625, 0.1], [0.75, 0.5, 1.0]])
    # benchmark 0 baseline 1/4: (0.625 - 0.25) / 0.75 = 0.5, below the baseline -> 0
    # benchmark 1 baseline 1/2: 0.5, 0, 1
    expected = [(0 + 0.5) / 2, (0.5 + 0) / 2, (0 + 1) / 2]
    assert np.allclose(agg.aggregate_scores(scores, "normalised", baselines=[0.25, 0.5]), expected)


def test_weighted_is_the_weighted_mean():
    scores = np.array([[0.2, 0.6], [0.8, 0.4]])
    out = agg.aggregate_scores(scores, "weighted", weights=np.array([0.25, 0.75]))
    assert np.allclose(out, [0.25 * 0.2 + 0.75 * 0.8, 0.25 * 0.6 + 0.75 * 0.4])


def test_contributions_average_to_the_aggregates_order():
    c = agg.contributions(TABLE[:2], "borda")
    assert np.allclose(c.sum(axis=0) * 3, agg.aggregate_scores(TABLE[:2], "borda"))


# ---------------------------------------------------------------------- step-down oracle
def stepdown_loop(observed, draws, alpha):
    """Romano-Wolf step-down written directly: every ordered pair a hypothesis."""
    m = len(observed)
    pairs = [(j, l) for j in range(m) for l in range(m) if j != l]
    null = draws - observed
    stat, null_stat = {}, {}
    for j, l in pairs:
        d = null[:, j] - null[:, l]
        se = np.std(d, ddof=1)
        stat[(j, l)] = (observed[j] - observed[l]) / se
        null_stat[(j, l)] = d / se
    active, rejected = set(pairs), set()
    while True:
        maxima = np.max([null_stat[h] for h in active], axis=0)
        k = math.ceil((1 - alpha) * (len(maxima) + 1) - 1e-9)
        crit = max(0.0, np.sort(maxima)[k - 1])
        new = {h for h in active if stat[h] > crit}
        if not new:
            break
        rejected |= new
        active -= new
    out = np.zeros((m, m), dtype=bool)
    for j, l in rejected:
        out[j, l] = True
    return out


@pytest.mark.parametrize("seed", range(4))
def test_stepdown_matches_a_direct_loop_on_the_same_draws(seed):
    rng = np.random.default_rng(seed)
    observed = np.array([0.9, 0.7, 0.68, 0.3, 0.29])
    draws = observed + rng.normal(scale=[0.05, 0.04, 0.06, 0.05, 0.03], size=(399, 5))
    ours, _ = agg.stepdown_dominance(observed, draws, 0.05)
    assert np.array_equal(ours, stepdown_loop(observed, draws, 0.05))
    assert ours.any() and not ours.all()


def test_stratified_bootstrap_is_the_hand_written_one():
    """rank_aggregate's draws: items resampled within each benchmark, jointly across models."""
    rng = np.random.default_rng(7)
    mats = {
        "x": (rng.random((12, 3)) < [0.9, 0.5, 0.4]).astype(float),
        "y": (rng.random((9, 3)) < [0.8, 0.6, 0.1]).astype(float),
    }
    parts = {b: rankci.Scores.from_matrix(x, models=["a", "b", "c"]) for b, x in mats.items()}
    result = agg.rank_aggregate(parts, aggregate="win-rate", draws=199, rng=11)
    gen = np.random.default_rng(11)
    stack = np.stack(
        [resample_counts(gen, 199, x.shape[0]) @ x / x.shape[0] for x in mats.values()], axis=1
    )
    replicated = np.array([helm_loop(t) for t in stack], dtype=float)
    observed = np.array(helm_loop(np.stack([x.mean(axis=0) for x in mats.values()])))
    assert np.allclose(result.score, observed)
    expected, _ = agg.stepdown_dominance(observed, replicated, 0.05)
    from rankci.ranking import transitive_closure

    assert np.array_equal(result.dominance, transitive_closure(expected, result.models))
    assert result.details["aggregate"] == "win-rate" and result.details["target"] == "items"


# ---------------------------------------------------------------------- benchmarks as units
def test_benchmarks_needed_is_the_exact_floor_by_hand():
    # t with its exact floor (up to BENCHMARK_FLOOR_N = 24 benchmarks): smallest p = 2^-n;
    # Holm's first bar alpha/(M(M-1))
    for m, alpha in ((3, 0.05), (5, 0.05), (8, 0.1)):
        assert agg.benchmarks_needed(m, alpha) == math.ceil(math.log2(m * (m - 1) / alpha))


def _parts(n_benchmarks, rng, p=(0.9, 0.5, 0.2), n=200):
    models = ["a", "b", "c"][: len(p)]
    return {
        f"b{k}": rankci.Scores.from_matrix(
            (rng.random((n, len(p))) < np.asarray(p)).astype(float), models=models
        )
        for k in range(n_benchmarks)
    }


def test_too_few_benchmarks_say_how_many_are_needed():
    parts = _parts(4, np.random.default_rng(0))
    with pytest.warns(rankci.RankciWarning, match=r"needs >= 7 benchmarks"):
        r = agg.rank_aggregate(parts, aggregate="borda", target="benchmarks")
    assert not r.dominance.any()
    assert r.details["benchmarks_needed"] == 7  # ceil(log2(6 / 0.05)) = ceil(6.91)


def test_enough_benchmarks_certify_what_the_exact_floor_allows():
    # a wins every benchmark, c loses every one: win rates 1, 1/2, 0 on each of 8 benchmarks.
    # a - c = 1 on every unit: p = 2^-8 = 0.0039 <= 0.05 / 6; a - b = 1/2 on every unit:
    # Hoeffding's p = exp(-8 KL(3/4 || 1/2)) = 0.35, not certified (nor b - c).
    r = agg.rank_aggregate(
        _parts(8, np.random.default_rng(1)), aggregate="win-rate", target="benchmarks"
    )
    kl = 0.75 * math.log(1.5) + 0.25 * math.log(0.5)
    assert math.exp(-8 * kl) > 0.05 / 6 >= 2.0**-8
    assert r.dominance_pairs() == [("a", "c")]
    assert r.n_units == 8 and r.procedure["unit"] == "benchmark"


# ---------------------------------------------------------------------- bad input
def test_one_benchmark_is_refused_naming_what_is_needed():
    parts = _parts(1, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"at least two benchmarks \(only 'b0'\)"):
        agg.rank_aggregate(parts)
    with pytest.raises(ValueError, match="at least two benchmarks"):
        rankci.rank_benchmarks(parts, aggregate="win-rate")


@pytest.mark.parametrize(
    "baselines, message",
    [
        (None, "needs the random-guess baseline of every benchmark"),
        ({"b0": 0.25}, "no baseline given for benchmark 'b1'"),
        ({"b0": 0.25, "b1": 1.0}, r"baseline of benchmark 'b1' is 1; .* \[0, 1\)"),
        ({"b0": 0.25, "b1": 0.2, "zz": 0.1}, "unknown benchmark 'zz'"),
    ],
)
def test_bad_baselines_are_refused(baselines, message):
    with pytest.raises(ValueError, match=message):
        agg.rank_aggregate(
            _parts(2, np.random.default_rng(0)), aggregate="normalised", baselines=baselines
        )


def _with_missing():
    rng = np.random.default_rng(2)
    parts = _parts(3, rng)
    parts["b2"] = parts["b2"].subset(models=["a", "b"])  # c misses b2
    return parts


def test_a_model_missing_a_benchmark_follows_helm_and_mteb():
    parts = _with_missing()
    means = np.full((3, 3), np.nan)
    for b, p in enumerate(parts.values()):
        u = p.units()
        for k, name in enumerate(u.models):
            means[b, "abc".index(name)] = u.values[:, k].mean()
    r = agg.rank_aggregate(parts, aggregate="win-rate", draws=200, rng=0)
    assert np.allclose(r.score, helm_loop(means))
    assert r.excluded["models_missing_benchmarks"] == {"c": ["b2"]}
    assert "HELM" in r.details["missing_rule"]
    r = agg.rank_aggregate(parts, aggregate="borda", draws=200, rng=0)
    assert np.allclose(r.score, mteb_loop(means))


def test_a_model_missing_a_benchmark_is_left_out_of_the_mean_and_refused_as_units():
    parts = _with_missing()
    r = agg.rank_aggregate(parts, aggregate="weighted", draws=200, rng=0)
    assert r.models == ("a", "b") and r.excluded["models_not_in_every_benchmark"] == ["c"]
    with pytest.raises(ValueError, match="model 'c' has no scores on benchmark 'b2'"):
        agg.rank_aggregate(parts, aggregate="win-rate", target="benchmarks")


# ---------------------------------------------------------------------- rank_benchmarks + CLI
def test_rank_benchmarks_default_is_unchanged_and_aggregate_splits_alpha():
    parts = _parts(3, np.random.default_rng(4))
    plain = rankci.rank_benchmarks(parts)
    assert plain.aggregate == "weighted" and plain.overall.pairwise.test == "stratified-t"
    result = rankci.rank_benchmarks(parts, aggregate="borda", draws=300, rng=0)
    assert result.overall.procedure["alpha_table"] == pytest.approx(0.05 / 4)
    assert result.rankings["b0"].procedure["alpha_table"] == pytest.approx(0.05 * 3 / 4)
    assert "Bonferroni between the parts" in result.guarantee
    assert result.to_dict()["aggregate"] == "borda"


def _csv(tmp_path, n_benchmarks=3):
    rng = np.random.default_rng(5)
    frames = []
    for b in range(n_benchmarks):
        x = (rng.random((150, 3)) < [0.8, 0.5, 0.3]).astype(int)
        frames.append(
            pd.DataFrame(
                {
                    "benchmark": f"t{b}",
                    "item": np.repeat([f"t{b}-{i}" for i in range(150)], 3),
                    "model": np.tile(["a", "b", "c"], 150),
                    "score": x.ravel(),
                    "g": 0.25,
                }
            )
        )
    path = tmp_path / "boards.csv"
    pd.concat(frames).to_csv(path, index=False)
    return path


def test_cli_json_names_aggregate_target_and_guarantee(tmp_path, capsys):
    path = _csv(tmp_path)
    code = main(
        ["benchmarks", str(path), "--aggregate", "normalised", "--baseline-col", "g",
         "--draws", "300", "--format", "json"]
    )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["aggregate"] == "normalised" and out["target"] == "new items like these"
    assert out["overall"]["details"]["baselines"] == {"t0": 0.25, "t1": 0.25, "t2": 0.25}
    assert "new items of these 3 benchmarks" in out["overall"]["guarantee"]


def test_cli_text_names_the_aggregate(tmp_path, capsys):
    path = _csv(tmp_path)
    assert main(["benchmarks", str(path), "--aggregate", "win-rate", "--draws", "300"]) == 0
    text = capsys.readouterr().out
    assert "aggregate win-rate: mean win rate over benchmarks (HELM); target items" in text


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--aggregate", "normalised"], "needs every benchmark's random-guess baseline"),
        (["--aggregate", "normalised", "--baseline", "t0=0.25"], "no baseline for benchmark 't1'"),
        (["--aggregate", "normalised", "--baseline", "1"], "'t0' is 1; it must lie in [0, 1)"),
        (["--aggregate", "win-rate", "--baseline", "0.2"], "apply to --aggregate normalised"),
    ],
)
def test_cli_bad_baselines(tmp_path, capsys, flags, message):
    path = _csv(tmp_path)
    assert main(["benchmarks", str(path), *flags]) == 2
    assert message in capsys.readouterr().err


def test_cli_one_benchmark_is_refused(tmp_path, capsys):
    path = _csv(tmp_path, n_benchmarks=1)
    assert main(["benchmarks", str(path), "--aggregate", "borda"]) == 2
    assert "--aggregate borda needs at least two benchmarks; got only 't0'" in (
        capsys.readouterr().err
    )


def test_cli_refuses_benchmarks_as_units_with_a_missing_model_in_flag_words(tmp_path, capsys):
    path = _csv(tmp_path)
    table = pd.read_csv(path)
    table = table[~((table.model == "c") & (table.benchmark == "t2"))]
    table.to_csv(path, index=False)
    code = main(["benchmarks", str(path), "--aggregate", "borda", "--target", "benchmarks"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--target benchmarks uses the benchmarks as paired units" in err
    assert "model 'c' has no scores on benchmark 't2'" in err and "--target items" in err


def test_weights_of_the_weighted_aggregate_are_rank_benchmarks_weights():
    parts = _parts(2, np.random.default_rng(6))
    parts["b1"] = rankci.Scores.from_matrix(parts["b1"].units().values[:50], models=["a", "b", "c"])
    r = agg.rank_aggregate(parts, aggregate="weighted", weights="items", draws=200, rng=0)
    assert r.details["weights"] == pytest.approx({"b0": 200 / 250, "b1": 50 / 250})
    means = [p.units().values.mean(axis=0) for p in parts.values()]
    assert np.allclose(r.score, 0.8 * means[0] + 0.2 * means[1])


# 3-14 benchmark win rates per model: the subject is the target, not the t's small-sample level
@pytest.mark.filterwarnings("ignore:.* item units of continuous:rankci.RankciWarning")
def test_benchmarks_target_is_rankci_rank_on_the_per_benchmark_win_rates():
    """Benchmarks as units: the win rates of each benchmark (HELM's loop) ranked by rankci.rank."""
    rng = np.random.default_rng(8)
    p = np.array([0.9, 0.7, 0.5, 0.3])
    parts = {
        f"b{k}": rankci.Scores.from_matrix(
            (rng.random((60, 4)) < np.clip(p + rng.normal(0, 0.1, 4), 0, 1)).astype(float),
            models=list("abcd"),
        )
        for k in range(14)
    }
    means = np.stack([s.units().values.mean(axis=0) for s in parts.values()])
    per_benchmark = np.array([helm_loop(row[None, :]) for row in means])  # one column each
    # ... with the exact floor the target "benchmarks" takes up to 24 benchmarks
    direct = rankci.rank(
        rankci.Scores.from_matrix(per_benchmark, models=list("abcd"), bounds=None),
        alpha=0.05,
        exact_bound_n=agg.BENCHMARK_FLOOR_N,
    )
    ours = agg.rank_aggregate(parts, aggregate="win-rate", target="benchmarks")
    assert np.allclose(ours.score, per_benchmark.mean(axis=0))
    assert np.array_equal(ours.dominance, direct.dominance)
    assert ours.dominance.any()
    # and an explicit exact_bound_n=0 gives the plain t, as rankci.rank's default does
    plain = agg.rank_aggregate(parts, aggregate="win-rate", target="benchmarks", exact_bound_n=0)
    default = rankci.rank(
        rankci.Scores.from_matrix(per_benchmark, models=list("abcd"), bounds=None), alpha=0.05
    )
    assert np.array_equal(plain.dominance, default.dominance)
