"""Reading scores from files and DataFrames, and the errors bad input gets."""

import numpy as np
import pandas as pd
import pytest

import rankci


@pytest.fixture
def long_frame():
    return pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b", "b", "c", "c", "c"],
            "item": ["q1", "q2", "q3"] * 3,
            "score": [1, 0, 1, 1, 1, 0, 0, 0, 1],
            "subject": ["s1", "s1", "s2"] * 3,
        }
    )


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl", "csv.gz"])
def test_every_file_format_reads_the_same_table(tmp_path, long_frame, fmt):
    path = tmp_path / f"scores.{fmt}"
    if fmt.startswith("csv"):
        long_frame.to_csv(path, index=False)
    elif fmt == "tsv":
        long_frame.to_csv(path, sep="\t", index=False)
    elif fmt == "parquet":
        long_frame.to_parquet(path)
    else:
        long_frame.to_json(path, orient="records", lines=True)
    scores = rankci.read_scores(path)
    assert scores.models == ("a", "b", "c") and scores.items == ("q1", "q2", "q3")
    assert scores.clusters == ("s1", "s2")  # 'subject' is an alias of the cluster
    expected = long_frame.pivot(index="item", columns="model", values="score").to_numpy(float)
    np.testing.assert_array_equal(scores.units("item").values, expected)


def test_aliases_and_explicit_columns():
    frame = pd.DataFrame(
        {"System": ["x", "y", "x", "y"], "doc_id": [1, 1, 2, 2], "acc": [True, False, True, True]}
    )
    scores = rankci.read_scores(frame)
    assert scores.models == ("x", "y") and scores.items == ("1", "2")
    np.testing.assert_array_equal(scores.units().values, [[1, 0], [1, 1]])
    renamed = frame.rename(columns={"acc": "quality", "System": "who"})
    scores = rankci.read_scores(renamed, model="who", score="quality")
    assert scores.n_rows == 4


def test_wide_form_counts_empty_cells_and_keeps_them_missing():
    wide = pd.DataFrame(
        {
            "question": ["q1", "q2", "q3"],
            "task": ["t1", "t1", "t2"],
            "gpt": [1, 0, 1],
            "claude": [1, np.nan, 0],
        }
    )
    scores = rankci.read_scores(wide)
    assert scores.models == ("claude", "gpt")
    assert scores.notes["layout"] == "wide" and scores.notes["empty_cells"] == 1
    units = scores.units("item", "complete")
    assert units.n_units == 2 and units.excluded["observations_excluded"] == 1
    assert units.excluded["missing_cells_by_model"] == {"claude": 1}
    assert scores.units("item", "pairwise").n_units == 3


def test_wide_form_without_an_item_column_uses_row_numbers():
    scores = rankci.read_scores(pd.DataFrame({"m1": [0.5, 0.2], "m2": [0.1, 0.9]}), layout="wide")
    assert scores.items == ("row0", "row1")


def test_prompt_column_is_read():
    frame = pd.DataFrame(
        {
            "model": list("aabb"),
            "item": ["q", "q", "q", "q"],
            "variant": [1, 2, 1, 2],
            "score": [1, 0, 0, 0],
        }
    )
    scores = rankci.read_scores(frame)
    assert scores.prompts == ("1", "2")
    # without naming the prompt these rows would be duplicates
    with pytest.raises(ValueError, match="if these are prompt variants"):
        rankci.read_scores(frame, prompt="")


ERRORS = [
    (
        lambda f: f.assign(score=f.score.astype(object).where(f.index != 4, "abc")),
        r"not numeric at row 4 \(model 'b', item 'q2'\): 'abc'",
    ),
    (
        lambda f: f.assign(score=f.score.astype(float).where(f.index != 2, np.nan)),
        r"no value at row 2 \(model 'a', item 'q3'\)",
    ),
    (
        lambda f: f.assign(score=f.score.astype(float).where(f.index != 5, np.inf)),
        r"not finite at row 5",
    ),
    (
        lambda f: f.assign(score=f.score.astype(float).where(f.index != 7, 1.5)),
        r"outside \[0, 1\] at row 7 \(model 'c', item 'q2'\): 1.5",
    ),
    (
        lambda f: pd.concat([f, f.iloc[[3]]], ignore_index=True),
        r"duplicated score for \(model 'b', item 'q1'\) at rows 3 and 9",
    ),
    (lambda f: f[f.model == "a"], r"names only one model: 'a'"),
    (
        lambda f: f.assign(model=f.model.where(f.index != 6, None)),
        r"column 'model' is empty at row 6",
    ),
    (lambda f: f.assign(item=f.item.where(f.index != 1, "  ")), r"column 'item' is blank at row 1"),
    (
        lambda f: f.assign(subject=f.subject.where(f.index != 4, "s9")),
        r"item 'q2' is in two clusters \('s1' and 's9', row 4\)",
    ),
    (
        lambda f: f.assign(subject=f.subject.where(f.index != 0, None)),
        r"column 'subject' is empty at row 0",
    ),
    (lambda f: f.iloc[0:0], r"no rows"),
]


