"""BH and BY q-values against statsmodels' multipletests (an independent implementation)."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from rankci.certify.fdr import FDR_PROCEDURES, fdr_qvalues


@pytest.mark.parametrize(("method", "sm"), [("bh", "fdr_bh"), ("by", "fdr_by")])
@pytest.mark.parametrize("m", [1, 2, 7, 50, 400])
def test_matches_statsmodels(method, sm, m):
    rng = np.random.default_rng(m)
    p = np.concatenate([rng.uniform(size=m - m // 3), rng.uniform(0, 1e-3, size=m // 3)])
    p[: m // 5] = np.round(p[: m // 5], 1)  # ties
    expected = multipletests(p, method=sm)[1]
    np.testing.assert_allclose(fdr_qvalues(p, method), expected, rtol=0, atol=1e-12)


def test_shape_kept_and_labels_say_not_fwer():
    p = np.array([[0.01, 0.2], [0.03, 0.9]])
    assert fdr_qvalues(p).shape == (2, 2)
    assert all("not FWER" in text for text in FDR_PROCEDURES.values())


def test_nan_is_outside_the_family():
    p = np.array([[np.nan, 0.01, 0.2], [0.03, np.nan, 0.5], [0.04, 0.9, np.nan]])
    q = fdr_qvalues(p, "by")
    finite = ~np.isnan(p)
    assert np.isnan(q[~finite]).all()
    np.testing.assert_allclose(q[finite], multipletests(p[finite], method="fdr_by")[1], atol=1e-12)


@pytest.mark.parametrize("bad", [[0.1, -0.1], [-0.1], [1.5]])
def test_bad_pvalues_refused(bad):
    with pytest.raises(ValueError, match="p-values"):
        fdr_qvalues(bad)


def test_unknown_method_refused():
    with pytest.raises(ValueError, match="unknown FDR method"):
        fdr_qvalues([0.1], method="holm")


def test_the_guide_section_runs_as_written():
    import doctest
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    section = guide.split("## False-discovery q-values")[1].split("\n## ")[0]
    test = doctest.DocTestParser().get_doctest(section, {}, "guide-fdr", "docs/guide.md", 0)
    assert test.examples
    result = doctest.DocTestRunner().run(test)
    assert result.failed == 0
