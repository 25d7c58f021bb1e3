"""Pairwise evidence: the second stage of the flow (units -> evidence).

* :mod:`rankci.evidence.pairwise`: one-sided paired tests for every ordered pair of models
  -> :class:`Pairwise`, dispatched through :data:`rankci.registry.TEST_REGISTRY` to one module
  per test: :mod:`~rankci.evidence.ttest` (t, z), :mod:`~rankci.evidence.wilcoxon`,
  :mod:`~rankci.evidence.yuen`, :mod:`~rankci.evidence.sign`, :mod:`~rankci.evidence.resampling`
  (bootstrap, permutation), on the shared :mod:`~rankci.evidence.moments`;
* :mod:`rankci.evidence.studentized_range`: the studentized range and Tukey-adjusted p-values;
* :mod:`rankci.evidence.covariance`: the sandwich covariance of the model means (item or
  cluster-robust, with small-sample forms) -> :class:`MeansCovariance`;
* :mod:`rankci.evidence.bootstrap`: the resampling engine (multiplicity matrices, bootstrap means
  as matrix products, percentile and BCa bounds).
"""

from rankci.evidence.covariance import MeansCovariance, means_covariance, units_covariance
from rankci.evidence.pairwise import TESTS, Pairwise, pairwise_tests

__all__ = ["TESTS", "MeansCovariance", "Pairwise", "means_covariance", "pairwise_tests",
           "units_covariance"]
