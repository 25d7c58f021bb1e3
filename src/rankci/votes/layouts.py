"""The vote-table layouts and the fields each is recognised by (no numpy, no pandas).

A table is a vote table when its fields hold one of the layouts below; the score readers
(:func:`rankci.io.read_scores`, ``rankci rank DATA``) ask :func:`is_vote_table` so that a vote
table is never misread as scores, and :func:`rankci.votes.read_votes` asks :func:`vote_layout`
which reader to use. The layouts, most specific first:

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
>>> layouts_tried(["model_a", "model_b"])[:40]
"battles (lacks 'winner'), lmarena (lacks '"
"""

from __future__ import annotations

from collections.abc import Iterable

from rankci.formats import VOTE_LAYOUTS

__all__ = ["REQUIRED", "VOTE_LAYOUTS", "vote_layout", "is_vote_table", "layouts_tried"]

#: the fields each layout needs, by layout
REQUIRED: dict[str, tuple[str, ...]] = {
    "battles": ("model_a", "model_b", "winner"),
    "lmarena": ("model_a", "model_b", "winner", "conv_metadata"),
    "arena-hard": ("model", "games"),
    "mt-bench": ("model_1", "model_2", "g1_winner", "g2_winner"),
    "alpaca-eval": ("generator_1", "generator_2", "preference"),
}
#: the order in which ``auto`` tries the layouts: the most specific first
DETECTION_ORDER = ("arena-hard", "mt-bench", "alpaca-eval", "lmarena", "battles")


def vote_layout(columns: Iterable[object]) -> str | None:
    """The vote layout whose fields ``columns`` hold (exact, case-sensitive names), or None."""
    names = {str(c) for c in columns}
    for layout in DETECTION_ORDER:
        if all(field in names for field in REQUIRED[layout]):
            return layout
    return None


def is_vote_table(columns: Iterable[object]) -> bool:
    """True when the fields ``columns`` are those of a vote layout (:func:`vote_layout`)."""
    return vote_layout(columns) is not None


def layouts_tried(columns: Iterable[object]) -> str:
    """Each layout with the fields it needs and ``columns`` lack, for error messages."""
    names = {str(c) for c in columns}
    parts = []
    for layout in VOTE_LAYOUTS[1:]:
        lacking = [f for f in REQUIRED[layout] if f not in names]
        parts.append(f"{layout} (lacks {', '.join(repr(f) for f in lacking)})")
    return ", ".join(parts)
