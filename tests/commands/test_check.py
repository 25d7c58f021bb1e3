"""``rankci check``: exit codes through the real CLI, baseline runs, and the three outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from junit_schema import Schema, SchemaError
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from scipy import stats

from rankci.cli import main

SCHEMA = Schema(Path(__file__).resolve().parents[1] / "fixtures" / "junit" / "junit.xsd")


def _board(tmp_path: Path, n: int = 400, seed: int = 0) -> Path:
    """Three models with a known truth: 'big one' 0.75 > 'b-2' 0.5 = 'c [x]' 0.5."""
    rng = np.random.default_rng(seed)
    p = {"big one": 0.75, "b-2": 0.5, "c [x]": 0.5}
    rows = [
        {"model": m, "item": f"q{i:03d}", "score": float(rng.random() < prob)}
        for m, prob in p.items()
        for i in range(n)
    ]
    path = tmp_path / "board.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_exit_0_when_every_claim_is_supported(tmp_path, capsys):
    board = _board(tmp_path)
    code, out, _ = _run(
        capsys,
        "check",
        board,
        "--claim",
        "'big one' > b-2",
        "--claim",
        "'big one' is best",
        "--claim",
        "'big one' >= 'c [x]' - 0.01",
    )
    assert code == 0, out
    assert out.startswith("rankci check PASS: 3 of 3")


def test_exit_1_when_some_claim_is_not_supported(tmp_path, capsys):
    board = _board(tmp_path)
    code, out, _ = _run(
        capsys,
        "check",
        board,
        "--claim",
        "'big one' > b-2",
        "--claim",
        "b-2 > 'big one'",
        "--claim",
        "b-2 > 'c [x]'",
    )
    assert code == 1
    lines = out.splitlines()
    assert any(line.startswith("contradicted  b-2 > 'big one'") for line in lines)
    assert any(line.startswith("not decided") for line in lines)


@pytest.mark.parametrize(
    "claim, message",
    [
        ("'big one' >", "claim \"'big one' >\" at position 12"),
        ("big one > b-2", "at position 5"),  # an unquoted blank
        ("nobody > b-2", "no model 'nobody'"),
        ("'big one' in top 9", "always true"),
    ],
)
def test_exit_2_for_a_bad_claim_names_the_claim_and_position(tmp_path, capsys, claim, message):
    code, _, err = _run(capsys, "check", _board(tmp_path), "--claim", claim)
    assert code == 2
    error = err[err.index("rankci: error:") :]
    assert error.startswith("rankci: error: claim") and message in error


def test_exit_2_for_unusable_input(tmp_path, capsys):
    code, _, err = _run(capsys, "check", tmp_path / "missing.csv", "--claim", "a > b")
    assert code == 2 and "missing.csv" in err
    code, _, err = _run(capsys, "check", _board(tmp_path))
    assert code == 2 and "nothing to check" in err


def test_the_installed_command_returns_the_exit_codes(tmp_path):
    board = _board(tmp_path)
    for claim, expected in (("'big one' > b-2", 0), ("b-2 > 'big one'", 1), ("b-2 >", 2)):
        done = subprocess.run(
            [sys.executable, "-m", "rankci", "check", str(board), "--claim", claim],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
        assert done.returncode == expected, done.stderr


def test_json_gives_the_numbers_and_the_spec(tmp_path, capsys):
    board = _board(tmp_path)
    code, out, _ = _run(
        capsys, "check", board, "--claim", "'big one' >= b-2 - 0.02", "--format", "json"
    )
    payload = json.loads(out)
    assert code == 0 and payload["all_supported"] is True
    assert payload["spec"]["command"] == "check" and payload["spec"]["claim"] == [
        "'big one' >= b-2 - 0.02"
    ]
    claim = payload["claims"][0]
    frame = pd.read_csv(board)
    x = frame[frame.model == "big one"].sort_values("item")["score"].to_numpy()
    y = frame[frame.model == "b-2"].sort_values("item")["score"].to_numpy()
    reference = stats.ttest_rel(x + 0.02, y, alternative="greater").pvalue
    assert claim["pvalue"] == pytest.approx(reference, rel=1e-9)
    assert payload["family_size"] == 2  # the claim and its opposite


def test_markdown_is_a_pull_request_comment(tmp_path, capsys):
    code, out, _ = _run(
        capsys,
        "check",
        _board(tmp_path),
        "--claim",
        "b-2 ~ 'c [x]' within 0.2",
        "--format",
        "markdown",
    )
    assert code == 0
    assert out.startswith("### rankci check PASS")
    assert "| claim | result | evidence |" in out and "`b-2 ~ 'c [x]' within 0.2`" in out


def test_junit_has_one_test_case_per_claim_and_validates(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    code, out, _ = _run(
        capsys,
        "check",
        _board(tmp_path),
        "--claim",
        "'big one' > b-2",
        "--claim",
        "b-2 > 'c [x]'",
        "--format",
        "junit",
    )
    assert code == 1
    SCHEMA.validate(out)
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(out).find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["'big one' > b-2", "b-2 > 'c [x]'"]
    assert cases[0].find("failure") is None
    assert cases[1].find("failure").get("type") == "not decided"
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert suite.get("timestamp") == "2023-11-14T22:13:20"


def test_the_schema_check_rejects_broken_junit():
    good = (
        '<testsuites><testsuite name="s" package="p" id="0" timestamp="2024-01-01T00:00:00" '
        'hostname="h" tests="1" failures="0" errors="0" time="0"><properties/>'
        '<testcase name="c" classname="k" time="0"/><system-out/><system-err/>'
        "</testsuite></testsuites>"
    )
    SCHEMA.validate(good)
    broken = [
        good.replace(' tests="1"', ""),  # a required attribute
        good.replace("<properties/>", ""),  # a required element
        good.replace('time="0"/>', 'time="soon"/>'),  # a decimal
        good.replace(
            '<testcase name="c" classname="k" time="0"/>',
            '<testcase name="c" classname="k" time="0"><skipped/></testcase>',
        ),
        good.replace("2024-01-01T00:00:00", "2024-01-01"),
    ]
    for text in broken:
        with pytest.raises(SchemaError):
            SCHEMA.validate(text)


# ---------------------------------------------------------------------- --baseline
def _runs(tmp_path: Path, shift: float, seed: int = 1) -> tuple[Path, Path]:
    """Two one-model runs over two tasks; the new run lacks one item the baseline has, and has
    two the baseline lacks."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=600)
    new, old = [], []
    for i in range(600):
        task = "arith" if i < 300 else "logic"
        base = 1 / (1 + np.exp(-ability[i]))
        if i != 5:
            new.append(
                {
                    "model": "ckpt-2",
                    "item": str(i),
                    "task": task,
                    "score": float(rng.random() < min(base + shift, 1)),
                }
            )
        if i not in (598, 599):
            old.append(
                {
                    "model": "ckpt-1",
                    "item": str(i),
                    "task": task,
                    "score": float(rng.random() < base),
                }
            )
    paths = tmp_path / "new.csv", tmp_path / "old.csv"
    pd.DataFrame(new).to_csv(paths[0], index=False)
    pd.DataFrame(old).to_csv(paths[1], index=False)
    return paths


