"""Reading pairwise votes: battle tables and the judgment files of the arenas people run.

:func:`read_votes` reads a file (CSV, TSV, Parquet, JSONL, JSON) or a DataFrame in one of the
layouts of :mod:`rankci.formats` into a validated :class:`~rankci.votes.Votes`. The rules
(docs/votes.md states them for users):

* **Names stay as written.** Model names are text exactly as in the file (``str()`` of a
  non-string JSON value); names that differ only by surrounding whitespace are an error naming
  both, names that differ only by case warn.
* **Winner spellings** (``battles``, ``lmarena``): ``model_a``, ``model_b``, ``tie`` and
  ``tie (bothbad)``, read case-insensitively after trimming spaces, with ``tie(bothbad)``,
  ``tie_bothbad`` and ``both_bad`` also read as ``tie (bothbad)``; or the exact name of the
  vote's ``model_a`` or ``model_b``. The keywords win over a model that is named ``tie``.
* **Unknown winners are refused** with the file, row, column and value (``unknown_winner=
  "error"``, the default). ``unknown_winner="exclude"`` leaves them out instead, counts them in
  ``excluded["unknown_winner"]``, keeps up to three examples in ``source`` and warns.
* **Every vote left out is counted** in ``Votes.excluded``, in this order: ``no_verdict`` (an
  empty winner, MT-Bench's ``error``, an unparsed Arena-Hard score, a missing AlpacaEval
  preference), ``missing_values`` (an empty model name, an empty named covariate),
  ``self_battles`` (a model playing itself), ``unknown_winner``, ``below_min_votes`` (the votes of
  models with fewer than ``min_votes`` votes, removed until every model left has enough).
  Counts are of votes as the layout's rule makes them (an Arena-Hard strong verdict is
  ``strong_votes`` votes; a game without a verdict is one).
* **No vote left** is an error saying what removed them; one vote, or votes that are all ties,
  warn (nothing can be ranked from them; the fit refuses them).
* **Layout rules.** Arena-Hard: each game is its own vote, ``model_a`` the baseline and
  ``model_b`` the judged model in both games (Arena-Hard's own convention), the ``position``
  column saying who was shown first (1: ``model_a``, 2: ``model_b``), and a strong verdict
  (``A>>B``, ``B>>A``) counted as ``strong_votes`` = 3 votes, as Arena-Hard's ``show_result.py``
  counts it. MT-Bench: one vote per judgment, as FastChat's ``show_result.py`` counts it: a win
  when both games name the same winner, a tie when either game says tie or the games disagree,
  no vote when either game is ``error`` (``games="two"``: each game its own vote, with its
  position). AlpacaEval: the preference rounded as AlpacaEval's
  discrete win rate rounds it (1.5 and the legacy 0 are ties, below 1.5 ``generator_1`` wins,
  above it ``generator_2``), the preference itself kept as ``columns["preference_b"]`` = p - 1,
  the probability that ``generator_2`` is better. LMArena: ``conv_metadata`` becomes the numeric
  style columns ``style_tokens_a/b``, ``style_headers_a/b``, ``style_lists_a/b``,
  ``style_bold_a/b``.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from rankci._base import LazyModule, RankciWarning, check_choice
from rankci.data import check_spellings, row_place
from rankci.formats import (
    MT_BENCH_GAMES,
    UNKNOWN_WINNER_RULES,
    VOTE_FIELDS,
    VOTE_FORMATS,
    VOTE_LAYOUTS,
    layouts_tried,
    vote_layout,
)
from rankci.io import read_table, read_table_text
from rankci.votes.table import A_WINS, B_WINS, OPTIONAL_COLUMNS, OUTCOMES, TIE, TIE_BOTHBAD, Votes

pd = LazyModule("pandas")  # imported when a table is read: importing rankci.votes stays cheap

__all__ = [
    "read_votes",
    "read_vote_frame",
    "reading_summary",
    "vote_tally",
    "VOTE_FORMATS",
    "WINNER_WORDS",
    "EXCLUSIONS",
]

#: the accepted winner keywords (after trimming and case folding) and their outcome codes
WINNER_WORDS = {
    "model_a": A_WINS,
    "model_b": B_WINS,
    "tie": TIE,
    "tie (bothbad)": TIE_BOTHBAD,
    "tie(bothbad)": TIE_BOTHBAD,
    "tie_bothbad": TIE_BOTHBAD,
    "both_bad": TIE_BOTHBAD,
}
#: the keys of ``Votes.excluded``, in the order the exclusions are applied
EXCLUSIONS = ("no_verdict", "missing_values", "self_battles", "unknown_winner", "below_min_votes")
#: Arena-Hard verdicts: (winner in the game's own A/B, strong)
ARENA_HARD_VERDICTS = {
    "A>>B": ("A", True),
    "A>B": ("A", False),
    "A=B": ("tie", False),
    "B>A": ("B", False),
    "B>>A": ("B", True),
}
#: the style columns made from LMArena's conv_metadata: name -> (field, summed sub-fields)
STYLE_FIELDS = {
    "style_tokens_a": "sum_assistant_a_tokens",
    "style_tokens_b": "sum_assistant_b_tokens",
    "style_headers_a": "header_count_a",
    "style_headers_b": "header_count_b",
    "style_lists_a": "list_count_a",
    "style_lists_b": "list_count_b",
    "style_bold_a": "bold_count_a",
    "style_bold_b": "bold_count_b",
}
#: default column names of the optional roles (the first found is used), by layout family
ALIASES = {
    "prompt": ("prompt", "prompt_id", "question_id", "uid", "instruction"),
    "voter": ("voter", "voter_id", "judge", "annotator", "user_id"),
    "category": ("category", "cluster", "subject", "task", "dataset"),
    "language": ("language", "lang"),
    "turn": ("turn",),
    "timestamp": ("timestamp", "tstamp"),
    "position": ("position",),
}
_UNKNOWN, _NO_VERDICT = -1, -2
_COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst", ".zip")


def read_votes(
    source: str | os.PathLike | pd.DataFrame,
    *,
    layout: str = "auto",
    format: str = "auto",
    model_a: str | None = None,
    model_b: str | None = None,
    winner: str | None = None,
    prompt: str | None = None,
    voter: str | None = None,
    category: str | None = None,
    language: str | None = None,
    turn: str | None = None,
    timestamp: str | None = None,
    position: str | None = None,
    covariates: tuple[str, ...] | list[str] = (),
    keep: tuple[str, ...] | list[str] = (),
    baseline: str | None = None,
    strong_votes: int = 3,
    min_votes: int = 0,
    unknown_winner: str = "error",
    games: str = "one",
) -> Votes:
    """Read and validate pairwise votes.

    The rules (winner spellings, the order of the exclusions, each layout's rule for its games)
    are in the module docstring (:mod:`rankci.votes.read`) and in docs/votes.md.

    Parameters
    ----------
    source : path or DataFrame
        A ``.csv``, ``.tsv``, ``.parquet``, ``.jsonl`` or ``.json`` file (an array of objects, or
        JSON Lines), or a pandas DataFrame.
    layout : {"auto", "battles", "lmarena", "arena-hard", "mt-bench", "alpaca-eval"}
        ``auto`` recognises the layout by its fields (:mod:`rankci.formats`); naming one
        forces it (its fields must be there).
    format : {"auto", "csv", "tsv", "parquet", "jsonl", "json"}
        File format; ``auto`` uses the extension.
    model_a, model_b, winner : str, optional
        Column names of a battles table (default ``model_a``, ``model_b``, ``winner``).
    prompt, voter, category, language, turn, timestamp, position : str, optional
        Column names of the optional per-vote columns (default: the first found of
        :data:`ALIASES`; the layouts map their own fields). ``""`` ignores a column.
    covariates : sequence of str
        Numeric columns kept as ``Votes.columns[name]`` (floats), for example style features
        for a covariate fit. A vote with an empty covariate is excluded (``missing_values``).
    keep : sequence of str
        Columns kept exactly as read (objects, empty values kept) as ``Votes.columns[name]``:
        the human verdicts and inclusion probabilities of a PPI fit
        (:func:`rankci.votes.ppi.fit_ppi_bradley_terry`), empty where a battle is unlabelled.
    baseline : str, optional
        Arena-Hard: the baseline model, when the judgments do not name it in a ``baseline``
        field (v0.1 files: ``gpt-4-0314``).
    strong_votes : int, default 3
        Arena-Hard: the votes a strong verdict (``A>>B``, ``B>>A``) counts as (Arena-Hard's
        ``WEIGHT``); 1 counts it as an ordinary win.
    min_votes : int, default 0
        Models with fewer votes are left out with their votes (repeated until every model left
        has at least ``min_votes``), counted in ``excluded["below_min_votes"]``.
    unknown_winner : {"error", "exclude"}
        What an unrecognised winner does: refuse the table naming the row (default), or leave
        the vote out and count it.
    games : {"one", "two"}
        MT-Bench: one vote per judgment, as FastChat counts it (default), or each game its own
        vote with its position (1: ``model_1`` shown first, 2: ``model_2``), for a position
        effect. A game that is ``error`` is then one vote without a verdict.

    Returns
    -------
    Votes
        ``excluded`` counts every exclusion (:data:`EXCLUSIONS`, all keys present); ``source``
        records the file, layout, columns used and the layout's notes.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        For an empty file, a table that is no vote layout (naming the fields each layout lacks),
        a missing column, an unknown winner (naming file, row, column and value), a non-numeric
        covariate, or no vote left.

    References
    ----------
    Chiang, W.-L. et al. (2024). Chatbot Arena (the battle table and its winner spellings).
    Zheng, L. et al. (2023). Judging LLM-as-a-judge with MT-Bench and Chatbot Arena.
    Li, T. et al. (2024). From crowdsourced data to high-quality benchmarks: Arena-Hard.
    Dubois, Y. et al. (2024). Length-controlled AlpacaEval.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model_a": ["x", "x", "y", "z"], "model_b": ["y", "z", "z", "z"],
    ...                       "winner": ["model_a", "tie", "y", "model_b"]})
    >>> votes = read_votes(table)
    >>> votes.models, votes.outcome.tolist(), votes.excluded["self_battles"]
    (('x', 'y', 'z'), [0, 2, 0], 1)
    """
    check_choice("layout", layout, VOTE_LAYOUTS)
    check_choice("format", format, VOTE_FORMATS)
    check_choice("unknown_winner", unknown_winner, UNKNOWN_WINNER_RULES)
    check_choice("games", games, MT_BENCH_GAMES)
    if isinstance(strong_votes, bool) or not isinstance(strong_votes, (int, np.integer)):
        raise ValueError(f"strong_votes must be a positive integer, got {strong_votes!r}")
    if strong_votes < 1:
        raise ValueError(f"strong_votes must be a positive integer, got {strong_votes!r}")
    if isinstance(min_votes, bool) or not isinstance(min_votes, (int, np.integer)) or min_votes < 0:
        raise ValueError(f"min_votes must be a non-negative integer, got {min_votes!r}")
    frame, name = _load(source, format)
    frame.columns = [str(c) for c in frame.columns]
    named = {"model_a": model_a, "model_b": model_b, "winner": winner}
    if layout == "auto":
        if any(named.values()):
            layout = "lmarena" if "conv_metadata" in frame.columns else "battles"
        else:
            layout = vote_layout(frame.columns) or ""
        if not layout:
            columns = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(
                f"{name} is not a vote table in any layout rankci reads; layouts tried: "
                f"{layouts_tried(frame.columns)}. Its columns are: {columns}. Name the columns of "
                "a battles table with model_a=, model_b=, winner=, or force a layout with layout="
            )
    elif any(named.values()) and layout not in ("battles", "lmarena"):
        raise ValueError(
            f"model_a=, model_b= and winner= name the columns of a battles table; layout "
            f"{layout!r} has its own fields ({', '.join(VOTE_FIELDS[layout])})"
        )
    if games != "one" and layout != "mt-bench":
        raise ValueError(
            f"games={games!r} applies to MT-Bench judgments; {name} is read as {layout!r}"
            + (" (each Arena-Hard game is its own vote already)" if layout == "arena-hard" else "")
        )
    required = [named.get(f) or f for f in VOTE_FIELDS[layout]]
    lacking = [f for f in required if f not in frame.columns]
    if lacking:
        columns = ", ".join(repr(c) for c in frame.columns)
        what = "column" if len(lacking) == 1 else "columns"
        raise ValueError(
            f"{name} lacks the {what} {', '.join(repr(f) for f in lacking)} that layout "
            f"{layout!r} needs ({', '.join(repr(f) for f in required)}); its columns are: {columns}"
        )
    given = {
        "prompt": prompt,
        "voter": voter,
        "category": category,
        "language": language,
        "turn": turn,
        "timestamp": timestamp,
        "position": position,
    }
    reader = _LAYOUT_READERS[layout]
    raw = reader(
        frame,
        name=name,
        named=named,
        baseline=baseline,
        strong_votes=int(strong_votes),
        games=games,
    )
    roles = _resolve_roles(frame, given, raw.pop("roles"), name)
    return _finish(
        frame,
        raw,
        roles,
        covariates=tuple(covariates),
        kept=tuple(keep),
        min_votes=int(min_votes),
        unknown_winner=unknown_winner,
        name=name,
        file=None if isinstance(source, pd.DataFrame) else str(source),
        layout=layout,
    )


# ── loading ────────────────────────────────────────────────────────────────────────────────


def read_vote_frame(source: str | os.PathLike | pd.DataFrame, format: str = "auto") -> pd.DataFrame:
    """The raw table of a vote file as :func:`read_votes` loads it, before any layout is read.

    Parameters
    ----------
    source : path or DataFrame
    format : {"auto", "csv", "tsv", "parquet", "jsonl", "json"}

    Returns
    -------
    pandas.DataFrame
        JSON values keep their types (nested objects stay dicts and lists).

    Examples
    --------
    >>> import pandas as pd
    >>> read_vote_frame(pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["tie"]})).shape
    (1, 3)
    """
    check_choice("format", format, VOTE_FORMATS)
    return _load(source, format)[0]


class _Name(str):
    """A vote source's name for messages ('votes.csv', 'the DataFrame') that also names its rows
    as every rankci message does (:func:`rankci.data.row_place`): ``line L``, the 1-based line of
    the row in a text or JSON Lines file, else ``row r``, the row's position from 0."""

    def __new__(cls, text: str, lines=None):
        self = super().__new__(cls, text)
        self.at = row_place(lines)
        return self


