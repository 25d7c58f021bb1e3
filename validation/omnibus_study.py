"""Monte-Carlo study of the omnibus tests, post-hoc procedures and mixed-model inference.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python validation/omnibus_study.py

``--quick`` (the CI smoke run, seconds) runs every scenario with a few replications and writes the
JSON to a temporary folder, so the recorded ``validation/omnibus_study.json`` stays as it is.

Every scenario has equal true model means (or a stated configuration for coverage), so every
rejection is a false one. Reported: rejection rate of each omnibus test, family-wise error rate
(any false pairwise claim) of each post-hoc procedure, simultaneous coverage of the mixed-model
rank intervals, each with a 95 % binomial (Clopper-Pearson) interval. Results are written to
``validation/omnibus_study.json`` and summarised in ``validation/README.md``.

Scenarios
---------
A. i.i.d. normal, n = 40 items, k = 5 models (the setting where Tukey is exact).
B. non-spherical normal errors (model-specific variances, one strongly correlated pair).
C. binary scores from a logistic model with cluster and question effects (like LLM evals):
   20 clusters x 20 questions, k = 5 (the oracle ``small`` design).
D. as C plus a model x cluster interaction (sd 0.3 on the logit scale): models are equal on
   average over clusters, but not within the observed clusters. C and D also fit the mixed
   model with ``(1|model:cluster)`` (``random="model:cluster"``).
E. Gaussian linear mixed model, 20 clusters x 10 questions, unbalanced (15 % of cells missing),
   true means (0, 0, 0.3, 0.3, 0.6) with ties: coverage of the mixed-model rank intervals.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

import rankci
from rankci.analyses.posthoc import tukey_pvalues

ALPHA = 0.05
OUT = Path(__file__).with_name("omnibus_study.json")
QUICK_REPS = 5


def clopper_pearson(hits: int, n: int) -> list[float]:
    lo = stats.beta.ppf(0.025, hits, n - hits + 1) if hits > 0 else 0.0
    hi = stats.beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return [float(lo), float(hi)]


def summary(counts: dict, reps: int) -> dict:
    return {k: {"rate": v / reps, "ci95": clopper_pearson(v, reps)} for k, v in counts.items()}


def units_of(y: np.ndarray) -> rankci.UnitScores:
    n, k = y.shape
    return rankci.UnitScores(
        y,
        tuple(f"m{j}" for j in range(k)),
        tuple(f"i{i:05d}" for i in range(n)),
        "item",
        "complete",
        {},
        False,
    )


def omnibus_scenario(rng, reps: int, errors) -> dict:
    counts = dict.fromkeys(
        (
            "anova",
            "anova_gg",
            "anova_hf",
            "friedman",
            "iman_davenport",
            "tukey_fwer",
            "nemenyi_fwer",
        ),
        0,
    )
    for _ in range(reps):
        units = units_of(errors(rng))
        a = rankci.rm_anova(units)
        f = rankci.friedman(units)
        counts["anova"] += a.p <= ALPHA
        counts["anova_gg"] += a.p_gg <= ALPHA
        counts["anova_hf"] += a.p_hf <= ALPHA
        counts["friedman"] += f.p <= ALPHA
        counts["iman_davenport"] += f.p_iman_davenport <= ALPHA
        counts["tukey_fwer"] += rankci.tukey_hsd(units).table.p_adjusted.min() <= ALPHA
        counts["nemenyi_fwer"] += rankci.nemenyi(units).table.p_adjusted.min() <= ALPHA
    return summary(counts, reps)


def iid_errors(rng, n=40, k=5):
    return rng.normal(size=(n, 1)) + rng.normal(size=(n, k))


def nonspherical_errors(rng, n=40, k=5):
    scale = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    e = rng.normal(size=(n, k)) * scale
    e[:, 1] = 0.9 * e[:, 0] / scale[0] * scale[1] + np.sqrt(1 - 0.81) * e[:, 1]
    return rng.normal(size=(n, 1)) + e


def logistic_scores(rng, clusters=20, per=20, k=5, beta=None, interaction=0.0, missing=0.0):
    """Binary scores: logit p = 0.2 + beta_m + u_c + w_i (+ g_mc); returns a Scores table."""
    beta = np.zeros(k) if beta is None else np.asarray(beta)
    cluster = np.repeat(np.arange(clusters), per)
    u = rng.normal(scale=0.6, size=clusters)
    w = rng.normal(scale=1.2, size=clusters * per)
    g = rng.normal(scale=interaction, size=(clusters, k)) if interaction else 0.0
    eta = 0.2 + beta[None, :] + (u[cluster] + w)[:, None] + (g[cluster] if interaction else 0.0)
    y = (rng.random(eta.shape) < 1 / (1 + np.exp(-eta))).astype(float)
    if missing:
        y[rng.random(y.shape) < missing] = np.nan
    labels = [f"c{c:02d}" for c in cluster]
    return rankci.Scores.from_matrix(y, clusters=labels)


def gaussian_scores(rng, truth, clusters=20, per=10, missing=0.15):
    cluster = np.repeat(np.arange(clusters), per)
    u = rng.normal(scale=0.5, size=clusters)[cluster]
    w = rng.normal(scale=0.7, size=clusters * per)
    y = truth[None, :] + (u + w)[:, None] + rng.normal(size=(clusters * per, len(truth)))
    y[rng.random(y.shape) < missing] = np.nan
    y[np.isnan(y).all(axis=1), 0] = 0.0  # keep every item
    return rankci.Scores.from_matrix(y, clusters=[f"c{c:02d}" for c in cluster], bounds=None)


def mixed_scenario(rng, reps: int, make) -> dict:
    keys = (
        "anova",
        "friedman",
        "mixed_F",
        "holm_fwer",
        "bonferroni_fwer",
        "tukey_fwer",
        "naive_fwer",
        "paired_fwer",
        "clustered_fwer",
        "rank_interval_noncoverage",
        "mixed_F_model_by_cluster",
        "holm_fwer_model_by_cluster",
        "rank_interval_noncoverage_model_by_cluster",
    )
    counts = dict.fromkeys(keys, 0)
    for _ in range(reps):
        scores = make(rng)
        model = rankci.mixed_model(scores, tukey=False)
        c = model.contrasts
        counts["anova"] += rankci.rm_anova(scores).p <= ALPHA
        counts["friedman"] += rankci.friedman(scores).p <= ALPHA
        counts["mixed_F"] += model.model_test["p"] <= ALPHA
        counts["holm_fwer"] += c.p_holm.min() <= ALPHA
        counts["bonferroni_fwer"] += c.p_bonferroni.min() <= ALPHA
        worst = int(np.argmax(np.abs(c.t.to_numpy())))
        counts["tukey_fwer"] += (
            tukey_pvalues(c.t.to_numpy()[[worst]], model.n_models, c.df.to_numpy()[[worst]])[0]
            <= ALPHA
        )
        table = rankci.side_by_side(scores, mixed=model).table
        for kind in ("naive", "paired", "clustered"):
            counts[f"{kind}_fwer"] += bool(table[f"significant_{kind}"].any())
        ranking = rankci.mixed_ranking(model)
        counts["rank_interval_noncoverage"] += bool(ranking.dominance.any())  # all ranks are 1
        wide = rankci.mixed_model(scores, tukey=False, random="model:cluster")
        counts["mixed_F_model_by_cluster"] += wide.model_test["p"] <= ALPHA
        counts["holm_fwer_model_by_cluster"] += wide.contrasts.p_holm.min() <= ALPHA
        counts["rank_interval_noncoverage_model_by_cluster"] += bool(
            rankci.mixed_ranking(wide).dominance.any()
        )
    return summary(counts, reps)


def coverage_scenario(rng, reps: int) -> dict:
    truth = np.array([0.0, 0.0, 0.3, 0.3, 0.6])
    true_rank = 1 + (truth[None, :] > truth[:, None]).sum(1)
    missed = {"simultaneous": 0, "marginal_any": 0}
    width = {"simultaneous": 0.0, "marginal": 0.0}
    for _ in range(reps):
        model = rankci.mixed_model(gaussian_scores(rng, truth), tukey=False)
        for coverage in ("simultaneous", "marginal"):
            r = rankci.mixed_ranking(model, coverage=coverage)
            inside = (r.lower <= true_rank) & (true_rank <= r.upper)
            key = "simultaneous" if coverage == "simultaneous" else "marginal_any"
            missed[key] += not inside.all()
            width[coverage] += float(np.mean(r.upper - r.lower + 1)) / reps
    out = summary(missed, reps)
    out["mean_interval_length"] = width
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_REPS} replications per scenario, JSON to a temporary file (CI smoke run)",
    )
    parser.add_argument(
        "--out", help=f"JSON of the results (default {OUT}; with --quick a temporary file)"
    )
    args = parser.parse_args()

    def reps(full: int) -> int:
        return QUICK_REPS if args.quick else full

    rng = np.random.default_rng(20240611)
    results, start = {}, time.time()
    plan = [
        ("A_iid_normal", lambda r: omnibus_scenario(rng, reps(500), iid_errors)),
        ("B_nonspherical", lambda r: omnibus_scenario(rng, reps(500), nonspherical_errors)),
        ("C_logistic_clustered", lambda r: mixed_scenario(rng, reps(1000), logistic_scores)),
        (
            "D_logistic_model_x_cluster",
            lambda r: mixed_scenario(
                rng, reps(1000), lambda g: logistic_scores(g, interaction=0.3)
            ),
        ),
        ("E_gaussian_unbalanced_coverage", lambda r: coverage_scenario(rng, reps(1000))),
    ]
    for name, run in plan:
        t0 = time.time()
        results[name] = run(rng)
        results[name]["seconds"] = round(time.time() - t0, 1)
        print(name, json.dumps(results[name]), flush=True)
    results["total_seconds"] = round(time.time() - start, 1)
    results["alpha"] = ALPHA
    results["seed"] = 20240611
    text = json.dumps(results, indent=1)
    if args.quick and args.out is None:
        with tempfile.TemporaryDirectory() as scratch:  # keep the recorded full-study results
            (Path(scratch) / OUT.name).write_text(text)
    else:
        Path(args.out or OUT).write_text(text)


if __name__ == "__main__":
    main()
