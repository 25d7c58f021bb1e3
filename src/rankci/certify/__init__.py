"""Certify: the third stage of the flow (pairwise evidence -> certified dominances).

Every fixed-sample certifier returns a :class:`Certification` (certified dominances D, or each
model's marginal bounds), and :meth:`Certification.ranking` counts them into a Ranking:

* :mod:`rankci.certify.holm`: Holm and Bonferroni over one-sided paired p-values
  (:func:`certify_holm`; :func:`adjust_pvalues`, :func:`reject`);
* :mod:`rankci.certify.maxt`: the max-t step-down over studentized mean differences
  (:func:`certify_maxt`; :func:`maxt_ranking_from_cov` from given means and covariance);
* :mod:`rankci.certify.fdr`: BH and BY q-values (:func:`fdr_qvalues`), which control the false
  discovery rate, not the FWER; no certified dominance is ever derived from them;
* :mod:`rankci.certify.stepdown`: the Romano-Wolf machinery behind max-t (null draws, the
  step-down, critical values).

The anytime-valid certifiers (e-values, weak orders) are in :mod:`rankci.sequential.certify`.
"""

from rankci.certify.certification import Certification
from rankci.certify.fdr import FDR_PROCEDURES, fdr_qvalues
from rankci.certify.holm import PROCEDURES, adjust_pvalues, certify_holm, reject
from rankci.certify.maxt import certify_maxt, maxt_ranking_from_cov

__all__ = [
    "PROCEDURES",
    "FDR_PROCEDURES",
    "Certification",
    "adjust_pvalues",
    "certify_holm",
    "certify_maxt",
    "fdr_qvalues",
    "maxt_ranking_from_cov",
    "reject",
]