def _load(source, format: str) -> tuple[pd.DataFrame, _Name]:
    """The raw table and its name for messages ('votes.csv', 'the DataFrame')."""
    if isinstance(source, pd.DataFrame):
        if source.empty:
            raise ValueError("the DataFrame has no rows: no votes to read")
        return source.reset_index(drop=True), _Name("the DataFrame")
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    if path.is_dir():
        raise ValueError(f"{str(path)!r} is a directory, not a vote file")
    name = repr(str(path))
    if path.stat().st_size == 0:
        raise ValueError(f"{name} is empty: no votes to read")
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        suffixes = suffixes[:-1]
    lines = None
    if format == "json" or (format == "auto" and suffixes and suffixes[-1] == ".json"):
        frame = _read_json(path, name)
    else:
        try:
            frame, text = read_table_text(path, format)
        except ValueError as error:
            if "No columns to parse" in str(error):
                raise ValueError(f"{name} is empty: no votes to read") from None
            raise
        lines = (text or {}).get("lines")
    if frame.empty:
        raise ValueError(f"{name} has no rows: no votes to read")
    return frame, _Name(name, lines)


def _read_json(path: Path, name: str) -> pd.DataFrame:
    """A JSON array of objects (AlpacaEval annotations, LMArena battles), or JSON Lines."""
    opener = open
    if path.suffix.lower() == ".gz":
        import gzip

        opener = gzip.open
    with opener(path, "rt", encoding="utf-8-sig") as handle:
        text = handle.read()
    if not text.strip():
        raise ValueError(f"{name} is empty: no votes to read")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        if error.msg != "Extra data":
            raise ValueError(
                f"{name} is not valid JSON ({error.msg}, line {error.lineno})"
            ) from None
        return read_table(path, "jsonl")  # one object per line
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ValueError(f"{name} is not a JSON array of objects (one object per vote)")
    return pd.DataFrame(data, dtype=object)


