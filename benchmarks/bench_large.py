"""Large boards (issue 18): `rankci rank --format json` end to end, stage by stage, with a baseline.

Each size runs in a fresh subprocess (its peak resident memory, ru_maxrss, is its own):

* ``command``: ``rankci rank BOARD.parquet --format json -o FILE``, the whole command (start-up,
  reading, statistics, JSON written), timed from outside;
* stages inside one process: units, paired t for all pairs, Holm, closure and counting,
  ``to_dict`` and JSON encoding; plus score intervals (normal) and RM-ANOVA / Friedman;
* ``baseline``: a plain vectorised NumPy computation of the same rank intervals in the same
  process (covariance, t, ``scipy.special.stdtr``, Holm by one sort, closure by float32 matrix
  products, counting), with no JSON; the ratios are rankci / baseline.

Run:  python benchmarks/bench_large.py            (2,500 x 700 and 10,000 x 1,000)
      python benchmarks/bench_large.py --quick    (400 x 300; for CI)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SIZES = [(2_500, 700), (10_000, 1_000)]
QUICK = [(400, 300)]


def _board(models: int, items: int, path: str) -> None:
    import numpy as np

    from rankci.simulate import simulate_scores

    ability = np.random.default_rng(0).normal(0.0, 0.5, models)
    simulate_scores(ability, items, rng=1).scores.to_frame().to_parquet(path)


def _baseline(x):
    """Plain NumPy: the same simultaneous rank intervals (paired t + Holm + closure)."""
    import numpy as np
    from scipy import special

    n, m = x.shape
    mu = x.mean(axis=0)
    c = x - mu
    cov = c.T @ c / (n - 1)
    v = np.diag(cov)
    var = np.maximum(v[:, None] + v[None, :] - 2 * cov, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (mu[:, None] - mu[None, :]) / np.sqrt(var / n)
    p = special.stdtr(n - 1, -t)
    np.fill_diagonal(p, np.nan)
    finite = np.isfinite(p)
    k = int(finite.sum())
    cand = np.sort(p[finite & (p <= 0.05)])
    passes = cand <= 0.05 / (k - np.arange(cand.size))
    r = cand.size if passes.all() else int(np.argmin(passes))
    d = finite & (p <= cand[r - 1]) if r else np.zeros((m, m), bool)
    while True:
        f = d.astype(np.float32)
        grown = d | (f @ f > 0.5)
        if np.array_equal(grown, d):
            break
        d = grown
    return 1 + d.sum(axis=0), m - d.sum(axis=1)


def _stages(path: str) -> dict:
    import resource

    import numpy as np

    import rankci
    from rankci.analyses.omnibus import friedman, rm_anova
    from rankci.certify.holm import certify_holm
    from rankci.commands.output import ranking_json

    out = {}
    clock = time.perf_counter
    t0 = clock()
    scores = rankci.read_scores(path)
    t1 = clock()
    units = scores.units("item")
    t2 = clock()
    pw = rankci.pairwise_tests(units, "t")
    t3 = clock()
    cert = certify_holm(pw, 0.05)
    t4 = clock()
    ranking = cert.ranking()
    t5 = clock()
    text = ranking_json(ranking.to_dict())
    t6 = clock()
    out.update(
        read=t1 - t0, units=t2 - t1, pairwise_t=t3 - t2, holm=t4 - t3, closure_counting=t5 - t4,
        json=t6 - t5, json_mb=len(text) / 1e6, certified_pairs=int(ranking.dominance.sum()),
    )
    start = clock()
    pairs_text = ranking_json(ranking.to_dict(pairs=True))
    out["json_pairs"] = clock() - start
    out["json_pairs_mb"] = len(pairs_text) / 1e6
    del pairs_text
    start = clock()
    rankci.score_intervals(scores, method="normal")
    out["score_intervals_normal"] = clock() - start
    start = clock()
    rm_anova(units)
    out["rm_anova"] = clock() - start
    start = clock()
    friedman(units)
    out["friedman"] = clock() - start
    start = clock()
    lower, upper = _baseline(units.values)
    out["baseline"] = clock() - start
    out["baseline_equal"] = bool(
        np.array_equal(lower, ranking.lower) and np.array_equal(upper, ranking.upper)
    )
    out["stages_peak_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return out


def _in_child(function: str, *args: str) -> dict:
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_large as b;"
        f"print(json.dumps(b.{function}(*sys.argv[2:])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, here, *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}


def _command(path: str, out: str) -> dict:
    import resource

    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "rankci", "rank", path, "--format", "json", "-o", out],
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2
    return {"command_s": elapsed, "command_peak_gib": peak}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small size only (CI)")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for models, items in QUICK if args.quick else SIZES:
            path = os.path.join(tmp, f"b{models}x{items}.parquet")
            subprocess.run(
                [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]);"
                 "import bench_large as b;"
                 "b._board(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])",
                 os.path.dirname(os.path.abspath(__file__)), str(models), str(items), path],
                check=True,
            )
            row = {"models": models, "items": items}
            row.update(_in_child("_command", path, os.path.join(tmp, "out.json")))
            row.update(_in_child("_stages", path))
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
