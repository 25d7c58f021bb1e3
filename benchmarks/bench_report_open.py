"""How long the HTML report takes to open in a browser (issue 30, target: under 2 s at 300 models).

Each page is built by a fresh ``python -m rankci report`` and opened from disk in a real headless
Chromium (Debian's ``chromium`` through Playwright, as the browser tests do), a new tab each
time, ``--repeat`` times. Times come from the page's own Navigation Timing: ``load`` is
``loadEventEnd`` (every inline image decoded and laid out, every script run) and ``paint`` is the
first contentful paint, both from the start of the navigation. The baseline, opened in the same
browser in the same run, is a plain page of the same number of bytes: one ``<pre>`` of text, no
images, no scripts, no tables; it is what the browser needs just to read and lay out that many
bytes, so ``÷ plain`` is the cost of what the report adds.

Boards are synthetic binary scores (``bench_large._board``): 300 models × 1,000 items (the issue's
case) and MMLU-Pro as bundled.

Run:  python benchmarks/bench_report_open.py            (300 × 1,000 and MMLU-Pro, best of 3)
      python benchmarks/bench_report_open.py --quick    (30 × 300, once; CI)
"""

from __future__ import annotations

import argparse
import datetime
import html
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_large_boards  # this folder: the synthetic boards of the large-boards benchmark

TARGET_S = 2.0

#: Navigation Timing of the page just loaded, in seconds from the navigation's start.
TIMING = """() => new Promise((resolve) => {
  const nav = performance.getEntriesByType('navigation')[0];
  const done = (paint) => resolve({load: nav.loadEventEnd / 1000, paint: paint});
  new PerformanceObserver((list) => {
    const fcp = list.getEntriesByName('first-contentful-paint')[0];
    if (fcp) done(fcp.startTime / 1000);
  }).observe({type: 'paint', buffered: true});
  setTimeout(() => done(null), 2000);
})"""

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    import shutil

    for name in (os.environ.get("RANKCI_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise SystemExit("Chromium not found: install it with `apt-get install chromium` (Debian)")


def _report(data: str, page: str) -> float:
    """Build the page with a fresh ``python -m rankci report``; its wall time."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rankci", "report", data, "-o", page],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"rankci report {data} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def _plain(size: int, path: str) -> None:
    """A page of ``size`` bytes: one ``<pre>`` of plain text."""
    head, tail = (
        "<!doctype html><html><head><meta charset='utf-8'><title>plain</title></head>",
        ("</pre></body></html>"),
    )
    head += "<body><pre>"
    line = html.escape("model m000 item i0000 score 1.0 interval [0.5, 0.7]") + "\n"
    body = line * ((size - len(head) - len(tail)) // len(line) + 1)
    Path(path).write_text((head + body)[: size - len(tail)] + tail, encoding="utf-8")


def _open(context, path: str, repeat: int) -> dict:
    """Best and median load / paint of ``path`` over ``repeat`` fresh tabs."""
    loads, paints = [], []
    url = Path(path).resolve().as_uri()
    for _ in range(repeat):
        page = context.new_page()
        page.goto(url, wait_until="load")
        timing = page.evaluate(TIMING)
        page.close()
        loads.append(timing["load"])
        if timing["paint"] is not None:
            paints.append(timing["paint"])
    return {
        "load": min(loads),
        "load_median": statistics.median(loads),
        "paint": min(paints) if paints else float("nan"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="30 x 300 once (CI)")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(30, 300)] if args.quick else [(300, 1_000)]
        inputs = []
        for models, items in cases:
            path = os.path.join(tmp, f"b{models}.parquet")
            bench_large_boards._board(models, items, path, dict(os.environ))
            inputs.append((f"{models:,} × {items:,} (synthetic)", path))
        if not args.quick:
            import rankci.datasets

            bundled = Path(rankci.datasets.__file__).with_name("mmlu_pro.parquet")
            inputs.append(("MMLU-Pro (32 × 12,032)", str(bundled)))
        pages = []
        for label, data in inputs:
            page = os.path.join(tmp, f"report{len(pages)}.html")
            build = _report(data, page)
            plain = os.path.join(tmp, f"plain{len(pages)}.html")
            _plain(os.path.getsize(page), plain)
            pages.append((label, page, plain, build))
        with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=_chromium(), headless=True, args=FLAGS
            )
            try:
                _open(context, pages[0][2], 1)  # the browser's own start-up, not timed
                for label, page, plain, build in pages:
                    got = _open(context, page, repeat)
                    base = _open(context, plain, repeat)
                    rows.append((label, os.path.getsize(page) / 1e6, build, got, base))
            finally:
                context.close()
    load_after = os.getloadavg()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"Measured {now} by `python benchmarks/bench_report_open.py"
        f"{' --quick' if args.quick else ''}`, {os.cpu_count()} cores, {platform.machine()}, "
        f"Python {platform.python_version()}, load {load_before[0]:.1f} before and "
        f"{load_after[0]:.1f} after; best of {repeat} fresh tabs (median in brackets)."
    )
    print()
    print(
        "| data | page (MB) | build (s) | load (s) | first paint (s) | plain page load (s) "
        "| ÷ plain | target < 2 s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for label, size, build, got, base in rows:
        met = "met" if got["load"] < TARGET_S else "**not met**"
        print(
            f"| {label} | {size:.1f} | {build:.2f} | {got['load']:.3f} ({got['load_median']:.3f})"
            f" | {got['paint']:.3f} | {base['load']:.3f} | {got['load'] / base['load']:.1f} "
            f"| {met} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