# ── the layouts: each returns the votes before validation ─────────────────────────────────


def _text_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """Cells as text, factorised: ``(codes, texts)``, code -1 for an empty cell (None, NaN,
    blank). Each distinct value is converted once (``str()`` of a non-string, a list joined
    with ``/``), so a column of millions of votes costs one hash pass."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    try:
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
    except TypeError:  # unhashable cells (MT-Bench's judge is a list): as tuples
        keys = [tuple(v) if isinstance(v, (list, np.ndarray)) else v for v in series]
        codes, uniques = pd.factorize(pd.Series(keys, dtype=object), use_na_sentinel=True)
    texts = np.empty(len(uniques), dtype=object)
    blank = np.zeros(len(uniques), dtype=bool)
    for k, v in enumerate(uniques):
        if isinstance(v, (list, tuple, np.ndarray)):
            text = "/".join(str(x) for x in v)
        else:
            text = v if isinstance(v, str) else str(v)
        texts[k] = text
        blank[k] = _is_missing(v) or text.strip() == ""
    codes = np.asarray(codes, dtype=np.int64)
    if blank.any():
        codes = np.where((codes >= 0) & blank[np.maximum(codes, 0)], -1, codes)
    return codes, texts


def _text(values) -> np.ndarray:
    """Cells as text (``str()`` of non-strings), None where empty."""
    codes, texts = _text_codes(values)
    return np.append(texts, None)[codes]  # code -1 picks the appended None


def _empty(values) -> np.ndarray:
    """Which cells are empty (None, NaN, blank text)."""
    return _text_codes(values)[0] < 0


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    if isinstance(value, float):
        return value != value
    try:
        return bool(pd.isna(value)) if np.ndim(value) == 0 else False
    except (TypeError, ValueError):
        return False


def _read_battles(frame: pd.DataFrame, *, name: str, named: dict, **_) -> dict:
    col_a, col_b, col_w = (named[k] or k for k in ("model_a", "model_b", "winner"))
    a, b = _text(frame[col_a]), _text(frame[col_b])
    codes, texts = _text_codes(frame[col_w])
    raw_winner = np.append(texts, None)[codes]
    keyword = np.array(
        [WINNER_WORDS.get(t.strip().lower(), _UNKNOWN) for t in texts] + [_NO_VERDICT],
        dtype=np.int64,
    )
    outcome = keyword[codes]  # each distinct spelling looked up once
    named = outcome == _UNKNOWN
    if named.any():  # a winner given by name: the vote's model_a or model_b
        outcome[named & (raw_winner == a)] = A_WINS
        outcome[named & (raw_winner == b) & (outcome == _UNKNOWN)] = B_WINS
    rows = np.arange(len(frame))
    extra: dict = {}
    notes: dict = {}
    if "conv_metadata" in frame.columns:
        extra, missing = _style_columns(frame["conv_metadata"].tolist())
        notes["style_missing"] = missing
    return {
        "a": a,
        "b": b,
        "outcome": outcome,
        "raw": raw_winner,
        "rows": rows,
        "raw_column": col_w,
        "extra": extra,
        "notes": notes,
        "roles": {},
        "columns": {"model_a": col_a, "model_b": col_b, "winner": col_w},
    }


def _meta_number(value) -> float:
    """A conv_metadata count: a number, or the sum of a dict of counts (headers h1..h6)."""
    if isinstance(value, dict):
        numbers = [float(v) for v in value.values() if v is not None]
        return float(sum(numbers)) if numbers else float("nan")
    if value is None or isinstance(value, (str, bool)):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _style_columns(metadata: list) -> tuple[dict, int]:
    """LMArena's conv_metadata as numeric style columns, and how many votes lack it."""
    columns = {}
    for column, field in STYLE_FIELDS.items():
        columns[column] = np.array(
            [_meta_number(m.get(field)) if isinstance(m, dict) else np.nan for m in metadata],
            dtype=float,
        )
    lacking = np.zeros(len(metadata), dtype=bool)
    for values in columns.values():
        lacking |= np.isnan(values)
    return columns, int(lacking.sum())


