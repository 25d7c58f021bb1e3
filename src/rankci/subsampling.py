"""Seed 000's subsampling helpers: k items drawn per cluster, and the record of a subsample.

:meth:`rankci.Scores.subset` uses them (``items_per_cluster=k``, ``prompts=`` a subset N_T of
the prompt variants, ``items=``); what a subsample kept and how it was drawn is recorded in the
new table's ``notes["excluded"]["subsample"]``, so every result computed from it says so. This
module needs numpy only (it knows nothing of :class:`~rankci.Scores`).

References
----------
Knuth, D. E. (1997). The Art of Computer Programming, Vol. 2: Seminumerical Algorithms, 3rd
ed., Sec. 3.4.2 (random sampling and shuffling). Addison-Wesley, Reading, MA.
"""

from __future__ import annotations

import numpy as np

__all__ = ["draw_items_per_cluster"]


def draw_items_per_cluster(
    item_cluster: np.ndarray, k: int, generator: np.random.Generator
) -> np.ndarray:
    r"""Which items to keep: k items drawn uniformly without replacement in every cluster.

    Every candidate item i (in the order given) gets a key :math:`u_i` from
    ``generator.random(n_items)``; in each cluster the k items with the smallest keys are kept
    (all of them where the cluster has k items or fewer). Sorting i.i.d. uniform keys gives a
    uniformly random order, so each k-subset of a cluster is equally likely, and the clusters'
    draws are independent.

    Parameters
    ----------
    item_cluster : ndarray of int, shape (n_items,)
        Each candidate item's cluster code.
    k : int
        Items to keep per cluster (>= 1).
    generator : numpy.random.Generator
        The draws (one ``random(n_items)`` call).

    Returns
    -------
    numpy.ndarray of bool, shape (n_items,)

    Examples
    --------
    >>> import numpy as np
    >>> keep = draw_items_per_cluster(np.array([0, 0, 0, 1, 1, 2]), 2, np.random.default_rng(0))
    >>> np.bincount(np.array([0, 0, 0, 1, 1, 2])[keep]).tolist()
    [2, 2, 1]
    """
    item_cluster = np.asarray(item_cluster)
    keys = generator.random(item_cluster.size)
    order = np.lexsort((keys, item_cluster))
    sorted_clusters = item_cluster[order]
    first = np.r_[True, sorted_clusters[1:] != sorted_clusters[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))
    within = np.arange(order.size) - start  # 0 for the smallest key of each cluster
    keep = np.zeros(item_cluster.size, dtype=bool)
    keep[order[within < k]] = True
    return keep
