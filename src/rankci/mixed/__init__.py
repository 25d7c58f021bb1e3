"""The linear mixed model of a leaderboard: ``score ~ model + (1|cluster) + (1|cluster:item)``.

* :mod:`rankci.mixed.model`: :func:`mixed_model` (fit, Type-III F, estimated marginal means and
  contrasts) and :func:`mixed_ranking` (rank intervals from the contrasts);
* :mod:`rankci.mixed.reml`: the structured REML linear algebra (nested, block by cluster);
* :mod:`rankci.mixed.satterthwaite`: Satterthwaite degrees of freedom and the Type-III F test,
  as lmerTest computes them;
* :mod:`rankci.mixed.kenward_roger`: Kenward-Roger's adjusted covariance, df and scaled F, as
  pbkrtest computes them;
* :mod:`rankci.mixed.numeric`: Richardson finite differences and a bounded Newton optimiser.
"""

from rankci.mixed.model import DF_METHODS, MixedModel, mixed_model, mixed_ranking

__all__ = ["DF_METHODS", "MixedModel", "mixed_model", "mixed_ranking"]