def _read_arena_hard(
    frame: pd.DataFrame, *, name: str, baseline: str | None, strong_votes: int, **_
) -> dict:
    games = frame["games"].tolist()
    counts = np.array([len(g) if isinstance(g, (list, tuple, np.ndarray)) else 0 for g in games])
    if (counts == 0).any():
        row = int(np.flatnonzero(counts == 0)[0])
        raise ValueError(f"{name}, {name.at(row)}: 'games' is not a list of games: {games[row]!r}")
    record = np.repeat(np.arange(len(frame)), counts)
    game = np.concatenate([np.arange(c) for c in counts])
    scores = _text([g.get("score") if isinstance(g, dict) else None for gs in games for g in gs])
    if "baseline" in frame.columns:
        named = _text(frame["baseline"])
        if baseline is not None:
            differ = np.flatnonzero((named != None) & (named != baseline))  # noqa: E711
            if differ.size:
                row = int(differ[0])
                raise ValueError(
                    f"{name}, {name.at(row)}: the judgment's baseline is {named[row]!r} but "
                    f"baseline={baseline!r} was given"
                )
        base = np.where(named == None, baseline, named)  # noqa: E711
    elif baseline is None:
        raise ValueError(
            f"{name} holds Arena-Hard judgments without a 'baseline' field; pass baseline= the "
            "model every judged model was compared against (gpt-4-0314 for Arena-Hard v0.1)"
        )
    else:
        base = np.full(len(frame), baseline, dtype=object)
    if any(b is None for b in base):
        row = int(next(k for k, b in enumerate(base) if b is None))
        raise ValueError(f"{name}, {name.at(row)}: no baseline (pass baseline=)")
    model = _text(frame["model"])
    side = np.array([ARENA_HARD_VERDICTS.get(s, (None, False))[0] for s in scores], dtype=object)
    strong = np.array([ARENA_HARD_VERDICTS.get(s, (None, False))[1] for s in scores], dtype=bool)
    swapped = game % 2 == 1  # even games: the baseline is Assistant A; odd games: swapped
    outcome = np.full(game.size, _UNKNOWN, dtype=np.int64)
    outcome[side == "tie"] = TIE
    a_side = ((side == "A") & ~swapped) | ((side == "B") & swapped)
    b_side = ((side == "B") & ~swapped) | ((side == "A") & swapped)
    outcome[a_side] = A_WINS
    outcome[b_side] = B_WINS
    outcome[np.array([s is None for s in scores], dtype=bool)] = _NO_VERDICT
    weight = np.where(strong, strong_votes, 1)
    vote = np.repeat(np.arange(game.size), weight)
    return {
        "a": base[record][vote],
        "b": model[record][vote],
        "outcome": outcome[vote],
        "raw": scores[vote],
        "rows": record[vote],
        "raw_column": "games[].score",
        "extra": {"position": np.where(swapped, 2, 1).astype(np.int8)[vote]},
        "notes": {
            "games": int(game.size),
            "strong_verdicts": int(strong.sum()),
            "strong_votes": strong_votes,
        },
        "roles": {"prompt": ("question_id", "uid"), "voter": ("judge",), "position": ()},
        "columns": {"model_a": "baseline", "model_b": "model", "winner": "games[].score"},
    }


