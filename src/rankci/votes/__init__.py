"""Arenas: pairwise votes in, rank intervals with a guarantee out (issue 27).

The same flow as for scores, with votes at the door::

    votes ──► pair counts ──► Bradley-Terry fit + covariance ──► certified dominances ──► Ranking
    (Votes)   (PairCounts)    (bradley_terry.py)                (certify/, as for scores)

:class:`Votes` (``table.py``) is the validated vote table; :func:`read_votes` (``read.py``)
builds it from the layouts people have (battle tables, LMArena battles, Arena-Hard and MT-Bench
judgments, AlpacaEval annotations). :func:`fit_bradley_terry` (``bradley_terry.py``) fits the
strengths and their covariance, :func:`rank_votes` (``rank.py``) certifies them into a
:class:`~rankci.Ranking`, and ``probes.py`` holds the checks a careful analyst runs
(connectivity, separation, position bias, intransitivity, voter concentration, votes needed).
:class:`rankci.votes.sequential.ArenaMonitor`
(``sequential.py``) is the anytime-valid arena: per-pair betting e-processes on head-to-head
votes, looked at as often as you like (docs/arena-monitor.md).
"""

from rankci.votes.bradley_terry import (
    BradleyTerryFit,
    ConnectivityError,
    SeparationError,
    fit_bradley_terry,
)
from rankci.votes.rank import VotesSpec, rank_votes
from rankci.votes.read import read_votes, reading_summary
from rankci.votes.table import OUTCOMES, PairCounts, Votes

__all__ = [
    "Votes",
    "PairCounts",
    "OUTCOMES",
    "read_votes",
    "reading_summary",
    "BradleyTerryFit",
    "ConnectivityError",
    "SeparationError",
    "fit_bradley_terry",
    "VotesSpec",
    "rank_votes",
]
