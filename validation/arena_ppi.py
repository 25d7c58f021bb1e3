"""Arena votes judged by an LLM, corrected by human votes (issue 28, item 2, last bullet): the
coverage of judge-only, human-only and prediction-powered (PPI++) simultaneous rank intervals,
and the width PPI saves against human-only at equal labels.

Every replicate draws an arena from a known truth: M = 6 models with Bradley-Terry strengths
``THETA`` (log-odds), N battles between uniformly drawn pairs. The *human* verdict of a battle
is a tie with probability 0.1, else a Bradley-Terry draw from ``THETA``. The *judge* copies the
human verdict with probability ``AGREE`` = 0.6 and otherwise votes from its own strengths
``THETA + BIAS`` with a model-specific bias ``BIAS`` (it overrates models 2 and 4 and underrates
model 1), so the judge alone ranks the wrong board. Humans label a subset:

* ``uniform``: n battles drawn without replacement;
* ``stratified``: each battle with its own known probability, 3x higher for battles of the
  models the judge overrates (``inclusion=`` the probabilities; expected labels as ``uniform``).

Each replicate runs ``rankci.votes.rank_votes(votes, human="human", ...)`` (max-t, alpha =
0.05, ``lam="auto"``, and once more with ``lam=1``), which certifies the PPI fit and, through the
same certification, the judge-only fit (all battles) and the human-only fit (the labelled
battles, ``lam = 0``). Measured per design and fit, with Monte-Carlo standard errors
``sqrt(p (1 - p) / R)``:

* ``coverage``: every model's rank interval contains its true rank ``1 + #{l: theta_l >
  theta_j}`` (simultaneously, the guarantee's event);
* ``width``: the mean of ``upper - lower`` over models and replicates (0 = every rank pinned);
* ``strength_coverage``: the share of models whose marginal 95 % interval ``s_j +- 1.96 se_j``
  contains its centred true strength -- the ties-as-half projection of ``THETA`` (the
  strengths the fit of the human verdicts converges to; ties shrink them); a sharper check of
  the covariance than the conservative simultaneous rank intervals (MC SE from the
  replicate-level shares);
* ``effective``: the mean effective labels ``n tr Cov(human) / tr Cov(PPI)``, and ``lam``.

Run:  OMP_NUM_THREADS=1 python validation/arena_ppi.py          (300 replicates per design)
      python validation/arena_ppi.py --quick                    (6 replicates, seconds; the
      results go to a temporary folder, never over validation/results/arena_ppi.json)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import save_record  # noqa: E402

from rankci import RankciWarning  # noqa: E402
from rankci.votes import Votes, rank_votes  # noqa: E402

RECORDED = Path(__file__).resolve().parent / "results" / "arena_ppi.json"
ALPHA = 0.05
THETA = np.array([0.6, 0.35, 0.15, 0.0, -0.3, -0.7])
BIAS = np.array([0.0, -0.5, 0.8, 0.0, 0.9, 0.0])
AGREE = 0.6
TIES = 0.1
M = THETA.size
MODELS = [f"m{k}" for k in range(M)]


def _projection() -> np.ndarray:
    """The centred strengths a ties-as-half fit converges to: with a tie rate of TIES on every
    pair, a vote scores ``(1 - TIES) sigmoid(d) + TIES / 2`` for its first model, so the fit's
    target is attenuated; solved by scipy from the population score equations of the
    uniform-pair design."""
    from scipy.optimize import fsolve

    expit = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    target = (1 - TIES) * expit(THETA[:, None] - THETA[None, :]) + TIES / 2

    def score(free):
        s = np.concatenate([[0.0], free])
        resid = target - expit(s[:, None] - s[None, :])
        np.fill_diagonal(resid, 0.0)
        return resid.sum(axis=1)[1:]

    s = np.concatenate([[0.0], fsolve(score, THETA[1:] - THETA[0], xtol=1e-13)])
    return s - s.mean()


CENTRED = _projection()
Z = 1.959963984540054  # the 97.5 % normal quantile
#: (label, sampling, labelled battles); N battles per replicate from --battles
DESIGNS = [
    ("uniform, 300 labels", "uniform", 300),
    ("uniform, 1000 labels", "uniform", 1000),
    ("stratified, ~1000 labels", "stratified", 1000),
]
FITS = ("judge", "human", "ppi", "ppi lam=1")


def true_ranks(theta: np.ndarray) -> np.ndarray:
    return 1 + (theta[None, :] > theta[:, None]).sum(axis=1)


def draw(rng: np.random.Generator, n: int, sampling: str, n_lab: int) -> Votes:
    """One arena: judge verdicts as outcomes, human verdicts (NaN unlabelled), inclusion."""
    a = rng.integers(0, M, n)
    b = (a + rng.integers(1, M, n)) % M

    def bt(theta):
        return np.where(rng.random(n) < 1 / (1 + np.exp(theta[b] - theta[a])), 0, 1)

    human = np.where(rng.random(n) < TIES, 2, bt(THETA))
    judge = np.where(rng.random(n) < AGREE, human, bt(THETA + BIAS))
    columns = {}
    if sampling == "uniform":
        lab = np.zeros(n, bool)
        lab[rng.choice(n, n_lab, replace=False)] = True
    else:
        heavy = np.isin(a, (2, 4)) | np.isin(b, (2, 4))
        base = n_lab / (n * (1 + 2 * heavy.mean()))
        pi = np.where(heavy, 3 * base, base)
        lab = rng.random(n) < pi
        columns["pi"] = pi
    columns["human"] = np.where(lab, human, np.nan)
    return Votes.from_arrays(a, b, judge, models=MODELS, columns=columns)


def replicate(rng: np.random.Generator, n: int, sampling: str, n_lab: int) -> dict:
    votes = draw(rng, n, sampling, n_lab)
    inclusion = "pi" if sampling == "stratified" else None
    ranks = true_ranks(THETA)
    seed = int(rng.integers(2**31))
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        auto = rank_votes(votes, human="human", inclusion=inclusion, alpha=ALPHA, seed=seed)
        one = rank_votes(votes, human="human", inclusion=inclusion, alpha=ALPHA, seed=seed, lam=1)
    for name, ranking in (("auto", auto), ("one", one)):
        rows = {r["model"]: r for r in ranking.details["ppi"]["fits"]}
        for fit in ("judge", "human", "ppi"):
            if name == "one" and fit != "ppi":
                continue
            key = fit if name == "auto" else "ppi lam=1"
            got = [rows[m][f"{fit}_rank"] for m in MODELS]
            if any(g is None for g in got):  # the human-only fit had no finite strengths
                out[key] = None
                continue
            lo, hi = np.array(got).T
            est = np.array([rows[m][fit] for m in MODELS])
            se = np.array([rows[m][f"{fit}_se"] for m in MODELS])
            marginal = float((np.abs(est - CENTRED) <= Z * se).mean())
            out[key] = (
                bool(((lo <= ranks) & (ranks <= hi)).all()),
                float((hi - lo).mean()),
                marginal,
            )
    ppi = auto.details["ppi"]
    out["effective"] = float(ppi["effective_labels"])
    out["n_labelled"] = int(ppi["n_labelled"])
    out["lam"] = float(ppi["lam"])
    return out


def summarise(label: str, runs: list[dict], n: int) -> list[dict]:
    rows = []
    for fit in FITS:
        usable = [r[fit] for r in runs if r[fit] is not None]
        reps = len(usable)
        cov = float(np.mean([u[0] for u in usable]))
        rows.append(
            {
                "design": label,
                "fit": fit,
                "battles": n,
                "reps": reps,
                "reps_without_finite_fit": len(runs) - reps,
                "coverage": cov,
                "coverage_se": float(np.sqrt(cov * (1 - cov) / reps)),
                "width": float(np.mean([u[1] for u in usable])),
                "strength_coverage": float(np.mean([u[2] for u in usable])),
                "strength_coverage_se": float(
                    np.std([u[2] for u in usable], ddof=1) / np.sqrt(reps)
                ),
                "mean_labelled": float(np.mean([r["n_labelled"] for r in runs])),
                "mean_effective_labels": float(np.mean([r["effective"] for r in runs])),
                "mean_lam": float(np.mean([r["lam"] for r in runs])),
            }
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--battles", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    reps = 6 if args.quick else args.reps
    n = 3000 if args.quick else args.battles
    started = time.time()
    results = []
    print(
        "| design | fit | rank coverage | width (upper - lower) | strength coverage | labels "
        "| effective labels | lam |\n|---|---|---|---|---|---|---|---|"
    )
    for k, (label, sampling, n_lab) in enumerate(DESIGNS):
        rng = np.random.default_rng([args.seed, k])
        n_lab = min(n_lab, n // 3)
        runs = [replicate(rng, n, sampling, n_lab) for _ in range(reps)]
        for row in summarise(label, runs, n):
            results.append(row)
            print(
                f"| {label} | {row['fit']} | {row['coverage']:.3f} ± {row['coverage_se']:.3f} | "
                f"{row['width']:.2f} | {row['strength_coverage']:.3f} ± "
                f"{row['strength_coverage_se']:.3f} | {row['mean_labelled']:.0f} | "
                f"{row['mean_effective_labels']:.0f} | {row['mean_lam']:.2f} |"
            )
    record = {
        "study": "arena_ppi",
        "alpha": ALPHA,
        "theta": THETA.tolist(),
        "bias": BIAS.tolist(),
        "agree": AGREE,
        "ties": TIES,
        "seed": args.seed,
        "seconds": round(time.time() - started, 1),
        "quick": bool(args.quick),
        "results": results,
    }
    save_record(record, RECORDED, args.out, args.quick)
    print(f"{time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