def _read_mt_bench(frame: pd.DataFrame, *, name: str, games: str, **_) -> dict:
    a, b = _text(frame["model_1"]), _text(frame["model_2"])
    g1 = _text(frame["g1_winner"])
    g2 = _text(frame["g2_winner"])
    words = {"model_1": A_WINS, "model_2": B_WINS, "tie": TIE}
    c1 = np.array([words.get(w, _UNKNOWN) for w in g1], dtype=np.int64)
    c2 = np.array([words.get(w, _UNKNOWN) for w in g2], dtype=np.int64)
    error = np.array([w in ("error", None) for w in g1]) | np.array(
        [w in ("error", None) for w in g2]
    )
    unknown = ((c1 == _UNKNOWN) | (c2 == _UNKNOWN)) & ~error
    outcome = np.where(c1 == c2, c1, TIE)
    outcome[unknown] = _UNKNOWN
    outcome[error] = _NO_VERDICT
    raw = np.where(c1 == _UNKNOWN, g1, g2)
    valid = ~error & ~unknown
    roles = {"prompt": ("question_id",), "voter": ("judge",), "turn": ("turn",), "position": ()}
    notes = {"inconsistent_games": int((valid & (c1 != c2)).sum()), "games": games}
    if games == "two":  # each game its own vote; game 2 shows model_2 first
        n = len(frame)
        game_outcome = np.concatenate([c1, c2])
        game_error = np.concatenate(
            [[w in ("error", None) for w in g1], [w in ("error", None) for w in g2]]
        )
        game_outcome[game_error] = _NO_VERDICT
        rows = np.concatenate([np.arange(n), np.arange(n)])
        order = np.argsort(rows, kind="stable")  # game 1 and game 2 of a judgment side by side
        position = np.repeat(np.array([1, 2], dtype=np.int8), n)
        return {
            "a": np.concatenate([a, a])[order],
            "b": np.concatenate([b, b])[order],
            "outcome": game_outcome[order],
            "raw": np.concatenate([g1, g2])[order],
            "rows": rows[order],
            "raw_column": "g1_winner/g2_winner",
            "extra": {"position": position[order]},
            "notes": notes,
            "roles": roles,
            "columns": {
                "model_a": "model_1",
                "model_b": "model_2",
                "winner": "g1_winner, g2_winner",
            },
        }
    return {
        "a": a,
        "b": b,
        "outcome": outcome,
        "raw": raw,
        "rows": np.arange(len(frame)),
        "raw_column": "g1_winner/g2_winner",
        "extra": {},
        "notes": notes,
        "roles": roles,
        "columns": {"model_a": "model_1", "model_b": "model_2", "winner": "g1_winner+g2_winner"},
    }


