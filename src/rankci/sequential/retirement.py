"""Retirement rules: which models' evaluation can stop at a look.

Any rule that uses only the scores observed so far keeps the guarantee, because the wealth of every
pair involving a retired model is frozen (Proposition 4.5 of the source). ``k`` is the top-k
question; a pair is *settled* when it is certified one way or the other.

* ``topk``: a model's own top-k status is known (``U <= k``: in; ``L > k``: out);
* ``topk-safe``: its status is known and its pairs with every active model whose status is still
  open are settled (so retiring it never freezes a comparison that an open model may need);
* ``resolved``: its pairs with every active model are settled (pairs with retired models are
  frozen and can no longer change);
* ``stop-at-goal``: every model stops at once when every top-k status is known;
* ``width``: ``U - L <= width``.
"""

from __future__ import annotations

import numpy as np

from rankci.ranking import Ranking
from rankci.sequential.spec import RETIRE_RULES

__all__ = ["RETIRE_RULES", "models_to_retire"]



def models_to_retire(
    rule: str,
    ranking: Ranking,
    dominance: np.ndarray,
    active: np.ndarray,
    k: int | None,
    width: int,
) -> np.ndarray:
    """Boolean mask of the active models that the rule retires at this look.

    Parameters
    ----------
    rule : str
        One of :data:`RETIRE_RULES` (see the module docstring).
    ranking : Ranking
        The ranking at this look (its rank intervals and top-k status).
    dominance : numpy.ndarray
        M x M boolean certified pairs (``[j, l]``: j better than l).
    active : numpy.ndarray
        Boolean mask of the models still evaluated.
    k : int or None
        The top-k question (for ``topk``, ``topk-safe``, ``stop-at-goal``).
    width : int
        Largest ``U - L`` retired by the ``width`` rule.

    Returns
    -------
    numpy.ndarray
        Boolean mask (a subset of ``active``).

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Proposition 4.5 (retiring on observed scores keeps the guarantee).

    Examples
    --------
    After 40 items only "a better than c" is certified: c is out of the top 1 (``L = 2``), so
    ``topk`` retires it, but ``topk-safe`` keeps it (its pair with the open model b is unsettled)
    and ``resolved`` retires nothing:

    >>> import numpy as np
    >>> from rankci.sequential import Monitor
    >>> mon = Monitor(["a", "b", "c"], sampling="iid", certifier="exact")
    >>> mon.update_block(np.random.default_rng(0).random((40, 3)) < [0.8, 0.5, 0.2])
    40
    >>> ranking = mon.ranking()
    >>> ranking.dominance_pairs(), ranking.lower.tolist(), ranking.upper.tolist()
    ([('a', 'c')], [1, 1, 2], [2, 3, 3])
    >>> active = np.ones(3, dtype=bool)
    >>> [models_to_retire(r, ranking, ranking.dominance, active, 1, 0).tolist()
    ...  for r in ("topk", "topk-safe", "resolved")]
    [[False, False, True], [False, False, False], [False, False, False]]
    """
    active = np.asarray(active, dtype=bool)
    none = np.zeros_like(active)
    if rule == "none" or not active.any():
        return none
    settled = dominance | dominance.T
    np.fill_diagonal(settled, True)
    if rule in ("topk", "topk-safe", "stop-at-goal"):
        known = ranking.top_k(k) != "undetermined"
        if rule == "topk":
            return active & known
        if rule == "topk-safe":
            still_open = active & ~known
            return active & known & settled[:, still_open].all(axis=1)
        return active.copy() if known.all() else none
    if rule == "resolved":
        return active & settled[:, active].all(axis=1)
    if rule == "width":
        return active & (ranking.upper - ranking.lower <= width)
    raise ValueError(f"unknown retirement rule {rule!r}")
