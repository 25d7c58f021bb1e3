"""Kenward-Roger df against R's pbkrtest 0.5.2 (via emmeans and KRmodcomp).

Oracle numbers: ``tests/fixtures/kenward_roger/`` written by ``validation/kenward_roger_oracle.R``
(R 4.2.2, lme4, lmerTest, pbkrtest, emmeans; ``sessionInfo.txt`` there) on two unbalanced subsets
of the oracle datasets in ``tests/fixtures/oracles``. The fit is evaluated at lme4's theta so the
comparison is of the Kenward-Roger algebra, to 1e-6 (relative for df and F).
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.mixed import mixed_model

FIX = Path(__file__).resolve().parents[1] / "fixtures"
IDS = {"model": str, "item": str, "cluster": str}


def subset(name: str) -> pd.DataFrame:
    """The subsets exactly as validation/kenward_roger_oracle.R builds them."""
    if name == "small_unbalanced":
        d = pd.read_csv(FIX / "oracles" / "small.csv.gz", dtype=IDS)
        keep = ~((d.model == "m05") & d.cluster.isin([f"c{i:03d}" for i in range(1, 5)]))
        keep &= ~((d.model == "m02") & ((np.arange(len(d)) + 1) % 3 == 0))
        return d[keep].reset_index(drop=True)
    d = pd.read_csv(FIX / "oracles" / "unbalanced.csv.gz", dtype=IDS)
    return d[d.cluster.isin([f"c{i:03d}" for i in range(1, 9)])].reset_index(drop=True)


@pytest.fixture(scope="module", params=["small_unbalanced", "unbalanced_c1_8"])
def case(request):
    name = request.param
    oracle = {
        part: pd.read_csv(FIX / "kenward_roger" / f"{name}_{part}.csv")
        for part in ("fit", "means", "pairs", "ftest")
    }
    theta = oracle["fit"].theta.dropna().to_numpy()  # (cluster:item, cluster) = rankci's order
    scores = rankci.Scores.from_frame(subset(name), cluster="cluster")
    assert scores.n_rows == oracle["fit"].n_rows[0]
    return mixed_model(scores, df="kenward-roger", theta=theta), oracle


def test_means_se_and_df(case):
    fit, oracle = case
    means = oracle["means"]
    assert list(fit.models) == means.model.tolist()
    np.testing.assert_allclose(fit.emmean, means.emmean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.emmean_se, means.SE, rtol=1e-6)
    np.testing.assert_allclose(fit.emmean_df, means.df, rtol=1e-6)


def test_pairwise_se_and_df(case):
    fit, oracle = case
    pairs = oracle["pairs"]
    table = fit.contrasts
    assert (table.first + " - " + table.second).tolist() == pairs.contrast.tolist()
    np.testing.assert_allclose(table.se, pairs.SE, rtol=1e-6)
    np.testing.assert_allclose(table.df, pairs.df, rtol=1e-6)
    np.testing.assert_allclose(table.p, pairs.p, rtol=1e-5)


def test_omnibus_f(case):
    fit, oracle = case
    row = oracle["ftest"].iloc[0]
    test = fit.model_test
    assert test["df_num"] == row.df_num
    for ours, theirs in [
        ("F", "F"),
        ("F_unscaled", "F_unscaled"),
        ("scale", "scale"),
        ("df_den", "df_den"),
        ("p", "p"),
    ]:
        assert test[ours] == pytest.approx(row[theirs], rel=1e-6), ours


def test_differs_from_satterthwaite(case):
    """The two df methods really differ on these designs (so the oracle can tell them apart)."""
    fit, oracle = case
    row = oracle["ftest"].iloc[0]
    assert abs(row.df_den - row.df_den_satterthwaite) > 0.4
    assert fit.df_method == "kenward-roger"


def test_prompt_term_refused():
    frame = subset("unbalanced_c1_8")
    frame["prompt"] = np.where(np.arange(len(frame)) % 2 == 0, "p1", "p2")
    scores = rankci.Scores.from_frame(frame, cluster="cluster", prompt="prompt")
    with pytest.raises(ValueError, match="prompt"):
        mixed_model(scores, df="kenward-roger")


def test_balanced_small_against_run_oracles():
    """The balanced 'small' design: emmeans' kenward-roger rows of tests/fixtures/oracles."""
    oracles = FIX / "oracles" / "small"
    varcomp = pd.read_csv(oracles / "lmer_varcomp.csv").set_index("group").variance
    theta = np.sqrt(varcomp[["cluster:item", "cluster"]].to_numpy() / varcomp["Residual"])
    scores = rankci.Scores.from_frame(
        pd.read_csv(FIX / "oracles" / "small.csv.gz", dtype=IDS), cluster="cluster"
    )
    fit = mixed_model(scores, df="kenward-roger", theta=theta)
    means = pd.read_csv(oracles / "emmeans_means.csv")
    means = means[means.df_method == "kenward-roger"]
    np.testing.assert_allclose(fit.emmean_se, means.SE, rtol=1e-6)
    np.testing.assert_allclose(fit.emmean_df, means.df, rtol=1e-6)
    anova = pd.read_csv(oracles / "lmer_anova_typeIII.csv")
    row = anova[anova.ddf == "Kenward-Roger"].iloc[0]
    assert fit.model_test["df_den"] == pytest.approx(row.DenDF, rel=1e-6)
    assert fit.model_test["F"] == pytest.approx(row.F, rel=1e-6)


