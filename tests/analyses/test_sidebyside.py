"""Naive / paired / clustered / mixed side-by-side table against R's sandwich estimators, and the
``rankci omnibus`` command's JSON schema."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.analyses.sidebyside import mean_covariances, side_by_side
from rankci.cli import main

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"


def load(name: str) -> rankci.Scores:
    return rankci.Scores.from_frame(pd.read_csv(ORACLES / f"{name}.csv.gz"), cluster="cluster")


def covariance(name: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(ORACLES / name / f"means_cov_{kind}.csv")
    return frame["mean"].to_numpy(), frame.iloc[:, 2:].to_numpy()


@pytest.mark.parametrize("name", ["small", "medium", "unbalanced"])
def test_covariances_match_sandwich_vcovcl(name):
    scores = load(name)
    means, naive, paired, clustered = mean_covariances(scores, small_sample=False)
    _, _, _, adjusted = mean_covariances(scores, small_sample=True)
    for mine, kind in (
        (paired, "item_HC0"),
        (clustered, "cluster_HC0"),
        (adjusted, "cluster_HC0_cadj"),
    ):
        x, sigma = covariance(name, kind)
        assert means == pytest.approx(x, rel=1e-12)
        assert mine == pytest.approx(sigma, rel=1e-10)
    desc = pd.read_csv(ORACLES / name / "descriptives.csv")
    n = desc.n.to_numpy()
    assert np.diag(naive) == pytest.approx(desc.sd.to_numpy() ** 2 * (n - 1) / n / n, rel=1e-10)
    assert np.count_nonzero(naive - np.diag(np.diag(naive))) == 0


def test_table_columns_follow_the_covariances():
    scores = load("unbalanced")
    model = rankci.mixed_model(scores)
    table = side_by_side(scores, mixed=model).to_frame()
    _, item = covariance("unbalanced", "item_HC0")
    _, cluster = covariance("unbalanced", "cluster_HC0_cadj")
    j = table["first"].str[1:].astype(int).to_numpy() - 1
    l = table["second"].str[1:].astype(int).to_numpy() - 1
    assert table.se_paired.to_numpy() == pytest.approx(
        np.sqrt(item[j, j] + item[l, l] - 2 * item[j, l]), rel=1e-10
    )
    assert table.se_clustered.to_numpy() == pytest.approx(
        np.sqrt(cluster[j, j] + cluster[l, l] - 2 * cluster[j, l]), rel=1e-10
    )
    assert (table.df_clustered == 29).all()  # 30 clusters
    assert table.se_mixed.to_numpy() == pytest.approx(model.contrasts.se.to_numpy(), rel=1e-12)
    assert table.ratio_clustered.to_numpy() == pytest.approx(
        (table.se_clustered / table.se_naive).to_numpy(), rel=1e-12
    )
    assert (table.disagree == (table.significant_naive != table.significant_clustered)).all()


def test_paired_column_is_the_paired_t_with_hc0_scaling():
    """On complete data the paired SE is R's paired-t SE times sqrt((n-1)/n) (HC0)."""
    table = side_by_side(load("small"), mixed=False).to_frame()
    raw = pd.read_csv(ORACLES / "small" / "pairwise_raw_stats.csv")
    n = 400
    assert table.estimate.to_numpy() == pytest.approx(raw.mean_diff.to_numpy(), rel=1e-12)
    assert table.z_paired.to_numpy() == pytest.approx(
        raw.t.to_numpy() * np.sqrt(n / (n - 1)), rel=1e-10
    )
    assert "se_mixed" not in table


def test_without_clusters_and_json():
    frame = pd.read_csv(ORACLES / "small.csv.gz").drop(columns="cluster")
    result = side_by_side(rankci.Scores.from_frame(frame))
    table = result.to_frame()
    assert "se_clustered" not in table and "se_mixed" in table
    assert (table.disagree == (table.significant_naive != table.significant_mixed)).all()
    payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert len(payload["pairs"]) == 10 and "clustered" in payload["notes"]
    assert "SideBySide(" in repr(result)


# ---------------------------------------------------------------------- CLI
def run_cli(capsys, *args) -> str:
    status = main(["omnibus", str(ORACLES / "unbalanced.csv.gz"), *args])
    out = capsys.readouterr()
    assert status == 0, out.err
    return out.out


