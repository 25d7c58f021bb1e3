"""The small-sample rule on the study's grid (issue 25, item 3), in its quick mode.

``validation/small_sample_rule.py --quick`` draws the tied designs (simulated 0/1 items, the
tiny-design study's worst ties, ChemBench items and ten-item cluster means) at n = 5, 20 and 31
and computes every test's level; its ``auto`` column is rankci's default test (checked by the
study to equal the exact McNemar test on 0/1 units and the plain t elsewhere). Here: where the
rule claims validity (0/1 units at every n; unit means and continuous items from 25 units), the
per-pair level and Holm's family-wise error of ``auto`` stay within alpha + 2 Monte-Carlo SE.
The one case the rule does not claim (continuous single items below 25 units) warns instead
(``tests/evidence/test_small_sample_rule.py``).
"""

from __future__ import annotations

import json

import pytest
from validation_study import load_study  # tests/validation_study.py


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    study = load_study("small_sample_rule")
    out = tmp_path_factory.mktemp("grid") / "quick.json"
    assert study.main(["--quick", "--out", str(out)]) == 0
    return json.loads(out.read_text())["rows"]


def _claimed(row: dict) -> bool:
    """Designs where the rule claims its level: 0/1 units, unit means, or n >= 25."""
    continuous_items = row["design"].startswith("beta")
    return not continuous_items or row["n"] >= 25


def test_auto_keeps_the_level_on_the_tied_designs(rows):
    ties = [r for r in rows if r["test"] == "auto" and r["kind"] == "tie" and _claimed(r)]
    assert len({r["design"] for r in ties}) >= 5 and {r["n"] for r in ties} == {5, 20, 31}
    for r in ties:
        where = f"{r['family']} / {r['design']} / n = {r['n']}"
        assert r["fwer"] <= 0.05 + 2 * r["fwer_se"] + 1e-12, where
        assert r["level"] <= 0.05 + 2 * r["level_se"] + 1e-12, where


def test_auto_has_the_power_the_floor_lacks(rows):
    gaps = [
        r for r in rows if r["kind"] == "gap" and r["n"] == 20 and "cluster means" in r["family"]
    ]
    auto = {r["design"]: r["power"] for r in gaps if r["test"] == "auto"}
    floor = {r["design"]: r["power"] for r in gaps if r["test"] == "t + floor"}
    assert auto and all(floor[d] == 0.0 for d in auto)
    assert max(auto.values()) > 0.5
