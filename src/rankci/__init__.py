"""rankci: how much of a model leaderboard do your data actually support?

Per-item scores of many models in; score intervals, pairwise comparisons, rank intervals, top-k
sets and tiers out, each with a stated guarantee.

>>> import rankci
>>> ranking = rankci.rank(rankci.datasets.load_mmlu_pro())   # paired t + Holm, simultaneous
"""

from . import datasets
from .data import Scores, UnitScores
from .io import read_scores
from .leaderboard import ClusterRankings, informative_clusters, rank, rank_by_cluster
from .multibench import BenchmarkRankings, rank_benchmarks
from .multiplicity import adjust_pvalues
from .pairwise import Pairwise, RankciWarning, pairwise_tests
from .ranking import (
    DominanceCycleError,
    Ranking,
    marginal_ranking,
    ranking_from_dominance,
    simultaneous_ranking,
)

__version__ = "0.1.0"

__all__ = [
    "BenchmarkRankings",
    "ClusterRankings",
    "DominanceCycleError",
    "Pairwise",
    "Ranking",
    "RankciWarning",
    "Scores",
    "UnitScores",
    "adjust_pvalues",
    "datasets",
    "informative_clusters",
    "marginal_ranking",
    "pairwise_tests",
    "rank",
    "rank_benchmarks",
    "rank_by_cluster",
    "ranking_from_dominance",
    "read_scores",
    "simultaneous_ranking",
]
