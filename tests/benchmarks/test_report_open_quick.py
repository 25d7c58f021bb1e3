"""The quick mode of benchmarks/bench_report_open.py (a report opened in headless Chromium)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import require_chromium
from limits import run_script

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.browser
def test_report_open_quick_times_the_page_and_its_plain_baseline():
    require_chromium()
    out = run_script(BENCH / "bench_report_open.py", "--quick")
    (row,) = [line for line in out.splitlines() if line.startswith("| 30 × 300")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    load = float(cells[3].split()[0])
    paint, plain, ratio = float(cells[4]), float(cells[5]), float(cells[6])
    # the page loaded and painted, and the ratio is the two times measured: the times are
    # printed to 3 decimals and the ratio to 1, so the ratio lies within what the rounded
    # times allow (a plain load of 0.038 s is itself only known to +-0.0005 s)
    assert 0 < paint and 0 < load and 0 < plain
    half = 0.0005
    lowest = (load - half) / (plain + half)
    highest = (load + half) / max(plain - half, 1e-12)
    assert lowest - 0.05 - 1e-9 <= ratio <= highest + 0.05 + 1e-9
    assert re.search(r"load \d+\.\d before and \d+\.\d after", out)
