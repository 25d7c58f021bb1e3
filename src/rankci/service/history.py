"""A board's history: when each model joined, how many scores it has, and the look at which each
statement was first certified.

Everything here is a function of the committed scores and events (the looks are rebuilt exactly
by :meth:`rankci.service.board.Board.load`, and the first-certification looks are recorded by the
board as its looks happen), so a restarted server, or ``rankci monitor`` on an export, shows the
same history.

* **Entry.** A model given at creation joined at item count 0, look 0, at the board's creation
  time; a model added later (``POST /api/boards/{id}/models``) at the item count, look count and
  UTC time stored with its ``join`` event (events stored before this record carry the item count
  only: their look count is recomputed from the looks, their time is None).
* **Pairs.** ``first_certified`` lists each certified "winner better than loser" with the number
  (1-based) and item count ``t`` of the look that first certified it.
* **Rank bounds.** Per model, the look at which its current lower and upper rank bounds were first
  reached (bounds only tighten, except after a contradiction, when they are reset).
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

__all__ = ["board_history", "utc_now"]


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second (as a board's ``created_at``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _looks_before(looks: list[dict], t: int) -> int:
    """How many looks were taken at item counts <= ``t`` (a model joining at ``t`` joins after the
    look at ``t``, which the board takes before it accepts the event)."""
    return sum(1 for record in looks if record["t"] <= t)


def board_history(
    spec, events: list[dict], looks: list[dict], counts: list[int], first: np.ndarray
) -> dict:
    """The ``entries``, ``first_certified`` and ``rank_bounds_since`` records of a board.

    Parameters
    ----------
    spec : BoardSpec
        The board's spec (models in column order, including those that joined).
    events : list of dict
        The board's events, as :attr:`Board.events` (``t``, ``kind``, ``model``, ...).
    looks : list of dict
        The monitor's look records.
    counts : list of int
        Scores received per model (column order).
    first : numpy.ndarray
        ``first[j, l]``: the look (1-based) that first certified model j better than model l,
        0 if never.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> spec = SimpleNamespace(models=("a", "b"), created_at="2026-01-01T00:00:00+00:00")
    >>> looks = [{"t": 5, "lower": [1, 1], "upper": [2, 2]}, {"t": 10, "lower": [1, 2],
    ...          "upper": [1, 2]}]
    >>> out = board_history(spec, [], looks, [10, 10], np.array([[0, 2], [0, 0]]))
    >>> out["first_certified"]
    [{'winner': 'a', 'loser': 'b', 'look': 2, 't': 10}]
    >>> out["rank_bounds_since"][1]
    {'model': 'b', 'lower': 2, 'upper': 2, 'lower_since_look': 2, 'upper_since_look': 1}
    """
    models = list(spec.models)
    joined = {e["model"]: e for e in events if e["kind"] == "join"}
    entries = []
    for j, name in enumerate(models):
        event = joined.get(name)
        if event is None:
            entry = {"t": 0, "look": 0, "at": spec.created_at or None}
        else:
            look = event.get("look", _looks_before(looks, event["t"]))
            entry = {"t": event["t"], "look": look, "at": event.get("at")}
        entries.append({"model": name, **entry, "n_scores": int(counts[j])})
    pairs = []
    for j, l in zip(*np.nonzero(first)):
        look = int(first[j, l])
        pairs.append(
            {"winner": models[j], "loser": models[l], "look": look, "t": looks[look - 1]["t"]}
        )
    pairs.sort(key=lambda p: (p["look"], p["winner"], p["loser"]))
    bounds = []
    if looks:
        last = looks[-1]
        for j, name in enumerate(models[: len(last["lower"])]):
            record = {"model": name, "lower": last["lower"][j], "upper": last["upper"][j]}
            for side in ("lower", "upper"):
                since = len(looks)
                for number in range(len(looks), 0, -1):
                    values = looks[number - 1][side]
                    if j >= len(values) or values[j] != record[side]:
                        break
                    since = number
                record[f"{side}_since_look"] = since
            bounds.append(record)
    return {"entries": entries, "first_certified": pairs, "rank_bounds_since": bounds}
