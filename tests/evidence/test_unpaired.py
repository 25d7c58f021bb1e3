"""The unmatched-samples z test against statsmodels' ztest (usevar='unequal') and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.weightstats import ztest

from rankci.evidence.unpaired import unpaired_z


@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_matches_statsmodels_ztest(delta):
    rng = np.random.default_rng(3)
    samples = [
        rng.normal(loc, sd, size=n) for loc, sd, n in [(0.5, 1, 30), (0.2, 2, 45), (0, 0.5, 12)]
    ]
    z, p = unpaired_z(samples, delta=delta)
    for a in range(3):
        for b in range(3):
            if a == b:
                assert math.isnan(z[a, b])
                continue
            ez, ep = ztest(
                samples[a], samples[b], value=delta, alternative="larger", usevar="unequal"
            )
            assert z[a, b] == pytest.approx(ez, abs=1e-12)
            assert p[a, b] == pytest.approx(ep, abs=1e-12)


def test_direct_formula_small_case():
    a, b = [1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0]
    se = math.sqrt(0.25 / 4 + (1 / 3) / 3)
    z, _ = unpaired_z([a, b])
    assert z[0, 1] == pytest.approx((0.75 - 1 / 3) / se, abs=1e-12)
    assert z[1, 0] == pytest.approx(-(0.75 - 1 / 3) / se, abs=1e-12)


def test_too_few_or_non_finite_refused():
    with pytest.raises(ValueError, match="model 1 has 1 score"):
        unpaired_z([[1.0, 2.0], [1.0]])
    with pytest.raises(ValueError, match="model 0 has a non-finite"):
        unpaired_z([[1.0, np.nan], [1.0, 2.0]])


def test_zero_variance_gives_signed_infinity():
    z, p = unpaired_z([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    assert z[0, 1] == np.inf and p[0, 1] == 0.0
    assert z[1, 0] == -np.inf and p[1, 0] == 1.0
    assert math.isnan(z[0, 2])
