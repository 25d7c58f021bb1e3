"""Speed and memory of the omnibus tests and the mixed model.

    python benchmarks/bench_omnibus.py            # all cases, best of 5 runs each
    python benchmarks/bench_omnibus.py --repeat 3 --only mixed
    python benchmarks/bench_omnibus.py --only many    # the many-model rows of issue 18
    python benchmarks/bench_omnibus.py --quick        # small sizes, one run (CI)

Cases (targets from issue 5):

* ``mixed``: ``mixed_model`` on the bundled MMLU-Pro data (32 models, 12,032 questions in 14
  categories, 383,274 rows, unbalanced) -- target <= 20 s and <= 4 GiB; also the mixed-model
  rank intervals and the naive / paired / clustered / mixed side-by-side table.
* ``omnibus``: ``rm_anova`` and ``friedman`` for 400 models x 14,000 items -- target <= 2 s;
  from a prepared items x models matrix (``UnitScores``) and from a validated long table
  (``Scores``, 5.6 million rows, which adds the complete-case aggregation); and, without a
  target, the post-hoc ``tukey_hsd`` and ``nemenyi`` on the 79,800 pairs (one run each).

Cases for many models (issue 18), each against the old path measured in the same process:

* ``many/mixed``: ``mixed_model`` with Tukey p-values on 200 models x 30 items (5 clusters,
  19,900 pairs, finite Satterthwaite df): the fit, the vectorised studentized range over all
  pairs, and scipy's per-pair ``studentized_range.sf`` (the old path) on a random sample of
  pairs, extrapolated to all of them (the whole old path takes minutes); the largest difference
  on the sample is reported.
* ``many/cli``: ``rankci omnibus --method mixed`` on the same board as a CSV, the whole command
  in a child process: wall time, lines printed, and the lines with ``--full-table``.
* ``many/anova``: ``rm_anova`` (and ``friedman``) on 2,500 models x 700 items against the old
  k x k route (forced by ``_DIRECT_MAX_MODELS``), with the largest relative difference.
* ``many/tukey``: ``tukey_hsd`` and ``nemenyi`` on 400 x 14,000 (79,800 pairs) against the
  scipy path (``backend="scipy"``), and ``tukey_hsd`` on 2,500 x 700 (3.1 M pairs, new path only).

``--quick`` runs every case at small sizes, once.

Each case runs in a fresh process, so that its peak resident memory (``ru_maxrss``) is its own;
the baseline (interpreter, imports and the input data) is reported beside it. Each is spawned
(a new interpreter); with ``--quick`` they are forked from a forkserver that has imported
rankci, numpy and scipy once, since at small sizes the imports took most of the time (about
1.3 s a case, half the wall time of ``--quick --only many``). Timings are wall
clock, best of ``--repeat`` runs, on a machine shared with other work: treat them as upper bounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import subprocess
import sys
import tempfile
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
        seconds, model = _best(lambda: rankci.mixed_model(scores, random="model:cluster"), repeat)
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


def _omnibus_case(kind: str, source: str, repeat: int, size, queue) -> None:
    import numpy as np

    import rankci

    rng = np.random.default_rng(20240501)
    n_models, n_items = size
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


# ---------------------------------------------------------------------- many models (issue 18)
def _many_board(n_models: int, n_items: int):
    import numpy as np

    from rankci.simulate import simulate_scores

    ability = np.random.default_rng(1).normal(0, 0.5, n_models)
    return simulate_scores(ability, n_items, n_clusters=5, sigma_cluster=0.3, rng=2).scores


def _many_mixed_case(size, sample: int, repeat: int, queue) -> None:
    import numpy as np
    from scipy import stats

    import rankci
    from rankci.evidence import studentized_range

    scores = _many_board(*size)
    baseline = _rss_mib()
    fit_seconds, fit = _best(lambda: rankci.mixed_model(scores, tukey=False), repeat)
    k = scores.n_models
    t = fit.contrasts.t.to_numpy()
    df = fit.contrasts.df.to_numpy()

    def vectorised():
        studentized_range._range_table.cache_clear()  # the table for k is part of the cost
        return studentized_range.tukey_pvalues(t, k, df, backend="vectorised")

    new_seconds, p_new = _best(vectorised, repeat)
    whole_seconds, _ = _best(lambda: rankci.mixed_model(scores), 1)
    pick = np.random.default_rng(3).choice(t.size, min(sample, t.size), replace=False)
    start = time.perf_counter()
    p_old = stats.studentized_range.sf(np.sqrt(2) * np.abs(t[pick]), k, df[pick])
    per_pair_old = (time.perf_counter() - start) / pick.size
    queue.put(
        {
            "case": "many/mixed",
            "models": k,
            "items": scores.n_items,
            "pairs": int(t.size),
            "fit_seconds": fit_seconds,
            "tukey_seconds": new_seconds,
            "seconds": whole_seconds,
            "old_tukey_seconds_extrapolated": per_pair_old * t.size,
            "old_seconds_per_pair": per_pair_old,
            "sample_pairs": int(pick.size),
            "ratio_tukey_old_over_new": per_pair_old * t.size / new_seconds,
            "max_abs_diff_on_sample": float(np.max(np.abs(p_new[pick] - p_old))),
            "df_range": [float(np.nanmin(df)), float(np.nanmax(df))],
            "baseline_mib": baseline,
            "peak_mib": _rss_mib(),
        }
    )


def _many_cli_case(size, repeat: int, queue) -> None:
    scores = _many_board(*size)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "board.csv")
        scores.to_frame().to_csv(path, index=False)
        runs = {}
        for label, extra in (("default", []), ("full_table", ["--full-table"])):
            best, lines = float("inf"), 0
            for _ in range(repeat):
                start = time.perf_counter()
                out = subprocess.run(
                    [sys.executable, "-m", "rankci", "omnibus", path, "--method", "mixed", *extra],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ, "RANKCI_PROGRESS": "0"},
                )
                best = min(best, time.perf_counter() - start)
                lines = out.stdout.count("\n")
            runs[label] = (best, lines)
    queue.put(
        {
            "case": "many/cli",
            "models": scores.n_models,
            "items": scores.n_items,
            "seconds": runs["default"][0],
            "lines": runs["default"][1],
            "full_table_seconds": runs["full_table"][0],
            "full_table_lines": runs["full_table"][1],
            "baseline_mib": _rss_mib(),
            "peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0,
        }
    )


def _many_anova_case(size, repeat: int, queue) -> None:
    import numpy as np

    import rankci
    from rankci.analyses import omnibus

    n_models, n_items = size
    rng = np.random.default_rng(20240501)
    y = (rng.random((n_items, n_models)) < rng.uniform(0.2, 0.8, n_models)).astype(float)
    models = tuple(f"m{j:05d}" for j in range(n_models))
    data = rankci.UnitScores(
        y, models, tuple(f"i{i:05d}" for i in range(n_items)), "item", "complete", {}, True
    )
    baseline = _rss_mib()
    seconds, new = _best(lambda: omnibus.rm_anova(data), repeat)
    friedman_seconds, _ = _best(lambda: omnibus.friedman(data), repeat)
    saved = omnibus._DIRECT_MAX_MODELS
    omnibus._DIRECT_MAX_MODELS = 10**9  # the old route: T = C'SC from the k x k cross product
    try:
        old_seconds, old = _best(lambda: omnibus.rm_anova(data), 1)
    finally:
        omnibus._DIRECT_MAX_MODELS = saved
    keys = ("F", "p", "gg_epsilon", "hf_epsilon", "p_gg", "p_hf", "ss_error")
    diff = max(
        abs(getattr(new, k) - getattr(old, k)) / max(abs(getattr(old, k)), 1e-300) for k in keys
    )
    queue.put(
        {
            "case": "many/anova",
            "models": n_models,
            "items": n_items,
            "seconds": seconds,
            "old_seconds": old_seconds,
            "ratio_old_over_new": old_seconds / seconds,
            "max_rel_diff": float(diff),
            "friedman_seconds": friedman_seconds,
            "baseline_mib": baseline,
            "peak_mib": _rss_mib(),
        }
    )


def _many_tukey_case(kind: str, size, old_too: bool, queue) -> None:
    import numpy as np

    import rankci
    from rankci.analyses import posthoc

    n_models, n_items = size
    rng = np.random.default_rng(20240501)
    ability = rng.uniform(0.2, 0.8, n_models)
    easiness = rng.normal(0, 1.0, n_items)
    p = 1 / (1 + np.exp(-(np.log(ability / (1 - ability))[None, :] + easiness[:, None])))
    y = (rng.random((n_items, n_models)) < p).astype(float)
    models = tuple(f"m{j:05d}" for j in range(n_models))
    data = rankci.UnitScores(
        y, models, tuple(f"i{i:05d}" for i in range(n_items)), "item", "complete", {}, True
    )
    fn = posthoc.tukey_hsd if kind == "tukey" else posthoc.nemenyi
    baseline = _rss_mib()
    start = time.perf_counter()
    new = fn(data, backend="vectorised")
    seconds = time.perf_counter() - start
    row = {
        "case": f"many/{kind}",
        "models": n_models,
        "items": n_items,
        "pairs": len(new.table),
        "df": new.df,
        "seconds": seconds,
        "baseline_mib": baseline,
        "peak_mib": _rss_mib(),
    }
    if old_too:
        start = time.perf_counter()
        old = fn(data, backend="scipy")
        row["old_seconds"] = time.perf_counter() - start
        row["ratio_old_over_new"] = row["old_seconds"] / seconds
        row["max_abs_diff"] = float(np.max(np.abs(new.table.p_adjusted - old.table.p_adjusted)))
        row["critical_rel_diff"] = abs(new.critical_value / old.critical_value - 1)
    queue.put(row)


def _many(quick: bool, repeat: int) -> list[dict]:
    """The issue-18 rows (small sizes with ``quick``)."""
    mixed = (30, 12) if quick else (200, 30)
    anova = (450, 60) if quick else (2_500, 700)
    tukey = (48, 2_200) if quick else (400, 14_000)  # quick: df >= 1e5, scipy's fast branch
    big = (150, 80) if quick else (2_500, 700)
    rows = [
        _run(_many_mixed_case, mixed, 10 if quick else 100, repeat),
        _run(_many_cli_case, mixed, 1),
        _run(_many_anova_case, anova, repeat),
        _run(_many_tukey_case, "tukey", tukey, True),
        _run(_many_tukey_case, "nemenyi", tukey, True),
        _run(_many_tukey_case, "tukey", big, False),
    ]
    return rows


def _many_table(rows: list[dict]) -> str:
    out = [
        "| case | size | new (s) | old path (s) | old / new | agreement | peak RSS (MiB) |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        size = f"{r['models']} x {r['items']}" + (f", {r['pairs']} pairs" if "pairs" in r else "")
        if r["case"] == "many/mixed":
            new = f"{r['seconds']:.2f} (fit {r['fit_seconds']:.2f}, Tukey {r['tukey_seconds']:.2f})"
            old = (
                f"{r['old_tukey_seconds_extrapolated']:.0f} (Tukey, from {r['sample_pairs']} pairs)"
            )
            ratio = f"{r['ratio_tukey_old_over_new']:.0f} (Tukey)"
            agree = f"max abs diff {r['max_abs_diff_on_sample']:.1e}"
        elif r["case"] == "many/cli":
            new = f"{r['seconds']:.2f}"
            old, ratio = "", ""
            agree = f"{r['lines']} lines ({r['full_table_lines']} with --full-table)"
        elif r["case"] == "many/anova":
            new = f"{r['seconds']:.3f} (friedman {r['friedman_seconds']:.2f})"
            old = f"{r['old_seconds']:.2f}"
            ratio = f"{r['ratio_old_over_new']:.0f}"
            agree = f"max rel diff {r['max_rel_diff']:.1e}"
        else:
            new = f"{r['seconds']:.2f}"
            old = f"{r['old_seconds']:.2f}" if "old_seconds" in r else "not run"
            ratio = f"{r['ratio_old_over_new']:.0f}" if "old_seconds" in r else ""
            agree = f"max abs diff {r['max_abs_diff']:.1e}" if "max_abs_diff" in r else ""
        out.append(
            f"| {r['case']} | {size} | {new} | {old} | {ratio} | {agree} | {r['peak_mib']:.0f} |"
        )
    return "\n".join(out)


#: How each case's process is started: "spawn" (a new interpreter), or with ``--quick``
#: "forkserver", whose server has imported :data:`PRELOAD` once.
START = "spawn"
PRELOAD = ["rankci", "rankci.analyses.omnibus", "rankci.analyses.posthoc", "scipy.stats"]


def _run(target, *args) -> dict:
    import queue as queues

    ctx = mp.get_context(START)
    queue = ctx.Queue()
    process = ctx.Process(target=target, args=(*args, queue))
    process.start()
    while True:  # a child that fails must not leave the parent waiting
        try:
            out = queue.get(timeout=1.0)
            break
        except queues.Empty:
            if not process.is_alive():
                raise RuntimeError(
                    f"{target.__name__}{args} failed (exit {process.exitcode})"
                ) from None
    process.join()
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=("mixed", "omnibus", "many"))
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each (CI)")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    if args.quick:
        global START
        START = "forkserver"
        mp.get_context(START).set_forkserver_preload(PRELOAD)
    load = os.getloadavg()
    print(
        f"# {platform.platform()}, {mp.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    results = []
    if args.only in (None, "mixed") and not args.quick:
        for kind in ("fit", "fit_no_tukey", "fit_model_by_cluster", "ranking", "side_by_side"):
            results.append(_run(_mixed_case, kind, repeat))
            print(json.dumps(results[-1], default=str))
    if args.only in (None, "omnibus"):
        size = (60, 500) if args.quick else (400, 14_000)
        for kind in ("anova", "friedman"):
            for source in ("units", "scores"):
                results.append(_run(_omnibus_case, kind, source, repeat, size))
                print(json.dumps(results[-1], default=str))
        for kind in ("tukey", "nemenyi"):  # post-hoc: 79,800 pairs (no target)
            results.append(_run(_omnibus_case, kind, "units", 1, size))
            print(json.dumps(results[-1], default=str))
    many = []
    if args.only in (None, "many"):
        many = _many(args.quick, repeat)
        for row in many:
            print(json.dumps(row, default=str))
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
    if many:
        print()
        print(_many_table(many))
        load = os.getloadavg()
        print(f"\nload average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return results + many


if __name__ == "__main__":
    main()
