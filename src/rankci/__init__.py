"""rankci: how much of a model leaderboard do your data actually support?

Per-item scores of many models in; score intervals, pairwise comparisons, rank intervals, top-k
sets and tiers out, each with a stated guarantee.

The names below are imported on first use (PEP 562), so ``import rankci`` and the command line
start without loading the statistics they do not need.

>>> import rankci
>>> ranking = rankci.rank(rankci.datasets.load_mmlu_pro())   # paired tests + Holm, simultaneous
>>> ranking.spec.multiplicity
'holm'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from rankci._version import __version__

#: Where each public name lives (module, attribute).
_NAMES = {
    "adjust_pvalues": "rankci.certify.holm",
    "BenchmarkRankings": "rankci.analyses.multibench",
    "Certification": "rankci.certify.certification",
    "ClusterRankings": "rankci.leaderboard",
    "composite_scores": "rankci.analyses.composite",
    "CompositeScores": "rankci.analyses.composite",
    "DominanceCycleError": "rankci.ranking",
    "Friedman": "rankci.analyses.omnibus",
    "friedman": "rankci.analyses.omnibus",
    "informative_clusters": "rankci.leaderboard",
    "certify_holm": "rankci.certify.holm",
    "certify_maxt": "rankci.certify.maxt",
    "maxt_ranking_from_cov": "rankci.certify.maxt",
    "means_covariance": "rankci.evidence.covariance",
    "MeansCovariance": "rankci.evidence.covariance",
    "MethodSpec": "rankci.method",
    "MonitorSpec": "rankci.sequential.spec",
    "mixed_model": "rankci.mixed.model",
    "mixed_ranking": "rankci.mixed.model",
    "MixedModel": "rankci.mixed.model",
    "nemenyi": "rankci.analyses.posthoc",
    "Pairwise": "rankci.evidence.pairwise",
    "pairwise_tests": "rankci.evidence.pairwise",
    "Plan": "rankci.analyses.planning",
    "plan": "rankci.analyses.planning",
    "PostHoc": "rankci.analyses.posthoc",
    "rank": "rankci.leaderboard",
    "rank_benchmarks": "rankci.analyses.multibench",
    "rank_by_cluster": "rankci.leaderboard",
    "RankciWarning": "rankci._base",
    "Ranking": "rankci.ranking",
    "ranking_from_dominance": "rankci.ranking",
    "read_scores": "rankci.io",
    "rm_anova": "rankci.analyses.omnibus",
    "RMAnova": "rankci.analyses.omnibus",
    "score_intervals": "rankci.analyses.intervals",
    "ScoreIntervals": "rankci.analyses.intervals",
    "Scores": "rankci.data",
    "side_by_side": "rankci.analyses.sidebyside",
    "SideBySide": "rankci.analyses.sidebyside",
    "subscores": "rankci.analyses.subscores",
    "SubScores": "rankci.analyses.subscores",
    "tau_best": "rankci.analyses.best",
    "TauBest": "rankci.analyses.best",
    "tukey_hsd": "rankci.analyses.posthoc",
    "UnitScores": "rankci.data",
}
_SUBPACKAGES = ("datasets", "sequential")

__all__ = sorted([*_NAMES, *_SUBPACKAGES], key=str.lower)


def __getattr__(name: str):
    if name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"rankci.{name}")
    else:
        raise AttributeError(f"module 'rankci' has no attribute {name!r}")
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from rankci import datasets, sequential
    from rankci._base import RankciWarning
    from rankci.analyses.best import TauBest, tau_best
    from rankci.analyses.composite import CompositeScores, composite_scores
    from rankci.analyses.intervals import ScoreIntervals, score_intervals
    from rankci.analyses.multibench import BenchmarkRankings, rank_benchmarks
    from rankci.analyses.omnibus import Friedman, RMAnova, friedman, rm_anova
    from rankci.analyses.planning import Plan, plan
    from rankci.analyses.posthoc import PostHoc, nemenyi, tukey_hsd
    from rankci.analyses.sidebyside import SideBySide, side_by_side
    from rankci.analyses.subscores import SubScores, subscores
    from rankci.certify.certification import Certification
    from rankci.certify.holm import adjust_pvalues, certify_holm
    from rankci.certify.maxt import certify_maxt, maxt_ranking_from_cov
    from rankci.data import Scores, UnitScores
    from rankci.evidence.covariance import MeansCovariance, means_covariance
    from rankci.evidence.pairwise import Pairwise, pairwise_tests
    from rankci.io import read_scores
    from rankci.leaderboard import ClusterRankings, informative_clusters, rank, rank_by_cluster
    from rankci.method import MethodSpec
    from rankci.mixed.model import MixedModel, mixed_model, mixed_ranking
    from rankci.ranking import DominanceCycleError, Ranking, ranking_from_dominance
    from rankci.sequential.spec import MonitorSpec
