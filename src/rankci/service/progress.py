"""Where a board's evaluation stands: its progress, its next look, the evaluations it needs next.

Each function reads a :class:`~rankci.service.board.Board` (its spec, score matrix and monitor)
and changes nothing; the board calls them under its lock, or on a state it has just published.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rankci.service.board import Board

__all__ = ["needed", "next_look", "progress"]


def next_look(board: Board) -> int | None:
    """The item count of the next look (every ``look_every`` items, and the last item unless the
    board's items may grow), or None once the board is done.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> board = NS(done=False, monitor=NS(t=7), spec=NS(look_every=5, n_items=12))
    >>> next_look(board)
    10
    """
    if board.done:
        return None
    every, t = board.spec.look_every, board.monitor.t
    if getattr(board, "growing", False):  # item_entry "open": no last item, more may come
        return int((t // every + 1) * every)
    last = board.spec.n_items - len(getattr(board, "voided_rows", ()))  # voided: never consumed
    return int(min((t // every + 1) * every, last))


def progress(board: Board) -> dict:
    """The evaluation's live progress: items consumed, evaluations used, saved and left
    (``evaluations_saved = n_items x n_models - evaluations - evaluations_remaining``, where
    ``evaluations_remaining = (n_items - t) x active models``), looks, retirements.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as NS
    >>> mon = NS(t=2, active=np.array([True, False]), evaluations=4, looks=[{}], retired={},
    ...          needs=lambda: ["a"])
    >>> board = NS(done=False, monitor=mon, spec=NS(look_every=5, n_items=10, n_models=2),
    ...            state="open", error=None, received=4)
    >>> p = progress(board)
    >>> p["evaluations_remaining"], p["evaluations_saved"], p["next_look_at"]
    (8, 8, 5)
    """
    spec, mon = board.spec, board.monitor
    n, m = spec.n_items, spec.n_models
    done = board.done
    voided_rows = getattr(board, "voided_rows", set())
    row = getattr(board, "row", mon.t)
    ahead = n - row - sum(r >= row for r in voided_rows)  # rows left to consume
    remaining = 0 if done else ahead * int(mon.active.sum())
    total = n * m
    return {
        "state": board.state,
        "error": board.error,
        "t": int(mon.t),
        "n_items": n,
        "n_models": m,
        "scores_received": int(board.received),
        "evaluations": int(mon.evaluations),
        "evaluations_total": total,
        "evaluations_remaining": remaining,
        "evaluations_saved": int(total - mon.evaluations - remaining),
        "cost_fraction": mon.evaluations / total,
        "n_looks": len(mon.looks),
        "next_look_at": next_look(board),
        "active": [] if done else mon.needs(),
        "retired": {name: dict(info) for name, info in mon.retired.items()},
        "withdrawn": {name: dict(info) for name, info in getattr(mon, "withdrawn", {}).items()},
        **_voided(board),
    }


def _voided(board: Board) -> dict:
    """The voided items, with the look at which each was voided, and what voiding means."""
    voided = getattr(board, "voided", None)
    if not voided:
        return {}
    from rankci.sequential import VOID_GUARANTEE

    return {
        "voided": {item: dict(info) for item, info in voided.items()},
        "void_guarantee": VOID_GUARANTEE,
    }


def needed(board: Board, limit: int, columns: np.ndarray, horizon: str) -> list[dict]:
    """The next missing (model, item) cells of the active ``columns``, in the shared order from
    the monitor's position, at most ``limit``; with ``horizon="look"`` only up to the next look.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as NS
    >>> x = np.array([[1.0, np.nan], [np.nan, np.nan]])
    >>> board = NS(done=False, x=x, monitor=NS(t=0), order=np.array([1, 0]),
    ...            spec=NS(look_every=1, n_items=2, models=["a", "b"], items=["q0", "q1"]))
    >>> [(e["model"], e["item"]) for e in needed(board, 10, np.array([0, 1]), "all")]
    [('b', 'q1'), ('a', 'q0'), ('b', 'q0')]
    """
    spec = board.spec
    out: list[dict] = []
    voided_rows = getattr(board, "voided_rows", set())
    start = getattr(board, "row", board.monitor.t)
    n = spec.n_items
    if horizon == "look" and not board.done:  # the row at which the next look is reached
        left, n = next_look(board) - board.monitor.t, start
        while left > 0 and n < spec.n_items:
            left -= n not in voided_rows
            n += 1
    while columns.size and start < n and len(out) < limit:
        stop = min(n, start + max(64, limit // max(columns.size, 1) + 1))
        missing = np.isnan(board.x[start:stop][:, columns])
        if voided_rows:  # a voided item's scores are never used: not asked for
            missing[[r - start for r in voided_rows if start <= r < stop]] = False
        rows, cols = np.nonzero(missing)
        take = limit - len(out)
        for r, c in zip(rows[:take].tolist(), cols[:take].tolist()):
            p = start + r
            out.append(
                {
                    "model": spec.models[columns[c]],
                    "item": spec.items[board.order[p]],
                    "position": p,
                }
            )
        start = stop
    return out
