"""The Parquet path of read_scores (ids read as Arrow dictionaries into integer codes) against the
general DataFrame path: the same Scores field for field, the same errors, and no pandas import
in ``rankci rank`` on a Parquet file. Ranking.to_dict's NumPy columns against its DataFrame."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rankci
from rankci._base import jsonable
from rankci.io import read_parquet_codes


def _board(n_models=4, n_items=9, seed=0):
    rng = np.random.default_rng(seed)
    rows = [(f"m{j}", f"q{i:02d}") for j in range(n_models) for i in range(n_items)]
    order = rng.permutation(len(rows))  # rows in no particular order
    return pd.DataFrame(
        {
            "model": [rows[r][0] for r in order],
            "item": [rows[r][1] for r in order],
            "score": rng.integers(0, 2, len(rows)),
        }
    )


def _same(a, b):
    assert a.models == b.models and a.items == b.items
    assert a.clusters == b.clusters and a.prompts == b.prompts
    for name in ("model_code", "item_code", "score"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.prompt_code is None and b.prompt_code is None
    assert a.item_cluster is None and b.item_cluster is None
    assert a.notes == b.notes
    assert a.score.flags.writeable


def _write(frame, path, row_group_size=None):
    pq.write_table(pa.Table.from_pandas(frame), path, row_group_size=row_group_size)
    return path


TABLES = {
    "strings": lambda: _board(),
    "categorical, unused categories": lambda: _board().assign(
        model=lambda f: pd.Categorical(f["model"], categories=["zz", "m3", "m1", "m0", "m2", "a"])
    ),
    "float32 scores": lambda: _board().assign(score=lambda f: f["score"] * np.float32(0.5)),
    "bool scores": lambda: _board().assign(score=lambda f: f["score"].astype(bool)),
    "uint8 scores": lambda: _board().assign(score=lambda f: f["score"].astype(np.uint8)),
    "aliases and an extra column": lambda: (
        _board()
        .rename(columns={"model": "Model", "item": "question", "score": "correct"})
        .assign(note="x")
    ),
    "labels differing by case (warns)": lambda: _board().assign(
        model=lambda f: f["model"].replace({"m1": "M0"})
    ),
}


@pytest.mark.parametrize("name", list(TABLES))
@pytest.mark.parametrize("row_group_size", [None, 7])
def test_parquet_codes_equal_the_dataframe_path(tmp_path, name, row_group_size):
    path = _write(TABLES[name](), tmp_path / "board.parquet", row_group_size)
    with warnings.catch_warnings(record=True) as fast_warnings:
        warnings.simplefilter("always")
        fast = read_parquet_codes(path, "auto", "auto", (0.0, 1.0), {})
    assert fast is not None, "the Parquet path was not taken"
    with warnings.catch_warnings(record=True) as general_warnings:
        warnings.simplefilter("always")
        general = rankci.read_scores(pd.read_parquet(path))
    with warnings.catch_warnings(record=True) as path_warnings:
        warnings.simplefilter("always")
        by_path = rankci.read_scores(path)
    _same(fast, general)
    _same(by_path, general)
    said = [str(w.message) for w in general_warnings]
    assert [str(w.message) for w in fast_warnings] == said
    assert [str(w.message) for w in path_warnings] == said
    assert bool(said) == name.endswith("(warns)")


def _nulls(frame, column):
    frame = frame.copy()
    frame[column] = frame[column].astype(object if column != "score" else float)
    frame.loc[3, column] = None if column != "score" else np.nan
    return frame


FALLBACKS = {
    "missing model": lambda f: _nulls(f, "model"),
    "missing item": lambda f: _nulls(f, "item"),
    "missing score": lambda f: _nulls(f, "score"),
    "blank item": lambda f: f.assign(item=lambda g: g["item"].where(g.index != 2, "  ")),
    "score out of range": lambda f: f.assign(score=lambda g: g["score"].where(g.index != 4, 2)),
    "infinite score": lambda f: f.assign(
        score=f["score"].astype(float).where(f.index != 1, np.inf)
    ),
    "duplicated row": lambda f: pd.concat([f, f.iloc[[5]]], ignore_index=True),
    "one model": lambda f: f.assign(model="m0").drop_duplicates(["model", "item"]),
    "whitespace spelling": lambda f: f.assign(model=f["model"].replace({"m1": "m0 "})),
    "an index column": lambda f: f.set_index("item"),
}


@pytest.mark.parametrize("name", list(FALLBACKS))
def test_bad_tables_get_the_dataframe_paths_error(tmp_path, name):
    frame = FALLBACKS[name](_board())
    path = _write(frame, tmp_path / "bad.parquet")
    with pytest.raises(ValueError) as general:
        rankci.read_scores(pd.read_parquet(path))
    with pytest.raises(ValueError) as from_file:
        rankci.read_scores(path)
    assert str(from_file.value) == str(general.value)
    if name != "whitespace spelling":  # refused by the Parquet path itself, in the same words
        assert read_parquet_codes(path, "auto", "auto", (0.0, 1.0), {}) is None


OTHER_PATHS = {
    "cluster column": lambda f: f.assign(subject=f["item"].str[:2]),
    "prompt column": lambda f: f.assign(prompt="p0"),
    "integer item ids": lambda f: f.assign(item=f["item"].str[1:].astype(int)),
    "text scores": lambda f: f.assign(score=f["score"].astype(str)),
}


@pytest.mark.parametrize("name", list(OTHER_PATHS))
def test_other_tables_take_the_general_path_with_the_same_result(tmp_path, name):
    path = tmp_path / "other.parquet"
    OTHER_PATHS[name](_board()).to_parquet(path)
    assert read_parquet_codes(path, "auto", "auto", (0.0, 1.0), {}) is None
    general = rankci.read_scores(pd.read_parquet(path))
    from_file = rankci.read_scores(path)
    assert from_file.models == general.models and from_file.items == general.items
    np.testing.assert_array_equal(from_file.score, general.score)


# small boards whose subject is the reading and the JSON rows: that they certify nothing (and say
# so) is not what these tests check
@pytest.mark.filterwarnings("ignore:nothing is certified")
def test_rank_on_parquet_imports_no_pandas(tmp_path):
    path = _write(_board(5, 30), tmp_path / "board.parquet")
    code = (
        "import json, sys, rankci.cli\n"
        f"status = rankci.cli.main(['rank', {str(path)!r}, '--test', 't', '--format', 'json',"
        " '-o', 'out.json'])\n"
        "print(json.dumps([status, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    status, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 0
    assert not [m for m in modules if m.split(".")[0] == "pandas"]
    written = json.loads((tmp_path / "out.json").read_text())
    expected = rankci.rank(rankci.read_scores(pd.read_parquet(path)), test="t").to_dict()
    assert [m["model"] for m in written["models"]] == [m["model"] for m in expected["models"]]
    assert [m["rank_lower"] for m in written["models"]] == [
        m["rank_lower"] for m in expected["models"]
    ]


def _rows_by_frame(ranking, k=None):
    """What to_dict's rows are, cell by cell, from the DataFrame of to_frame."""
    frame = ranking.to_frame(k)
    return [
        {
            c: (
                None
                if v is None or v is pd.NA or (isinstance(v, float) and not np.isfinite(v))
                else jsonable(v)
            )
            for c, v in row.items()
        }
        for row in frame.to_dict("records")
    ]


@pytest.mark.parametrize("k", [None, 2])
@pytest.mark.filterwarnings("ignore:nothing is certified")
def test_to_dict_rows_equal_the_frames(k):
    scores = rankci.read_scores(_board(6, 40, seed=3))
    ranking = rankci.rank(scores, test="t")
    assert ranking.to_dict(k)["models"] == _rows_by_frame(ranking, k)
    import dataclasses

    extra = dataclasses.replace(
        ranking,
        model_columns={
            "note": np.array([f"n{j}" for j in range(6)], dtype=object),
            "score": np.array([0.5, np.nan, 0.25, 1.0, 0.0, 0.75]),  # replaces score in place
            "size": np.arange(6),
        },
    )
    assert extra.to_dict(k)["models"] == _rows_by_frame(extra, k)
    assert list(extra.to_dict(k)["models"][0]) == list(extra.to_frame(k).columns)
