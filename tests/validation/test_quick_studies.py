"""Every validation study runs in its quick mode, so none can rot unnoticed (issue 16).

Each ``validation/*.py`` script -- found by glob, so a new one cannot be forgotten -- is run in a
subprocess with ``--quick`` (few replicates, small sizes, the full study's code path) and must exit
0 and print its table. The checks are deliberately loose: the numbers belong to the full studies
and their write-up in ``validation/README.md``; this only proves the scripts still run against the
current package (moved modules, renamed keywords).

Also checked, per script:

* it has a ``--quick`` flag (a script without one would run its full study until the timeout);
* it calls no deprecated rankci name (DeprecationWarnings attributed to the scripts are errors),
  so a rename is caught while the old name still works, not when it is removed;
* its quick run leaves the recorded full-study results untouched. Each script runs from its own
  copy of ``validation/`` in a temporary folder, so a quick mode that writes there is caught (and
  blamed on the right script) without touching the real results.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from validation_study import load_study  # tests/validation_study.py

VALIDATION = Path(__file__).resolve().parents[2] / "validation"
SCRIPTS = sorted(p for p in VALIDATION.glob("*.py") if not p.name.startswith("_"))  # _: helpers


def _recorded_results(folder: Path) -> dict[str, str]:
    """Content hash of every file the studies write (all but the scripts and the write-up)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix not in {".py", ".md"} and "__pycache__" not in path.parts
    }


#: What a study's quick mode prints, checked on the one quick run this file gives it. Each was a
#: second run of the same quick mode in the study's own test file (issue 30, item 5: 6-7 s apiece).
PRINTS = {
    "ppi_judges.py": ("| graded | 100 | ppi++ per-pair |", "± "),
    "delta_split.py": ("| noisy-reference | alpha-split |", "± "),
    "arena_ppi.py": ("| uniform, 300 labels | ppi |", "| stratified, ~1000 labels | judge |", "± "),
}


def _check_what_it_prints(script: Path, out: str) -> None:
    for text in PRINTS.get(script.name, ()):
        assert text in out, f"{script.name} --quick did not print {text!r}:\n{out[-3000:]}"
    if script.name == "arena_coverage.py":  # every design, for max-t and for holm
        for label, _, _ in load_study("arena_coverage").ROWS:
            assert out.count(label) == 2, (label, out[-3000:])


def test_the_validation_scripts_are_found():
    assert len(SCRIPTS) >= 10, f"expected the validation scripts in {VALIDATION}"


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_quick_mode_runs(script: Path, tmp_path: Path):
    assert "--quick" in script.read_text(), f"{script.name} has no --quick mode"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",  # the scripts import each other: leave no __pycache__
    }
    # a deprecated name is reported where it is called: in the script or a sibling it imports
    strict = [
        f"-Werror::DeprecationWarning:{name}" for name in ("__main__", *(s.stem for s in SCRIPTS))
    ]
    folder = tmp_path / "validation"
    shutil.copytree(VALIDATION, folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = _recorded_results(folder)
    try:
        done = subprocess.run(
            [sys.executable, *strict, str(folder / script.name), "--quick"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script.name} --quick hung: no end after {HANG_GUARD} s")
    assert done.returncode == 0, (
        f"{script.name} --quick exited {done.returncode}:\n{done.stderr[-4000:]}"
    )
    assert done.stdout.strip(), f"{script.name} --quick printed nothing"
    _check_what_it_prints(script, done.stdout)
    after = _recorded_results(folder)
    changed = sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
    assert not changed, f"{script.name} --quick changed the recorded results: {changed}"
