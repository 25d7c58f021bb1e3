"""The input formats ``rankci`` reads, as plain tuples (no imports, so the command line is fast).

:mod:`rankci.io`, :mod:`rankci.adapters` and :mod:`rankci.votes.read` take their lists from here,
and the score readers ask :func:`is_vote_table` so that a vote table is never misread as scores.

A table is a vote table when its fields hold one of the vote layouts (:data:`VOTE_FIELDS`),
most specific first:

* ``arena-hard``: ``model``, ``games`` (the Arena-Hard-Auto judgment JSONL);
* ``mt-bench``: ``model_1``, ``model_2``, ``g1_winner``, ``g2_winner`` (FastChat llm_judge
  pairwise judgments, ``model_judgment/*_pair.jsonl``);
* ``alpaca-eval``: ``generator_1``, ``generator_2``, ``preference`` (AlpacaEval
  ``annotations.json``);
* ``lmarena``: ``model_a``, ``model_b``, ``winner``, ``conv_metadata`` (the LMArena / Chatbot
  Arena public battles);
* ``battles``: ``model_a``, ``model_b``, ``winner`` (any table of votes: CSV, TSV, Parquet,
  JSONL, JSON, DataFrame).

>>> vote_layout(["question_id", "model_1", "model_2", "g1_winner", "g2_winner", "judge", "turn"])
'mt-bench'
>>> is_vote_table(["model", "item", "score"])
False
>>> layouts_tried(["model_a", "model_b", "winner"]).split(", ")[0]
"lmarena (lacks 'conv_metadata')"
"""

#: table formats of :func:`rankci.io.read_scores` ("auto": from the file extension)
FORMATS = ("auto", "csv", "tsv", "parquet", "jsonl")
#: table layouts: one row per model and item (long) or one column per model (wide)
LAYOUTS = ("auto", "long", "wide")
#: vote-table layouts of :func:`rankci.votes.read_votes` ("auto": from the table's fields,
#: :data:`VOTE_FIELDS`)
VOTE_LAYOUTS = ("auto", "battles", "lmarena", "arena-hard", "mt-bench", "alpaca-eval")
#: file formats of :func:`rankci.votes.read_votes`: the table formats and JSON (an array of objects)
VOTE_FORMATS = FORMATS + ("json",)
#: what an unrecognised winner does in :func:`rankci.votes.read_votes`
UNKNOWN_WINNER_RULES = ("error", "exclude")
#: MT-Bench judgments: one vote per judgment (FastChat's count) or one vote per game
MT_BENCH_GAMES = ("one", "two")
#: the evaluation-log readers: format name -> the module of :mod:`rankci.adapters` that reads it.
#: Each such module defines ``READER``, a :class:`rankci.adapters.LogReader`; adding a reader is
#: that module and one line here (DEVELOPING.md, "Add a reader").
LOG_READERS = {"lm-eval": "lm_eval", "inspect": "inspect", "helm": "helm"}
#: evaluation-log formats of :func:`rankci.adapters.read_log`
LOG_FORMATS = tuple(LOG_READERS)

#: the fields each layout needs, by layout
VOTE_FIELDS = {
    "battles": ("model_a", "model_b", "winner"),
    "lmarena": ("model_a", "model_b", "winner", "conv_metadata"),
    "arena-hard": ("model", "games"),
    "mt-bench": ("model_1", "model_2", "g1_winner", "g2_winner"),
    "alpaca-eval": ("generator_1", "generator_2", "preference"),
}
#: the order in which ``auto`` tries the layouts: the most specific first
VOTE_DETECTION_ORDER = ("arena-hard", "mt-bench", "alpaca-eval", "lmarena", "battles")


class VoteTableError(ValueError):
    """The table holds pairwise votes, not per-item scores; ``layout`` names its vote layout
    (:func:`rankci.formats.vote_layout`), so a caller that reads votes need not read it again."""

    def __init__(self, message: str, layout: str):
        super().__init__(message)
        self.layout = layout


def vote_layout(columns) -> str | None:
    """The vote layout whose fields ``columns`` hold (exact, case-sensitive names), or None."""
    names = {str(c) for c in columns}
    for layout in VOTE_DETECTION_ORDER:
        if all(field in names for field in VOTE_FIELDS[layout]):
            return layout
    return None


def is_vote_table(columns) -> bool:
    """True when the fields ``columns`` are those of a vote layout (:func:`vote_layout`)."""
    return vote_layout(columns) is not None


def layouts_tried(columns) -> str:
    """Each layout whose fields ``columns`` lack, with those fields, for error messages."""
    names = {str(c) for c in columns}
    parts = []
    for layout in VOTE_LAYOUTS[1:]:
        lacking = [f for f in VOTE_FIELDS[layout] if f not in names]
        if lacking:
            parts.append(f"{layout} (lacks {', '.join(repr(f) for f in lacking)})")
    return ", ".join(parts)