def test_cli_anova_json_schema(capsys):
    payload = json.loads(run_cli(capsys, "--method", "anova", "--format", "json"))
    expected = rankci.rm_anova(load("unbalanced"))
    for key in ("F", "df_num", "df_den", "p", "gg_epsilon", "hf_epsilon", "n_items"):
        assert payload[key] == pytest.approx(getattr(expected, key), rel=1e-12)
    assert payload["method"] == "anova" and payload["n_items"] == 600


def test_cli_friedman_json_schema(capsys):
    payload = json.loads(run_cli(capsys, "--method", "friedman", "--format", "json", "--posthoc"))
    r = pd.read_csv(ORACLES / "unbalanced" / "friedman.csv").iloc[0]
    assert payload["method"] == "friedman"
    assert payload["chi2"] == pytest.approx(r.statistic, rel=1e-8)
    assert payload["df"] == r.df and payload["p"] == pytest.approx(r.p, rel=1e-8)
    assert payload["kendall_w"] == pytest.approx(r.kendall_W, rel=1e-8)
    assert payload["posthoc"]["procedure"] == "nemenyi" and len(payload["posthoc"]["pairs"]) == 28


def test_cli_mixed_json_schema(capsys):
    payload = json.loads(run_cli(capsys, "--method", "mixed", "--format", "json", "--side-by-side"))
    assert payload["method"] == "mixed"
    varcomp = pd.read_csv(ORACLES / "unbalanced" / "lmer_varcomp.csv").set_index("group").variance
    assert set(payload["variance_components"]) == {"cluster", "item", "residual"}
    assert payload["variance_components"]["item"] == pytest.approx(
        varcomp["cluster:item"], rel=1e-5
    )
    anova = pd.read_csv(ORACLES / "unbalanced" / "lmer_anova_typeIII.csv").iloc[0]
    test = payload["model_test"]
    assert set(test) == {"F", "df_num", "df_den", "p"}
    assert test["F"] == pytest.approx(anova.F, rel=1e-5)
    assert test["df_den"] == pytest.approx(anova.DenDF, rel=1e-5)
    assert {"model", "emmean", "se"} <= set(payload["emmeans"][0])
    pairs = pd.read_csv(ORACLES / "unbalanced" / "emmeans_pairs.csv")
    holm = pairs[(pairs.df_method == "satterthwaite") & (pairs.adjust == "holm")]
    contrasts = payload["contrasts"]
    assert {"first", "second", "estimate", "se", "df", "p", "p_holm"} <= set(contrasts[0])
    assert [f"{c['first']} - {c['second']}" for c in contrasts] == list(holm.contrast)
    assert [c["p_holm"] for c in contrasts] == pytest.approx(list(holm.p_value), rel=1e-4)
    assert payload["ranking"]["coverage"] == "simultaneous"
    assert len(payload["side_by_side"]["pairs"]) == 28


def test_cli_tables_and_errors(capsys, tmp_path):
    text = run_cli(capsys, "--method", "anova", "--posthoc")
    assert "Greenhouse-Geisser" in text and "600 items excluded" in text and "Tukey HSD" in text
    text = run_cli(capsys, "--method", "mixed")
    assert "score ~ model + (1|cluster) + (1|cluster:item)" in text
    assert "Tukey: approximate" in text and "Rank intervals" in text
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"model": ["a", "b"], "item": ["1", "1"], "score": [1, 1]}).to_csv(bad)
    status = main(["omnibus", str(bad)])
    assert status == 2 and "omnibus tests need at least 2 complete items" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["omnibus", str(bad), "--method", "lme4"])
    assert main(["omnibus", str(bad), "--alpha", "2"]) == 2
    assert "alpha must be" in capsys.readouterr().err


def test_cli_mixed_without_clusters_keeps_the_schema(capsys, tmp_path):
    path = tmp_path / "plain.csv"
    pd.read_csv(ORACLES / "small.csv.gz").drop(columns="cluster").to_csv(path, index=False)
    assert main(["omnibus", str(path), "--method", "mixed", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["variance_components"]["cluster"] is None
    assert payload["formula"] == "score ~ model + (1|item)"
