"""``rankci rank --q-values bh|by``: BH/BY q-values beside the FWER column, each labelled with the
error rate it controls, and the FWER output unchanged (issue 26, item 3), through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from rankci.cli import main

N_ITEMS = 60  # above exact_bound_n = 30: the plain paired t test, checked against scipy


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    gen = np.random.default_rng(7)
    means = {"a": 0.62, "b": 0.55, "c": 0.53, "d": 0.45, "e": 0.44}
    ability = gen.normal(0, 0.15, size=(N_ITEMS, 1))
    rows = []
    for model, mean in means.items():
        scores = np.clip(mean + ability[:, 0] + gen.normal(0, 0.12, N_ITEMS), 0, 1)
        rows += [(model, f"q{i:02d}", s) for i, s in enumerate(scores)]
    frame = pd.DataFrame(rows, columns=["model", "item", "score"])
    path = tmp_path_factory.mktemp("qvalues") / "scores.csv"
    frame.to_csv(path, index=False)
    return path, frame.pivot(index="item", columns="model", values="score")


def _run(tmp_path, path, *flags) -> dict:
    out = tmp_path / "out.json"
    assert main(["rank", str(path), "--format", "json", "-o", str(out), *flags]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize(("method", "statsmodels_name"), [("bh", "fdr_bh"), ("by", "fdr_by")])
def test_q_values_match_statsmodels_on_the_paired_t_pvalues(tmp_path, data, method,
                                                            statsmodels_name):
    path, wide = data
    payload = _run(tmp_path, path, "--q-values", method, "--pairs")
    table = payload["pairwise_fdr"]
    pairs = table["pairs"]
    assert len(pairs) == 5 * 4 and table["procedure"] == method
    # the p-values are the one-sided paired t tests (scipy) of H: first - second <= 0
    for row in pairs:
        expected = stats.ttest_rel(wide[row["first"]], wide[row["second"]],
                                   alternative="greater").pvalue
        assert row["pvalue"] == pytest.approx(expected, rel=1e-9, abs=1e-15)
    p = np.array([row["pvalue"] for row in pairs])
    reject, q, _, _ = multipletests(p, alpha=0.05, method=statsmodels_name)
    assert np.allclose([row[f"q_{method}"] for row in pairs], q, rtol=1e-12, atol=1e-15)
    assert [row["discovery_fdr"] for row in pairs] == reject.tolist()
    # the FWER column is the ranking's certified relation, nothing else
    certified = {tuple(pair) for pair in payload["dominance"]}
    assert {(r["first"], r["second"]) for r in pairs if r["certified_fwer"]} == certified
    assert certified  # the board certifies something, so the column is tested
    assert 0 < sum(reject) < len(pairs)


def test_each_column_says_which_error_rate_it_controls(tmp_path, data):
    path, _ = data
    table = _run(tmp_path, path, "--q-values", "bh")["pairwise_fdr"]
    assert table["controls"] == {"certified_fwer": "FWER", "q_bh": "FDR", "discovery_fdr": "FDR"}
    assert table["columns"]["certified_fwer"].startswith("FWER <= 0.05")
    assert "FDR (Benjamini-Hochberg" in table["columns"]["q_bh"]
    assert "not FWER" in table["columns"]["q_bh"]
    assert "not FWER" in table["columns"]["discovery_fdr"]


def test_the_fwer_output_is_unchanged_by_the_flag(tmp_path, data):
    path, _ = data
    plain = _run(tmp_path, path)
    with_q = _run(tmp_path, path, "--q-values", "by")
    assert "FDR" not in with_q["guarantee"] and "q-value" not in with_q["guarantee"]
    with_q.pop("pairwise_fdr")
    assert with_q["spec"] == plain["spec"]
    assert with_q == plain


def test_text_and_markdown_label_the_columns(tmp_path, data, capsys):
    path, _ = data
    assert main(["rank", str(path), "--q-values", "bh"]) == 0
    text = capsys.readouterr().out
    assert "certified_fwer: FWER <= 0.05" in text
    assert "q_bh: FDR (Benjamini-Hochberg" in text and "not FWER" in text
    rank_part, pair_part = text.split("Per-pair table", 1)
    assert "FDR" not in rank_part  # the ranking's own statements say nothing of FDR
    assert pair_part.count("\n") > 20
    assert main(["rank", str(path), "--q-values", "by", "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| first | second |" in markdown and "- q_by: FDR (Benjamini-Yekutieli" in markdown


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--q-values", "bh", "--format", "csv"], "--q-values adds a second table"),
        (["--q-values", "bh", "--by-cluster"], "--q-values is not available with --by-cluster"),
        (["--q-values", "bh", "--coverage", "marginal"], "--q-values needs --coverage "
                                                          "simultaneous"),
    ],
)
def test_combinations_it_cannot_serve_are_refused_in_flag_words(tmp_path, data, capsys, flags,
                                                                 words):
    path, _ = data
    assert main(["rank", str(path), *flags]) == 2
    assert words in capsys.readouterr().err


def test_an_unknown_procedure_is_refused(data, capsys):
    path, _ = data
    with pytest.raises(SystemExit) as stop:
        main(["rank", str(path), "--q-values", "holm"])
    assert stop.value.code == 2
    assert "--q-values" in capsys.readouterr().err
