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
from .mixed import MixedModel, mixed_model, mixed_ranking
from .multiplicity import adjust_pvalues
from .omnibus import Friedman, RMAnova, friedman, rm_anova
from .pairwise import Pairwise, RankciWarning, pairwise_tests
from .posthoc import PostHoc, nemenyi, tukey_hsd
from .ranking import (
    DominanceCycleError,
    Ranking,
    marginal_ranking,
    ranking_from_dominance,
    simultaneous_ranking,
)
from .sidebyside import SideBySide, side_by_side

__version__ = "0.1.0"

__all__ = [
    "ClusterRankings",
    "DominanceCycleError",
    "Friedman",
    "MixedModel",
    "PostHoc",
    "RMAnova",
    "SideBySide",
    "Pairwise",
    "Ranking",
    "RankciWarning",
    "Scores",
    "UnitScores",
    "adjust_pvalues",
    "datasets",
    "friedman",
    "informative_clusters",
    "marginal_ranking",
    "mixed_model",
    "mixed_ranking",
    "nemenyi",
    "pairwise_tests",
    "rank",
    "rank_by_cluster",
    "ranking_from_dominance",
    "read_scores",
    "rm_anova",
    "side_by_side",
    "simultaneous_ranking",
    "tukey_hsd",
]
