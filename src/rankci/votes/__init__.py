"""Arenas: pairwise votes in, rank intervals with a guarantee out (issue 27).

The same flow as for scores, with votes at the door::

    votes ──► pair counts ──► Bradley-Terry fit + covariance ──► certified dominances ──► Ranking
    (Votes)   (PairCounts)    (bradley_terry.py)                (certify/, as for scores)

:class:`Votes` (``table.py``) is the validated vote table; readers of the layouts people have
(LMArena battles, Arena-Hard and MT-Bench judgments, AlpacaEval annotations) build it.
"""

from rankci.votes.table import OUTCOMES, PairCounts, Votes

__all__ = ["Votes", "PairCounts", "OUTCOMES"]
