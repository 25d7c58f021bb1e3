"""``--exact-bound-n``: the opt-in exact floor of the t and z tests for few units (off by default
since issue 25, item 3), on the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.cli import main


@pytest.fixture
def small_board(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.beta(2.0, 8.0, (20, 3)) * 0.3 + np.array([0.7, 0.35, 0.0])
    frame = rankci.Scores.from_matrix(x, models=["a", "b", "c"]).to_frame()
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False)
    return path, pd.read_csv(path, dtype={"model": str, "item": str})


def _rank_json(path, tmp_path, *flags) -> dict:
    out = tmp_path / "rank.json"
    assert main(["rank", str(path), "--format", "json", "-o", str(out), *flags]) == 0
    return json.loads(out.read_text())


# 20 items: the subject is the flag's plumbing; the t's small-sample caution is expected
@pytest.mark.filterwarnings("ignore:.* item units of continuous:rankci.RankciWarning")
def test_the_flag_reaches_the_library_and_is_recorded(small_board, tmp_path):
    path, frame = small_board
    scores = rankci.Scores.from_frame(frame)
    widths = []
    for flags, keyword in ((("--exact-bound-n", "30"), 30), ((), 0)):
        payload = _rank_json(path, tmp_path, *flags)
        assert payload["test_options"]["exact_bound_n"] == keyword
        assert payload["test_options"]["test_rule"] == "t"  # continuous scores: the t
        # 20 continuous items: the default warns (in the JSON too); under the floor it does not
        assert ("small_sample_warning" in payload["test_options"]) == (keyword == 0)
        expected = rankci.rank(scores, exact_bound_n=keyword)
        rows = {row["model"]: row for row in payload["models"]}
        assert [rows[m]["rank_lower"] for m in expected.models] == expected.lower.tolist()
        assert [rows[m]["rank_upper"] for m in expected.models] == expected.upper.tolist()
        widths.append(int((expected.upper - expected.lower).sum()))
    # 20 units: the floored tests certify less than the plain t (wider intervals), never more
    assert widths[0] > widths[1]


def test_a_bad_value_names_the_flag(small_board, capsys):
    path, _ = small_board
    assert main(["rank", str(path), "--exact-bound-n", "-1"]) == 2
    err = capsys.readouterr().err
    assert "rankci: error: --exact-bound-n must be an integer >= 0, got -1" in err
    assert "exact_bound_n" not in err
