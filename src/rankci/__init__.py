"""rankci: how much of a model leaderboard do your data actually support?

Per-item scores of many models in; score intervals, pairwise comparisons, rank intervals, top-k
sets and tiers out, each with a stated guarantee.

>>> import rankci
>>> ranking = rankci.rank(rankci.datasets.load_mmlu_pro())   # paired t + Holm, simultaneous
"""

from rankci import datasets, sequential
from rankci.analyses.best import TauBest, tau_best
from rankci.analyses.composite import CompositeScores, composite_scores
from rankci.analyses.intervals import ScoreIntervals, score_intervals
from rankci.analyses.multibench import BenchmarkRankings, rank_benchmarks
from rankci.analyses.omnibus import Friedman, RMAnova, friedman, rm_anova
from rankci.analyses.planning import Plan, plan
from rankci.analyses.posthoc import PostHoc, nemenyi, tukey_hsd
from rankci.analyses.sidebyside import SideBySide, side_by_side
from rankci.analyses.subscores import SubScores, subscores
from rankci.certify.holm import adjust_pvalues
from rankci.certify.maxt import maxt_ranking, maxt_ranking_from_cov
from rankci.data import Scores, UnitScores
from rankci.evidence.covariance import MeansCovariance, means_covariance
from rankci.evidence.pairwise import Pairwise, RankciWarning, pairwise_tests
from rankci.io import read_scores
from rankci.leaderboard import ClusterRankings, informative_clusters, rank, rank_by_cluster
from rankci.mixed import MixedModel, mixed_model, mixed_ranking
from rankci.ranking import (
    DominanceCycleError,
    Ranking,
    marginal_ranking,
    ranking_from_dominance,
    simultaneous_ranking,
)

__version__ = "0.1.0"

__all__ = [
    "adjust_pvalues",
    "BenchmarkRankings",
    "ClusterRankings",
    "composite_scores",
    "CompositeScores",
    "datasets",
    "DominanceCycleError",
    "Friedman",
    "friedman",
    "informative_clusters",
    "marginal_ranking",
    "maxt_ranking",
    "maxt_ranking_from_cov",
    "means_covariance",
    "MeansCovariance",
    "mixed_model",
    "mixed_ranking",
    "MixedModel",
    "nemenyi",
    "Pairwise",
    "pairwise_tests",
    "Plan",
    "plan",
    "PostHoc",
    "rank",
    "rank_benchmarks",
    "rank_by_cluster",
    "RankciWarning",
    "Ranking",
    "ranking_from_dominance",
    "read_scores",
    "rm_anova",
    "RMAnova",
    "score_intervals",
    "ScoreIntervals",
    "Scores",
    "sequential",
    "side_by_side",
    "SideBySide",
    "simultaneous_ranking",
    "subscores",
    "SubScores",
    "tau_best",
    "TauBest",
    "tukey_hsd",
    "UnitScores",
]
