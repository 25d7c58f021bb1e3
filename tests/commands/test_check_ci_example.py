"""The CI example of docs/check.md runs as written: the tiny offline evaluation, then the gate
against the committed baseline (exit 0), with JUnit that validates."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from junit_schema import Schema
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "examples" / "ci-check.yml"


def _steps() -> dict[str, str]:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    return {step["name"]: step.get("run", "") for step in jobs["check"]["steps"] if "name" in step}


def test_the_workflow_runs_the_evaluation_then_the_gate(tmp_path):
    steps = _steps()
    evaluate = shlex.split(steps["Run the evaluation (offline)"])
    assert evaluate[:2] == ["python", "docs/examples/tiny_eval.py"]
    new = tmp_path / "new.csv"  # the workflow writes new.csv in its checkout; here, a tmp folder
    evaluate[evaluate.index("--out") + 1] = str(new)
    done = subprocess.run(
        [sys.executable, *evaluate[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stderr
    gate = steps["Check against the committed baseline"]
    assert "--baseline docs/examples/baseline.csv --margin 0.02" in gate
    args = [
        "check",
        str(new),
        "--baseline",
        "docs/examples/baseline.csv",
        "--margin",
        "0.02",
        "--format",
        "junit",
        "-o",
        str(tmp_path / "check.xml"),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "rankci", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    Schema(ROOT / "tests" / "fixtures" / "junit" / "junit.xsd").validate(
        (tmp_path / "check.xml").read_text()
    )


def test_the_workflow_installs_rankci_from_its_repository_not_a_package_index():
    import tomllib

    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    step = next(s for s in jobs["check"]["steps"] if s.get("name") == "Install rankci")
    command = shlex.split(step["run"])
    assert command[:4] == ["python", "-m", "pip", "install"] and command[4:] == ["$RANKCI_SOURCE"]
    source = step["env"]["RANKCI_SOURCE"]
    project = tomllib.loads((ROOT / source / "pyproject.toml").read_text())["project"]
    assert project["name"] == "rankci"  # the checkout the workflow runs in is rankci itself
