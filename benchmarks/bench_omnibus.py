"""Speed and memory of the omnibus tests and the mixed model.

    python benchmarks/bench_omnibus.py            # all cases, best of 5 runs each
    python benchmarks/bench_omnibus.py --repeat 3 --only mixed

Cases (targets from issue 5):

* ``mixed``: ``mixed_model`` on the bundled MMLU-Pro data (32 models, 12,032 questions in 14
  categories, 383,274 rows, unbalanced) -- target <= 20 s and <= 4 GiB; also the mixed-model
  rank intervals and the naive / paired / clustered / mixed side-by-side table.
* ``omnibus``: ``rm_anova`` and ``friedman`` for 400 models x 14,000 items -- target <= 2 s;
  from a prepared items x models matrix (``UnitScores``) and from a validated long table
  (``Scores``, 5.6 million rows, which adds the complete-case aggregation); and, without a
  target, the post-hoc ``tukey_hsd`` and ``nemenyi`` on the 79,800 pairs (one run each).

Each case runs in a fresh process, so that its peak resident memory (``ru_maxrss``) is its own;
the baseline (interpreter, imports and the input data) is reported beside it. Timings are wall
clock, best of ``--repeat`` runs, on a machine shared with other work: treat them as upper bounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import time


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _mixed_case(kind: str, repeat: int, queue) -> None:
    import rankci

    start = time.perf_counter()
    scores = rankci.datasets.load_mmlu_pro()
    load = time.perf_counter() - start
    baseline = _rss_mib()
    if kind == "fit":
        seconds, model = _best(lambda: rankci.mixed_model(scores), repeat)
        extra = {
            "variance_components": model.variance_components,
            "model_test": model.model_test,
            "optimizer": model.notes["optimizer"],
        }
    elif kind == "fit_no_tukey":
        seconds, model = _best(lambda: rankci.mixed_model(scores, tukey=False), repeat)
        extra = {}
    elif kind == "fit_model_by_cluster":
        seconds, model = _best(lambda: rankci.mixed_model(scores, model_by_cluster=True), repeat)
        extra = {
            "variance_components": model.variance_components,
            "optimizer": model.notes["optimizer"],
        }
    elif kind == "ranking":
        model = rankci.mixed_model(scores)
        seconds, ranking = _best(lambda: rankci.mixed_ranking(model), repeat)
        extra = {"certified_pairs": int(ranking.dominance.sum())}
    else:
        model = rankci.mixed_model(scores)
        seconds, table = _best(lambda: rankci.side_by_side(scores, mixed=model), repeat)
        extra = {"pairs": len(table.table), "disagree": int(table.table.disagree.sum())}
    queue.put(
        {
            "case": f"mixed/{kind}",
            "rows": scores.n_rows,
            "models": scores.n_models,
            "items": scores.n_items,
            "seconds": seconds,
            "load_seconds": load,
            "baseline_mib": baseline,
            "peak_mib": _rss_mib(),
            **extra,
        }
    )


def _omnibus_case(kind: str, source: str, repeat: int, queue) -> None:
    import numpy as np

    import rankci

    rng = np.random.default_rng(20240501)
    n_items, n_models = 14_000, 400
    ability = rng.uniform(0.2, 0.8, n_models)
    easiness = rng.normal(0, 1.0, n_items)
    p = 1 / (1 + np.exp(-(np.log(ability / (1 - ability))[None, :] + easiness[:, None])))
    y = (rng.random((n_items, n_models)) < p).astype(float)
    models = tuple(f"m{j:03d}" for j in range(n_models))
    if source == "units":
        data = rankci.UnitScores(
            y, models, tuple(f"i{i:05d}" for i in range(n_items)), "item", "complete", {}, True
        )
    else:
        data = rankci.Scores.from_matrix(y, models=models)
    baseline = _rss_mib()
    fn = {
        "anova": rankci.rm_anova,
        "friedman": rankci.friedman,
        "tukey": rankci.tukey_hsd,
        "nemenyi": rankci.nemenyi,
    }[kind]
    seconds, result = _best(lambda: fn(data), repeat)
    queue.put(
        {
            "case": f"{kind}/{source}",
            "models": n_models,
            "items": n_items,
            "seconds": seconds,
            "baseline_mib": baseline,
            "peak_mib": _rss_mib(),
            "p": getattr(result, "p", None),
        }
    )


def _run(target, *args) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=target, args=(*args, queue))
    process.start()
    out = queue.get()
    process.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=("mixed", "omnibus"))
    args = parser.parse_args()
    print(f"# {platform.platform()}, {mp.cpu_count()} cores, Python {platform.python_version()}")
    results = []
    if args.only in (None, "mixed"):
        for kind in ("fit", "fit_no_tukey", "fit_model_by_cluster", "ranking", "side_by_side"):
            results.append(_run(_mixed_case, kind, args.repeat))
            print(json.dumps(results[-1], default=str))
    if args.only in (None, "omnibus"):
        for kind in ("anova", "friedman"):
            for source in ("units", "scores"):
                results.append(_run(_omnibus_case, kind, source, args.repeat))
                print(json.dumps(results[-1], default=str))
        for kind in ("tukey", "nemenyi"):  # post-hoc: 79,800 pairs (no target)
            results.append(_run(_omnibus_case, kind, "units", 1))
            print(json.dumps(results[-1], default=str))
    print()
    print("| case | size | best time (s) | peak RSS (MiB) | baseline RSS (MiB) |")
    print("|---|---|---:|---:|---:|")
    for r in results:
        size = f"{r['models']} models x {r['items']} items" + (
            f", {r['rows']} rows" if "rows" in r else ""
        )
        print(
            f"| {r['case']} | {size} | {r['seconds']:.3f} | {r['peak_mib']:.0f} | "
            f"{r['baseline_mib']:.0f} |"
        )


if __name__ == "__main__":
    main()
