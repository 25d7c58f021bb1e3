"""rankci: how much of a model leaderboard do your data actually support?

Per-item scores of many models in; score intervals, pairwise comparisons, rank intervals, top-k
sets and tiers out, each with a stated guarantee.

>>> import rankci
>>> ranking = rankci.rank(rankci.datasets.load_mmlu_pro())   # paired t + Holm, simultaneous
"""

from . import datasets
from .composite import CompositeScores, composite_scores
from .covariance import MeansCovariance, means_covariance
from .data import Scores, UnitScores
from .intervals import ScoreIntervals, score_intervals
from .io import read_scores
from .leaderboard import ClusterRankings, informative_clusters, rank, rank_by_cluster
from .multibench import BenchmarkRankings, rank_benchmarks
from .multiplicity import adjust_pvalues
from .pairwise import Pairwise, RankciWarning, pairwise_tests
from .planning import Plan, plan
from .ranking import (
    DominanceCycleError,
    Ranking,
    marginal_ranking,
    ranking_from_dominance,
    simultaneous_ranking,
)
from .subscores import SubScores, subscores

__version__ = "0.1.0"

__all__ = [
    "BenchmarkRankings",
    "ClusterRankings",
    "CompositeScores",
    "DominanceCycleError",
    "MeansCovariance",
    "Pairwise",
    "Plan",
    "Ranking",
    "RankciWarning",
    "ScoreIntervals",
    "Scores",
    "SubScores",
    "UnitScores",
    "adjust_pvalues",
    "composite_scores",
    "datasets",
    "informative_clusters",
    "marginal_ranking",
    "means_covariance",
    "pairwise_tests",
    "plan",
    "rank",
    "rank_benchmarks",
    "rank_by_cluster",
    "ranking_from_dominance",
    "read_scores",
    "score_intervals",
    "simultaneous_ranking",
    "subscores",
]
