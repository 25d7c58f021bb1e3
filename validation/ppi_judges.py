"""Judge scores corrected by human labels (issue 28, item 2): coverage and width of judge-only,
human-only and PPI score intervals and rank intervals, by number of human labels.

Design. M = 5 models, N = 1,000 items, every item judged for every model. Item i has a latent
difficulty u_i ~ N(0, 1); model j's probability of a correct answer is
p_ij = expit(a_j + 1.5 u_i), with a = (1.35, 1.1, 0.7, 0.4, 0.1). The true human-scale means
theta_j = E[h_ij] come from quadrature (Gauss-Hermite, 60 nodes; Gauss-Legendre for the clipping of
graded scores): about (0.72, 0.69, 0.62, 0.57, 0.52) for 0/1 humans.
Human scores, two scenarios:

* ``binary``: h_ij ~ Bernoulli(p_ij) (a human's 0/1 verdict); the judge sees p, so
  corr(h, f) is only about 0.5;
* ``graded``: h_ij = clip(p_ij + N(0, 0.1^2), 0, 1) (a graded human score); corr about 0.9.

The judge has a model-specific bias and noise: f_ij = clip(p_ij + b_j + s_j e_ij, 0, 1) with
b = (-0.08, 0, +0.06, +0.02, +0.12) and s = (0.10, 0.15, 0.20, 0.10, 0.25), so the judge's own
order is wrong (the last model looks better than the second).

Labels: n items drawn uniformly without replacement, the same items for every model,
n in (10, 20, 30, 50, 100, 200). Fits, at alpha = 0.05 (z intervals for scores, the paired t +
Holm for simultaneous rank intervals, :func:`rankci.rank`):

* ``judge``: the judge scores of all N items (:attr:`PPIScores.judge_scores`), biased;
* ``human``: the n labelled items only (the human-only analysis at equal labels);
* ``ppi``: PPI with lam = 1 (classic); ``ppi++``: lam = the LS slope per model (``lam="auto"``);
* ``ppi++ oracle lam``: lam fixed at the population slope (from 200,000 draws), to measure what
  estimating lam on the same labels costs (the PPI++ asymptotics) against cross-fitting's goal;
* ``ppi++ max-t``: the PPI++ units with max-t instead of Holm;
* ``ppi++ per-pair``: the rank intervals from the lam of each pair's difference
  (:func:`rankci.analyses.ppi.ppi_pairwise` + Holm); its score intervals are those of ``ppi++``.

Reported per fit: the mean coverage of the 95 % score intervals over the five models, the
smallest per-model coverage, the simultaneous rank coverage (every model's interval contains
its true rank), the mean score-interval width, the mean rank-interval width (U - L), and the
mean effective labels of PPI++. Every rate with its Monte-Carlo SE sqrt(p (1 - p) / R).

Run:  OMP_NUM_THREADS=1 nice -n 19 python validation/ppi_judges.py     (400 replicates per
      scenario and n, seed 20261202; results in validation/results/ppi_judges.json)
      python validation/ppi_judges.py --quick                          (30 replicates, seconds)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _results import save_record  # validation/_results.py
from scipy import special, stats

import rankci
from rankci import Scores
from rankci._base import RankciWarning
from rankci.analyses.ppi import ppi_pairwise, ppi_scores
from rankci.certify.holm import certify_holm

RESULTS = Path(__file__).resolve().parent / "results" / "ppi_judges.json"
A = np.array([1.35, 1.1, 0.7, 0.4, 0.1])
SIGMA = 1.5
BIAS = np.array([-0.08, 0.0, 0.06, 0.02, 0.12])
NOISE = np.array([0.10, 0.15, 0.20, 0.10, 0.25])
MODELS = [f"m{j}" for j in range(A.size)]
N_ITEMS = 1000
LABELS = (10, 20, 30, 50, 100, 200)
SCENARIOS = ("binary", "graded")
ALPHA = 0.05
SEED = 20261202
Z = stats.norm.ppf(1 - ALPHA / 2)


def _theta(scenario: str) -> np.ndarray:
    """E[h_ij] by quadrature: E[p] for 0/1 humans; for graded humans
    E[clip(p + e, 0, 1)] = int_0^1 Phi((p - t) / 0.1) dt (the clipping moves the mean)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    p = special.expit(A[None, :] + SIGMA * nodes[:, None])  # nodes x models
    if scenario == "graded":
        t, wt = np.polynomial.legendre.leggauss(200)
        t, wt = (t + 1) / 2, wt / 2  # on [0, 1]
        p = (stats.norm.cdf((p[..., None] - t) / 0.1) * wt).sum(axis=-1)
    return p.T @ weights / weights.sum()


