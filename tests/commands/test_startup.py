"""Start-up cost of the command line: building the parser imports no numpy, pandas or scipy, and
``rankci rank`` imports only what it uses. Checked in subprocesses (a fresh ``sys.modules``); no
timed assertions (the times are in BENCHMARKS.md, from ``benchmarks/bench_startup.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "pandas", "scipy", "matplotlib")


def _python(code: str, cwd) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=True
    )
    return done.stdout


def test_building_the_parser_imports_nothing_heavy(tmp_path):
    code = (
        "import sys, rankci.cli; rankci.cli.build_parser(); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
    assert _python(code, tmp_path).strip() == "[]"


def test_rank_imports_only_what_it_uses(tmp_path):
    path = tmp_path / "small.csv"
    rows = ["model,item,score"]
    rows += [f"{m},q{i},{(i * (k + 2)) % 3 == 0:d}" for k, m in enumerate("abc") for i in range(20)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code = (
        "import json, sys, rankci.cli\n"
        f"status = rankci.cli.main(['rank', {str(path)!r}, '--format', 'json', '-o', 'out.json'])\n"
        "print(json.dumps([status, sorted(sys.modules)]))\n"
    )
    status, modules = json.loads(_python(code, tmp_path))
    assert status == 0
    assert len(json.loads((tmp_path / "out.json").read_text())["models"]) == 3
    loaded = set(modules)
    for unused in ("matplotlib", "rankci.service", "rankci.report", "rankci.adapters"):
        assert not {m for m in loaded if m == unused or m.startswith(unused + ".")}, unused


def _pairs():
    """The choice tuples a command repeats (to keep its parser light) and the library's."""
    from rankci import method, sequential
    from rankci.analyses import aggregates, intervals, multibench, planning
    from rankci.certify import holm
    from rankci.commands import benchmarks, monitor, omnibus, plan, scores
    from rankci.evidence import wild_cluster
    from rankci.mixed import model as mixed

    return {
        "scores.METHODS": (scores.METHODS, intervals.METHODS),
        "scores.WILD_WEIGHTS": (scores.WILD_WEIGHTS, wild_cluster.WEIGHTS),
        "plan.MULTIPLICITY": (plan.MULTIPLICITY, planning.MULTIPLICITY),
        "plan.COVARIANCES": (plan.COVARIANCES, method.COVARIANCES),
        "omnibus.DF_METHODS": (omnibus.DF_METHODS, mixed.DF_METHODS),
        "omnibus.PROCEDURES": (omnibus.PROCEDURES, holm.PROCEDURES),
        "benchmarks.ACROSS": (benchmarks.ACROSS, multibench.ACROSS),
        "benchmarks.WEIGHTS": (benchmarks.WEIGHTS, multibench.WEIGHTS),
        "benchmarks.PROCEDURES": (benchmarks.PROCEDURES, holm.PROCEDURES),
        "benchmarks.AGGREGATE_FLAGS": (benchmarks.AGGREGATE_FLAGS, aggregates.AGGREGATES),
        "benchmarks.TARGETS": (benchmarks.TARGETS, aggregates.TARGETS),
        "monitor.SAMPLINGS": (monitor.SAMPLINGS, sequential.SAMPLINGS),
        "monitor.BETS": (monitor.BETS, sequential.BETS),
        "monitor.CERTIFIERS": (monitor.CERTIFIERS, sequential.CERTIFIERS),
        "monitor.RETIRE_RULES": (monitor.RETIRE_RULES, sequential.RETIRE_RULES),
    }


def test_repeated_choices_equal_the_librarys():
    for name, (command, library) in _pairs().items():
        assert tuple(command) == tuple(library), name


def test_input_formats_come_from_rankci_formats():
    from rankci import adapters, formats, io

    assert io.FORMATS is formats.FORMATS
    assert io.LAYOUTS is formats.LAYOUTS
    assert adapters.LOG_FORMATS is formats.LOG_FORMATS


def test_bench_startup_runs_every_row_once():
    """``benchmarks/bench_startup.py --repeats 1`` (as CI runs it): every command, the service's
    start included, gets a positive time and its ratio to the bare interpreter."""
    from pathlib import Path

    from limits import run_script  # tests/limits.py: a hang guard, not a time limit

    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_startup.py"
    out = run_script(bench, "--repeats", "1")
    assert "best of 1" in out and "load " in out
    rows = {}
    for line in out.splitlines()[2:]:
        *name, seconds, ratio = line.split()
        rows[" ".join(name)] = (float(seconds), float(ratio))
    assert list(rows) == [
        "python -c pass",
        "rankci --version",
        "rankci rank --help",
        'python -c "import rankci"',
        'python -c "import fastapi, uvicorn"',
        "rankci serve (until /api/health answers)",
    ]
    assert rows["python -c pass"][1] == 1.0
    assert all(seconds > 0 and ratio > 0 for seconds, ratio in rows.values())