def test_baseline_tests_every_task_and_reports_items_not_shared(tmp_path, capsys):
    new, old = _runs(tmp_path, shift=0.25)
    code, out, _ = _run(capsys, "check", new, "--baseline", old, "--format", "json")
    payload = json.loads(out)
    assert code == 0
    assert [c["group"] for c in payload["claims"]] == ["arith", "logic"]
    assert all(c["result"] == "supported" for c in payload["claims"])
    tasks = payload["baseline"]["tasks"]
    arith = tasks["ckpt-2 (new) vs ckpt-1 (baseline) / arith"]
    logic = tasks["ckpt-2 (new) vs ckpt-1 (baseline) / logic"]
    assert (arith["only_new"], arith["only_baseline"], arith["only_baseline_examples"]) == (
        0,
        1,
        ["5"],
    )
    assert (logic["only_new"], logic["only_new_examples"]) == (2, ["598", "599"])
    assert arith["items_shared"] == 299 and logic["items_shared"] == 298
    assert payload["family_size"] == 4  # Holm over both tasks, each claim and its opposite
    code, out, _ = _run(capsys, "check", new, "--baseline", old)
    assert "1 only in the baseline (5)" in out and "2 only in the new run (598, 599)" in out


def test_baseline_non_inferiority_and_a_regression(tmp_path, capsys):
    new, old = _runs(tmp_path, shift=0.0)
    code, out, _ = _run(
        capsys, "check", new, "--baseline", old, "--margin", "0.2", "--format", "json"
    )
    assert code == 0, out  # the same model is not worse by 0.2 on 300 items
    new, old = _runs(tmp_path, shift=-0.3)
    code, out, _ = _run(
        capsys, "check", new, "--baseline", old, "--margin", "0.02", "--format", "json"
    )
    assert code == 1
    assert {c["result"] for c in json.loads(out)["claims"]} == {"contradicted"}


def test_baseline_with_the_same_model_names_pairs_them(tmp_path, capsys):
    new, old = _runs(tmp_path, shift=0.25)
    frame = pd.read_csv(old)
    frame["model"] = "ckpt-2"
    frame.to_csv(old, index=False)
    code, out, _ = _run(
        capsys,
        "check",
        new,
        "--baseline",
        old,
        "--claim",
        "'ckpt-2 (new)' > 'ckpt-2 (baseline)'",
        "--format",
        "json",
    )
    payload = json.loads(out)
    assert code == 0 and len(payload["claims"]) == 3


def test_baseline_refuses_unmatched_models(tmp_path, capsys):
    new, old = _runs(tmp_path, shift=0.0)
    frame = pd.read_csv(old)
    frame = pd.concat([frame, frame.assign(model="other")])
    frame.to_csv(old, index=False)
    code, _, err = _run(capsys, "check", new, "--baseline", old)
    assert code == 2 and "same model names" in err
