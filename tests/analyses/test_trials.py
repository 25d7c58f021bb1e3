"""The variance split of repeated trials against a direct one-way ANOVA (statsmodels' anova_lm
for the mean squares, a loop for the rest), and the items x trials plan against its formula."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

import rankci
from rankci import read_scores
from rankci.analyses.trials import plan_trials, trial_variance


def unequal_table(seed=3):
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(3):
        for i in range(15):
            p = rng.beta(1.5, 1.5)
            for t in range(int(rng.integers(1, 7))):
                rows.append((f"m{m}", f"q{i:02d}", t, float(rng.uniform() < p)))
    return pd.DataFrame(rows, columns=["model", "item", "trial", "score"])


def direct(group: pd.DataFrame) -> dict:
    """Method-of-moments components by hand (Searle et al. 1992, Sec. 3.5)."""
    fit = smf.ols("score ~ C(item)", data=group).fit()
    aov = anova_lm(fit)
    msb, msw = aov.loc["C(item)", "mean_sq"], aov.loc["Residual", "mean_sq"]
    sizes = group.groupby("item").size().to_numpy()
    big_n, a = sizes.sum(), sizes.size
    n0 = (big_n - (sizes**2).sum() / big_n) / (a - 1)
    between = max(0.0, (msb - msw) / n0)
    means = group.groupby("item")["score"].mean().to_numpy()
    flips = [g.nunique() > 1 for _, g in group.groupby("item")["score"] if len(g) >= 2]
    return {
        "between": between,
        "within": msw,
        "icc": between / (between + msw),
        "flip_rate": np.mean(flips),
        "score": means.mean(),
        "se_new_items": means.std(ddof=1) / np.sqrt(a),
        "se_rerun": np.sqrt(sum(msw / s for s in sizes)) / a,
        "trials_min": sizes.min(),
        "trials_max": sizes.max(),
    }


def test_variance_split_equals_the_one_way_anova_with_unequal_trials():
    table = unequal_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        scores = read_scores(table)
    got = trial_variance(scores).table.set_index("model")
    for model, group in table.groupby("model"):
        expected = direct(group)
        for key, value in expected.items():
            assert got.loc[model, key] == pytest.approx(value, rel=1e-10, abs=1e-12), key


def test_rerun_se_is_the_brief_formula_with_equal_trials_and_matches_a_simulation():
    rng = np.random.default_rng(0)
    n_items, n_trials = 40, 4
    p = rng.uniform(0.1, 0.9, size=n_items)
    rows = [
        ("a", f"q{i}", t, float(rng.uniform() < p[i]))
        for i in range(n_items)
        for t in range(n_trials)
    ]
    rows += [("b", f"q{i}", t, 1.0) for i in range(n_items) for t in range(n_trials)]
    table = pd.DataFrame(rows, columns=["model", "item", "trial", "score"])
    row = trial_variance(read_scores(table)).table.set_index("model").loc["a"]
    within = table[table.model == "a"].groupby("item")["score"].var(ddof=1).mean()
    assert row["se_rerun"] == pytest.approx(np.sqrt(within / n_trials / n_items))
    # Monte Carlo: rerunning the same items, the score's SD is sqrt(sum p(1-p)/T)/I
    truth = np.sqrt((p * (1 - p)).sum() / n_trials) / n_items
    assert row["se_rerun"] == pytest.approx(truth, rel=0.35)
    # a model that never flips has no trial variance
    b = trial_variance(read_scores(table)).table.set_index("model").loc["b"]
    assert b["within"] == 0 and b["flip_rate"] == 0 and b["se_rerun"] == 0


def test_trial_variance_needs_trials():
    plain = pd.DataFrame({"model": list("aabb"), "item": list("xyxy"), "score": [1, 0, 1, 1]})
    with pytest.raises(ValueError, match="trial_variance needs repeated trials"):
        trial_variance(read_scores(plain))


def test_plan_trials_widths_and_resolution_follow_the_components():
    table = unequal_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        scores = read_scores(table)
    plan = plan_trials(scores, items=[50, 200], trials=[1, 3], alpha=0.1, multiplicity="none")
    comp = plan.components.set_index("model")
    z = stats.norm.ppf(0.95)
    row = plan.budgets.query("items == 200 and trials == 3").iloc[0]
    widths = 2 * z * np.sqrt((comp["between"] + comp["within"] / 3) / 200)
    assert row["width"] == pytest.approx(widths.max())
    assert row["mean_width"] == pytest.approx(widths.mean())
    # pair m0-m1 by hand on the items both have
    means = table.groupby(["item", "model"])["score"].mean().unstack()
    sizes = table.groupby(["item", "model"]).size().unstack()
    d = means["m0"] - means["m1"]
    noise = (comp.loc["m0", "within"] / sizes["m0"] + comp.loc["m1", "within"] / sizes["m1"]).mean()
    between_d = max(0.0, d.var(ddof=1) - noise)
    var = (between_d + (comp.loc["m0", "within"] + comp.loc["m1", "within"]) / 3) / 200
    p01 = stats.norm.cdf(abs(d.mean()) / np.sqrt(var) - z)
    assert 0 <= row["resolution"] <= 1
    assert row["pairs_separated"] >= p01 - 1e-12  # the sum over pairs includes this one
    # more trials never widen, more items narrow
    b = plan.budgets.set_index(["items", "trials"])
    assert b.loc[(200, 3), "width"] <= b.loc[(200, 1), "width"] < b.loc[(50, 1), "width"]


def test_cheapest_split_uses_more_trials_only_when_items_run_out():
    table = unequal_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        scores = read_scores(table)
    comp = trial_variance(scores).table
    z = stats.norm.ppf(0.975)
    target = 0.25
    free = plan_trials(scores, target_width=target, max_items=10_000).cheapest
    assert free["feasible"] and free["trials"] == 1
    need = np.ceil((2 * z) ** 2 * (comp["between"] + comp["within"]) / target**2).max()
    assert free["items"] == need
    # a pool just below the one-trial need forces a second trial
    pool = int(need) - 1
    forced = plan_trials(scores, target_width=target, max_items=pool).cheapest
    assert forced["feasible"] and forced["trials"] >= 2 and forced["items"] <= pool
    hopeless = plan_trials(scores, target_width=0.01, max_items=20).cheapest
    assert hopeless["feasible"] is False and "needs more items" in hopeless["why"]
