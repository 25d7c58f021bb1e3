"""The δ-by-split validation study (validation/delta_split.py) in a fast version: its quick mode
runs, and with a few hundred replicates the error rates keep their claims where the plug-in (the
data reused without spending α) does not."""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import numpy as np

from rankci._base import RankciWarning

VALIDATION = Path(__file__).resolve().parents[2] / "validation"


def _study():
    sys.path.insert(0, str(VALIDATION))  # the script imports validation/_results.py
    try:
        spec = importlib.util.spec_from_file_location("delta_split", VALIDATION / "delta_split.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(VALIDATION))
    return module


def test_quick_mode_prints_its_table(capsys):
    assert _study().main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| noisy-reference | alpha-split |" in out and "± " in out


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
