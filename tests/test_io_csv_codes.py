"""The large-CSV path of read_scores (pyarrow batches straight into integer codes,
``rankci.io.read_csv_codes``) against the general paths: ``pandas.read_csv`` then
``Scores.from_frame`` (small files) and ``read_csv_batches`` then ``Scores.from_frame`` (large
files). The same Scores field for field (notes and warnings included) on many tables, the same
error text on every bad one, and the progress bar on a file above the threshold."""

from __future__ import annotations

import csv
import io
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import rankci
import rankci.io as rio

FIELDS = ("model_code", "item_code", "prompt_code", "item_cluster", "score")


def _same(a, b):
    """Every field of two Scores: labels, codes (with their dtypes), scores, notes."""
    assert (a.models, a.items, a.clusters, a.prompts) == (b.models, b.items, b.clusters, b.prompts)
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert np.array_equal(np.signbit(a.score), np.signbit(b.score))  # -0.0 is not 0.0
    assert a.notes == b.notes and list(a.notes) == list(b.notes)
    assert (a.trials is None) == (b.trials is None)


def _read(path, monkeypatch, way, **options):
    """read_scores(path) by one way: "pandas" (the small-file path), "batches" (the large-file
    path without the codes reader) or "codes" (the large-file path); (result or error, warnings)."""
    with monkeypatch.context() as patch:
        patch.setattr(rio, "BIG_CSV_BYTES", 1 << 60 if way == "pandas" else 1)
        if way == "batches":
            patch.setattr(rio, "read_csv_codes", lambda *args: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = rankci.read_scores(path, **options)
            except ValueError as error:
                out = error
    return out, [str(w.message) for w in caught]


def _codes(path, bounds=(0.0, 1.0), **given):
    return rio.read_csv_codes(path, "auto", "auto", bounds, given)


def _agree(path, monkeypatch, fast=True, ways=("pandas", "batches"), **options):
    """The codes path gives what the general paths give (the same Scores or the same error, the
    same warnings); ``fast`` says whether read_csv_codes itself gives the result (else None)."""
    given = {k: v for k, v in options.items() if k != "bounds"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = _codes(path, options.get("bounds", (0.0, 1.0)), **given)
    assert (direct is not None) == fast, "the codes path was (not) taken"
    got, said = _read(path, monkeypatch, "codes", **options)
    for way in ways:
        want, want_said = _read(path, monkeypatch, way, **options)
        assert type(got) is type(want), (way, got, want)
        if isinstance(want, ValueError):
            assert str(got) == str(want), way
        else:
            _same(got, want)
            if direct is not None:
                _same(direct, want)
                assert direct.score.flags.writeable  # its own array, as pandas' copy
        assert said == want_said, way
    return got


def _board(n_models=4, n_items=9, seed=0, models=None, items=None):
    rng = np.random.default_rng(seed)
    models = models or [f"m{j}" for j in range(n_models)]
    items = items or [f"q{i:02d}" for i in range(n_items)]
    rows = [[m, i, f"{rng.integers(0, 2)}"] for m in models for i in items]
    return [rows[r] for r in rng.permutation(len(rows))]


def _write(path, rows, header=("model", "item", "score"), delimiter=",", newline="\n", **kw):
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator=newline, **kw)
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    return path


@pytest.fixture(params=[rio._BLOCK_BYTES, 64], ids=["one batch", "many batches"])
def blocks(request, monkeypatch):
    """Each test both with one batch and with batches of 64 bytes (each batch its own
    dictionary of labels, unified at the end)."""
    monkeypatch.setattr(rio, "_BLOCK_BYTES", request.param)
    return request.param


def _with_scores(rows, texts):
    return [[m, i, texts[k % len(texts)]] for k, (m, i, _) in enumerate(rows)]


def _clustered(rows):
    return [[m, i, s, f"s{int(i[1:]) % 3}"] for m, i, s in rows]


TABLES = {
    "plain": lambda p: _write(p, _board()),
    "quoted everything": lambda p: _write(p, _board(), quoting=csv.QUOTE_ALL),
    "quoted ids with commas and quotes": lambda p: _write(
        p, _board(models=['a, "x"', "b,c", 'say "hi"'], items=["1,2", '"q"', "q 3 "])
    ),
    "numeric-looking ids stay as written": lambda p: _write(
        p,
        _board(
            models=["007", "7", "7.0", "1e3", "-0"],
            items=["NA", "nan", "null", "None", "0", "00", "0x1", "TRUE", "1,5"],
        ),
    ),
    "unicode ids": lambda p: _write(
        p, _board(models=["モデル", "modèle", "🤖", "ß"], items=["問1", "é", "naïve", "Ω"])
    ),
    "CRLF": lambda p: _write(p, _board(), newline="\r\n"),
    "TSV": lambda p: _write(p.with_suffix(".tsv"), _board(), delimiter="\t"),
    "tab-separated .csv": lambda p: _write(p, _board(), delimiter="\t"),
    "semicolons, decimal points": lambda p: _write(
        p, _with_scores(_board(), ["0.25", "1", ".5"]), delimiter=";"
    ),
    "blank lines": lambda p: (
        p.write_text(_write(p, _board()).read_text().replace("\n", "\n\n", 5) + "\n\n") and p
    ),
    "byte-order mark": lambda p: (
        p.write_bytes(b"\xef\xbb\xbf" + _write(p, _board()).read_bytes()) and p
    ),
    "score spellings": lambda p: _write(
        p, _with_scores(_board(), ["1", "0", "0.5", ".25", "1e-3", "+1", " 0.75 ", "5.E-1"])
    ),
    "every score 0 or 1": lambda p: _write(p, _with_scores(_board(), ["0", "1"])),
    "scores from repr": lambda p: _write(
        p, _with_scores(_board(), [repr(v) for v in np.random.default_rng(1).random(50).tolist()])
    ),
    "aliases and extra columns": lambda p: _write(
        p,
        [[m, "x", i, s, "y"] for m, i, s in _board()],
        header=("Model", "note", "question", "correct", "other"),
    ),
    "labels differing by case (warns)": lambda p: _write(p, _board(models=["gpt", "GPT", "b"])),
    "cluster column": lambda p: _write(
        p, _clustered(_board()), header=("model", "item", "score", "subject")
    ),
    "cluster labels by case (warns)": lambda p: _write(
        p,
        [[*r[:3], r[3].upper() if r[1] == "q01" else r[3]] for r in _clustered(_board())],
        header=("model", "item", "score", "subject"),
    ),
    "prompt column": lambda p: _write(
        p,
        [[m, i, s, pv] for m, i, s in _board() for pv in ("p0", "p1")],
        header=("model", "item", "score", "prompt"),
    ),
    "prompt variant one model lacks (excluded)": lambda p: _write(
        p,
        [[m, i, s, pv] for m, i, s in _board() for pv in ("p0", "p1") if pv == "p0" or m != "m2"],
        header=("model", "item", "score", "prompt"),
    ),
    "cluster and prompt, variant excluded": lambda p: _write(
        p,
        [[*r, pv] for r in _clustered(_board()) for pv in ("a", "b") if pv == "a" or r[0] != "m0"],
        header=("model", "item", "score", "subject", "prompt"),
    ),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_codes_equal_the_general_paths(tmp_path, monkeypatch, blocks, name):
    path = TABLES[name](tmp_path / "board.csv")
    got = _agree(path, monkeypatch)
    said = _read(path, monkeypatch, "pandas")[1]
    assert bool(said) == name.endswith("(warns)")
    assert ("excluded" in got.notes) == ("excluded" in name)


def test_identifiers_stay_exactly_as_written(tmp_path, monkeypatch):
    """Read back against the labels written, not against another reader."""
    models = ["007", "7", "7.0", " 7 x", "NA", "é"]
    items = ["0", "00", "nan", "1e3", '"q"', "a,b"]
    path = _write(tmp_path / "ids.csv", _board(models=models, items=items), quoting=csv.QUOTE_ALL)
    scores = _codes(path)
    assert scores.models == tuple(sorted(models)) and scores.items == tuple(sorted(items))
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))[1:]
    got = [(scores.models[m], scores.items[i]) for m, i in zip(scores.model_code, scores.item_code)]
    assert got == [(m, i) for m, i, _ in rows]
    assert scores.score.tolist() == [float(s) for _, _, s in rows]


