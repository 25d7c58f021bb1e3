"""The growing-board benchmarks run (quick mode) and print their rows; no timing is asserted."""

import os
import re
from pathlib import Path

from limits import run_script  # tests/limits.py: a script run under the hang guard

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script, *args):
    return run_script(BENCH / script, *args)


def _rows(out):
    return [[c.strip() for c in line.split("|")[1:-1]] for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| what")]  # fmt: skip


def test_add_model_quick_times_additions_beside_a_full_replay():
    out = _run("bench_add_model.py", "--quick", "--additions", "20")
    assert re.search(r"^load before \d+\.\d+; ", out, re.M) and "load after " in out
    rows = [r for r in _rows(out) if r[0] in ("SQLite", "PostgreSQL")]
    stores = ["SQLite"] + (["PostgreSQL"] if os.environ.get("RANKCI_TEST_POSTGRES_URL") else [])
    assert [(r[0], r[1]) for r in rows] == [(s, n) for s in stores for n in ("1,000", "10,000")], (
        out
    )
    for row in rows:
        assert row[2] == "20", row  # every addition was answered and timed
        median, p99, top = (float(v) for v in re.findall(r"[\d.]+", row[3])[:3])
        assert median <= p99 <= top, row
        assert float(row[4].removesuffix(" s")) > 0 and float(row[5]) > 0, row
    for store in stores:  # the size comparison is printed
        assert re.search(rf"^{store}: median addition at 10,000 / at 1,000 stored", out, re.M)


def test_growth_quick_ingests_single_posts_while_models_join():
    out = _run("bench_service_growth.py", "--quick")
    assert re.search(r"^load before \d+\.\d+; ", out, re.M) and "load after " in out
    assert "board: 5 -> 20 models, 800 items (50 per model count), 10,000 single-score" in out
    rows = {r[0]: r for r in _rows(out)}
    ingest = next(r for k, r in rows.items() if k.startswith("sustained ingest"))
    assert re.match(r"\*\*[\d,]+\*\* posts/s", ingest[1]), ingest
    additions = next(r for k, r in rows.items() if k.startswith("POST .../models"))
    assert "(15 additions)" in additions[0], additions  # 5 -> 20: every join timed
    rest = next(r for k, r in rows.items() if k.startswith("leaderboard read at rest at 20"))
    assert "(50 reads)" in rest[0], rest
    assert any(k.startswith("leaderboard read during the stream") for k in rows), rows
