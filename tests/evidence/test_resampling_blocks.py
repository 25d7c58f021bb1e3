"""The bootstrap and sign-flip tests in blocks of resamples (issue 30, item 2): bit-identical.

The expected p-values were written by the code before the blocks were bounded by memory
(``tests/fixtures/resampling/make_expected.py``, run on resampling.py as of commit ab179e4, which
drew all resamples of these small cases in one block). The new code must give them bit for bit,
at its default block size and at blocks of a few resamples (the draws of consecutive blocks are
consecutive rows of one stream).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from rankci.evidence import resampling

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "resampling"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _maker():
    spec = importlib.util.spec_from_file_location("make_expected", FIXTURES / "make_expected.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("cells", [None, 7 * 25, 3 * 80])  # default; a few resamples per block
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_pvalues_bit_identical_to_before(key, cells, monkeypatch):
    if cells is not None:  # blocks of a few resamples: by pairs, then by units
        monkeypatch.setattr(resampling, "_CHUNK_CELLS", cells)
        monkeypatch.setattr(resampling, "_CHUNK_WEIGHT_CELLS", cells)
    maker = _maker()
    name, test, delta = key.split("/")
    x, missing = maker.cases()[name]
    got = maker.run(name, x, missing, test, float(delta))
    assert np.array_equal(np.array(got), np.array(EXPECTED[key]))


def test_the_blocks_are_bounded_by_cells_not_by_reps():
    # MMLU-Pro's shape at the default reps for 32 models: the old rule gave blocks of 19,531
    # resamples x 12,032 items (1.9 GB of weights)
    rows = resampling._block_rows(19_839, 32, 12_032)
    assert rows * 12_032 <= resampling._CHUNK_WEIGHT_CELLS
    assert rows * 32 * 32 <= resampling._CHUNK_CELLS
    assert resampling._block_rows(5, 3, 10) == 5
