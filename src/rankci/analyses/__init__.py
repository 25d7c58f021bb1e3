"""The analyses beside the ranking.

* :mod:`~rankci.analyses.intervals`: score intervals with the overlap flags and the paired verdict;
* :mod:`~rankci.analyses.verdicts`: the paired verdict itself;
* :mod:`~rankci.analyses.subscores`: score intervals within each cluster;
* :mod:`~rankci.analyses.composite`: weighted composites of several score dimensions;
* :mod:`~rankci.analyses.planning`: how many items are enough;
* :mod:`~rankci.analyses.omnibus`: RM-ANOVA and Friedman;
* :mod:`~rankci.analyses.posthoc`: Tukey HSD and Nemenyi;
* :mod:`~rankci.analyses.sidebyside`: naive, paired, clustered and mixed standard errors;
* :mod:`~rankci.analyses.best`: the confidence set for the tau best models;
* :mod:`~rankci.analyses.multibench`: rank intervals on several benchmarks and overall.

Each module is imported on its own (``from rankci.analyses.omnibus import rm_anova``), or through
the top-level names in :mod:`rankci`.
"""