def _read_alpaca_eval(frame: pd.DataFrame, *, name: str, **_) -> dict:
    a, b = _text(frame["generator_1"]), _text(frame["generator_2"])
    raw = frame["preference"].tolist()
    missing = _empty(raw)
    p = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(dtype=float)
    p = np.where(p == 0, 1.5, p)  # AlpacaEval's legacy draw
    outcome = np.full(len(frame), _UNKNOWN, dtype=np.int64)
    inside = (p >= 1) & (p <= 2)
    outcome[inside & (p < 1.5)] = A_WINS
    outcome[inside & (p > 1.5)] = B_WINS
    outcome[inside & (p == 1.5)] = TIE
    outcome[missing] = _NO_VERDICT
    fractional = inside & (p != 1) & (p != 2) & (p != 1.5)
    return {
        "a": a,
        "b": b,
        "outcome": outcome,
        "raw": np.array(raw, dtype=object),
        "rows": np.arange(len(frame)),
        "raw_column": "preference",
        "extra": {"preference_b": np.where(inside, p - 1, np.nan)},
        "notes": {"fractional_preferences": int(fractional.sum())},
        "roles": {
            "prompt": ("instruction",),
            "voter": ("annotator",),
            "category": ("dataset",),
        },
        "columns": {"model_a": "generator_1", "model_b": "generator_2", "winner": "preference"},
    }


_LAYOUT_READERS = {
    "battles": _read_battles,
    "lmarena": _read_battles,
    "arena-hard": _read_arena_hard,
    "mt-bench": _read_mt_bench,
    "alpaca-eval": _read_alpaca_eval,
}


# ── the optional columns ───────────────────────────────────────────────────────────────────


def _resolve_roles(frame: pd.DataFrame, given: dict, layout_roles: dict, name: str) -> dict:
    """Column of each optional role: as given, else the layout's field, else the first alias."""
    chosen = {}
    for role in OPTIONAL_COLUMNS:
        column = given.get(role)
        if column == "":
            continue
        if column is not None:
            if column not in frame.columns:
                columns = ", ".join(repr(c) for c in frame.columns)
                raise ValueError(
                    f"the {role} column {column!r} is not in {name}; its columns are: {columns}"
                )
            chosen[role] = column
            continue
        candidates = layout_roles.get(role, ALIASES[role])
        found = next((c for c in candidates if c in frame.columns), None)
        if found is not None:
            chosen[role] = found
    return chosen


def _role_values(
    role: str, values: pd.Series, name: str, column: str
) -> tuple[np.ndarray, np.ndarray]:
    """One optional column as an array, and which of its cells are empty."""
    if role not in ("turn", "timestamp", "position"):  # text: MT-Bench's judge list -> "a/b"
        codes, texts = _text_codes(values)
        return np.append(texts, "")[codes], codes < 0
    values = pd.Series(values.tolist(), dtype=object)  # Python values, positions as labels
    missing = _empty(values)
    if role == "turn":
        numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
        _refuse_text(numbers, missing, values, name, column, "a whole number")
        bad = ~np.isnan(numbers) & (numbers != np.round(numbers))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name}, {name.at(row)}, column {column!r}: turn {values[row]!r} is not a whole "
                "number"
            )
        return numbers, missing
    if role == "timestamp":
        series = pd.Series(values, dtype=object)
        numbers = np.array(pd.to_numeric(series, errors="coerce"), dtype=float)
        text = np.isnan(numbers) & ~missing
        if text.any():
            parsed = pd.to_datetime(series[text], errors="coerce", utc=True, format="mixed")
            bad = parsed.isna().to_numpy()
            if bad.any():
                row = int(np.flatnonzero(text)[np.flatnonzero(bad)[0]])
                raise ValueError(
                    f"{name}, {name.at(row)}, column {column!r}: {values[row]!r} is neither a "
                    "number of seconds nor a date and time"
                )
            numbers[text] = parsed.map(lambda t: t.timestamp()).to_numpy(float)
        return numbers, missing
    if role == "position":
        words = {"1": 1, "2": 2, "a": 1, "b": 2, "model_a": 1, "model_b": 2, "1.0": 1, "2.0": 2}
        codes = pd.Series(values, dtype=object).astype(str).str.strip().str.lower().map(words)
        bad = codes.isna().to_numpy() & ~missing
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name}, {name.at(k)}, column {column!r}: position {values[k]!r} is not 1 or 2 "
                "(model_a or model_b shown first)"
            )
        out = np.where(missing, 0, codes.fillna(0).to_numpy()).astype(np.int8)
        return out, missing
    raise AssertionError(f"no reading for the role {role!r}")  # pragma: no cover


