"""Every docstring example in the rankci package runs and prints what it shows.

One test per module under ``src/rankci``: the module is imported (an import failure is a test
failure, never a silent skip) and the examples found by :class:`doctest.DocTestFinder` in its
docstrings run with ELLIPSIS and NORMALIZE_WHITESPACE.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import rankci

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# ``python -m rankci`` entry point: importing it runs the command line, so its source is checked
# for examples instead of importing it.
SCRIPTS = {"rankci.__main__"}

# Modules that need an optional dependency; they are skipped only when that dependency is
# genuinely not installed (module -> top-level package it needs).
OPTIONAL = {
    "rankci.adapters.inspect_stopping": "inspect_ai",
}


def _module_names() -> list[str]:
    names = ["rankci"]
    for info in pkgutil.walk_packages(rankci.__path__, "rankci."):
        names.append(info.name)
    return sorted(set(names))


MODULES = _module_names()


def test_modules_found():
    # walk_packages must see the whole package, not only its top level.
    assert len(MODULES) > 20
    assert "rankci.evidence.pairwise" in MODULES
    assert "rankci.sequential.wealth" in MODULES


# two examples show a call on toy data, where rankci rightly cautions (composite_scores: model b
# has 2 scores of 0.7; nemenyi: Friedman does not reject): narrow filters, so any other warning an
# example raises is still printed
@pytest.mark.filterwarnings(
    r"ignore:1 zero-width normal interval\(s\) \(b\); the first. all 2 scores are 0.7"
    ":rankci.RankciWarning"
)
@pytest.mark.filterwarnings(
    r"ignore:Nemenyi. Friedman's test did not reject at alpha = 0.05 \(p = 0.247\)"
    ":rankci.RankciWarning"
)
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in SCRIPTS:
        spec = importlib.util.find_spec(name)
        with open(spec.origin, encoding="utf-8") as handle:
            assert ">>>" not in handle.read(), f"{name} has examples but cannot be imported"
        return
    needs = OPTIONAL.get(name)
    if needs is not None and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{name} needs the optional dependency {needs!r}, which is not installed")
    module = importlib.import_module(name)  # an ImportError fails the test
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report: list[str] = []
    failed = 0
    for test in sorted(finder.find(module), key=lambda t: t.name):
        if test.examples:
            failed += runner.run(test, out=report.append).failed
    assert failed == 0, "".join(report)