def _set(rows, row, column, value):
    rows = [list(r) for r in rows]
    rows[row][column] = value
    return rows


BAD = {
    "missing model": lambda r: _set(r, 3, 0, ""),
    "missing item": lambda r: _set(r, 5, 1, ""),
    "missing score": lambda r: _set(r, 7, 2, ""),
    "quoted empty score": lambda r: _set(r, 7, 2, '""'),
    "blank item": lambda r: _set(r, 2, 1, "  "),
    "blank model": lambda r: _set(r, 2, 0, " "),
    "text score": lambda r: _set(r, 4, 2, "x"),
    "NA score": lambda r: _set(r, 4, 2, "NA"),
    "decimal comma in a comma file": lambda r: _set(r, 4, 2, "0,5"),
    "nan score": lambda r: _set(r, 1, 2, "nan"),
    "infinite score": lambda r: _set(r, 1, 2, "-inf"),
    "score out of range": lambda r: _set(r, 6, 2, "2"),
    "negative score": lambda r: _set(r, 6, 2, "-0.5"),
    "duplicated row": lambda r: [*r, r[5]],
    "duplicated row, another score": lambda r: [*r, [*r[5][:2], "0.5"]],
    "one model": lambda r: [["m0", i, s] for m, i, s in r if m == "m1"],
    "whitespace spelling of a model": lambda r: _set(r, 0, 0, r[0][0] + " "),
    "whitespace spelling of an item": lambda r: _set(r, 0, 1, " " + r[0][1]),
    "header only": lambda r: [],
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_tables_get_the_general_paths_error(tmp_path, monkeypatch, blocks, name):
    rows = BAD[name](_board())
    text = _write(tmp_path / "bad.csv", rows).read_text().replace('""""""', '""')
    path = tmp_path / "bad.csv"
    path.write_text(text)
    if name.startswith("whitespace"):  # refused by the codes path itself, in the same words
        with pytest.raises(ValueError) as raised:
            _codes(path)
        error = _read(path, monkeypatch, "pandas")[0]
        assert isinstance(error, ValueError) and str(raised.value) == str(error)
        assert str(_read(path, monkeypatch, "codes")[0]) == str(error)
    else:
        error = _agree(path, monkeypatch, fast=False)
    assert isinstance(error, ValueError)
    if name not in ("header only", "one model") and not name.startswith("whitespace"):
        assert "line" in str(error)  # the general path names the file line


CLUSTER_BAD = {
    "item in two clusters": lambda r: _set(r, 0, 3, "elsewhere"),
    "missing cluster": lambda r: _set(r, 0, 3, ""),
    "blank cluster": lambda r: _set(r, 0, 3, "   "),
}


@pytest.mark.parametrize("name", list(CLUSTER_BAD))
def test_bad_clusters_get_the_general_paths_error(tmp_path, monkeypatch, name):
    rows = CLUSTER_BAD[name](_clustered(_board()))
    path = _write(tmp_path / "bad.csv", rows, header=("model", "item", "score", "subject"))
    assert isinstance(_agree(path, monkeypatch, fast=False), ValueError)


def test_a_model_left_without_shared_variants_is_the_same_error(tmp_path, monkeypatch):
    rows = [[m, i, s, "p1" if m == "m3" else "p0"] for m, i, s in _board()]
    path = _write(tmp_path / "bad.csv", rows, header=("model", "item", "score", "prompt"))
    with pytest.raises(ValueError) as raised:
        _codes(path)
    want = _read(path, monkeypatch, "pandas")[0]
    assert str(raised.value) == str(want) and "prompt variants" in str(want)
    assert str(_read(path, monkeypatch, "codes")[0]) == str(want)


OTHER_PATHS = {  # not read by the codes path; read_scores gives the general path's result
    "true/false scores": lambda p: _write(p, _with_scores(_board(), ["true", "False"])),
    "decimal commas in a ';' file": lambda p: _write(
        p, _with_scores(_board(), ["0,5", "1"]), delimiter=";"
    ),
    "a score of -0": lambda p: _write(p, _with_scores(_board(), ["-0", "1"])),
    "a score of -0.0 among decimals": lambda p: _write(p, _with_scores(_board(), ["-0.0", "0.5"])),
    "trial column": lambda p: _write(
        p,
        [[m, i, s, t] for m, i, s in _board() for t in (0, 1)],
        header=("model", "item", "score", "trial"),
    ),
    "wide table": lambda p: _write(
        p, [[f"q{i}", "1", "0"] for i in range(5)], header=("item", "a", "b")
    ),
    "unnamed column": lambda p: _write(
        p, [[*r, "x"] for r in _board()], header=("model", "item", "score", "")
    ),
    "gzip-compressed under .csv": lambda p: (
        p.write_bytes(__import__("gzip").compress(_write(p, _board()).read_bytes())) and p
    ),
    "latin-1 file": lambda p: (
        p.write_bytes(_write(p, _board(models=["café", "b"])).read_text().encode("latin-1")) and p
    ),
    "a latin-1 byte past the lines sampled": lambda p: (
        p.write_bytes(
            _write(p, _board(2, 40) + [["café", f"q{i:02d}", "1"] for i in range(40)])
            .read_text()
            .encode("latin-1")
        )
        and p
    ),
    "utf-16 with a byte-order mark": lambda p: (
        p.write_bytes(_write(p, _board()).read_text().encode("utf-16")) and p
    ),
}


@pytest.mark.parametrize("name", list(OTHER_PATHS))
def test_other_tables_take_the_general_path(tmp_path, monkeypatch, name):
    path = OTHER_PATHS[name](tmp_path / "other.csv")
    got = _agree(path, monkeypatch, fast=False)
    if "latin-1" in name:
        assert "is not UTF-8 (byte 0xe9 on line" in str(got)


def test_a_row_with_too_many_fields_gets_the_batch_readers_error(tmp_path, monkeypatch):
    """pyarrow refuses the row; the codes path falls back to the batch reader, which words it
    (pandas words it otherwise, so only the large-file general path is compared)."""
    rows = [*_board(), ["m0", "extra", "1", "surplus"]]
    path = _write(tmp_path / "bad.csv", rows)
    error = _agree(path, monkeypatch, fast=False, ways=("batches",))
    assert "could not read" in str(error)


def test_named_columns_and_bounds(tmp_path, monkeypatch):
    rows = [[i, "x", m, s] for m, i, s in _with_scores(_board(), ["3.5", "-2", "10"])]
    path = _write(tmp_path / "named.csv", rows, header=("qid", "junk", "engine", "value"))
    options = dict(model="engine", item="qid", score="value", bounds=None)
    _agree(path, monkeypatch, **options)
    assert isinstance(
        _agree(path, monkeypatch, fast=False, **{**options, "bounds": (0, 1)}), ValueError
    )
    _agree(path, monkeypatch, fast=False, model="nope", item="qid", score="value")
    _agree(path, monkeypatch, fast=False, model="engine", item="engine", score="value")


ids = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029\x85"),
    min_size=1,
    max_size=6,
)
scores = st.one_of(
    st.floats(0, 1).map(repr),
    st.floats(0, 1).map(lambda v: f"{v:.4f}"),
    st.sampled_from(["0", "1", ".5", "1e-3", " 0.5", "+1", "1.", "0.0"]),
)
other_scores = st.sampled_from(["true", "FALSE", "-0", "0,5"])  # read by the general path
bad_scores = st.sampled_from(["", "x", "2", "nan", "-inf", "NA", "0,5"])


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    models=st.lists(ids, min_size=2, max_size=4, unique=True),
    items=st.lists(ids, min_size=1, max_size=5, unique=True),
    values=st.lists(scores, min_size=1, max_size=40),
    dialect=st.sampled_from([(",", "\n"), ("\t", "\r\n"), (";", "\n")]),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
    block=st.sampled_from([64, 1 << 20]),
    data=st.data(),
)
def test_random_tables_agree_with_pandas(
    tmp_path_factory, monkeypatch, models, items, values, dialect, quoting, block, data
):
    rows = [
        [m, i, values[k % len(values)]]
        for k, (m, i) in enumerate((m, i) for m in models for i in items)
    ]
    if data.draw(st.integers(0, 3)) == 0:
        rows.append(list(data.draw(st.sampled_from(rows))))  # a duplicated row
    for kind in (bad_scores, other_scores):  # sometimes one bad score, one of another kind
        if data.draw(st.integers(0, 3)) == 0:
            rows[data.draw(st.integers(0, len(rows) - 1))][2] = data.draw(kind)
    rows = data.draw(st.permutations(rows))
    path = tmp_path_factory.mktemp("random") / "board.csv"
    _write(path, rows, delimiter=dialect[0], newline=dialect[1], quoting=quoting)
    monkeypatch.setattr(rio, "_BLOCK_BYTES", block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            direct = _codes(path)
        except ValueError as error:  # two spellings of one label: refused in the same words
            direct = error
    got, said = _read(path, monkeypatch, "codes")
    want, want_said = _read(path, monkeypatch, "pandas")
    event(
        "error" if isinstance(want, ValueError) else "read by the codes path" if direct else "read"
    )
    assert type(got) is type(want) and said == want_said
    if isinstance(want, ValueError):
        assert str(got) == str(want)
        assert direct is None or str(direct) == str(want)
    else:
        _same(got, want)
        if direct is not None:
            _same(direct, want)


# --------------------------------------------------------------------------- the progress bar


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """A board just above BIG_CSV_BYTES (the threshold of read_csv_batches), written by pyarrow:
    40 models, the items numbered, scores k/1000."""
    import pyarrow.compute as pc

    n_models, row_bytes = 40, len("model-00,item-0000000,0.123\n")
    n_items = rio.BIG_CSV_BYTES // (row_bytes * n_models) + 1000
    item = np.repeat(np.arange(n_items), n_models)
    model = np.tile(np.arange(n_models), n_items)
    text = lambda prefix, codes, width: pc.binary_join_element_wise(  # noqa: E731
        prefix, pc.utf8_lpad(pc.cast(pa.array(codes), pa.string()), width, "0"), ""
    )
    score = ((item * 7 + model * 13) % 1000) / 1000
    table = pa.table(
        {"model": text("model-", model, 2), "item": text("item-", item, 7), "score": score}
    )
    path = tmp_path_factory.mktemp("big") / "big.csv"
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="none"))
    assert path.stat().st_size >= rio.BIG_CSV_BYTES
    return path, n_models, n_items, score


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_large_file_is_read_into_codes_with_a_progress_bar(big_csv, monkeypatch):
    path, n_models, n_items, score = big_csv
    taken = []
    real = rio.read_csv_codes
    monkeypatch.setattr(rio, "read_csv_codes", lambda *a: taken.append(real(*a)) or taken[-1])
    monkeypatch.setattr(rio, "read_csv_batches", None)  # the general path would fail
    monkeypatch.delenv("RANKCI_PROGRESS", raising=False)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    scores = rankci.read_scores(path)
    assert taken and taken[0] is scores
    bar = terminal.getvalue()
    assert "reading big.csv [" in bar and "100%" in bar
    # against the table written (not another reader): labels, codes and scores
    assert scores.models == tuple(f"model-{j:02d}" for j in range(n_models))
    assert scores.items == tuple(f"item-{i:07d}" for i in range(n_items))
    np.testing.assert_array_equal(scores.model_code, np.tile(np.arange(n_models), n_items))
    np.testing.assert_array_equal(scores.item_code, np.repeat(np.arange(n_items), n_models))
    np.testing.assert_array_equal(scores.score, score)

    monkeypatch.setenv("RANKCI_PROGRESS", "0")  # a terminal, but the bar turned off
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert rankci.read_scores(path).n_rows == scores.n_rows
    assert terminal.getvalue() == ""


def test_no_bar_below_the_threshold(tmp_path, monkeypatch, capsys):
    path = _write(tmp_path / "small.csv", _board())
    monkeypatch.setenv("RANKCI_PROGRESS", "1")
    monkeypatch.setattr(rio, "read_csv_codes", None)  # not called below the threshold
    rankci.read_scores(path)
    assert "reading" not in capsys.readouterr().err
