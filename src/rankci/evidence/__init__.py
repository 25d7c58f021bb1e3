"""Pairwise evidence: the second stage of the flow (units -> evidence).

* :mod:`rankci.evidence.pairwise`: one-sided paired tests for every ordered pair of models
  (t, z, Wilcoxon, Yuen, sign, bootstrap, permutation) -> :class:`Pairwise`;
* :mod:`rankci.evidence.covariance`: the sandwich covariance of the model means (item or
  cluster-robust, with small-sample forms) -> :class:`MeansCovariance`;
* :mod:`rankci.evidence.bootstrap`: the resampling engine (multiplicity matrices, bootstrap means
  as matrix products, percentile and BCa bounds).
"""

from rankci.evidence.covariance import MeansCovariance, means_covariance, units_covariance
from rankci.evidence.pairwise import TESTS, Pairwise, pairwise_tests

__all__ = ["TESTS", "MeansCovariance", "Pairwise", "means_covariance", "pairwise_tests",
           "units_covariance"]