THETAS = {scenario: _theta(scenario) for scenario in ("binary", "graded")}
TRUE_RANKS = {s: 1 + (t[None, :] > t[:, None]).sum(axis=1) for s, t in THETAS.items()}


def _draw(generator: np.random.Generator, n: int, scenario: str):
    p = special.expit(A + SIGMA * generator.normal(size=(n, 1)))
    if scenario == "binary":
        h = (generator.random(p.shape) < p).astype(float)
    else:
        h = np.clip(p + generator.normal(0, 0.1, p.shape), 0, 1)
    f = np.clip(p + BIAS + NOISE * generator.normal(size=p.shape), 0, 1)
    return h, f


def _oracle_lam(scenario: str) -> np.ndarray:
    h, f = _draw(np.random.default_rng(SEED + 1), 200_000, scenario)
    fc = f - f.mean(axis=0)
    return (fc * (h - h.mean(axis=0))).sum(axis=0) / (fc**2).sum(axis=0)


def _frame(h: np.ndarray, f: np.ndarray, labelled: np.ndarray) -> pd.DataFrame:
    n_items = h.shape[0]
    human = np.where(labelled[:, None], h, np.nan)
    return pd.DataFrame({
        "model": np.tile(MODELS, n_items),
        "item": np.repeat([f"i{i:04d}" for i in range(n_items)], len(MODELS)),
        "judge": f.ravel(),
        "human": human.ravel(),
    })


def _score_stats(est: np.ndarray, se: np.ndarray, theta: np.ndarray) -> dict:
    covered = np.abs(est - theta) <= Z * se
    return {"covered": covered.tolist(), "width": float(np.mean(2 * Z * se))}


def _rank_stats(scores: Scores, true_rank: np.ndarray, **method) -> dict:
    ranking = rankci.rank(scores, alpha=ALPHA, **method)
    order = [ranking.models.index(m) for m in MODELS]
    lower, upper = np.asarray(ranking.lower)[order], np.asarray(ranking.upper)[order]
    return {
        "rank_covered": bool(np.all((lower <= true_rank) & (true_rank <= upper))),
        "rank_width": float(np.mean(upper - lower)),
    }


def _pair_rank_stats(fit, true_rank: np.ndarray) -> dict:
    ranking = certify_holm(ppi_pairwise(fit), ALPHA).ranking()
    order = [ranking.models.index(m) for m in MODELS]
    lower, upper = np.asarray(ranking.lower)[order], np.asarray(ranking.upper)[order]
    return {
        "rank_covered": bool(np.all((lower <= true_rank) & (true_rank <= upper))),
        "rank_width": float(np.mean(upper - lower)),
    }


def replicate(i: int, scenario: str, n_labels: int, oracle_lam: np.ndarray) -> dict:
    k = SCENARIOS.index(scenario)
    generator = np.random.default_rng(np.random.SeedSequence([SEED, k, n_labels, i]))
    h, f = _draw(generator, N_ITEMS, scenario)
    labelled = np.zeros(N_ITEMS, bool)
    labelled[generator.choice(N_ITEMS, n_labels, replace=False)] = True
    frame = _frame(h, f, labelled)
    theta, rank = THETAS[scenario], TRUE_RANKS[scenario]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)  # few labels, nothing certified
        auto = ppi_scores(frame)
        fits = {
            "judge": (auto.fits["judge"], auto.fits["judge_se"], auto.judge_scores),
            "ppi++": (auto.fits["ppi"], auto.fits["ppi_se"], auto.scores),
        }
        classic = ppi_scores(frame, lam=1.0)
        fits["ppi"] = (classic.fits["ppi"], classic.fits["ppi_se"], classic.scores)
        human = Scores.from_matrix(h[labelled], models=MODELS, bounds=None)
        hx = h[labelled]
        fits["human"] = (hx.mean(axis=0), hx.std(axis=0, ddof=1) / math.sqrt(n_labels), human)
        for name, (est, se, scores) in fits.items():
            out[name] = {**_score_stats(np.asarray(est), np.asarray(se), theta),
                         **_rank_stats(scores, rank)}
        oracle = ppi_scores(frame, lam=dict(zip(MODELS, oracle_lam.tolist())))
        out["ppi++ oracle lam"] = {
            **_score_stats(oracle.fits["ppi"].to_numpy(), oracle.fits["ppi_se"].to_numpy(),
                           theta),
            **_rank_stats(oracle.scores, rank),
        }
        out["ppi++ max-t"] = {**out["ppi++"], **_rank_stats(auto.scores, rank, multiplicity="max-t",
                                                            rng=int(generator.integers(2**31)))}
        out["ppi++ per-pair"] = {**out["ppi++"], **_pair_rank_stats(auto, rank)}
    out["effective_labels"] = float(np.nanmean(auto.effective_labels))  # NaN: zero variance
    out["zero_se"] = int((auto.fits["ppi_se"] == 0).sum())
    out["lam"] = auto.lam.tolist()
    return out