@pytest.mark.parametrize("corrupt,message", ERRORS)
def test_bad_input_gets_an_error_naming_the_offender(long_frame, corrupt, message):
    with pytest.raises(ValueError, match=message):
        rankci.read_scores(corrupt(long_frame))


def test_bounds_can_be_lifted_for_unbounded_scores(long_frame):
    scores = rankci.read_scores(long_frame.assign(score=long_frame.score * 100.0), bounds=None)
    assert scores.score.max() == 100.0


def test_wide_errors_name_the_column(tmp_path):
    with pytest.raises(ValueError, match=r"column 'notes' is not numeric at row 1: 'bad'"):
        rankci.read_scores(
            pd.DataFrame({"m1": [1, 0], "m2": [0, 1], "notes": [1, "bad"]}), layout="wide"
        )
    # without layout="wide" (and without an item column) the layout is ambiguous
    with pytest.raises(ValueError, match=r"cannot tell how to read the table"):
        rankci.read_scores(pd.DataFrame({"m1": [1, 0], "m2": [0, 1], "notes": [1, "bad"]}))
    with pytest.raises(ValueError, match=r"model 'm2' has no scores"):
        rankci.read_scores(pd.DataFrame({"m1": [1, 0], "m2": [np.nan, np.nan]}), layout="wide")
    with pytest.raises(ValueError, match=r"names only one model"):
        rankci.read_scores(pd.DataFrame({"item": ["a", "b"], "m1": [1, 0]}))


def test_unknown_options_and_unreadable_files(tmp_path, long_frame):
    with pytest.raises(ValueError, match=r"unknown layout 'tall'"):
        rankci.read_scores(long_frame, layout="tall")
    with pytest.raises(ValueError, match=r"unknown format 'xlsx'"):
        rankci.read_scores(long_frame, format="xlsx")
    with pytest.raises(ValueError, match=r"the cluster column 'topic' is not in the table"):
        rankci.read_scores(long_frame, cluster="topic")
    with pytest.raises(FileNotFoundError, match=r"no such file"):
        rankci.read_scores(tmp_path / "missing.csv")
    weird = tmp_path / "scores.data"
    weird.write_text("x")
    with pytest.raises(ValueError, match=r"cannot tell the format"):
        rankci.read_scores(weird)
    broken = tmp_path / "broken.parquet"
    broken.write_text("not parquet")
    with pytest.raises(ValueError, match=r"broken.parquet' is text, not Parquet"):
        rankci.read_scores(broken)
    with pytest.raises(ValueError, match=r"no score column found"):
        rankci.read_scores(long_frame.rename(columns={"score": "points"}), layout="long")


def test_scores_show_in_a_notebook_as_a_table_best_first(long_frame):
    frame = long_frame.replace({"model": {"a": "<a&b>"}})
    frame = pd.concat(
        [frame, pd.DataFrame({"model": ["d"], "item": ["q1"], "score": [1], "subject": ["s1"]})]
    )
    page = rankci.read_scores(frame)._repr_html_()
    means = frame.groupby("model")["score"].mean().sort_values(ascending=False, kind="stable")
    rows = page.split("<tbody>")[1].split("</tbody>")[0].split("</tr>")[:-1]
    import html

    expected = [f"<tr><td>{html.escape(m)}</td><td>{v:.4f}</td>" for m, v in means.items()]
    assert [row[: len(e)] for row, e in zip(rows, expected)] == expected
    assert "&lt;a&amp;b&gt;" in page and "<a&b>" not in page
    (d_row,) = [row for row in rows if row.startswith("<tr><td>d</td>")]
    assert d_row.endswith("<td>1</td><td>2</td>")  # d: 1 score, 2 of the 3 items not scored
