"""The arena validation study in its quick mode: runs, prints every design, and its truths hold.

(tests/validation/test_quick_studies.py runs every script's quick mode too; this one also checks
the study's own pieces against independent computations.)
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np

PATH = Path(__file__).resolve().parents[2] / "validation" / "arena_coverage.py"


def _module():
    sys.path.insert(0, str(PATH.parent))
    spec = importlib.util.spec_from_file_location("arena_coverage", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_prints_every_design(capsys):
    study = _module()
    assert study.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for label, _, _ in study.ROWS:
        assert out.count(label) == 2  # max-t and holm


def test_true_ranks_share_the_better_rank_and_the_projection_is_a_bt_fixed_point():
    study = _module()
    assert study.true_ranks(np.array([0.5, 0.2, 0.2, -1.0])).tolist() == [1, 2, 2, 4]
    p = study.intransitive_matrix()
    s = study.projection(p)
    i, j = np.triu_indices(study.M, 1)
    # the score equations of the uniform design: sum_j (P_ij - sigmoid(s_i - s_j)) = 0 for each i
    q = 1 / (1 + np.exp(-(s[:, None] - s[None, :])))
    resid = (p - q)
    np.fill_diagonal(resid, 0)
    assert np.abs(resid.sum(axis=1)).max() < 1e-6
    assert abs(s.sum()) < 1e-12
