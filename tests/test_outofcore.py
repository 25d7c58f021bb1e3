"""The out-of-core path (rankci.outofcore) against the in-memory rankci.rank, bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import rankci
import rankci.evidence.ttest as ttest
import rankci.outofcore as outofcore
from rankci.outofcore import dask_statistics, dataset_statistics, rank_dataset


def board(m: int, n: int, seed: int, spread: float = 0.3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"model {j}" for j in range(m)]
    items = [f"q{i:05d}" for i in range(n)]
    base = rng.random(n)[None, :] * 0.4
    x = base + 0.3 * rng.random((m, n)) + np.linspace(0, spread, m)[:, None]
    return pd.DataFrame(
        {"model": np.repeat(models, n), "item": np.tile(items, m), "score": x.ravel()}
    )


def write_parts(frame: pd.DataFrame, directory, per_file: int) -> None:
    items = sorted(frame["item"].unique())
    for k, lo in enumerate(range(0, len(items), per_file)):
        part = frame[frame["item"].isin(items[lo : lo + per_file])].sample(frac=1, random_state=k)
        part.to_parquet(directory / f"part-{k:03d}.parquet", index=False)


def same(a, b) -> None:
    assert a.to_dict(pairs=True) == b.to_dict(pairs=True)
    for name in ("estimate", "statistic", "pvalue", "se", "score"):
        left, right = getattr(a.pairwise, name), getattr(b.pairwise, name)
        assert np.array_equal(left, right, equal_nan=True), name  # 0 ulp
    assert a.guarantee == b.guarantee


# dask.dataframe's own parquet reader calls DataFrame.reset_index(inplace=True), which pandas
# deprecates (a warning from dask's code, not rankci's)
DASK_PANDAS = "ignore:The inplace keyword in DataFrame.reset_index"


CASES = [
    (2, 30, 1, 7, {}),
    (5, 200, 2, 33, {}),
    (9, 400, 3, 50, {"coverage": "marginal"}),
    (12, 150, 4, 150, {"test": "z"}),
    (6, 250, 5, 40, {"multiplicity": "bonferroni", "delta": 0.02}),
    (8, 90, 6, 11, {"spread": 0.0}),
]


@pytest.mark.parametrize("m, n, seed, per_file, options", CASES)
def test_bit_identical_to_in_memory(tmp_path, m, n, seed, per_file, options):
    options = dict(options)
    spread = options.pop("spread", 0.3)
    options.setdefault("test", "t")
    frame = board(m, n, seed, spread)
    write_parts(frame, tmp_path, per_file)
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter("always")
        got = rank_dataset(tmp_path, rng=0, **options)
    with warnings.catch_warnings(record=True) as inside:
        warnings.simplefilter("always")
        want = rankci.rank(frame, rng=0, **options)
    same(got, want)
    # the same warnings, word for word (the board without spread certifies nothing, and says so)
    assert [str(w.message) for w in outside] == [str(w.message) for w in inside]
    if spread == 0.0:
        assert any("nothing is certified" in str(w.message) for w in outside)


@pytest.mark.parametrize("limit", ["rows", "elements"])
def test_gram_blocks_carried_across_files(tmp_path, monkeypatch, limit):
    # blocks of 64 units in memory and out of core (GRAM_ROWS = 64, or GRAM_ELEMENTS = 64 x 6
    # models), files of 70 items: every block boundary falls inside a file, and the answers
    # still agree bit for bit
    if limit == "rows":
        monkeypatch.setattr(ttest, "GRAM_ROWS", 64)
    else:
        monkeypatch.setattr(ttest, "GRAM_ELEMENTS", 64 * 6 + 5)
    assert ttest.gram_rows(6) == 64
    frame = board(6, 300, 7)
    write_parts(frame, tmp_path, 70)
    stats = dataset_statistics(tmp_path)
    x = rankci.read_scores(frame).units().values
    centred = x - x.mean(axis=0)
    by_hand = sum((c.T @ c for c in np.split(centred, range(64, 300, 64))), np.zeros((6, 6)))
    np.testing.assert_allclose(stats.gram, by_hand, rtol=1e-13)  # blocks of 64 (to rounding)
    assert np.array_equal(stats.gram, ttest.centred_gram(centred))
    # the in-memory Gram is cut at the same rows (not one product when the rows fit GRAM_ROWS
    # but not GRAM_ELEMENTS): the same sum of block products, in the same order
    blocks = np.split(centred, range(64, 300, 64))
    in_order = blocks[0].T @ blocks[0]
    for c in blocks[1:]:
        in_order += c.T @ c
    assert np.array_equal(ttest.centred_gram(centred), in_order)
    same(rank_dataset(tmp_path, rng=0), rankci.rank(frame, test="t", rng=0))


def test_gram_rows_bound_the_block():
    assert ttest.gram_rows(1) == ttest.GRAM_ROWS == 65536
    assert ttest.gram_rows(1024) == 65536 and ttest.gram_rows(1025) == 65472
    assert ttest.gram_rows(10_000) * 10_000 <= ttest.GRAM_ELEMENTS
    assert ttest.gram_rows(10**9) == 1


@pytest.mark.parametrize("cache, reads", [(0, 18), (5 * 12 * 8 * 2, 16), (None, 9)])
def test_second_pass_from_the_cache_or_the_files(tmp_path, monkeypatch, cache, reads):
    # nothing kept (each of the 9 files read twice), the first two files of 12 items kept, all
    # kept: the same numbers bit for bit
    frame = board(5, 100, 15)
    write_parts(frame, tmp_path, 12)
    read, paths = outofcore._read, []
    monkeypatch.setattr(outofcore, "_read", lambda f, c: paths.append(f.path) or read(f, c))
    stats = dataset_statistics(tmp_path, cache_bytes=cache)
    assert len(paths) == reads and len(set(paths)) == 9
    want = rankci.read_scores(frame).units().values
    assert np.array_equal(stats.sums, want.sum(axis=0))
    assert np.array_equal(stats.gram, ttest.centred_gram(want - want.mean(axis=0)))
    same(rank_dataset(stats, rng=0), rankci.rank(frame, test="t", rng=0))


@pytest.mark.parametrize("dtype", ["uint8", "float32", "int16"])
def test_compact_score_types(tmp_path, dtype):
    # 0/1 (uint8), float32 and small integer scores are read in their own type and kept so
    # between the passes; the answer is the in-memory one of the same scores as float64
    frame = board(6, 200, 16)
    rng = np.random.default_rng(16)
    if dtype == "float32":
        frame["score"] = frame["score"].astype(np.float32)
    else:
        frame["score"] = (rng.random(len(frame)) < frame["score"]).astype(dtype)
        if dtype == "int16":
            frame["score"] = frame["score"] * np.int16(7) - np.int16(3)
    write_parts(frame, tmp_path, 30)
    as_float = rankci.read_scores(frame.assign(score=frame["score"].astype(float)), bounds=None)
    same(rank_dataset(tmp_path, rng=0), rankci.rank(as_float, test="t", rng=0))


def test_statistics_against_brute_force(tmp_path):
    frame = board(4, 60, 8)
    write_parts(frame, tmp_path, 13)
    stats = dataset_statistics(tmp_path)
    x = frame.pivot(index="item", columns="model", values="score").to_numpy()
    assert stats.n_units == 60 and stats.files == 5
    np.testing.assert_allclose(stats.sums, x.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(stats.gram / 59, np.cov(x, rowvar=False), rtol=1e-12)


def test_refuses_missing_and_duplicated_cells(tmp_path):
    frame = board(3, 40, 9)
    frame.drop(index=[0, 1]).to_parquet(tmp_path / "a.parquet", index=False)
    with pytest.raises(ValueError, match="2 missing .* cells, 0 duplicated"):
        dataset_statistics(tmp_path)
    (tmp_path / "a.parquet").unlink()
    pd.concat([frame, frame.iloc[:1]]).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(ValueError, match="0 missing .* cells, 1 duplicated"):
        dataset_statistics(tmp_path)


def test_refuses_item_split_across_files(tmp_path):
    frame = board(3, 40, 10)
    frame[frame["model"] == "model 0"].to_parquet(tmp_path / "a.parquet", index=False)
    frame[frame["model"] != "model 0"].to_parquet(tmp_path / "b.parquet", index=False)
    # a.parquet (the first file) has one model: b.parquet's models differ, and the file that
    # lacks a model of the whole table is named with its count of missing cells
    with pytest.raises(ValueError, match=r"a\.parquet: .* 80 missing .* cells, 0 duplicated"):
        dataset_statistics(tmp_path)
    (tmp_path / "a.parquet").rename(tmp_path / "c.parquet")  # now the one model comes last
    with pytest.raises(ValueError, match=r"b\.parquet: .* 40 missing .* cells, 0 duplicated"):
        dataset_statistics(tmp_path)


def test_refuses_an_item_in_two_files(tmp_path):
    frame = board(3, 40, 17)
    items = sorted(frame["item"].unique())
    frame[frame["item"].isin(items[:21])].to_parquet(tmp_path / "a.parquet", index=False)
    frame[frame["item"].isin(items[20:])].to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(ValueError, match=r"item 'q00020' has rows in .*a\.parquet and in .*b\."):
        dataset_statistics(tmp_path)


def test_refuses_one_model(tmp_path):
    frame = board(3, 40, 18)
    frame[frame["model"] == "model 1"].to_parquet(tmp_path / "a.parquet", index=False)
    with pytest.raises(ValueError, match="fewer than two models"):
        dataset_statistics(tmp_path)


def test_empty_files_are_skipped(tmp_path):
    frame = board(4, 60, 19)
    write_parts(frame, tmp_path, 25)
    frame.iloc[:0].to_parquet(tmp_path / "part-001a.parquet", index=False)  # between two files
    stats = dataset_statistics(tmp_path)
    assert stats.files == 4 and stats.n_units == 60
    same(rank_dataset(stats, rng=0), rankci.rank(frame, test="t", rng=0))


class _Future:
    def __init__(self, log, k):
        self.log, self.k = log, k

    def result(self):
        self.log.append(("result", self.k))
        return self.k


class _Client:
    """A stand-in for distributed.Client that logs what is submitted and collected."""

    def __init__(self):
        self.log = []

    def compute(self, task):
        self.log.append(("compute", task))
        return _Future(self.log, task)


def test_dask_window_holds_at_most_window_results(monkeypatch):
    monkeypatch.setattr(outofcore, "WINDOW", 3)
    client, added = _Client(), []

    def add(result):
        held = sum(1 for e in client.log if e[0] == "compute") - len(added) - 1
        assert held <= 3  # submitted and not yet added, besides the one being added
        added.append(result)

    outofcore._in_order(list(range(10)), client, add)
    assert added == list(range(10))  # in partition order
    computes = [k for kind, k in client.log if kind == "compute"]
    assert computes == list(range(10))
    first_result = client.log.index(("result", 0))
    assert [k for kind, k in client.log[:first_result] if kind == "compute"] == [0, 1, 2]


def test_refuses_other_methods(tmp_path):
    board(3, 40, 11).to_parquet(tmp_path / "a.parquet", index=False)
    with pytest.raises(ValueError, match="test 't' or 'z'"):
        rank_dataset(tmp_path, test="auto")
    with pytest.raises(ValueError, match="unit='item'"):
        rank_dataset(tmp_path, unit="cluster")


@pytest.mark.filterwarnings(DASK_PANDAS)
def test_dask_local_cluster_same_answer(tmp_path, monkeypatch):
    import distributed  # the rankci[dask] extra, installed for the tests

    frame = board(7, 300, 12)
    write_parts(frame, tmp_path, 60)
    monkeypatch.setattr(outofcore, "WINDOW", 2)  # 5 partitions, 2 at a time
    local = dataset_statistics(tmp_path)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:
            remote = dask_statistics(tmp_path, client)
            ranking = rank_dataset(tmp_path, rng=0, dask=client)
    assert remote.models == local.models and remote.n_units == local.n_units
    np.testing.assert_allclose(remote.sums, local.sums, rtol=1e-14)
    np.testing.assert_allclose(remote.gram, local.gram, rtol=1e-12, atol=1e-12)
    expected = rankci.rank(frame, test="t", rng=0)
    got, want = ranking.to_frame(), expected.to_frame()
    columns = ["model", "rank", "rank_lower", "rank_upper", "tier"]
    assert got[columns].equals(want[columns])  # the same Ranking
    np.testing.assert_allclose(got["score"], want["score"], rtol=1e-14)  # sums in another order
    np.testing.assert_allclose(ranking.pairwise.pvalue, expected.pairwise.pvalue, rtol=1e-9)


def test_cli_parquet_directory(tmp_path, capsys):
    import json

    from rankci.cli import main

    frame = board(5, 120, 13)
    write_parts(frame, tmp_path, 25)
    assert main(["rank", str(tmp_path), "--test", "t", "--seed", "0", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    single = tmp_path.parent / f"{tmp_path.name}-whole.csv"
    frame.to_csv(single, index=False)
    assert main(["rank", str(single), "--test", "t", "--seed", "0", "--format", "json"]) == 0
    want = json.loads(capsys.readouterr().out)  # the in-memory command on the same table
    assert got.keys() == want.keys()
    for key in got:
        if key not in ("source", "data", "reading"):
            assert got[key] == want[key], key
    assert main(["rank", str(tmp_path)]) != 0  # --test auto is refused, naming --test t
    assert "--test t" in capsys.readouterr().err


@pytest.mark.filterwarnings(DASK_PANDAS)
def test_cli_dask_local(tmp_path, capsys):
    from rankci.cli import main

    frame = board(4, 80, 14)
    write_parts(frame, tmp_path, 20)
    args = ["rank", str(tmp_path), "--test", "t", "--seed", "0", "--format", "csv"]
    assert main(args) == 0
    local = capsys.readouterr().out
    assert main([*args, "--dask", "local"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == local.splitlines()[0]


@pytest.mark.filterwarnings(DASK_PANDAS)
def test_docs_example_runs():
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "outofcore.md").read_text()
    code = re.search(r"## From Python\n\n```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "docs/outofcore.md", "exec"), {})  # its asserts are the test


def test_csv_batches_equal_pandas(tmp_path, monkeypatch, capsys):
    import rankci.io as rio

    text = 'model,item,score\nA,007,1\n"B, Inc.",007,\nA, x ,0.5\nB, x ,1e-3\nA,0x1,0\nB,0x1,1\n'
    path = tmp_path / "s.csv"
    path.write_text(text)
    want = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    got = rio.read_csv_batches(path)
    assert got.columns.tolist() == want.columns.tolist()
    assert got.fillna("<NA>").values.tolist() == want.fillna("<NA>").values.tolist()
    path.write_text(text.replace("007,\n", "007,0.25\n"))
    monkeypatch.setattr(rio, "BIG_CSV_BYTES", 1)  # read_scores takes the batch reader
    monkeypatch.setenv("RANKCI_PROGRESS", "1")
    batched = rankci.read_scores(path)
    assert "reading s.csv" in capsys.readouterr().err  # the progress bar, forced
    monkeypatch.setattr(rio, "BIG_CSV_BYTES", 1 << 60)
    plain = rankci.read_scores(path)
    assert batched.models == plain.models and batched.items == plain.items
    assert batched.to_frame().equals(plain.to_frame())