def _refuse_text(numbers, missing, values, name, column, what) -> None:
    bad = np.isnan(numbers) & ~missing
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}, {name.at(row)}, column {column!r}: {values[row]!r} is not {what}"
        )


# ── validation, exclusions and the Votes ───────────────────────────────────────────────────


def _finish(
    frame: pd.DataFrame,
    raw: dict,
    roles: dict,
    *,
    covariates: tuple[str, ...],
    kept: tuple[str, ...] = (),
    min_votes: int,
    unknown_winner: str,
    name: str,
    file: str | None,
    layout: str,
) -> Votes:
    a, b, outcome, rows = raw["a"], raw["b"], raw["outcome"], raw["rows"]
    columns: dict[str, np.ndarray] = {}
    empties: dict[str, np.ndarray] = {}
    for role, column in roles.items():
        values, empty = _role_values(role, frame[column], name, column)
        columns[role] = values[rows]
        empties[role] = empty[rows]
    for key, values in raw["extra"].items():
        if key == "position" and "position" in roles:
            continue  # a position column of the file wins over the layout's
        columns[key] = values
    missing_cov = np.zeros(outcome.size, dtype=bool)
    for column in covariates:
        if column not in frame.columns:
            listed = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(
                f"the covariate column {column!r} is not in {name}; its columns are: {listed}"
            )
        values = frame[column].tolist()
        empty = _empty(values)
        numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
        _refuse_text(numbers, empty, values, name, column, "a number (covariates are numeric)")
        columns[column] = numbers[rows]
        missing_cov |= np.isnan(numbers)[rows]

    for column in kept:
        if column not in frame.columns:
            listed = ", ".join(repr(c) for c in frame.columns)
            raise ValueError(f"the column {column!r} is not in {name}; its columns are: {listed}")
        columns[column] = frame[column].to_numpy(dtype=object)[rows]

    excluded = dict.fromkeys(EXCLUSIONS, 0)
    keep = np.ones(outcome.size, dtype=bool)
    no_verdict = outcome == _NO_VERDICT
    excluded["no_verdict"] = int(no_verdict.sum())
    keep &= ~no_verdict
    no_name = pd.isna(a) | pd.isna(b)
    missing = keep & (no_name | missing_cov)
    excluded["missing_values"] = int(missing.sum())
    keep &= ~missing
    self_battle = keep & (a == b)
    excluded["self_battles"] = int(self_battle.sum())
    keep &= ~self_battle
    unknown = keep & (outcome == _UNKNOWN)
    examples: list = []
    if unknown.any():
        first = int(np.flatnonzero(unknown)[0])
        if unknown_winner == "error":
            accepted = _accepted(layout)
            raise ValueError(
                f"{name}, {name.at(int(rows[first]))}, column {raw['raw_column']!r}: unknown "
                f"winner {raw['raw'][first]!r}; {accepted}. Pass unknown_winner='exclude' to "
                "leave such votes out (counted)"
            )
        examples = list(dict.fromkeys(str(v) for v in raw["raw"][unknown]))[:3]
        excluded["unknown_winner"] = int(unknown.sum())
        warnings.warn(
            f"{name}: {_count(int(unknown.sum()), 'vote')} with an unknown winner left out "
            f"(for example {', '.join(repr(e) for e in examples)}); {_accepted(layout)}",
            RankciWarning,
            stacklevel=3,
        )
        keep &= ~unknown

    below: list[str] = []
    if min_votes > 0:
        codes, names = pd.factorize(np.concatenate([a, b]))  # None (excluded votes): -1
        code_a, code_b = codes[: a.size], codes[a.size :]
        while True:
            counts = np.bincount(code_a[keep], minlength=names.size) + np.bincount(
                code_b[keep], minlength=names.size
            )
            few = np.flatnonzero((counts > 0) & (counts < min_votes))
            if few.size == 0:
                break
            below.extend(str(names[k]) for k in few)
            drop = keep & (np.isin(code_a, few) | np.isin(code_b, few))
            excluded["below_min_votes"] += int(drop.sum())
            keep &= ~drop
            if not keep.any():
                break

    if not keep.any():
        removed = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in excluded.items() if v)
        raise ValueError(f"{name}: no vote is left to read ({removed or 'no votes'})")
    a, b, outcome = a[keep], b[keep], outcome[keep]
    codes, found = pd.factorize(np.concatenate([a, b]))
    order = np.argsort(np.asarray(found, dtype=str), kind="stable")  # models sorted by name
    models = [str(found[k]) for k in order]
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    codes = rank[codes]
    check_spellings(models, "model", f"the model names of {name}")
    codes_a, codes_b = codes[: a.size], codes[a.size :]
    columns = {k: v[keep] for k, v in columns.items()}
    blank = {role: int(e[keep].sum()) for role, e in empties.items() if e[keep].any()}
    source = {
        "file": file,
        "layout": layout,
        "columns": {**raw["columns"], **roles},
        **raw["notes"],
    }
    if blank:
        source["blank"] = blank
    if examples:
        source["unknown_winner_examples"] = examples
    if below:
        source["models_below_min_votes"] = sorted(below)
    votes = Votes.from_arrays(
        codes_a,
        codes_b,
        outcome,
        models=models,
        columns=columns,
        excluded=excluded,
        source=source,
    )
    if votes.n_votes == 1:
        warnings.warn(
            f"{name} holds one vote: nothing can be ranked from it", RankciWarning, stacklevel=3
        )
    elif (votes.outcome >= TIE).all():
        warnings.warn(
            f"every one of the {votes.n_votes} votes of {name} is a tie: the votes say nothing "
            "about which model is better, and a fit refuses them",
            RankciWarning,
            stacklevel=3,
        )
    return votes


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _accepted(layout: str) -> str:
    if layout == "arena-hard":
        return "Arena-Hard verdicts are " + ", ".join(ARENA_HARD_VERDICTS)
    if layout == "mt-bench":
        return "MT-Bench winners are 'model_1', 'model_2', 'tie' (and 'error': no verdict)"
    if layout == "alpaca-eval":
        return "AlpacaEval preferences are numbers in [1, 2] (or 0, the legacy tie)"
    return (
        "a winner is one of "
        + ", ".join(repr(w) for w in OUTCOMES)
        + " (case and surrounding spaces ignored; 'tie_bothbad', 'tie(bothbad)' and 'both_bad' "
        "read as 'tie (bothbad)') or the name of the vote's model_a or model_b"
    )


