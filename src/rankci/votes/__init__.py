"""Arenas: pairwise votes in, rank intervals with a guarantee out (issue 27).

The same flow as for scores, with votes at the door::

    votes ──► pair counts ──► Bradley-Terry fit + covariance ──► certified dominances ──► Ranking
    (Votes)   (PairCounts)    (bradley_terry.py)                (certify/, as for scores)

:class:`Votes` (``table.py``) is the validated vote table; :func:`read_votes` (``read.py``)
builds it from the layouts people have (battle tables, LMArena battles, Arena-Hard and MT-Bench
judgments, AlpacaEval annotations). :class:`rankci.votes.sequential.ArenaMonitor`
(``sequential.py``) is the anytime-valid arena: per-pair betting e-processes on head-to-head
votes, looked at as often as you like (docs/arena-monitor.md).
"""

from rankci.votes.read import read_votes, reading_summary
from rankci.votes.table import OUTCOMES, PairCounts, Votes

__all__ = ["Votes", "PairCounts", "OUTCOMES", "read_votes", "reading_summary"]