FITS = ("judge", "human", "ppi", "ppi++", "ppi++ oracle lam", "ppi++ max-t", "ppi++ per-pair")


def summarise(runs: list[dict]) -> list[dict]:
    reps = len(runs)
    rows = []
    for name in FITS:
        covered = np.array([r[name]["covered"] for r in runs])  # reps x M
        per_model = covered.mean(axis=0)
        mean_cov = float(per_model.mean())
        rank_cov = float(np.mean([r[name]["rank_covered"] for r in runs]))
        rows.append({
            "fit": name,
            "score_coverage": mean_cov,
            # SE of the mean over models, treating the M indicators of a replicate as one draw
            "score_coverage_se": float(covered.mean(axis=1).std(ddof=1) / math.sqrt(reps)),
            "min_model_coverage": float(per_model.min()),
            "min_model_coverage_se": math.sqrt(per_model.min() * (1 - per_model.min()) / reps),
            "rank_coverage": rank_cov,
            "rank_coverage_se": math.sqrt(rank_cov * (1 - rank_cov) / reps),
            "score_width": float(np.mean([r[name]["width"] for r in runs])),
            "rank_width": float(np.mean([r[name]["rank_width"] for r in runs])),
        })
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 replicates, n = 30 and 100")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--out", default=None, help="write the JSON here instead")
    args = parser.parse_args(argv)
    reps = args.reps or (30 if args.quick else 400)
    labels = (30, 100) if args.quick else LABELS
    start = time.time()
    table = []
    for scenario in SCENARIOS:
        oracle_lam = _oracle_lam(scenario)
        for n_labels in labels:
            runs = [replicate(i, scenario, n_labels, oracle_lam) for i in range(reps)]
            eff = float(np.nanmean([r["effective_labels"] for r in runs]))
            for row in summarise(runs):
                table.append({"scenario": scenario, "n_labels": n_labels,
                              "effective_labels": eff, **row})
            print(f"{scenario} n={n_labels}: {time.time() - start:.0f} s", flush=True)
    record = {"study": "ppi_judges", "reps": reps, "seed": SEED, "alpha": ALPHA,
              "n_items": N_ITEMS, "theta": {k: v.tolist() for k, v in THETAS.items()},
              "bias": BIAS.tolist(),
              "noise": NOISE.tolist(), "rows": table,
              "seconds": round(time.time() - start, 1), "quick": args.quick}
    print(f"PPI judges: {reps} replicates per cell, N = {N_ITEMS} judged items, alpha = {ALPHA}, "
          f"theta = {({k: np.round(v, 3).tolist() for k, v in THETAS.items()})}")
    print("| scenario | n labels | fit | score coverage (mean) | min model | rank coverage "
          "(simultaneous) | score width | rank width U-L | effective labels (ppi++) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in table:
        print(f"| {row['scenario']} | {row['n_labels']} | {row['fit']} | "
              f"{row['score_coverage']:.3f} ± {row['score_coverage_se']:.3f} | "
              f"{row['min_model_coverage']:.3f} ± {row['min_model_coverage_se']:.3f} | "
              f"{row['rank_coverage']:.3f} ± {row['rank_coverage_se']:.3f} | "
              f"{row['score_width']:.3f} | {row['rank_width']:.2f} | "
              f"{row['effective_labels']:.1f} |")
    print(f"{record['seconds']} s")
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
