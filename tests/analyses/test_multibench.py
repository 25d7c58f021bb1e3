"""Multi-benchmark tables: per-benchmark and overall rank intervals, multiplicity across them.

References: scipy's paired t (ttest_rel) and Student t for the stratified overall test,
statsmodels' Holm for the joint family, rankci.rank on each benchmark for the split and separate
families, and a small Monte-Carlo check of the overall test's level.
"""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import rankci
from rankci.cli import main


def benchmark_frame(specs: dict, rng, models=("a", "b", "c", "d")) -> pd.DataFrame:
    """Long table: binary scores, one benchmark per (n_items, success probabilities)."""
    frames = []
    for name, (n, p) in specs.items():
        x = (rng.random((n, len(models))) < np.asarray(p)).astype(int)
        frames.append(
            pd.DataFrame(
                {
                    "benchmark": name,
                    "item": np.repeat([f"{name}-{i}" for i in range(n)], len(models)),
                    "model": np.tile(models, n),
                    "score": x.ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def frame():
    specs = {
        "math": (300, [0.8, 0.6, 0.55, 0.3]),
        "code": (120, [0.5, 0.7, 0.45, 0.4]),
        "facts": (500, [0.6, 0.6, 0.62, 0.5]),
    }
    return benchmark_frame(specs, np.random.default_rng(7))


def matrix(frame: pd.DataFrame, name: str) -> np.ndarray:
    part = frame[frame["benchmark"] == name]
    return part.pivot(index="item", columns="model", values="score").to_numpy(float)


def test_overall_test_matches_scipy_paired_t_combined_by_strata(frame):
    result = rankci.rank_benchmarks(frame)
    overall = result.overall.pairwise
    names = ["math", "code", "facts"]
    models = list(overall.models)
    for j, l in [(0, 1), (1, 0), (0, 3), (2, 1)]:
        d, var, satt = 0.0, 0.0, 0.0
        for name in names:
            x = matrix(frame, name)
            ja, la = models.index(overall.models[j]), models.index(overall.models[l])
            test = stats.ttest_rel(x[:, ja], x[:, la])
            mean = np.mean(x[:, ja] - x[:, la])
            se = stats.sem(x[:, ja] - x[:, la])
            part = (se / 3) ** 2
            d += mean / 3
            var += part
            satt += part**2 / test.df
        df = var**2 / satt
        t = d / np.sqrt(var)
        assert overall.estimate[j, l] == pytest.approx(d, rel=1e-10)
        assert overall.se[j, l] == pytest.approx(np.sqrt(var), rel=1e-10)
        assert overall.df[j, l] == pytest.approx(df, rel=1e-10)
        assert overall.pvalue[j, l] == pytest.approx(stats.t.sf(t, df), rel=1e-8)
    means = {n: matrix(frame, n).mean(axis=0) for n in names}
    np.testing.assert_allclose(result.overall.score, np.mean(list(means.values()), axis=0))


def test_a_single_weighted_benchmark_gives_its_own_paired_t(frame):
    result = rankci.rank_benchmarks(frame, weights={"math": 1, "code": 0, "facts": 0})
    x = matrix(frame, "math")
    one_sided = stats.ttest_rel(x[:, 0], x[:, 2], alternative="greater")
    assert result.overall.pairwise.pvalue[0, 2] == pytest.approx(one_sided.pvalue, rel=1e-10)
    assert result.overall.pairwise.df[0, 2] == pytest.approx(one_sided.df)


def test_joint_family_is_holm_over_every_statement(frame):
    result = rankci.rank_benchmarks(frame, alpha=0.05, across="joint")
    tables = result.tables
    flat = np.concatenate([t.pairwise.pvalue[~np.eye(4, dtype=bool)] for t in tables.values()])
    reject, *_ = multipletests(flat, alpha=0.05, method="holm")
    start = 0
    for table in tables.values():
        raw = np.zeros((4, 4), dtype=bool)
        raw[~np.eye(4, dtype=bool)] = reject[start : start + 12]
        start += 12
        # the Ranking holds the transitive closure of the rejections (Warshall's algorithm)
        closed = raw.copy()
        for k in range(4):
            closed |= closed[:, [k]] & closed[[k], :]
        np.testing.assert_array_equal(table.dominance, closed)
        np.testing.assert_array_equal(table.lower, 1 + closed.sum(axis=0))
    assert "all 4 tables" in result.guarantee


@pytest.mark.parametrize("across, share", [("split", 4), ("separate", 1)])
def test_split_and_separate_families_rank_each_benchmark_at_its_share(frame, across, share):
    result = rankci.rank_benchmarks(frame, alpha=0.1, across=across)
    for name, ranking in result.rankings.items():
        part = frame[frame["benchmark"] == name].drop(columns="benchmark")
        alone = rankci.rank(part, alpha=0.1 / share)
        assert alone.models == ranking.models
        np.testing.assert_array_equal(alone.dominance, ranking.dominance)
        assert ranking.procedure["alpha_table"] == pytest.approx(0.1 / share)
    if across == "separate":
        assert "not protected jointly" in result.guarantee


def test_with_bonferroni_joint_and_split_families_coincide(frame):
    joint = rankci.rank_benchmarks(frame, multiplicity="bonferroni", across="joint")
    split = rankci.rank_benchmarks(frame, multiplicity="bonferroni", across="split")
    for name in joint.tables:
        np.testing.assert_array_equal(joint.tables[name].dominance, split.tables[name].dominance)


def test_input_forms_agree(frame, tmp_path):
    reference = rankci.rank_benchmarks(frame).to_dict()
    parts = {
        name: group.drop(columns="benchmark")
        for name, group in frame.groupby("benchmark", sort=False)
    }
    assert rankci.rank_benchmarks(parts).to_dict() == reference
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    assert rankci.rank_benchmarks(path).to_dict() == reference
    as_clusters = rankci.read_scores(frame.rename(columns={"benchmark": "cluster"}))
    clustered = rankci.rank_benchmarks(as_clusters, benchmark="cluster", weights="items")
    by_items = rankci.rank_benchmarks(frame, weights="items")
    assert clustered.weights == pytest.approx(by_items.weights)
    assert clustered.weights["facts"] == pytest.approx(500 / 920)


def test_models_missing_from_a_benchmark_leave_the_overall_table(frame):
    part = frame[~((frame["benchmark"] == "code") & (frame["model"] == "d"))]
    result = rankci.rank_benchmarks(part)
    assert result.rankings["code"].models == ("a", "b", "c")
    assert result.overall.models == ("a", "b", "c")
    assert result.excluded["models_not_in_every_benchmark"] == ["d"]


def test_results_are_json_safe_and_tabular(frame):
    result = rankci.rank_benchmarks(frame)
    json.dumps(result.to_dict(2))
    table = result.to_frame(2)
    assert list(table["benchmark"].unique()) == ["math", "code", "facts", "overall"]
    assert "top_2" in table.columns
    assert "overall rank" in result.wide().columns
    assert "BenchmarkRankings(3 benchmarks + overall" in repr(result)


def test_bad_input_is_named(frame):
    with pytest.raises(ValueError, match="benchmark column 'suite' is not in the table"):
        rankci.rank_benchmarks(frame, benchmark="suite")
    with pytest.raises(ValueError, match="'overall' is reserved"):
        rankci.rank_benchmarks(frame.replace({"benchmark": {"code": "overall"}}))
    with pytest.raises(ValueError, match="test 'wilcoxon' does not give"):
        rankci.rank_benchmarks(frame, test="wilcoxon")
    assert rankci.rank_benchmarks(frame, test="wilcoxon", overall=False).overall is None
    with pytest.raises(ValueError, match="at least two benchmarks"):
        rankci.rank_benchmarks(frame[frame["benchmark"] == "math"])
    with pytest.raises(ValueError, match="unknown across 'holm'"):
        rankci.rank_benchmarks(frame, across="holm")
    with pytest.raises(ValueError, match="no weight given for benchmark 'facts'"):
        rankci.rank_benchmarks(frame, weights={"math": 1, "code": 1})


# a null Monte-Carlo study: most of its 300 data sets certify nothing, which rankci rightly says
@pytest.mark.filterwarnings("ignore:table '.*'. nothing is certified:rankci.RankciWarning")
def test_overall_test_holds_its_level_when_benchmarks_disagree():
    """Fast Monte-Carlo: overall abilities equal, benchmark differences +0.2 / -0.2.

    300 data sets, one-sided test at 0.05 of the null pair; the rejection rate must stay within
    Monte-Carlo error of 0.05 (the full study is validation/multibench_level.py)."""
    rng = np.random.default_rng(11)
    rejected = 0
    reps = 300
    for _ in range(reps):
        frame = benchmark_frame(
            {"b1": (60, [0.7, 0.5]), "b2": (150, [0.4, 0.6])}, rng, models=("a", "b")
        )
        pw = rankci.rank_benchmarks(frame).overall.pairwise
        rejected += pw.pvalue[0, 1] <= 0.05
    rate = rejected / reps
    assert rate <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / reps)


def test_cli_benchmarks(frame, tmp_path, capsys):
    path = tmp_path / "scores.parquet"
    frame.to_parquet(path)
    assert main(["benchmarks", str(path), "--format", "json", "--top-k", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    spec = payload.pop("spec")  # how the output was made: the command's own options
    assert spec["command"] == "benchmarks" and spec["top_k"] == 1
    expected = json.loads(json.dumps(rankci.rank_benchmarks(frame).to_dict(1)))
    assert spec["method"] == expected.pop("spec")  # ... and the method (issue 24)
    assert payload["target"] == "new items like these"  # what it is about (issue 26)
    assert payload == expected
    files = []
    for name, group in frame.groupby("benchmark", sort=False):
        file = tmp_path / f"{name}.csv"
        group.drop(columns="benchmark").to_csv(file, index=False)
        files.append(f"{name}={file}")
    assert main(["benchmarks", *files, "--across", "split"]) == 0
    out = capsys.readouterr().out
    assert "overall (weighted mean of the benchmark scores" in out and "alpha split" in out
