"""RM-ANOVA for many models (issue 18): the trace route equals the k x k route and a plain
eigenvalue computation written out here."""

from __future__ import annotations

import numpy as np
import pytest

import rankci
import rankci.analyses.omnibus as omnibus

KEYS = ("F", "p", "ss_error", "gg_epsilon", "hf_epsilon", "p_gg", "p_hf", "eta2_partial")


def _units(n: int, k: int, seed: int) -> rankci.UnitScores:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, k)) * rng.uniform(0.5, 2.0, k) + rng.normal(size=(n, 1))
    y += rng.normal(0, 0.2, k)
    models = tuple(f"m{j:04d}" for j in range(k))
    return rankci.UnitScores(y, models, tuple(map(str, range(n))), "item", "complete", {}, False)


@pytest.mark.parametrize(("n", "k"), [(120, 40), (25, 60), (41, 41)])
def test_trace_route_equals_the_direct_route(monkeypatch, n, k):
    units = _units(n, k, seed=n + k)
    direct = omnibus.rm_anova(units)
    monkeypatch.setattr(omnibus, "_DIRECT_MAX_MODELS", 1)
    traced = omnibus.rm_anova(units)
    for key in KEYS:
        assert getattr(traced, key) == pytest.approx(getattr(direct, key), rel=1e-10), key
    for key in ("mauchly_w", "mauchly_chi2", "mauchly_p"):
        a, b = getattr(direct, key), getattr(traced, key)
        assert (np.isnan(a) and np.isnan(b)) or b == pytest.approx(a, rel=1e-8), key
    assert traced.notes == direct.notes


def test_many_models_against_eigenvalues():
    """450 models > _DIRECT_MAX_MODELS, 30 items: GG and HF from the eigenvalues of the
    double-centred cross-product matrix P S P (the nonzero eigenvalues of T = C'SC)."""
    units = _units(30, 450, seed=3)
    result = omnibus.rm_anova(units)
    y = units.values
    n, k = y.shape
    centred = y - y.mean(axis=0)
    proj = np.eye(k) - 1.0 / k
    eig = np.linalg.eigvalsh(proj @ (centred.T @ centred) @ proj)
    eig = eig[eig > 1e-9 * eig.max()]
    gg = eig.sum() ** 2 / ((k - 1) * np.sum(eig**2))
    hf = (n * (k - 1) * gg - 2) / ((k - 1) * (n - 1 - (k - 1) * gg))
    assert result.ss_error == pytest.approx(eig.sum(), rel=1e-10)
    assert result.gg_epsilon == pytest.approx(gg, rel=1e-10)
    assert result.hf_epsilon == pytest.approx(hf, rel=1e-9)
    assert np.isnan(result.mauchly_w) and "more items than models" in result.notes["mauchly"]
    grand = y.mean()
    ss_model = n * np.sum((y.mean(axis=0) - grand) ** 2)
    f = (ss_model / (k - 1)) / (eig.sum() / ((n - 1) * (k - 1)))
    assert result.F == pytest.approx(f, rel=1e-10)


def test_helmert_apply_is_the_contrast_product():
    rng = np.random.default_rng(4)
    y = rng.normal(size=(7, 9))
    expected = y @ omnibus._orthonormal_contrasts(9)
    assert omnibus._helmert_apply(y) == pytest.approx(expected, abs=1e-12)
