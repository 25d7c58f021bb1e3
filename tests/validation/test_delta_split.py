"""The δ-by-split validation study (validation/delta_split.py) in a fast version: its quick mode
runs, and with a few hundred replicates the error rates keep their claims where the plug-in (the
data reused without spending α) does not."""

from __future__ import annotations

import math
import warnings

import numpy as np
from validation_study import load_study  # tests/validation_study.py

from rankci._base import RankciWarning


def _study():
    return load_study("delta_split")


def test_error_rates_keep_their_claims_and_the_plug_in_does_not():
    study = _study()
    reps = 150
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        runs = [study.replicate(i, "noisy-reference") for i in range(reps)]
    se = math.sqrt(0.05 * 0.95 / reps)
    for name in ("split", "alpha-split"):
        assert np.mean([r[name] for r in runs]) <= 0.05 + 3 * se, name
    # the same check fails for the plug-in: the study tells a valid procedure from one that is not
    assert np.mean([r["plug-in"] for r in runs]) > 0.05 + 3 * se
