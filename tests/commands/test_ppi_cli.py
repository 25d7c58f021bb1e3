"""``rankci rank|scores --judge COL --human COL``: judge scores corrected by human labels (PPI),
through the command line, against the ppi-python numbers of tests/fixtures/ppi."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankci.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ppi"
EXPECTED = pd.read_csv(FIXTURES / "expected.csv").set_index(["case", "model"])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    data = pd.read_csv(FIXTURES / "data.csv", dtype={"item": str})
    path = tmp_path_factory.mktemp("ppi") / "judged.csv"
    data[data["case"] == "uniform"].drop(columns="case").to_csv(path, index=False)
    return path


def _json(tmp_path, *argv) -> dict:
    out = tmp_path / "out.json"
    assert main([*argv, "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_rank_with_human_labels_reports_ppi_python_estimates(tmp_path, table):
    payload = _json(tmp_path, "rank", str(table), "--human", "human")
    fits = {row["model"]: row for row in payload["ppi"]["fits"]}
    for model, row in fits.items():
        assert row["ppi"] == pytest.approx(EXPECTED.loc[("uniform", model), "est_slope"], rel=1e-9)
        assert row["human"] == pytest.approx(EXPECTED.loc[("uniform", model), "est_zero"])
        assert row["n_labelled"] == 60
    # the ranking's scores are the PPI means
    scores = {r["model"]: r["score"] for r in payload["models"]}
    for model, value in scores.items():
        assert value == pytest.approx(fits[model]["ppi"], rel=1e-12)


def test_classic_lam_and_per_pair(tmp_path, table):
    classic = _json(tmp_path, "rank", str(table), "--judge", "judge", "--lam", "1")
    for row in classic["ppi"]["fits"]:
        assert row["ppi"] == pytest.approx(EXPECTED.loc[("uniform", row["model"]), "est_one"])
    per_pair = _json(tmp_path, "rank", str(table), "--lam", "per-pair")
    assert per_pair["ppi"]["lam_ranking"] == "per-pair"
    assert classic["ppi"]["lam_ranking"] == "1"
    # without --lam: each pair's own lam under Holm, each model's own under max-t
    assert _json(tmp_path, "rank", str(table), "--human", "human")["ppi"]["lam_ranking"] == (
        "per-pair")
    maxt = _json(tmp_path, "rank", str(table), "--human", "human", "--multiplicity", "max-t")
    assert maxt["ppi"]["lam_ranking"] == "auto"
    assert "ppi++ t (lam per pair)" in json.dumps(per_pair)


def test_scores_shows_three_fits_side_by_side(tmp_path, table, capsys):
    assert main(["scores", str(table), "--judge", "judge", "--human", "human"]) == 0
    out = capsys.readouterr().out
    assert "three fits" in out and "effective human labels" in out
    assert "judge_lower" in out and "human_upper" in out and "ppi_lower" in out
    assert "PPI gains nothing over human-only for model 'gamma'" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--judge", "grader"], "the --judge column 'grader' is not in the table"),
        (["--human", "score"], "the --human column 'score' is not in the table"),
        (["--human", "human", "--test", "wilcoxon"], "--test t or z"),
        (["--lam", "per-pair", "--multiplicity", "max-t"], "--lam per-pair gives one test"),
        (["--lam", "big"], "--lam must be auto, per-pair or a number, got 'big'"),
        (["--inclusion-col", "nope"], "the --inclusion-col column 'nope' is not in the table"),
    ],
)
def test_bad_flags_are_named(table, capsys, flags, message):
    assert main(["rank", str(table), *flags]) != 0
    assert message in capsys.readouterr().err


def test_human_out_of_range_and_unlabelled_model(tmp_path, table, capsys):
    frame = pd.read_csv(table, dtype={"item": str})
    bad = frame.copy()
    row = int(bad.index[bad["human"].notna()][0])
    bad.loc[row, "human"] = 2.0
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    assert main(["scores", str(path), "--human", "human"]) != 0
    err = capsys.readouterr().err
    assert f"the --human column 'human' has 2 at row {row}" in err and "--bounds" in err
    none = frame.copy()
    none.loc[none["model"] == "beta", "human"] = np.nan
    none.to_csv(path, index=False)
    assert main(["rank", str(path), "--human", "human"]) != 0
    assert "model 'beta' has no human labels" in capsys.readouterr().err


def test_plan_gives_the_labels_of_the_ppi_variance_formula(tmp_path, table):
    from scipy import stats

    payload = _json(tmp_path, "plan", str(table), "--human", "human", "--target-width", "0.2")
    frame = pd.read_csv(table)
    z = stats.norm.ppf(0.975)
    N = frame["item"].nunique()
    for row in payload["labels"]:
        rows = frame[frame["model"] == row["model"]]
        lab = rows[rows["human"].notna()]
        sd = lab["human"].std(ddof=0)
        rho = np.corrcoef(lab["human"], lab["judge"])[0, 1]
        need = (1 - rho**2) * sd**2 / ((0.2 / (2 * z)) ** 2 - rho**2 * sd**2 / N)
        assert row["labels_ppi"] == int(np.ceil(need))
        assert row["labels_human_only"] == int(np.ceil(sd**2 / (0.2 / (2 * z)) ** 2))
        assert row["labels_ppi"] <= row["labels_human_only"]


def test_plan_names_an_unreachable_width(table, capsys):
    assert main(["plan", str(table), "--human", "human", "--target-width", "0.1"]) == 0
    assert "more than the 300 judged items" in capsys.readouterr().out
    assert main(["plan", str(table), "--human", "human"]) != 0
    assert "give --target-width W" in capsys.readouterr().err
