"""Speed of the arena path (issue 27): 2,000,000 votes over 200 models, ties, a prompt cluster.

Target: read the Parquet, fit Bradley-Terry, the prompt-clustered sandwich and the simultaneous
max-t rank intervals in <= 10 s. Votes: strengths ~ N(0, 0.5^2), pairs uniform, 20 % ties
(half "tie", half "tie (bothbad)"), 200,000 prompts; written once to a Parquet file (not timed).

Stages (each timed, best of ``--repeat``):

* ``read``: ``pandas.read_parquet`` of model_a, model_b, winner, prompt;
* ``votes``: the frame to a :class:`rankci.votes.Votes` (``votes_from_frame`` below: the one
  placeholder to swap for the readers' ``read_votes``);
* ``fit + sandwich``: :func:`rankci.votes.fit_bradley_terry` with ``covariance="cluster"``,
  ``cluster="prompt"``;
* ``rank``: :func:`rankci.votes.rank.ranking_from_fit`, max-t, 1,000 draws, simultaneous.

Baseline (same run): statsmodels ``Logit`` with ``cov_type="cluster"`` on the first ``--sm-votes``
votes (its design is dense: 2 M x 199 would need 3.2 GB), timed there and scaled by the votes;
its strengths and standard errors are compared with rankci's fit of the same votes.

Peers (``--peer-python`` with fschat / arena-rank installed, a separate venv): FastChat's
``compute_mle_elo`` with 100 bootstrap rounds and arena-rank's fit, on the same Parquet file, in a
child process.

The modules are imported (one small fit) before anything is timed.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_arena.py`` (``--votes 2000000 --models 200
--repeat 3`` by default);
``--quick`` (20,000 votes, 20 models, once).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rankci.votes import Votes, fit_bradley_terry
from rankci.votes.rank import VotesSpec, ranking_from_fit

WINNER_CODE = {"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 3}


def make_votes(n: int, m: int, prompts: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 0.5, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    u = rng.random(n)
    winner = np.where(u < 0.1, 3, np.where(u < 0.2, 2, np.where(rng.random(n) < p, 0, 1)))
    names = np.array([f"model-{k:03d}" for k in range(m)], dtype=object)
    labels = np.array(["model_a", "model_b", "tie", "tie (bothbad)"], dtype=object)
    return pd.DataFrame(
        {
            "model_a": pd.Categorical(names[a]),
            "model_b": pd.Categorical(names[b]),
            "winner": pd.Categorical(labels[winner]),
            "prompt": rng.integers(0, prompts, n),
        }
    )


def votes_from_frame(frame: pd.DataFrame) -> Votes:
    """model_a / model_b / winner (+ prompt) -> Votes: a placeholder for ``read_votes``.

    Model names through categorical codes (the Parquet columns are categorical); the winner's
    categories mapped once.
    """
    a = frame["model_a"].astype("category")
    b = frame["model_b"].astype("category")
    models = sorted(set(a.cat.categories) | set(b.cat.categories))
    a_codes = pd.Categorical(a, categories=models).codes
    b_codes = pd.Categorical(b, categories=models).codes
    winner = frame["winner"].astype("category")
    lookup = np.array([WINNER_CODE[str(c)] for c in winner.cat.categories], dtype=np.int8)
    outcome = lookup[winner.cat.codes.to_numpy()]
    return Votes.from_arrays(
        a_codes, b_codes, outcome, models=models, columns={"prompt": frame["prompt"].to_numpy()}
    )


def _best(call, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - t0)
    return best, out


def statsmodels_baseline(frame: pd.DataFrame, n_sm: int):
    import statsmodels.api as sm

    sub = frame.iloc[:n_sm]
    votes = votes_from_frame(sub)
    m = votes.n_models
    x = np.zeros((n_sm, m))
    x[np.arange(n_sm), votes.a] = 1
    x[np.arange(n_sm), votes.b] = -1
    y = np.where(votes.outcome == 0, 1.0, np.where(votes.outcome == 1, 0.0, 0.5))
    t0 = time.perf_counter()
    ref = sm.Logit(y, x[:, 1:]).fit(
        disp=0, method="newton", cov_type="cluster", cov_kwds={"groups": votes.columns["prompt"]}
    )
    seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    fit = fit_bradley_terry(votes, covariance="cluster", cluster="prompt")
    ours = time.perf_counter() - t0
    s = np.concatenate([[0.0], ref.params])
    v = np.zeros((m, m))
    v[1:, 1:] = ref.cov_params()
    c = np.eye(m) - 1.0 / m
    se = np.sqrt(np.diag(c @ v @ c.T))
    return {
        "votes": n_sm,
        "seconds": seconds,
        "rankci_seconds_same_votes": ours,
        "max_abs_diff_strength": float(np.abs((s - s.mean()) - fit.strength).max()),
        "max_rel_diff_se": float(np.abs(se / fit.se - 1).max()),
    }


PEER = textwrap.dedent(
    """
    import ast, json, math, sys, time
    import numpy as np, pandas as pd
    path, n_sub, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    frame = pd.read_parquet(path)
    df = frame.assign(model_a=frame.model_a.astype(str), model_b=frame.model_b.astype(str),
                      winner=frame.winner.astype(str))
    out = {}
    try:  # arena-rank: the LMArena methodology (JAX, L-BFGS), sandwich and bootstrap intervals
        from arena_rank.models.bradley_terry import BradleyTerry
        from arena_rank.utils.data_utils import PairDataset
        t0 = time.perf_counter()
        ds = PairDataset.from_pandas(df)
        model = BradleyTerry(n_competitors=ds.n_competitors)
        res = model.compute_ratings_and_cis(ds, ci_method="sandwich")
        np.asarray(res["ratings"])
        out["arena_rank_sandwich_s"] = time.perf_counter() - t0
        names = res["competitors"]
        out["arena_rank_ratings"] = dict(zip(names, np.asarray(res["ratings"]).tolist()))
        out["arena_rank_se"] = dict(zip(names, np.sqrt(np.asarray(res["variances"])).tolist()))
        if reps:  # its bootstrap forks a multiprocessing pool after JAX has started
            t0 = time.perf_counter()
            BradleyTerry(n_competitors=ds.n_competitors).compute_ratings_and_cis(
                ds, ci_method="bootstrap", num_bootstrap=reps, n_jobs=2)
            out["arena_rank_bootstrap"] = [reps, time.perf_counter() - t0]
    except Exception as err:
        out["arena_rank_error"] = repr(err)
    try:  # FastChat's MLE, its code taken from its module without importing the plotting stack
        import fastchat.serve.monitor as mon
        source = open(mon.__path__[0] + "/elo_analysis.py").read()
        tree = ast.parse(source)
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name in ("compute_mle_elo", "compute_elo_mle_with_tie"))
        space = {"np": np, "pd": pd, "math": math}
        exec(compile(ast.Module([fn], []), "elo_analysis.py", "exec"), space)
        compute = space[fn.name]
        out["fastchat_function"] = fn.name
        sub = df.iloc[:n_sub]
        t0 = time.perf_counter()
        elo = compute(sub)
        out["fastchat_mle_s"] = [n_sub, time.perf_counter() - t0]
        out["fastchat_elo"] = {k: float(v) for k, v in elo.items()}
    except Exception as err:
        out["fastchat_error"] = repr(err)
    print(json.dumps(out))
    """
)


def run_peers(args, path, frame, votes) -> dict:
    """The peers in their own venv, on the same Parquet file; their answers against rankci's."""
    done = subprocess.run(
        [args.peer_python, "-c", PEER, str(path), str(args.fastchat_votes), str(args.peer_reps)],
        capture_output=True,
        text=True,
        timeout=3000,
    )
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    peers = json.loads(done.stdout.strip().splitlines()[-1])
    sandwich = fit_bradley_terry(votes, covariance="sandwich")  # timed in main (fit_hc0_s)
    if "arena_rank_ratings" in peers:
        theirs = np.array([peers["arena_rank_ratings"][m] for m in sandwich.models])
        log_odds = (theirs - 1000.0) / (400 / np.log(10))
        peers["arena_rank_max_abs_diff_log_odds"] = float(
            np.abs(log_odds - log_odds.mean() - sandwich.strength).max()
        )
        se = np.array([peers["arena_rank_se"][m] for m in sandwich.models]) / (400 / np.log(10))
        peers["arena_rank_max_rel_diff_se"] = float(np.abs(se / sandwich.se - 1).max())
        del peers["arena_rank_ratings"], peers["arena_rank_se"]
    if "fastchat_elo" in peers:
        elo = peers.pop("fastchat_elo")
        sub = votes_from_frame(frame.iloc[: args.fastchat_votes])
        ours = fit_bradley_terry(sub, covariance="model")
        theirs = np.array([elo[m] for m in ours.models]) / (400 / np.log(10))
        peers["fastchat_max_abs_diff_log_odds"] = float(
            np.abs(theirs - theirs.mean() - ours.strength).max()
        )
    return peers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=2_000_000)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--prompts", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sm-votes", type=int, default=100_000)
    parser.add_argument("--peer-python")
    parser.add_argument(
        "--fastchat-votes",
        type=int,
        default=100_000,
        help="FastChat's dense design: timed on these first votes, scaled up",
    )
    parser.add_argument(
        "--peer-reps",
        type=int,
        default=0,
        help="arena-rank bootstrap rounds to time (0: none; its multiprocessing "
        "pool forked after JAX hung on this machine)",
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.votes, args.models, args.prompts, args.repeat, args.sm_votes = (
            20_000,
            20,
            2_000,
            1,
            5_000,
        )
        args.fastchat_votes = 5_000
    warm = votes_from_frame(
        make_votes(2_000, 5, 100, seed=1)
    )  # imports (scipy.stats, ...) not timed
    ranking_from_fit(
        fit_bradley_terry(warm, covariance="cluster", cluster="prompt"),
        VotesSpec(covariance="cluster", cluster="prompt", seed=1),
        warm,
    )
    frame = make_votes(args.votes, args.models, args.prompts)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "votes.parquet"
        frame.to_parquet(path)
        del frame
        cols = ["model_a", "model_b", "winner", "prompt"]
        t_read, frame = _best(lambda: pd.read_parquet(path, columns=cols), args.repeat)
        t_votes, votes = _best(lambda: votes_from_frame(frame), args.repeat)
        t_fit, fit = _best(
            lambda: fit_bradley_terry(votes, covariance="cluster", cluster="prompt"), args.repeat
        )
        spec = VotesSpec(covariance="cluster", cluster="prompt", seed=1)
        t_rank, ranking = _best(lambda: ranking_from_fit(fit, spec, votes), args.repeat)
        total = t_read + t_votes + t_fit + t_rank
        # the fit with the per-vote sandwich (HC0): the quantity arena-rank computes
        t_hc0, _ = _best(lambda: fit_bradley_terry(votes, covariance="sandwich"), args.repeat)
        baseline = statsmodels_baseline(frame, min(args.sm_votes, args.votes))
        peers = None
        if args.peer_python:
            peers = run_peers(args, path, frame, votes)
    record = {
        "votes": args.votes,
        "models": args.models,
        "prompts": args.prompts,
        "read_s": t_read,
        "votes_s": t_votes,
        "fit_sandwich_s": t_fit,
        "rank_maxt_s": t_rank,
        "fit_hc0_s": t_hc0,
        "total_s": total,
        "iterations": fit.iterations,
        "certified_pairs": int(ranking.dominance.sum()),
        "mean_interval_length": float((ranking.upper - ranking.lower + 1).mean()),
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "statsmodels": baseline,
        "peers": peers,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} "
        f"(1 min) at the end, Python {platform.python_version()}, numpy {np.__version__}",
    }
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
