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
    # the page loaded and painted, and the ratio is the two times measured
    assert 0 < paint and 0 < load and 0 < plain
    assert ratio == pytest.approx(load / plain, abs=0.051)
    assert re.search(r"load \d+\.\d before and \d+\.\d after", out)