def test_side_by_side_row_and_cli(tmp_path):
    """The same-run table has Kenward-Roger columns beside Satterthwaite's, as pbkrtest."""
    import json
    import subprocess
    import sys

    from rankci.analyses.sidebyside import side_by_side

    name = "unbalanced_c1_8"
    pairs = pd.read_csv(FIX / "kenward_roger" / f"{name}_pairs.csv")
    theta = pd.read_csv(FIX / "kenward_roger" / f"{name}_fit.csv").theta.dropna().to_numpy()
    scores = rankci.Scores.from_frame(subset(name), cluster="cluster")
    sat = mixed_model(scores, theta=theta)
    table = side_by_side(scores, mixed=sat, kenward_roger=True).to_frame()
    np.testing.assert_allclose(table.se_mixed_kr, pairs.SE, rtol=1e-6)
    np.testing.assert_allclose(table.df_mixed_kr, pairs.df, rtol=1e-6)
    np.testing.assert_allclose(table.df_mixed, sat.pair_df[np.triu_indices(8, 1)])
    assert not np.allclose(table.df_mixed, table.df_mixed_kr, rtol=1e-4)

    path = tmp_path / "u8.csv"
    subset(name).to_csv(path, index=False)
    argv = [sys.executable, "-m", "rankci", "omnibus", str(path), "--method", "mixed"]
    argv += ["--cluster", "cluster", "--df", "kenward-roger", "--side-by-side"]

    def cli(*more: str) -> str:
        return subprocess.run([*argv, *more], capture_output=True, text=True, check=True).stdout

    out = json.loads(cli("--format", "json"))
    row = pd.read_csv(FIX / "kenward_roger" / f"{name}_ftest.csv").iloc[0]
    assert out["df_method"] == "kenward-roger"
    assert out["model_test"]["df_den"] == pytest.approx(row.df_den, rel=1e-4)
    assert "mixed_kr" in out["side_by_side"]["notes"]
    text = cli()
    assert "kenward-roger df" in text and "df_mixed_kr" in text


def test_too_large_a_design_is_refused_with_the_reason(monkeypatch):
    from rankci.mixed import model as model_module

    # the globals of the function the fit calls (a doctest run may import a second module copy)
    monkeypatch.setitem(model_module.kenward_roger.__globals__, "MAX_PADDED", 1000)
    scores = rankci.Scores.from_frame(subset("unbalanced_c1_8"), cluster="cluster")
    with pytest.raises(ValueError, match="covariance densely.*Satterthwaite"):
        mixed_model(scores, df="kenward-roger")


def test_the_same_run_satterthwaite_means_df_match_emmeans():
    """The Satterthwaite column the Kenward-Roger one is compared with is lmerTest's, too."""
    name = "unbalanced_c1_8"
    means = pd.read_csv(FIX / "kenward_roger" / f"{name}_means.csv")
    theta = pd.read_csv(FIX / "kenward_roger" / f"{name}_fit.csv").theta.dropna().to_numpy()
    scores = rankci.Scores.from_frame(subset(name), cluster="cluster")
    np.testing.assert_allclose(
        mixed_model(scores, theta=theta).emmean_df, means.df_satterthwaite, rtol=1e-6
    )
    assert (means.df < means.df_satterthwaite).all()
