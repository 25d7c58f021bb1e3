"""The arena validation study in its quick mode: runs, prints every design, and its truths hold.

(tests/validation/test_quick_studies.py runs every script's quick mode too; this one also checks
the study's own pieces against independent computations.)
"""

import numpy as np
from validation_study import load_study  # tests/validation_study.py


def _module():
    return load_study("arena_coverage")


def test_true_ranks_share_the_better_rank_and_the_projection_is_a_bt_fixed_point():
    study = _module()
    assert study.true_ranks(np.array([0.5, 0.2, 0.2, -1.0])).tolist() == [1, 2, 2, 4]
    p = study.intransitive_matrix()
    s = study.projection(p)
    i, j = np.triu_indices(study.M, 1)
    # the score equations of the uniform design: sum_j (P_ij - sigmoid(s_i - s_j)) = 0 for each i
    q = 1 / (1 + np.exp(-(s[:, None] - s[None, :])))
    resid = p - q
    np.fill_diagonal(resid, 0)
    assert np.abs(resid.sum(axis=1)).max() < 1e-6
    assert abs(s.sum()) < 1e-12