def reading_summary(votes: Votes) -> str:
    """One line: what was read (layout, models, votes, ties) and every exclusion, by reason.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model_a": ["x", "y", "z"], "model_b": ["y", "z", "z"],
    ...                       "winner": ["model_a", "tie", "model_b"]})
    >>> reading_summary(read_votes(table))
    'read the DataFrame (battles): 3 models, 2 votes (1 tie); votes excluded: 1 self-battle'
    """
    src = votes.source
    where = src.get("file") or "the DataFrame"
    ties = int((votes.outcome >= TIE).sum())
    line = (
        f"read {where} ({src.get('layout', 'votes')}): {votes.n_models} models, "
        f"{_count(votes.n_votes, 'vote')} ({_count(ties, 'tie')})"
    )
    words = {
        "no_verdict": "without a verdict",
        "missing_values": "with a missing value",
        "self_battles": "self-battle",
        "unknown_winner": "with an unknown winner",
        "below_min_votes": "of models below the vote minimum",
    }
    parts = []
    for key, count in votes.excluded.items():
        if count:
            what = words.get(key, key)
            if key == "self_battles":
                what += "s" if count != 1 else ""
            parts.append(f"{count} {what}")
    line += "; votes excluded: " + (", ".join(parts) if parts else "none")
    if src.get("models_below_min_votes"):
        line += " (" + ", ".join(src["models_below_min_votes"]) + ")"
    for key, text in (
        ("strong_verdicts", "strong verdicts counted {strong_votes} times"),
        ("inconsistent_games", "judgments whose two games disagree, read as ties"),
        ("fractional_preferences", "fractional preferences rounded"),
        ("style_missing", "votes without conv_metadata (style columns empty)"),
    ):
        if src.get(key):
            line += f"; {src[key]} " + text.format(strong_votes=src.get("strong_votes"))
    return line


def vote_tally(votes: Votes) -> pd.DataFrame:
    """Votes, wins, losses and ties of every model (both tie outcomes are ties).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model_a": ["x", "x", "y"], "model_b": ["y", "z", "z"],
    ...                       "winner": ["model_a", "tie", "z"]})
    >>> vote_tally(read_votes(table)).values.tolist()
    [['x', 2, 1, 0, 1], ['y', 2, 0, 2, 0], ['z', 2, 1, 0, 1]]
    """
    m = votes.n_models
    tie = votes.outcome >= TIE
    a_won = votes.outcome == A_WINS
    b_won = votes.outcome == B_WINS

    def count(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.bincount(codes[mask], minlength=m)

    return pd.DataFrame(
        {
            "model": list(votes.models),
            "votes": count(votes.a, np.ones_like(tie)) + count(votes.b, np.ones_like(tie)),
            "wins": count(votes.a, a_won) + count(votes.b, b_won),
            "losses": count(votes.a, b_won) + count(votes.b, a_won),
            "ties": count(votes.a, tie) + count(votes.b, tie),
        }
    )
