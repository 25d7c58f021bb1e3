"""Reading per-item scores: CSV, TSV, Parquet, JSONL and DataFrames, long or wide.

Long form has one row per (model, item[, prompt]) with a score, and optionally a cluster and a
prompt column. Wide form has one row per item and one column per model (plus optional item,
cluster and prompt columns). Column names are configurable; when a role is not named, the first
of its common aliases found in the table (case-insensitive) is used.

How a table is read (the same for every format, so that CSV, TSV, Parquet and JSONL holding the
same table give identical :class:`~rankci.data.Scores`):

* **Identifiers are text.** Text files (CSV, TSV, TXT) are read with every cell as text: ``007``
  stays ``007``, ``0`` and ``00`` are two items, ``NA`` is a name. JSONL values keep their JSON
  type and Parquet/DataFrame columns their dtype; a value that is not a string is converted with
  ``str()`` (the integer 7 is ``"7"``). A floating-point id column warns: ``2.0`` is read as
  ``"2.0"`` and ``3e2`` written as a JSON number as ``"300.0"``; write ids as strings to keep them.
* **Spellings.** Names that differ only by surrounding whitespace (``m1`` and ``m1 ``) are an
  error naming both; model, cluster or prompt names that differ only by case warn.
* **Encoding and what a file is.** Text files are UTF-8 (with or without a byte-order mark);
  UTF-16 and UTF-32 files with their byte-order mark are decoded (``notes["encoding"]``). A file
  in another encoding is an error naming the first bad byte, its line and a likely encoding, with
  the fix. A file whose first bytes say it is something else (gzip, bzip2, xz or zstd data under a
  ``.csv`` name, Parquet, an Excel workbook, a JSON array under ``.jsonl``) is an error saying what
  it is and what to do.
* **Column names are unique.** A header (or a JSON object, or a DataFrame) naming one column
  twice is an error naming the column and both positions.
* **Delimiter.** For text files the delimiter (comma, tab or semicolon) is detected from the first
  lines, whatever the extension (``.csv``, ``.tsv``, ``.txt``).
* **Decimal commas** (``0,5``) are read in ';'-separated files, the spreadsheet convention where
  the comma is the decimal mark; elsewhere they are an error with that hint.
* **Layout.** ``auto`` reads long form when a model and a score column are found (or named), and
  wide form only when that is unambiguous: an item column is found and every other column
  (besides cluster and prompt) is numeric. A vote table (its fields those of a vote layout,
  :func:`rankci.formats.vote_layout`) is refused, naming its layout and
  :func:`rankci.votes.read_votes`. Otherwise the error lists the columns.
* **Prompt variants.** A prompt variant is kept only when every model has it
  (:data:`rankci.data.PROMPT_RULE`); the rows of a variant some model lacks are left out and
  counted in ``notes["excluded"]`` and in every result's ``excluded``. A single missing cell of
  a shared variant is an ordinary missing cell, handled by ``missing=`` as any other.
* **Large text files** (at least :data:`BIG_CSV_BYTES`) are read by pyarrow in batches with a
  progress bar on stderr; a long board goes straight into integer codes
  (:func:`read_csv_codes`), giving the Scores the general path gives, field for field.
* **Trials.** A trial column (``trial``, ``epoch``, ``repeat``, or ``trial=``) holds repeated
  runs of the same item, nested in the item and prompt; each cell's trials become one per-item
  score by ``per_item=`` (mean, pass@K, pass^K; :mod:`rankci.trials`), with the counts in
  ``notes["repeated_trials"]``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import numpy as np

from rankci._base import LazyModule, check_choice, is_dataframe
from rankci.data import Scores, check_spellings, distinct_count, row_place, scores_from_codes

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

__all__ = [
    "read_scores",
    "read_table",
    "as_scores",
    "is_vote_table",
    "vote_table_message",
    "VoteTableError",
    "ALIASES",
    "FORMATS",
    "LAYOUTS",
]

from rankci.formats import (  # noqa: E402
    FORMATS,
    LAYOUTS,
    VOTE_FIELDS,
    VoteTableError,
    is_vote_table,
    vote_layout,
)

ALIASES: dict[str, tuple[str, ...]] = {
    "model": ("model", "model_name", "system", "llm", "model_id"),
    "item": ("item", "item_id", "question", "question_id", "doc_id", "sample_id", "id"),
    "score": ("score", "correct", "is_correct", "acc", "accuracy", "value"),
    "cluster": ("cluster", "subject", "category", "task", "topic", "domain"),
    "prompt": ("prompt", "prompt_variant", "variant", "template", "prompt_id"),
    "trial": ("trial", "trial_id", "epoch", "repeat"),
}

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
_COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst", ".zip")
_DELIMITERS = (",", "\t", ";")
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon"}
#: cells of a score column read as "no score" in text files (case-insensitive; pandas' list)
_NA_TEXT = frozenset(
    ["", "na", "n/a", "nan", "-nan", "null", "none", "#n/a", "#na", "<na>", "nat", "-na", "1.#ind"]
)
_DECIMAL_COMMA = re.compile(r"[+-]?(\d+,\d*|,\d+)")
_SAMPLE_LINES = 50


def read_scores(
    source: str | os.PathLike | pd.DataFrame,
    *,
    model: str | None = None,
    item: str | None = None,
    score: str | None = None,
    cluster: str | None = None,
    prompt: str | None = None,
    layout: str = "auto",
    format: str = "auto",
    bounds: tuple[float, float] | None = (0.0, 1.0),
    trial: str | None = None,
    per_item: str = "mean",
    trial_gaps: str = "refuse",
) -> Scores:
    """Read and validate per-item scores.

    Identifiers (model, item, cluster, prompt) are read as text, exactly as written; the rules for
    delimiters, decimal commas, layouts and prompt variants are in the module docstring
    (:mod:`rankci.io`).

    Parameters
    ----------
    source : path or DataFrame
        A ``.csv``, ``.tsv``, ``.txt``, ``.parquet`` or ``.jsonl`` file (optionally
        ``.gz``/``.bz2``/``.xz``/``.zst``/``.zip`` compressed for the text formats), or a pandas
        DataFrame.
    model, item, score, cluster, prompt : str, optional
        Column names. Unnamed roles are looked up among the aliases in :data:`ALIASES`
        (``subject``/``category``/``task`` for the cluster, ``question``/``doc_id`` for the
        item, ...).
        Pass ``cluster=""`` or ``prompt=""`` to ignore a column that matches an alias.
    layout : {"auto", "long", "wide"}
        ``auto`` reads long form when a model and a score column are present (or named), wide form
        when that is unambiguous (an item column, every other column numeric), and otherwise
        refuses with the table's columns. In wide form every column other than item, cluster and
        prompt is a model, and an empty cell means "not scored".
    format : {"auto", "csv", "tsv", "parquet", "jsonl"}
        File format; ``auto`` uses the file extension. For text files the delimiter is detected.
    bounds : (float, float) or None, default (0, 1)
        Allowed score range; None accepts any finite score.
    trial : str, optional
        The column of repeated trials (looked up among ``trial``, ``trial_id``, ``epoch``,
        ``repeat`` when not named; ``""`` for none). Each (model, item[, prompt]) cell's trials
        become one score by ``per_item``.
    per_item : str, default "mean"
        ``"mean"``, ``"pass@K"`` or ``"pass^K"`` (:mod:`rankci.trials`); pass@K and pass^K need
        a trial column, 0/1 scores and at least K trials in every cell.
    trial_gaps : {"refuse", "allow"}, default "refuse"
        A cell whose trial ids skip one the table has (trials 0, 1, 3 beside 0, 1, 2, 3) is an
        error naming the model, item and missing ids; ``"allow"`` reads it as fewer trials,
        counted in ``notes["repeated_trials"]["gaps"]`` (:mod:`rankci.trials`).

    Returns
    -------
    Scores
        ``notes`` records the layout, the columns used and, for text files, the delimiter.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        For an unknown option, an unreadable file, a missing or ambiguous column, or any of the
        validation errors of :meth:`Scores.from_frame` (which name the row, model or item).

    References
    ----------
    Wickham, H. (2014). Tidy data. Journal of Statistical Software 59(10), 1-23 (long and wide
    layouts).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model": ["a", "a", "b", "b"], "question": ["q1", "q2", "q1", "q2"],
    ...                       "correct": [1, 0, 1, 1]})
    >>> read_scores(table)
    Scores(2 models, 2 items, 4 scores)
    """
    check_choice("layout", layout, LAYOUTS)
    check_choice("format", format, FORMATS)
    text: dict | None = None  # how a text file was read (delimiter, decimal commas)
    lines = None  # the 1-based file line of each row (text files and JSON Lines), for messages
    if is_dataframe(source):
        frame = source
    else:
        roles = {"model": model, "item": item, "score": score, "cluster": cluster}
        roles.update(prompt=prompt, trial=trial, per_item=per_item, trial_gaps=trial_gaps)
        fast = read_parquet_codes(Path(source), format, layout, bounds, roles)
        if fast is None and _is_big_text(Path(source)):
            fast = read_csv_codes(Path(source), format, layout, bounds, roles)
        if fast is not None:
            return fast
        frame, text = read_table_text(Path(source), format)
        if text is not None:
            text = dict(text)
            lines = text.pop("lines", None)
            text = text or None
    if frame.empty:
        raise ValueError("the table has no rows")
    _refuse_duplicate_columns(list(frame.columns), "the table")
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    given = {"model": model, "item": item, "score": score, "cluster": cluster, "prompt": prompt}
    given["trial"] = trial
    given["per_item"] = per_item
    given["trial_gaps"] = trial_gaps
    decimal_comma = bool(text and text.get("delimiter") == ";")
    if layout == "auto":
        layout = _layout(frame, given, decimal_comma if text and "delimiter" in text else None)
    notes = {} if text is None else dict(text)  # the delimiter, and a non-UTF-8 encoding
    is_text = text is not None and "delimiter" in text
    if layout == "long":
        return _read_long(frame, given, bounds, is_text, decimal_comma, notes, lines)
    return _read_wide(frame, given, bounds, is_text, decimal_comma, notes, lines)


def read_parquet_codes(path: Path, format: str, layout: str, bounds, given: dict) -> Scores | None:
    """A long Parquet table of text ids read by pyarrow straight into integer codes.

    The path of :func:`read_scores` for the usual board (a ``.parquet`` file in long form with
    string model and item columns and a numeric score column, no cluster, prompt or trial
    column): each id column is dictionary-encoded by Arrow (no Python string per row), its few
    distinct labels sorted, and every check of :meth:`Scores.from_frame` made in one vectorised
    pass over the codes and scores. The result is the Scores the pandas path gives, field for
    field. Anything else (another layout or column type, a missing, blank, non-finite or
    out-of-range value, a duplicated row, one model, a pandas index column) returns None and
    the caller takes the general path, which words the error.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.parquet"
    >>> pd.DataFrame({"model": ["b", "a", "b", "a"], "item": ["q2", "q2", "q1", "q1"],
    ...               "score": [1, 0, 1, 1]}).to_parquet(p)
    >>> s = read_parquet_codes(p, "auto", "auto", (0.0, 1.0), {})
    >>> s.models, s.items, s.model_code.tolist(), s.score.tolist()
    (('a', 'b'), ('q1', 'q2'), [1, 0, 1, 0], [1.0, 0.0, 1.0, 1.0])
    """
    if layout not in ("auto", "long") or given.get("per_item", "mean") != "mean":
        return None
    if format != "parquet" and not (format == "auto" and path.suffix.lower() == ".parquet"):
        return None
    if not path.is_file() or _head(path, 4) != b"PAR1":
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException):
        return None
    names = list(schema.names)
    meta = schema.pandas_metadata or {}
    if len(set(names)) != len(names) or any(
        isinstance(c, str) for c in meta.get("index_columns", [])
    ):
        return None
    columns = _long_columns(names, layout, given)
    if columns is None or columns["cluster"] or columns["prompt"]:
        return None
    fields = {field.name: field.type for field in schema}
    ids = [columns["model"], columns["item"]]
    if not all(_is_text(fields[name]) for name in ids):
        return None
    try:  # id columns read as Arrow dictionaries: integer codes, no string per row
        # ParquetFile, not read_table: the dataset layer of read_table imports pandas
        parquet = pq.ParquetFile(path, read_dictionary=ids)
        table = parquet.read(columns=[*ids, columns["score"]]).unify_dictionaries()
    except (OSError, ValueError, pa.ArrowException):
        return None
    if table.num_rows == 0:
        return None
    arrays = {name: table.column(name) for name in table.column_names}
    return _coded_scores(arrays, columns, bounds, {"layout": "long", "columns": columns})


def _long_columns(names: list[str], layout: str, given: dict) -> dict | None:
    """The columns of a long table with these column names, as :func:`read_scores` finds them
    (named, else by alias); None when the table would not be read as long, a column is
    missing or named wrongly, or it has a trial column (the general path decides or words it)."""
    stub = _Columns(names)
    if layout == "auto" and not (given.get("model") or given.get("score")):
        if not (_alias(stub, "model", ()) and _alias(stub, "score", ())):
            return None
    try:
        columns = _resolve(stub, given, ("model", "item", "score", "cluster", "prompt", "trial"))
    except ValueError:
        return None
    if columns.pop("trial") is not None:
        return None
    if any(columns[role] is None for role in ("model", "item", "score")):
        return None
    named = [name for name in columns.values() if name is not None]
    if len(set(named)) < len(named):
        return None  # one column named for two roles
    return columns


def _coded_scores(arrays: dict, columns: dict, bounds, notes: dict, signed_zero: bool = True):
    """Scores from Arrow columns by name (an Arrow table's, the id columns dictionary-encoded
    with their dictionaries unified, the score column numeric), with every check of
    :meth:`Scores.from_frame` made on the codes; None when one fails (the general path words
    the error). Each column is taken out of ``arrays`` when it is converted, so that its
    memory goes as its codes come. ``signed_zero=False`` also returns None for a score of -0.0
    (a text file's ``-0`` is 0.0 or -0.0 in pandas, by the other cells of the column)."""
    import pyarrow as pa

    # what Arrow frees is given back to the system at once: NumPy cannot reuse Arrow's pool
    pool = pa.default_memory_pool()
    roles = [role for role in ("model", "item", "prompt", "cluster") if columns.get(role)]
    codes = {}
    for role in roles:
        encoded = _text_codes(arrays.pop(columns[role]))
        pool.release_unused()
        if encoded is None:
            return None
        codes[role] = encoded
    values = _float_scores(arrays.pop(columns["score"]), bounds)
    pool.release_unused()
    if values is None or (not signed_zero and np.signbit(values[values == 0]).any()):
        return None
    (model_code, models), (item_code, items) = codes["model"], codes["item"]
    prompt_code, prompts = codes.get("prompt", (None, None))
    n_prompts = 1 if prompts is None else len(prompts)
    key = item_code.astype(np.int64)  # one array of keys, computed in place
    if prompt_code is not None:
        key *= n_prompts
        key += prompt_code
    key *= len(models)
    key += model_code
    if len(models) < 2 or distinct_count(key, len(items) * n_prompts * len(models)) != key.size:
        return None
    del key
    cluster_code, clusters = codes.get("cluster", (None, None))
    item_cluster = None
    if clusters is not None:  # each item's cluster: an item in two clusters falls back
        item_cluster = np.full(len(items), -1, dtype=np.int32)
        item_cluster[item_code] = cluster_code
        if (item_cluster[item_code] != cluster_code).any():
            return None
    for role in roles:  # in the order of Scores.from_frame: its warnings come in the same order
        check_spellings(codes[role][1], role, f"the {role} column {columns[role]!r}")
    return scores_from_codes(
        models=models,
        items=items,
        clusters=clusters,
        prompts=prompts,
        model_code=model_code,
        item_code=item_code,
        prompt_code=prompt_code,
        item_cluster=item_cluster,
        score=values,
        notes=notes,
        prompt=columns.get("prompt"),
    )


class _Columns:
    """The column names of a table not yet read (what :func:`_alias` and :func:`_resolve` use)."""

    def __init__(self, names: list[str]):
        self.columns = names


def _is_text(kind) -> bool:
    """Whether an Arrow type is text, or a dictionary of text."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _text_codes(column) -> tuple[np.ndarray, tuple[str, ...]] | None:
    """(int32 codes, sorted labels) of a dictionary-encoded text column (its dictionaries
    unified), counting only the labels that occur; None for a missing value or a blank label
    (the general path words those)."""
    import pyarrow as pa

    if column.null_count or not pa.types.is_dictionary(column.type) or column.num_chunks == 0:
        return None
    dictionary = column.chunk(0).dictionary
    if dictionary.null_count:
        return None
    indices = np.concatenate([_buffer_values(chunk.indices) for chunk in column.chunks])
    labels = np.asarray(dictionary.to_pylist(), dtype=object)
    used = np.bincount(indices, minlength=labels.size) > 0
    if not used.all():  # a dictionary may hold labels no row has (pandas categories)
        renumber = np.cumsum(used) - 1
        indices, labels = renumber[indices], labels[used]
    if any(label.strip() == "" for label in labels):
        return None
    sorted_labels, remap = np.unique(labels, return_inverse=True)
    return remap.astype(np.int32)[indices], tuple(str(label) for label in sorted_labels)


def _buffer_values(array) -> np.ndarray:
    """A null-free Arrow array of a fixed-width number type as NumPy, read from its data buffer
    (``Array.to_numpy`` imports pandas); booleans, bit-packed, are unpacked by NumPy."""
    import pyarrow as pa

    kind, n = array.type, len(array)
    if n == 0:  # an empty chunk may have no data buffer
        return np.empty(0, dtype=bool if pa.types.is_boolean(kind) else _NUMPY_TYPES[str(kind)])
    data = array.buffers()[1]
    if pa.types.is_boolean(kind):
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
        return bits[array.offset : array.offset + n].astype(bool)
    dtype = np.dtype(_NUMPY_TYPES[str(kind)])
    return np.frombuffer(data, dtype=dtype, count=n, offset=array.offset * dtype.itemsize)


#: Arrow's fixed-width number types by name, as NumPy types
_NUMPY_TYPES = {
    **{f"int{b}": f"int{b}" for b in (8, 16, 32, 64)},
    **{f"uint{b}": f"uint{b}" for b in (8, 16, 32, 64)},
    "halffloat": "float16",
    "float": "float32",
    "double": "float64",
}


def _float_scores(column, bounds) -> np.ndarray | None:
    """The scores as float64 when numeric, present, finite and within ``bounds``; else None."""
    import pyarrow as pa

    kind = column.type
    if str(kind) not in _NUMPY_TYPES and not pa.types.is_boolean(kind):
        return None
    if column.null_count or column.num_chunks == 0:
        return None
    # its own copy, made once: np.concatenate of the chunks' buffers (combine_chunks copies too)
    values = np.concatenate([_buffer_values(chunk) for chunk in column.chunks]).astype(
        float, copy=False
    )
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return None  # NaN or infinite somewhere
    if bounds is not None and (lo < bounds[0] or hi > bounds[1]):
        return None
    return values


def read_table(path: Path, format: str) -> pd.DataFrame:
    """Read a score file into a DataFrame, choosing the reader by ``format`` or the extension.

    ``format="auto"`` maps the last suffix (after dropping a compression suffix such as ``.gz``,
    ``.bz2``, ``.xz``, ``.zst`` or ``.zip``) to csv, tsv, parquet or jsonl. Text tables are read as
    text (every cell a string, the delimiter detected from the first lines: see
    :func:`read_table_text`); JSON Lines values keep their JSON types; parquet keeps its column
    types. A file that cannot be read is a ValueError naming it.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    format : {"auto", "csv", "tsv", "parquet", "jsonl"}
        File format.

    Returns
    -------
    pandas.DataFrame
        The table as written (no validation: see :func:`read_scores`).

    References
    ----------
    Shafranovich, Y. (2005). Common Format and MIME Type for Comma-Separated Values (CSV) Files.
    RFC 4180.
    JSON Lines format (https://jsonlines.org/).
    Apache Parquet file format specification (https://parquet.apache.org/docs/file-format/).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     csv = Path(folder) / "scores.csv"
    ...     _ = csv.write_text(chr(10).join(["model;item;score", "a;q1;1", "b;q1;0"]))
    ...     jsonl = Path(folder) / "scores.jsonl"
    ...     _ = jsonl.write_text('{"model": "a", "item": "q1", "score": 1}')
    ...     from_csv = read_table(csv, "auto")
    ...     from_jsonl = read_table(jsonl, "auto")
    >>> from_csv.columns.tolist(), from_csv.values.tolist()
    (['model', 'item', 'score'], [['a', 'q1', '1'], ['b', 'q1', '0']])
    >>> from_jsonl.values.tolist()
    [['a', 'q1', 1]]
    """
    return read_table_text(path, format)[0]


def read_table_text(path: Path, format: str) -> tuple[pd.DataFrame, dict | None]:
    """The raw table and, for a text file, how it was read (``{"delimiter": ...}``)."""
    format, encoding, compressed = _file_format(path, format)
    try:
        if format == "parquet":
            return pd.read_parquet(path, engine="pyarrow"), None
        if format == "jsonl":
            frame = _read_jsonl(path, encoding)
            return frame, {"lines": frame.attrs.pop("lines")}
    except UnicodeDecodeError as error:
        raise ValueError(_not_utf8(path, format)) from error
    except (OSError, ValueError, pd.errors.ParserError, csv.Error) as error:
        raise ValueError(f"could not read {str(path)!r} as {format}: {error}") from error
    delimiter, _ = _text_delimiter(path, format, encoding)
    try:
        if _is_big_text(path):
            frame = read_csv_batches(path, delimiter, encoding)
        else:
            frame = pd.read_csv(
                path,
                sep=delimiter,
                dtype=str,
                keep_default_na=False,
                na_values=[""],
                encoding=encoding,
                low_memory=False,
            )
        notes: dict = {"delimiter": delimiter}
        if encoding != "utf-8-sig":
            notes["encoding"] = encoding
        notes["lines"] = _CsvLines(path, delimiter, encoding)
        return frame, notes
    except UnicodeDecodeError as error:
        raise ValueError(_not_utf8(path, format)) from error
    except (OSError, ValueError, pd.errors.ParserError, csv.Error) as error:
        raise ValueError(f"could not read {str(path)!r} as {format}: {error}") from error


def _file_format(path: Path, format: str) -> tuple[str, str, bool]:
    """(format, encoding, compressed) of a scores file: ``format="auto"`` by its extension, the
    file's first bytes checked against it (:func:`_check_magic`), the encoding by its byte-order
    mark. A missing file, a directory or an unknown extension is an error saying so."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    if path.is_dir():
        raise ValueError(f"{str(path)!r} is a directory, not a scores file")
    compressed = path.suffix.lower() in _COMPRESSIONS
    head = b"" if compressed else _head(path)
    if format == "auto":
        suffixes = [s.lower() for s in path.suffixes]
        if suffixes and suffixes[-1] in _COMPRESSIONS:
            suffixes = suffixes[:-1]
        format = _EXTENSIONS.get(suffixes[-1] if suffixes else "", "")
        if not format:
            raise ValueError(_unknown_format(path, head))
    if not compressed:
        _check_magic(path, head, format)
    return format, _bom_encoding(head), compressed


def _text_delimiter(path: Path, format: str, encoding: str) -> tuple[str, list[str]]:
    """The delimiter of a text table (from its first lines) and its header line(s); a header
    naming one column twice is an error (:func:`_refuse_duplicate_header`)."""
    try:
        with _open_text(path, encoding) as handle:
            sample = [line for _, line in zip(range(_SAMPLE_LINES), handle)]
        delimiter = _delimiter(sample, "\t" if format == "tsv" else ",")
    except UnicodeDecodeError as error:
        raise ValueError(_not_utf8(path, format)) from error
    except (OSError, ValueError, csv.Error) as error:
        raise ValueError(f"could not read {str(path)!r} as {format}: {error}") from error
    _refuse_duplicate_header(path, sample[:1], delimiter)
    return delimiter, sample[:1]


#: Text tables at least this large (uncompressed) are read by pyarrow's streaming CSV reader
#: with a progress bar on stderr instead of ``pandas.read_csv``: straight into codes by
#: :func:`read_csv_codes`, or, when it declines, as strings by :func:`read_csv_batches`.
BIG_CSV_BYTES = 64 << 20
#: the bytes pyarrow reads per batch (:func:`read_csv_batches`, :func:`read_csv_codes`)
_BLOCK_BYTES = 16 << 20


def _is_big_text(path: Path) -> bool:
    """Whether a file is read in batches (at least :data:`BIG_CSV_BYTES`, not compressed)."""
    return (
        path.suffix.lower() not in _COMPRESSIONS
        and path.is_file()
        and os.path.getsize(path) >= BIG_CSV_BYTES
    )


def read_csv_batches(
    path: str | os.PathLike, delimiter: str = ",", encoding: str = "utf-8"
) -> pd.DataFrame:
    """A delimited text table read in batches by ``pyarrow.csv.open_csv``, every column as
    written (strings; an empty field is missing), with a progress bar on stderr by bytes read
    (``RANKCI_PROGRESS=1`` forces it, ``0`` hides it).

    The same frame as ``pandas.read_csv(path, sep=delimiter, dtype=str,
    keep_default_na=False, na_values=[""])``: identifiers stay exactly as written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = p.write_text("model,item,score\\nA,007,1\\nB,007,\\n")
    >>> read_csv_batches(p).values.tolist()
    [['A', '007', '1'], ['B', '007', nan]]
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from rankci._progress import Progress

    path = os.fspath(path)
    with _open_text(Path(path), encoding) as handle:  # decoded: a UTF-16 line ends in 2 bytes
        header = next(csv.reader([handle.readline()], delimiter=delimiter))
    header = [name.lstrip("\ufeff") for name in header]
    convert = pacsv.ConvertOptions(
        column_types={name: pa.string() for name in header},
        strings_can_be_null=True,
        null_values=[""],
        quoted_strings_can_be_null=True,
    )
    read = pacsv.ReadOptions(
        encoding="utf8" if encoding in ("utf-8", "utf-8-sig") else encoding,
        block_size=_BLOCK_BYTES,
    )
    parse = pacsv.ParseOptions(delimiter=delimiter)
    batches = []
    size = os.path.getsize(path)
    with Progress(size, f"reading {os.path.basename(path)}") as bar:
        with pacsv.open_csv(
            path, read_options=read, parse_options=parse, convert_options=convert
        ) as reader:
            for batch in reader:
                batches.append(batch)
                bar.update(_BLOCK_BYTES)  # about one block of the file per batch
        bar.update(size - bar.done)
    table = pa.Table.from_batches(batches, schema=reader.schema)
    frame = table.to_pandas()
    return frame.astype(object).where(frame.notna(), np.nan)


def read_csv_codes(
    path: str | os.PathLike, format: str, layout: str, bounds, given: dict
) -> Scores | None:
    """A long CSV/TSV table read by pyarrow in batches straight into integer codes.

    The path of :func:`read_scores` for a large text board (at least :data:`BIG_CSV_BYTES`,
    uncompressed UTF-8, long form with model, item and score columns, and optionally cluster
    and prompt columns; no trial column): ``pyarrow.csv.open_csv`` reads only those columns,
    each id column dictionary-encoded batch by batch (integer codes and each batch's distinct
    labels: no Python string per row, ids exactly as written) and the score as float64, with a
    progress bar on stderr by bytes read (:class:`rankci._progress.Progress`;
    ``RANKCI_PROGRESS=0`` hides it). The batches' dictionaries are then unified, the few
    distinct labels sorted and the codes remapped, and every check of
    :meth:`Scores.from_frame` made in one vectorised pass. The result is the Scores of the
    general path (:func:`read_csv_batches`, then :meth:`Scores.from_frame`) field for field,
    notes and warnings included. Anything else (another layout, format or encoding, a missing,
    blank, non-numeric, non-finite or out-of-range value, a score of ``-0``, a duplicated row,
    one model, an item in two clusters, a row with the wrong number of fields) returns None
    and the caller takes the general path, which words the error.

    Parameters
    ----------
    path : path-like
        The text file.
    format, layout, bounds
        As in :func:`read_scores`.
    given : dict
        The column names and trial options given to :func:`read_scores` (``model``, ``item``,
        ``score``, ``cluster``, ``prompt``, ``trial``, ``per_item``).

    Returns
    -------
    Scores or None

    References
    ----------
    Shafranovich, Y. (2005). Common Format and MIME Type for Comma-Separated Values (CSV) Files.
    RFC 4180.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = p.write_text("model,item,score\\nb,007,1\\na,007,0.5\\nb,7,0\\na,7,1\\n")
    >>> s = read_csv_codes(p, "auto", "auto", (0.0, 1.0), {})
    >>> s.models, s.items, s.model_code.tolist(), s.score.tolist()
    (('a', 'b'), ('007', '7'), [1, 0, 1, 0], [1.0, 0.5, 0.0, 1.0])
    """
    path = Path(path)
    if layout not in ("auto", "long") or given.get("per_item", "mean") != "mean":
        return None
    try:
        format, encoding, compressed = _file_format(path, format)
        if compressed or format not in ("csv", "tsv") or encoding != "utf-8-sig":
            return None
        delimiter, header = _text_delimiter(path, format, encoding)
    except (OSError, ValueError):
        return None  # the general path says why
    names = next(csv.reader(header, delimiter=delimiter), [])
    if not names or any(not name.strip() for name in names):
        return None  # no header, or an unnamed column (pandas names it "Unnamed: k")
    columns = _long_columns(names, layout, given)
    if columns is None:
        return None
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from rankci._progress import Progress

    ids = [columns[role] for role in ("model", "item", "cluster", "prompt") if columns[role]]
    convert = pacsv.ConvertOptions(
        include_columns=[*ids, columns["score"]],
        column_types={**{name: pa.string() for name in ids}, columns["score"]: pa.float64()},
        strings_can_be_null=True,
        null_values=[""],
        quoted_strings_can_be_null=True,
    )
    read = pacsv.ReadOptions(encoding="utf8", block_size=_BLOCK_BYTES)
    parse = pacsv.ParseOptions(delimiter=delimiter)
    size = os.path.getsize(path)
    try:
        with pa.OSFile(os.fspath(path)) as source, Progress(size, f"reading {path.name}") as bar:
            with pacsv.open_csv(
                source, read_options=read, parse_options=parse, convert_options=convert
            ) as reader:
                batches = _encoded_batches(reader, len(ids), bar, source)
            bar.update(size - bar.done)
        table = pa.Table.from_batches(batches).unify_dictionaries()
        del batches
    except (OSError, ValueError, pa.ArrowException):
        return None  # a row the reader refuses, a value that is not a number: the general path
    if table.num_rows == 0:
        return None
    arrays = {name: table.column(name) for name in table.column_names}
    del table  # each column's memory goes when _coded_scores has its codes
    pa.default_memory_pool().release_unused()  # the batches' strings, kept by Arrow's allocator
    notes = {"layout": "long", "columns": columns, "delimiter": delimiter}
    return _coded_scores(arrays, columns, bounds, notes, signed_zero=False)


def _encoded_batches(reader, n_ids: int, bar, source) -> list:
    """The batches of a CSV reader with their first ``n_ids`` columns (text) dictionary-encoded:
    each batch's strings are hashed into int32 codes and that batch's distinct labels, in a pool
    of threads (pyarrow releases the GIL) while the reader parses the next blocks; at most a few
    batches of strings are held at once. The bar advances by the bytes read from ``source``."""
    import collections
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.compute as pc

    def encode(batch):
        arrays = [pc.dictionary_encode(batch.column(k)) for k in range(n_ids)]
        arrays += [batch.column(k) for k in range(n_ids, batch.num_columns)]
        return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    workers = max(1, min(4, os.cpu_count() or 1))
    done, pending = [], collections.deque()
    with ThreadPoolExecutor(workers) as pool:
        try:
            for batch in reader:
                pending.append(pool.submit(encode, batch))
                while len(pending) > 2 * workers:  # bounded: the strings of a few batches
                    done.append(pending.popleft().result())
                bar.update(source.tell() - bar.done)  # the bytes read so far
            done.extend(future.result() for future in pending)
        finally:
            for future in pending:
                future.cancel()
    return done


#: what a file's first bytes say it is: (magic, what it is, the fix for a text table)
_MAGIC = (
    (
        b"\x1f\x8b",
        "gzip-compressed",
        "name it with .gz at the end (scores.csv.gz) or decompress it",
    ),
    (b"\xfd7zXZ\x00", "xz-compressed", "name it with .xz at the end or decompress it"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "name it with .zst at the end or decompress it"),
    (b"PAR1", "a Parquet file", "pass format='parquet' (or name it .parquet)"),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an old-style Excel (.xls) workbook",
        "save the sheet as CSV UTF-8 (Excel: File > Save As > CSV UTF-8) and read that",
    ),
)
_SPREADSHEET_FIX = "save the sheet as CSV UTF-8 (Excel: File > Save As > CSV UTF-8) and read that"
_SPREADSHEETS = {
    ".xlsx": "an Excel workbook",
    ".xlsm": "an Excel workbook",
    ".xls": "an Excel workbook",
    ".ods": "an OpenDocument spreadsheet",
}


def _head(path: Path, size: int = 16) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)


def _looks_like(path: Path, head: bytes) -> tuple[str, str] | None:
    """(what the file is, the fix) from its first bytes; None for anything else."""
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            return what, fix
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        return "bzip2-compressed", "name it with .bz2 at the end or decompress it"
    if head.startswith(b"PK\x03\x04"):
        import zipfile

        try:
            names = zipfile.ZipFile(path).namelist()
        except (zipfile.BadZipFile, OSError):
            names = []
        if any(name.startswith("xl/") for name in names):
            return "an Excel workbook (.xlsx)", _SPREADSHEET_FIX
        if "content.xml" in names:
            return "an OpenDocument spreadsheet (.ods)", _SPREADSHEET_FIX
        return "a zip archive", "name it with .zip at the end (one table inside) or unzip it"
    return None


def _check_magic(path: Path, head: bytes, format: str) -> None:
    """Refuse a file whose first bytes say it is not ``format``, naming what it is and the fix."""
    seen = _looks_like(path, head)
    if format == "parquet":
        if head.startswith(b"PAR1") or not head:
            return
        what = seen[0] if seen else "text, not Parquet (Parquet files start with the bytes PAR1)"
        fix = "pass format='csv' or format='jsonl' if it is a text table" if not seen else seen[1]
        raise ValueError(f"{str(path)!r} is {what}; {fix}")
    if seen is not None:
        what, fix = seen
        raise ValueError(f"{str(path)!r} is {what}, not a {format} text table; {fix}")
    if format == "jsonl":
        text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
        if text.startswith(b"["):
            raise ValueError(
                f"{str(path)!r} holds a JSON array; JSON Lines (jsonl) expects one JSON object per "
                'line, one line per score ({"model": ..., "item": ..., "score": ...}): '
                "convert it with jq -c '.[]' FILE > FILE.jsonl"
            )


def _unknown_format(path: Path, head: bytes) -> str:
    """The error for a file whose extension names no format: what it looks like, and the fix."""
    name = repr(path.name)
    suffix = path.suffix.lower()
    if suffix in _SPREADSHEETS:
        return f"{name} is {_SPREADSHEETS[suffix]}, which rankci does not read; {_SPREADSHEET_FIX}"
    seen = _looks_like(path, head)
    if seen is not None:
        return f"{name} is {seen[0]}; {seen[1]}"
    if suffix == ".json":
        if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
            return (
                f"{name} holds a JSON array; rankci reads JSON Lines (one JSON object per line): "
                "convert it with jq -c '.[]' FILE > FILE.jsonl"
            )
        return f"{name} is JSON; if it holds one JSON object per line, pass format='jsonl'"
    return (
        f"cannot tell the format of {name} from its extension; pass format= one of "
        "'csv', 'tsv', 'parquet', 'jsonl'"
    )


def _bom_encoding(head: bytes) -> str:
    """UTF-32 or UTF-16 when the file starts with its byte-order mark, else UTF-8 (BOM or not)."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return "utf-8-sig"


def _not_utf8(path: Path, format: str) -> str:
    """The error for a text file that is not UTF-8: the first bad byte, its line, a likely
    encoding and the fix."""
    with _open_binary(path) as handle:
        raw = handle.read()
    try:
        raw.decode("utf-8")
        start = None
    except UnicodeDecodeError as error:
        start = error.start
    where = ""
    if start is not None:
        line = raw.count(b"\n", 0, start) + 1
        where = f" (byte 0x{raw[start]:02x} on line {line})"
    if b"\x00" in raw[:4096]:
        guess = "UTF-16 without a byte-order mark"
        source = "UTF-16"
    elif any(0x80 <= b <= 0x9F for b in raw):
        guess, source = "Windows-1252 (cp1252) text", "CP1252"
    else:
        guess, source = "Latin-1 (ISO-8859-1) or Windows-1252 text", "LATIN1"
    return (
        f"{str(path)!r} is not UTF-8{where}; it looks like {guess}. rankci reads {format} files "
        f"as UTF-8: re-save it as UTF-8 (Excel: Save As > CSV UTF-8; or iconv -f {source} -t "
        f"UTF-8 {path.name} > utf8-{path.name})"
    )


class _CsvLines:
    """The 1-based file line of each data row of a text table, found only when a message asks
    (a scan with the csv module, as pandas reads the rows: the header first, blank lines
    skipped, a quoted field may span lines)."""

    def __init__(self, path: Path, delimiter: str, encoding: str) -> None:
        self.path, self.delimiter, self.encoding = path, delimiter, encoding
        self.starts: list[int] | None = None

    def __getitem__(self, row: int) -> int:
        if self.starts is None:
            starts, previous, header = [], 0, True
            with _open_text(self.path, self.encoding) as handle:
                reader = csv.reader(handle, delimiter=self.delimiter)
                for record in reader:
                    start, previous = previous + 1, reader.line_num
                    if not record or (len(record) == 1 and not record[0].strip()):
                        continue
                    if header:
                        header = False
                        continue
                    starts.append(start)
            self.starts = starts
        return self.starts[row]


class _Rows:
    """File lines of a table's rows after a reshape: ``lines[rows[r]]``."""

    def __init__(self, lines, rows: np.ndarray) -> None:
        self.lines, self.rows = lines, rows

    def __getitem__(self, row: int) -> int:
        return self.lines[int(self.rows[row])]


def _open_binary(path: Path):
    """The file's bytes, decompressed by its last suffix."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")
    if suffix == ".bz2":
        import bz2

        return bz2.open(path, "rb")
    if suffix == ".xz":
        import lzma

        return lzma.open(path, "rb")
    if suffix == ".zst":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    if suffix == ".zip":
        import zipfile

        archive = zipfile.ZipFile(path)
        names = [n for n in archive.namelist() if not n.endswith("/")]
        if len(names) != 1:
            raise ValueError(f"the zip file holds {len(names)} files; expected one table")
        return archive.open(names[0])
    return open(path, "rb")


def _open_text(path: Path, encoding: str = "utf-8-sig"):
    """The file as text, decompressed by its last suffix."""
    return io.TextIOWrapper(_open_binary(path), encoding=encoding, newline="")


def _refuse_duplicate_header(path: Path, header: list[str], delimiter: str) -> None:
    """A header naming one column twice is an error naming the column and both positions
    (pandas would silently rename the second ``score.1``)."""
    if not header:
        return
    names = next(csv.reader(header, delimiter=delimiter), [])
    _refuse_duplicate_columns([name.strip() for name in names], f"the header of {str(path)!r}")


def _refuse_duplicate_columns(names: list, where: str) -> None:
    """Raise ValueError when two columns share a name: the name and both 1-based positions."""
    seen: dict[str, int] = {}
    for position, name in enumerate(map(str, names), start=1):
        if name in seen:
            raise ValueError(
                f"column {name!r} appears twice in {where} (columns {seen[name]} and {position}); "
                "rename one of them so that every column has its own name"
            )
        seen[name] = position


def _delimiter(lines: list[str], preferred: str) -> str:
    """Comma, tab or semicolon: the one that splits every sampled line into the same number (> 1)
    of fields; among several, csv.Sniffer's choice, else ``preferred``, else the most fields."""
    lines = [line for line in lines if line.strip()]
    if not lines:
        return preferred
    if len(lines) == _SAMPLE_LINES:
        lines = lines[:-1]  # the last sampled line may be cut inside a quoted field
    consistent: dict[str, int] = {}
    for delimiter in _DELIMITERS:
        widths = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        if widths and widths[0] > 1 and all(w == widths[0] for w in widths):
            consistent[delimiter] = widths[0]
    if len(consistent) == 1:
        return next(iter(consistent))
    try:
        sniffed = csv.Sniffer().sniff("".join(lines), delimiters="".join(_DELIMITERS)).delimiter
    except csv.Error:
        sniffed = None
    if sniffed in consistent or (not consistent and sniffed):
        return sniffed
    if not consistent or preferred in consistent:
        return preferred
    return max(consistent, key=consistent.get)


def _read_jsonl(path: Path, encoding: str = "utf-8-sig") -> pd.DataFrame:
    """One JSON object per line; every value keeps its JSON type (no dtype inference). A key
    written twice in one object is an error (``json.loads`` would keep the last silently)."""
    records, lines = [], []
    with _open_text(path, encoding) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=_unique_keys(number))
            except json.JSONDecodeError as error:
                raise ValueError(f"line {number} is not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                kind = "a JSON array" if isinstance(record, list) else "not a JSON object"
                raise ValueError(
                    f"line {number} is {kind}; JSON Lines expects one JSON object per line "
                    '({"model": ..., "item": ..., "score": ...})'
                )
            records.append(record)
            lines.append(number)
    frame = pd.DataFrame(records, dtype=object)
    frame.attrs["lines"] = np.asarray(lines, dtype=np.int64)
    return frame


def _unique_keys(number: int):
    def pairs(items: list) -> dict:
        keys = [key for key, _ in items]
        if len(set(keys)) < len(keys):
            _refuse_duplicate_columns(keys, f"the JSON object on line {number}")
        return dict(items)

    return pairs


def _text_numbers(column: pd.Series, decimal_comma: bool) -> pd.Series:
    """A text column's numbers: floats where a cell parses (``true``/``false`` as 1/0, decimal
    commas when allowed), NaN for empty or NA cells, the original text elsewhere (so that the
    error can name it)."""
    numbers = pd.to_numeric(column, errors="coerce")
    left = numbers.isna().to_numpy() & column.notna().to_numpy()
    if not left.any():
        return numbers
    raw = column[left].astype(str).str.strip()
    low = raw.str.lower()
    fixed = column[left].astype(object).copy()
    empty = low.isin(_NA_TEXT).to_numpy()
    fixed[empty] = np.nan
    truth = low.isin(("true", "false")).to_numpy()
    fixed[truth] = (low[truth] == "true").astype(float).to_numpy()
    if decimal_comma:
        comma = raw.str.fullmatch(_DECIMAL_COMMA.pattern).to_numpy(dtype=bool)
        fixed[comma] = pd.to_numeric(raw[comma].str.replace(",", ".", regex=False)).to_numpy()
    out = numbers.astype(object)
    out[left] = fixed.to_numpy()
    return out


def _numeric_like(column: pd.Series, text: bool, decimal_comma: bool) -> bool:
    """True when every non-empty cell of the column is a number (or a boolean)."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return True
    values = _text_numbers(column, decimal_comma) if text else column
    coerced = pd.to_numeric(values, errors="coerce")
    if not text:
        flags = values.map(lambda v: isinstance(v, (bool, np.bool_)))
        coerced = coerced.where(~flags.to_numpy(), 0.0)
    return not bool((coerced.isna() & pd.Series(values).notna()).any())


def _layout(frame: pd.DataFrame, given: dict, decimal_comma: bool | None) -> str:
    """``auto``: long when a model and a score column are found (or one is named), wide when
    unambiguous; otherwise an error listing the columns and the options that name them."""
    if given.get("model") or given.get("score"):
        return "long"
    found = {role: _alias(frame, role, exclude=()) for role in ("model", "item", "score")}
    if found["model"] and found["score"]:
        return "long"
    votes = vote_layout(frame.columns)
    if votes is not None:
        raise VoteTableError(vote_table_message(votes), votes)
    text = decimal_comma is not None
    ids = _resolve(frame, given, ("item", "cluster", "prompt", "trial"))
    others = [c for c in frame.columns if c not in ids.values()]
    not_numeric = [c for c in others if not _numeric_like(frame[c], text, bool(decimal_comma))]
    if ids["item"] is not None and others and not not_numeric:
        return "wide"
    available = ", ".join(repr(c) for c in frame.columns)
    seen = "; ".join(
        f"{role}: {found[role]!r}" if found[role] else f"{role}: none"
        for role in ("model", "item", "score")
    )
    why = (
        f"no item column (looked for {', '.join(ALIASES['item'])})"
        if ids["item"] is None
        else f"column {not_numeric[0]!r} is not numeric"
        if not_numeric
        else "no model columns"
    )
    raise ValueError(
        f"cannot tell how to read the table; its columns are: {available}. As a long table (one "
        f"row per model and item) it needs a model, an item and a score column ({seen}): name "
        f"them with model=, item=, score=. It is not read as wide (one column per model) because "
        f"it has {why}; pass layout='wide' if it is wide"
    )


def vote_table_message(layout: str) -> str:
    """What the score readers say of a vote table: which layout it is and who reads it.

    >>> vote_table_message("mt-bench")[:60]
    "the table is a vote table (layout 'mt-bench': fields 'model_"
    """
    fields = ", ".join(repr(f) for f in VOTE_FIELDS[layout])
    return (
        f"the table is a vote table (layout {layout!r}: fields {fields}), not per-item scores; "
        "vote tables are read by rankci.votes.read_votes"
    )


def _alias(frame: pd.DataFrame, role: str, exclude: tuple[str, ...]) -> str | None:
    """The first column (case-insensitive) among the role's aliases; None if there is none."""
    lowered = {c.lower(): c for c in frame.columns if c not in exclude}
    for name in ALIASES[role]:
        if name in lowered:
            return lowered[name]
    return None


def _resolve(frame: pd.DataFrame, given: dict, roles: tuple[str, ...]) -> dict:
    """Column name for each role: as given, else by alias; '' means "none"."""
    chosen: dict[str, str | None] = {}
    taken: list[str] = []
    for role in roles:
        name = given.get(role)
        if name == "":
            chosen[role] = None
            continue
        if name is None:
            name = _alias(frame, role, exclude=tuple(taken))
        elif name not in frame.columns:
            available = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(
                f"the {role} column {name!r} is not in the table; columns are: {available}"
            )
        chosen[role] = name
        if name is not None:
            taken.append(name)
    return chosen


def _read_long(
    frame: pd.DataFrame,
    given: dict,
    bounds,
    text: bool,
    decimal_comma: bool,
    notes: dict,
    lines=None,
) -> Scores:
    columns = _resolve(frame, given, ("model", "item", "score", "cluster", "prompt", "trial"))
    trial = columns.pop("trial")
    if trial is not None:
        columns["trial"] = trial
    _trials_need_column(trial, given)
    for role in ("model", "item", "score"):
        if columns[role] is None:
            available = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(
                f"no {role} column found (looked for {', '.join(ALIASES[role])}); name it with "
                f"{role}=... ; columns are: {available}"
            )
    if text:
        frame[columns["score"]] = _text_numbers(frame[columns["score"]], decimal_comma)
    return Scores.from_frame(
        frame,
        model=columns["model"],
        item=columns["item"],
        score=columns["score"],
        cluster=columns["cluster"],
        prompt=columns["prompt"],
        bounds=bounds,
        notes={"layout": "long", "columns": columns, **notes},
        lines=lines,
        trial=trial,
        per_item=given.get("per_item", "mean"),
        trial_gaps=given.get("trial_gaps", "refuse"),
    )


def _trials_need_column(trial: str | None, given: dict) -> None:
    """pass@K / pass^K without a trial column is an error naming the argument."""
    rule = given.get("per_item", "mean")
    if trial is None and rule != "mean":
        from rankci.trials import parse_per_item

        parse_per_item(rule)
        raise ValueError(
            f"per_item={rule!r} needs repeated trials, but the table has no trial column "
            f"(looked for {', '.join(ALIASES['trial'])}); name it with trial=..."
        )


def _read_wide(
    frame: pd.DataFrame,
    given: dict,
    bounds,
    text: bool,
    decimal_comma: bool,
    notes: dict,
    lines=None,
) -> Scores:

    if given.get("model") or given.get("score"):
        raise ValueError(
            "model= and score= name columns of the long form; in wide form every other column "
            "is a model (pass layout='long' if the table is long)"
        )
    columns = _resolve(frame, given, ("item", "cluster", "prompt", "trial"))
    trial = columns.pop("trial")
    if trial is not None:
        columns["trial"] = trial
    _trials_need_column(trial, given)
    id_columns = [c for c in columns.values() if c is not None]
    model_columns = [c for c in frame.columns if c not in id_columns]
    if not model_columns:
        raise ValueError("wide form needs one column per model, but no model columns were found")
    check_spellings(model_columns, "model", "the wide-form column headers (one per model)")
    for name in model_columns:
        column = _text_numbers(frame[name], decimal_comma) if text else frame[name]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)):
            coerced = pd.to_numeric(column, errors="coerce")
            bad = coerced.isna() & column.notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise ValueError(
                    f"column {name!r} is not numeric at {row_place(lines)(row)}: "
                    f"{column.iloc[row]!r}; in wide "
                    "form every column other than the item, cluster and prompt columns is a model "
                    "(name them with item=, cluster=, prompt=)"
                )
            column = coerced
        if column.isna().all():
            raise ValueError(f"model {name!r} has no scores (its column is empty)")
        frame[name] = column
    if columns["item"] is None:
        frame = frame.assign(item=[f"row{k}" for k in range(len(frame))])
        columns["item"] = "item"
    frame["__row__"] = np.arange(len(frame))  # each melted row's row of the wide table
    long = frame.melt(
        id_vars=[c for c in columns.values() if c is not None] + ["__row__"],
        value_vars=model_columns,
        var_name="__model__",
        value_name="__score__",
    )
    empty = long["__score__"].isna().to_numpy()
    long = long[~empty]
    return Scores.from_frame(
        long,
        model="__model__",
        item=columns["item"],
        score="__score__",
        cluster=columns["cluster"],
        prompt=columns["prompt"],
        bounds=bounds,
        notes={"layout": "wide", "columns": columns, "empty_cells": int(empty.sum()), **notes},
        lines=None if lines is None else _Rows(lines, long["__row__"].to_numpy()),
        trial=trial,
        per_item=given.get("per_item", "mean"),
        trial_gaps=given.get("trial_gaps", "refuse"),
    )


def as_scores(data: Scores | pd.DataFrame | str | os.PathLike) -> Scores:
    """Scores as they are, or read from a DataFrame or a file by :func:`read_scores`.

    Every analysis that takes "Scores, a DataFrame or a path" calls this, so the three kinds of
    input are read by one rule.

    Parameters
    ----------
    data : Scores, DataFrame, str or path-like
        Returned unchanged when already :class:`~rankci.Scores`; otherwise read by
        :func:`read_scores` with its defaults.

    Returns
    -------
    Scores

    References
    ----------
    Wickham, H. (2014). Tidy data. Journal of Statistical Software 59(10), 1-23.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": ["1", "2", "1", "2"],
    ...                       "score": [1.0, 0.0, 1.0, 1.0]})
    >>> as_scores(frame).models
    ('a', 'b')
    """
    if isinstance(data, Scores):
        return data
    if is_dataframe(data) or isinstance(data, (str, os.PathLike)):
        return read_scores(data)
    raise ValueError(f"expected Scores, a DataFrame or a file path, got {type(data).__name__}")
