"""What the monitor's statements mean: the guarantee of a look, and the <= alpha event.

:class:`~rankci.sequential.Monitor` puts :func:`guarantee_text` in every Ranking it returns
(``Ranking.guarantee``), and warns with :func:`alpha_event_message` when the <= alpha event
happens (every weak order eliminated, or a cycle among the certified pairs: see
:meth:`~rankci.sequential.Monitor.look`).

Examples
--------
>>> guarantee_text(0.05, "iid", None, "shortcut")[:58]
'With probability at least 95%, every certified dominance, '
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankci.certify.holm import nothing_certified_message, units_needed

__all__ = ["alpha_event_message", "guarantee_text", "nothing_certified_at"]


def nothing_certified_at(t: int, log_wealth: np.ndarray, alpha: float) -> str:
    """Why a look (or the end of a replay) certified no pair: the largest e-value, the bar.

    The bar is the e-Bonferroni threshold ``M(M-1)/alpha``; the log-wealth of a pair that
    separates grows about linearly in the items, which sizes the need.

    Examples
    --------
    >>> nothing_certified_at(40, np.log([[np.nan, 3.0], [0.5, np.nan]]), 0.05)[:47]
    'nothing is certified: with 40 item units the st'
    """
    lw = np.asarray(log_wealth, dtype=float)
    m = lw.shape[0]
    threshold = m * (m - 1) / alpha
    top = float(np.nanmax(lw)) if np.isfinite(lw).any() else float("nan")
    need = "more items or larger differences"
    if t and top > 0:
        items = int(np.ceil(t * np.log(threshold) / top))
        if items > t:
            need = units_needed(items, int(t), "items")
    return nothing_certified_message(
        int(t),
        "item",
        f"the largest e-value of a pair, {np.exp(top):.3g}" if np.isfinite(top) else "none",
        f"{threshold:.3g}, the e-Bonferroni threshold M(M-1)/alpha for {m} models",
        need,
        alpha=alpha,
    )


def guarantee_text(
    alpha: float,
    sampling: str,
    n_items: int | None,
    certifier: str,
    alpha_event: dict | None = None,
) -> str:
    """The guarantee in one paragraph (Theorems 4.2-4.4 of the source), or, after the <= alpha
    event, what it leaves."""
    if sampling == "finite":
        scope = (
            f"sampling model F: the {n_items} benchmark items are evaluated in one "
            "uniformly random order, and abilities are the means over all of them"
        )
    else:
        scope = "sampling model S: items are i.i.d., and abilities are expected scores"
    sets = ", rank set" if certifier == "exact" else ""
    if alpha_event is not None:
        return (
            f"The <= {alpha:g} event happened at item {alpha_event['t']} "
            f"({alpha_event['reason']}): from that look on the certified set is all pairs, which "
            "contradicts itself, so no statement is reported (every rank interval is [1, M]). The "
            "statements reported before it were made under the guarantee: with probability at "
            f"least {1 - alpha:.0%} this event does not happen at all (anytime-valid; {scope})."
        )
    return (
        f"With probability at least {1 - alpha:.0%}, every certified dominance, rank "
        f"interval{sets}, top-k statement and tier reported at any look is true, at all "
        "looks simultaneously and whatever rule decides when to look, stop or retire models "
        f"(anytime-valid; {scope})."
    )


def alpha_event_message(alpha: float, t: int, reason: str, cycle: Sequence[str]) -> str:
    """The warning given when the <= alpha event happens at item ``t``."""
    return (
        f"the <= alpha event happened at item {t}: {reason} ({', '.join(cycle)}). This happens "
        f"with probability at most {alpha:g} when the sampling model holds (items in one "
        "uniformly random order, or i.i.d.); every statement is vacuous from this look on "
        "(D = all pairs), and the monitor goes on recording the data"
    )
