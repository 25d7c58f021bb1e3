"""What a score post may contain: known models and items, scores in [0, 1], no conflicts.

:func:`validate_entries` turns a post's (model, item, score) entries into index arrays, or
raises :class:`Rejected` naming the first ten problems. :func:`new_cells` and
:func:`group_new_cells` decide which of the validated scores are new, against the scores stored
before and the earlier posts of the same group commit; a (model, item) that already has a
different score raises :class:`Conflict`. :func:`quota_error` is the refusal of growth past the
server's quota of cells per board (:class:`TooLarge`). Nothing here stores or changes anything.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "MAX_REPORTED",
    "Conflict",
    "Rejected",
    "TooLarge",
    "group_new_cells",
    "new_cells",
    "quota_error",
    "validate_entries",
]

MAX_REPORTED = 10  # problems listed in a rejection


class Rejected(ValueError):
    """A malformed post; nothing was stored. ``problems`` lists what is wrong (first ten)."""

    def __init__(self, message: str, problems: list | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class Conflict(Rejected):
    """A (model, item) that already has a different score; nothing was stored."""


class TooLarge(Rejected):
    """Growth (a model joining, a post's new items or votes) that would take a board past the
    server's quota of cells per board (``rankci serve --max-board-cells``); nothing was stored
    (HTTP 413)."""


def quota_error(
    what: str, now: int, after: int, quota: int | None, unit: str = "scores"
) -> TooLarge | None:
    """The refusal of ``what``, which takes a board from ``now`` to ``after`` cells (``unit``:
    models x items of a scores board, votes of a votes board), when that passes ``quota``
    (None: no quota); else None.

    Examples
    --------
    >>> error = quota_error("adding model 'd'", 30, 40, 35)
    >>> str(error).split(", over ")[0]
    "adding model 'd' would take the board from 30 to 40 scores"
    >>> error.problems
    [{'cells': 30, 'after': 40, 'limit': 35, 'flag': '--max-board-cells'}]
    >>> quota_error("adding model 'd'", 30, 40, 40) is None
    True
    """
    if quota is None or after <= quota:
        return None
    return TooLarge(
        f"{what} would take the board from {now:,} to {after:,} {unit}, over this server's "
        f"quota of {quota:,} per board (rankci serve --max-board-cells); nothing was stored",
        [{"cells": now, "after": after, "limit": quota, "flag": "--max-board-cells"}],
    )


_NUMBER = {float, int}


def validate_entries(
    entries: Sequence[tuple[str, str, float]], model_index: dict, item_index: dict
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index arrays (model, item, score) of a post, or :class:`Rejected` with its problems.

    A score must be a number (not a bool) in [0, 1]; ``model_index`` and ``item_index`` map
    the board's names to their indices.

    Examples
    --------
    >>> validate_entries([("a", "q1", 0.5)], {"a": 0, "b": 1}, {"q0": 0, "q1": 1})
    (array([0]), array([1]), array([0.5]))
    >>> try:
    ...     validate_entries([("c", "q1", 2.0)], {"a": 0}, {"q1": 0})
    ... except Rejected as error:
    ...     [p["problem"] for p in error.problems]
    ['unknown model', 'outside [0, 1]']
    """
    n = len(entries)
    if n == 0:
        raise Rejected("no scores in the post")
    if n == 1:  # the single score of a harness hook: the same checks, without the array work
        name, item_id, value = entries[0]
        j, i = model_index.get(name, -1), item_index.get(item_id, -1)
        if j >= 0 and i >= 0 and type(value) in _NUMBER and 0.0 <= value <= 1.0:
            return (
                np.array([j], dtype=np.int64),
                np.array([i], dtype=np.int64),
                np.array([value], dtype=float),
            )
    names, ids, values = zip(*entries)
    model = np.fromiter((model_index.get(name, -1) for name in names), np.int64, n)
    item = np.fromiter((item_index.get(i, -1) for i in ids), np.int64, n)
    if {type(v) for v in values} <= _NUMBER and model.min() >= 0 and item.min() >= 0:
        try:
            score = np.array(values, dtype=float)
        except OverflowError:  # an integer too large for a float: reported below
            score = None
        if score is not None and ((score >= 0.0) & (score <= 1.0)).all():
            return model, item, score
    return model, item, _checked_scores(entries, model, item)


def _shown(name):
    """A name as a rejection may echo it: at most 200 characters, and text that is not valid
    Unicode (a lone surrogate) escaped, so that the answer can be encoded."""
    if not isinstance(name, str):
        return name
    return name[:200].encode("utf-8", "backslashreplace").decode("utf-8")


def _checked_scores(entries, model: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The scores of a post the fast check did not pass, one by one: :class:`Rejected` with
    the first ten problems (for instance numpy scalars pass here)."""
    problems = []
    score = np.empty(len(entries), dtype=float)
    for k, (name, item_id, value) in enumerate(entries):
        if model[k] < 0:
            problems.append({"index": k, "model": _shown(name), "problem": "unknown model"})
        if item[k] < 0:
            problems.append({"index": k, "item": _shown(item_id), "problem": "unknown item"})
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append({"index": k, "score": str(value), "problem": "not a number"})
            score[k] = np.nan
        else:
            try:
                score[k] = value
            except OverflowError:  # an integer too large for a float
                score[k] = np.inf
    bad = ~((score >= 0.0) & (score <= 1.0))
    for k in np.flatnonzero(bad):
        if not any(p["index"] == k and p["problem"] == "not a number" for p in problems):
            value = float(score[k]) if np.isfinite(score[k]) else str(entries[k][2])[:40]
            problems.append({"index": int(k), "score": value, "problem": "outside [0, 1]"})
    if not problems:
        return score
    problems.sort(key=lambda p: p["index"])
    first = problems[0]
    what = first.get("model", first.get("item", first.get("score")))
    raise Rejected(
        f"{len(problems)} problem(s) in the post, nothing was stored; the first: entry "
        f"{first['index']}: {first['problem']} {what!r}"
        + ("" if first["problem"] != "outside [0, 1]" else " (rescale scores to [0, 1])"),
        problems[:MAX_REPORTED],
    )


def new_cells(
    x: np.ndarray,
    position: np.ndarray,
    model: np.ndarray,
    item: np.ndarray,
    score: np.ndarray,
    claimed: dict,
    names: tuple[Sequence[str], Sequence[str]],
) -> np.ndarray:
    """Which of one post's scores are new (a boolean mask); :class:`Conflict` if one contradicts
    a stored score (``x``, rows in evaluation order), a score of an earlier post of the group
    (``claimed``: cell key -> score, updated with this post's new cells), or another score of
    the same post. ``names`` are the board's (models, items), for the message.

    Examples
    --------
    >>> x = np.array([[1.0, np.nan]])
    >>> new_cells(x, np.array([0]), np.array([0, 1]), np.array([0, 0]),
    ...           np.array([1.0, 0.0]), {}, (["a", "b"], ["q"]))
    array([False,  True])
    """
    m = x.shape[1]
    pos = position[item]
    current = x[pos, model]
    key = pos * m + model
    if claimed:
        for k, cell in enumerate(key.tolist()):
            earlier = claimed.get(cell)
            if earlier is not None:
                current[k] = earlier
    known = np.isfinite(current)
    conflict = known & (current != score)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inside = score != score[first][inverse]  # the same cell twice in one post
    if conflict.any() or inside.any():
        models, items = names
        problems = []
        for n in np.flatnonzero(conflict | inside)[:MAX_REPORTED]:
            before = current[n] if conflict[n] else score[first[inverse[n]]]
            problems.append(
                {
                    "index": int(n),
                    "model": models[model[n]],
                    "item": items[item[n]],
                    "score": float(score[n]),
                    "existing_score": float(before),
                }
            )
        count = int((conflict | inside).sum())
        raise Conflict(
            f"{count} score(s) conflict with a different score for the same (model, item);"
            " scores cannot be changed, nothing was stored",
            problems,
        )
    new = np.zeros(len(score), dtype=bool)
    new[first] = True
    new &= ~known
    claimed.update(zip(key[new].tolist(), score[new].tolist()))
    return new


def group_new_cells(
    x: np.ndarray, position: np.ndarray, posts: Sequence, names: tuple
) -> list[np.ndarray | Rejected]:
    """For each post of a group (objects with ``model``, ``item``, ``score`` arrays), in order:
    the mask of its new scores, or the :class:`Conflict` that rejects it alone.

    The usual group - no cell twice, nothing contradicting a stored score - is decided by one
    vectorised pass over all its scores; any other group post by post with :func:`new_cells`.

    Examples
    --------
    >>> from types import SimpleNamespace as Post
    >>> x = np.array([[1.0, np.nan]])
    >>> posts = [Post(model=np.array([0]), item=np.array([0]), score=np.array([1.0])),
    ...          Post(model=np.array([1]), item=np.array([0]), score=np.array([0.0]))]
    >>> group_new_cells(x, np.array([0]), posts, (["a", "b"], ["q"]))
    [array([False]), array([ True])]
    """
    m = x.shape[1]
    if len(posts) > 1:
        model = np.concatenate([p.model for p in posts])
        item = np.concatenate([p.item for p in posts])
        score = np.concatenate([p.score for p in posts])
    else:
        model, item, score = posts[0].model, posts[0].item, posts[0].score
    pos = position[item]
    current = x[pos, model]
    known = np.isfinite(current)
    key = np.sort(pos * m + model)
    if not (known & (current != score)).any() and not (key[1:] == key[:-1]).any():
        new = ~known
        bounds = np.cumsum([len(p.score) for p in posts])[:-1]
        return np.split(new, bounds)
    out: list[np.ndarray | Rejected] = []
    claimed: dict[int, float] = {}
    for p in posts:
        try:
            out.append(new_cells(x, position, p.model, p.item, p.score, claimed, names))
        except Rejected as error:
            out.append(error)
    return out
