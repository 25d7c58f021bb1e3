"""Score files as people really have them (issue 15): each awkward file gives the right answer or a
clear refusal, never a silent change; CSV, TSV, Parquet and JSONL of one table read identically."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankci
from rankci.sequential import replay

FORMATS = ("csv", "tsv", "parquet", "jsonl")


def write(frame: pd.DataFrame, path, fmt: str) -> None:
    """The table in a file of the format, written by the usual tools (ids as strings)."""
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "tsv":
        frame.to_csv(path, sep="\t", index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            for record in frame.to_dict(orient="records"):
                handle.write(json.dumps(record) + "\n")


def same_scores(a: rankci.Scores, b: rankci.Scores) -> None:
    assert (a.models, a.items, a.clusters, a.prompts) == (b.models, b.items, b.clusters, b.prompts)
    for name in ("model_code", "item_code", "prompt_code", "item_cluster", "score"):
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            np.testing.assert_array_equal(left, right, err_msg=name)
    assert a.notes.get("excluded") == b.notes.get("excluded")


# ---------------------------------------------------------------------- identifiers are text
NUMERIC_LOOKING = pd.DataFrame(
    {
        "model": ["1", "1", "1", "2.0", "2.0", "2.0", "3e2", "3e2", "3e2"],
        "item": ["007", "0", "00"] * 3,
        "score": [1, 0, 1, 0, 1, 1, 1, 1, 0],
    }
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_numeric_looking_ids_stay_as_written(tmp_path, fmt):
    path = tmp_path / f"scores.{fmt}"
    write(NUMERIC_LOOKING, path, fmt)
    scores = rankci.read_scores(path)
    assert scores.models == ("1", "2.0", "3e2")
    assert scores.items == ("0", "00", "007")  # 0 and 00 are two items; 007 keeps its zeros
    expected = NUMERIC_LOOKING.pivot(index="item", columns="model", values="score")
    np.testing.assert_array_equal(scores.units("item").values, expected.to_numpy(float))


def test_csv_and_parquet_give_the_same_monitor_replay(tmp_path):
    rng = np.random.default_rng(3)
    items = [f"{k:03d}" for k in range(60)]  # 000 ... 059: numbers as text
    frame = pd.DataFrame(
        [
            (m, i, float(rng.random() < p))
            for m, p in (("a", 0.8), ("b", 0.5), ("c", 0.2))
            for i in items
        ],
        columns=["model", "item", "score"],
    )
    runs = {}
    for fmt in ("csv", "parquet"):
        path = tmp_path / f"scores.{fmt}"
        write(frame, path, fmt)
        scores = rankci.read_scores(path)
        assert scores.items == tuple(items)
        runs[fmt] = replay(scores, order_seed=5, look_every=7)
    assert runs["csv"].looks == runs["parquet"].looks
    assert runs["csv"].to_dict() == runs["parquet"].to_dict()


def test_integer_ids_of_parquet_and_jsonl_read_as_their_digits(tmp_path):
    frame = pd.DataFrame({"model": [1, 1, 2, 2], "item": [7, 8, 7, 8], "score": [1, 0, 0, 1]})
    frame.to_parquet(tmp_path / "s.parquet")
    write(frame, tmp_path / "s.jsonl", "jsonl")
    for name in ("s.parquet", "s.jsonl"):
        scores = rankci.read_scores(tmp_path / name)
        assert scores.models == ("1", "2") and scores.items == ("7", "8")


def test_a_floating_point_id_column_warns(tmp_path):
    frame = pd.DataFrame({"model": list("aabb"), "item": [1.0, 2.0] * 2, "score": [1, 0, 0, 1]})
    with pytest.warns(rankci.RankciWarning, match=r"item column 'item' holds floating-point"):
        scores = rankci.read_scores(frame)
    assert scores.items == ("1.0", "2.0")  # as str() gives them, no reformatting


def test_na_like_names_are_names_in_text_files(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("model,item,score\nNA,None,1\nNA,null,0\nnan,None,0\nnan,null,1\n")
    scores = rankci.read_scores(path)
    assert scores.models == ("NA", "nan") and scores.items == ("None", "null")


# ---------------------------------------------------------------------- spellings
def test_names_split_by_surrounding_whitespace_are_an_error_naming_both(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("model,item,score\nm1,q1,1\nm1 ,q2,0\nm2,q1,1\nm2,q2,0\n")
    with pytest.raises(ValueError, match=r"column 'model'.*whitespace: 'm1' and 'm1 '"):
        rankci.read_scores(path)


def test_wide_headers_split_by_whitespace_are_an_error(tmp_path):
    wide = pd.DataFrame({"item": ["q1", "q2"], "m1": [1, 0], " m1": [0, 1]})
    with pytest.raises(ValueError, match=r"wide-form column headers.*'m1' and ' m1'"):
        rankci.read_scores(wide)


def test_names_differing_only_by_case_warn_but_stay_two(tmp_path):
    frame = pd.DataFrame(
        {
            "model": ["GPT-4", "GPT-4", "gpt-4", "gpt-4"],
            "item": ["q1", "q2"] * 2,
            "score": [1, 0, 0, 1],
        }
    )
    with pytest.warns(rankci.RankciWarning, match=r"differ only by case: 'GPT-4' and 'gpt-4'"):
        scores = rankci.read_scores(frame)
    assert scores.models == ("GPT-4", "gpt-4")


def test_item_ids_differing_by_case_are_not_warned_about():
    frame = pd.DataFrame({"model": list("aabb"), "item": ["aB", "Ab"] * 2, "score": [1, 0, 0, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rankci.read_scores(frame).items == ("Ab", "aB")


# ---------------------------------------------------------------------- delimiters and layout
LONG_TEXT = "model{d}item{d}score\na{d}q1{d}1\na{d}q2{d}0\nb{d}q1{d}0\nb{d}q2{d}1\n"


@pytest.mark.parametrize(
    "name,delimiter",
    [("tab_saved_as.csv", "\t"), ("semicolons.csv", ";"), ("commas.tsv", ","), ("s.txt", "\t")],
)
def test_the_delimiter_is_detected_whatever_the_extension(tmp_path, name, delimiter):
    path = tmp_path / name
    path.write_text(LONG_TEXT.format(d=delimiter))
    scores = rankci.read_scores(path)
    assert scores.models == ("a", "b") and scores.items == ("q1", "q2")
    assert scores.notes["layout"] == "long" and scores.notes["delimiter"] == delimiter
    np.testing.assert_array_equal(scores.units().values, [[1, 0], [0, 1]])


def test_a_long_table_with_unfamiliar_columns_is_refused_with_its_columns(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("engine,qid,value\na,q1,1\na,q2,0\nb,q1,0\nb,q2,1\n")
    with pytest.raises(
        ValueError, match=r"columns are: 'engine', 'qid', 'value'.*model=, item=, score="
    ):
        rankci.read_scores(path)
    scores = rankci.read_scores(path, model="engine", item="qid", score="value")
    assert scores.models == ("a", "b") and scores.items == ("q1", "q2")


def test_a_table_is_wide_only_when_unambiguous():
    numbers = pd.DataFrame({"a": [1, 0], "b": [0, 1]})
    with pytest.raises(ValueError, match=r"no item column.*layout='wide'"):
        rankci.read_scores(numbers)
    assert rankci.read_scores(numbers, layout="wide").models == ("a", "b")
    with pytest.raises(ValueError, match=r"column 'note' is not numeric"):
        rankci.read_scores(numbers.assign(item=["q1", "q2"], note=["x", "y"]))
    assert rankci.read_scores(numbers.assign(item=["q1", "q2"])).notes["layout"] == "wide"


def test_decimal_commas_are_read_in_semicolon_files(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("model;item;score\na;q1;0,5\na;q2;0,25\nb;q1;1\nb;q2;,75\n")
    scores = rankci.read_scores(path)
    np.testing.assert_array_equal(scores.units().values, [[0.5, 1.0], [0.25, 0.75]])
    wide = tmp_path / "w.csv"
    wide.write_text("item;a;b\nq1;0,5;1\nq2;0,25;0\n")
    np.testing.assert_array_equal(rankci.read_scores(wide).units().values, [[0.5, 1], [0.25, 0]])


def test_decimal_commas_elsewhere_are_refused_with_a_hint(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text('model,item,score\na,q1,"0,5"\na,q2,1\nb,q1,0\nb,q2,1\n')
    with pytest.raises(ValueError, match=r"not numeric at line 2.*'0,5'.*decimal comma"):
        rankci.read_scores(path)


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        rankci.read_scores(tmp_path / "nope.csv")


# ---------------------------------------------------------------------- prompt variants
def _extra_variant_table():
    rng = np.random.default_rng(0)
    rows = [
        (m, f"q{i:02d}", v, float(rng.random() < p))
        for m, p in (("a", 0.8), ("b", 0.5), ("c", 0.3))
        for i in range(30)
        for v in ("p1", "p2")
    ]
    rows += [("a", f"q{i:02d}", "p3", 0.0) for i in range(30)]  # a variant only model a has
    return pd.DataFrame(rows, columns=["model", "item", "prompt", "score"])


def test_an_extra_prompt_variant_is_excluded_by_one_rule_and_reported():
    frame = _extra_variant_table()
    scores = rankci.read_scores(frame)
    assert scores.prompts == ("p1", "p2")
    record = scores.notes["excluded"]["inconsistent_prompts"]
    assert record["rows"] == 30 and record["rows_by_model"] == {"a": 30}
    assert record["variants"] == ["p3"]
    expected = frame[frame.prompt != "p3"].groupby("model")["score"].mean()
    ranking = rankci.rank(scores)
    np.testing.assert_allclose(ranking.score, expected.to_numpy())
    assert ranking.excluded["inconsistent_prompts"] == record
    intervals = rankci.score_intervals(scores, "normal", missing="pairwise")
    np.testing.assert_allclose(intervals.score, expected.to_numpy())
    assert intervals.to_dict()["excluded"]["inconsistent_prompts"] == record
    # the monitor averages the same variants: its final scores are the same means
    final = replay(scores, look_every="50%").ranking.score
    np.testing.assert_allclose(final, expected.to_numpy())


def test_a_model_sharing_no_variant_is_an_error():
    frame = pd.DataFrame(
        {
            "model": list("aabb"),
            "item": ["q1", "q2"] * 2,
            "prompt": ["x", "x", "y", "y"],
            "score": [1, 0, 0, 1],
        }
    )
    with pytest.raises(ValueError, match=r"model .a. has only prompt variants that some other"):
        rankci.read_scores(frame)


# ---------------------------------------------------------------------- round trip (property)
ID_TEXT = st.one_of(
    st.sampled_from(
        ["007", "1", "2.0", "3e2", "0", "00", "-1", "1e-3", "NA", "None", "nan", "TRUE", "0x1F"]
    ),
    st.text(alphabet="abcXYZ 09.-_,;", min_size=1, max_size=8),
)


def _ids(min_size, max_size):
    def usable(value):
        return value.strip() == value and value.strip() != ""

    return st.lists(
        ID_TEXT.filter(usable), min_size=min_size, max_size=max_size, unique_by=str.casefold
    )


@st.composite
def tables(draw):
    models = draw(_ids(2, 4))
    items = draw(_ids(1, 6))
    clusters = draw(st.one_of(st.none(), _ids(1, 3)))
    prompts = draw(st.one_of(st.none(), _ids(1, 2)))
    rows = []
    for k, item in enumerate(items):
        for model in models:
            for prompt in prompts or [None]:
                if k == 0 or draw(st.booleans()):
                    row = {"model": model, "item": item, "score": draw(st.integers(0, 8)) / 8}
                    if clusters is not None:
                        row["cluster"] = clusters[k % len(clusters)]
                    if prompt is not None:
                        row["prompt"] = prompt
                    rows.append(row)
    frame = pd.DataFrame(rows)
    columns = ["model", "item"] + [c for c in ("cluster", "prompt") if c in frame] + ["score"]
    return frame[columns]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(frame=tables())
def test_every_format_reads_back_identical_scores(tmp_path, frame):
    read = {}
    for fmt in FORMATS:
        path = tmp_path / f"table.{fmt}"
        write(frame, path, fmt)
        try:
            read[fmt] = rankci.read_scores(path)
        except ValueError as error:  # the same refusal for every format (a prompt rule edge)
            read[fmt] = str(error)
    reference = read["parquet"]
    if isinstance(reference, str):
        assert all(value == reference for value in read.values())
        return
    assert set(reference.models) <= set(frame["model"])  # ids exactly as written
    assert set(reference.items) <= set(frame["item"])
    for fmt in ("csv", "tsv", "jsonl"):
        same_scores(read[fmt], reference)
