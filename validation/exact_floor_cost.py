"""The power cost of the exact floor of the t test at few units (issue 16), on the bundled data.

``rankci.pairwise_tests`` (and so ``rankci.rank``) gives the paired t and z tests a floor for
scores in [0, 1]: a pair with at most ``exact_bound_n`` units (default 30) gets
``p = max(p_t, p_exact)``, where ``p_exact = exp(-n KL(ubar || u0))`` is Hoeffding's exact bound
(``rankci.evidence.pairwise.bounded_pvalue``; ``u = (d + 1) / 2``, ``u0 = (1 + delta) / 2``),
valid for every law of the differences. ``exact_bound_n=0`` gives the plain asymptotic tests.

This measures what the floor costs on real boards, where it binds: cluster units (a benchmark's
subjects as the units, so at most 14 units), ``rankci.rank(scores, unit="cluster")`` with its
defaults against the same call with ``exact_bound_n=0``, on

* MMLU-Pro (``rankci.datasets.load_mmlu_pro``): 32 models, 14 category clusters;
* ChemBench (``rankci.datasets.load_chembench``): 35 systems, 9 topic clusters;

and, as the contrasts, item units (thousands of items, above 30: the floor cannot bind) and the
easiest 3-model board of each (best, median and worst model, cluster units). Reported:
certified ordered pairs, the mean rank-interval width ``U - L``, and, for the floor, the
smallest mean difference ``dbar`` of the unit means at which ``p_exact`` can pass Holm's first
threshold ``alpha / (M (M - 1))`` (none when even ``dbar = 1``, ``p = 2^-n``, cannot), beside the
largest mean difference of the unit means on the board.

Run:  python validation/exact_floor_cost.py          (both datasets; seconds; results to
      validation/results/exact_floor_cost.json)
      python validation/exact_floor_cost.py --quick  (ChemBench only; results to a temporary
      folder, never over the recorded file)
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py
from scipy import optimize

import rankci
from rankci.datasets import load_chembench, load_mmlu_pro
from rankci.evidence.pairwise import bounded_pvalue

RESULTS = Path(__file__).resolve().parent / "results" / "exact_floor_cost.json"
ALPHA = 0.05
DATASETS = {"MMLU-Pro": load_mmlu_pro, "ChemBench": load_chembench}
RULES = {"default (exact floor, n <= 30)": {}, "exact_bound_n=0 (plain t)": {"exact_bound_n": 0}}


def smallest_passing_difference(n: int, threshold: float) -> float | None:
    """Smallest dbar in (0, 1] with ``bounded_pvalue(dbar, 0, n) <= threshold``, or None."""
    if float(bounded_pvalue(np.array(1.0), 0.0, np.array(n))) > threshold:
        return None
    return float(
        optimize.brentq(
            lambda d: float(bounded_pvalue(np.array(d), 0.0, np.array(n))) - threshold,
            1e-9,
            1.0,
            xtol=1e-6,
        )
    )


def spread_of_three(scores: rankci.Scores) -> rankci.Scores:
    """The best, the median and the worst model by mean score: the easiest 3-model board."""
    units = scores.units("item")
    order = [units.models[j] for j in np.argsort(-np.asarray(units.model_scores()))]
    return scores.subset(models=[order[0], order[len(order) // 2], order[-1]])


def one_board(name: str, scores: rankci.Scores, unit: str) -> dict:
    out: dict = {"dataset": name, "unit": unit, "rules": {}}
    for rule, options in RULES.items():
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", rankci.RankciWarning)
            ranking = rankci.rank(scores, unit=unit, **options)
        m = ranking.n_models
        out["models"], out["units"] = m, int(ranking.n_units)
        out["rules"][rule] = {
            "certified_pairs": int(np.asarray(ranking.dominance).sum()),
            "mean_width": float(np.mean(ranking.upper - ranking.lower)),
            "test_options": dict(ranking.procedure["test_options"]),
            "warnings": [str(w.message) for w in caught],
            "seconds": round(time.perf_counter() - start, 2),
        }
    unit_means = np.asarray(scores.units(unit).model_scores())
    out["largest_mean_difference"] = float(unit_means.max() - unit_means.min())
    threshold = ALPHA / (m * (m - 1))
    out["holm_first_threshold"] = threshold
    out["floor_smallest_p"] = float(0.5 ** out["units"]) if out["units"] <= 30 else 0.0
    out["floor_smallest_passing_dbar"] = (
        smallest_passing_difference(out["units"], threshold) if out["units"] <= 30 else 0.0
    )
    return out


def table(rows: list[dict]) -> str:
    lines = [
        "| data | units | M | ordered pairs | rule | certified pairs | mean U - L |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        for rule, v in r["rules"].items():
            lines.append(
                f"| {r['dataset']} | {r['units']} {r['unit']} | {r['models']} | "
                f"{r['models'] * (r['models'] - 1)} | {rule} | {v['certified_pairs']} | "
                f"{v['mean_width']:.2f} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", help=f"JSON of the results (default {RESULTS}; with --quick a temporary file)"
    )
    parser.add_argument("--quick", action="store_true", help="ChemBench only (CI smoke run)")
    args = parser.parse_args(argv)
    names = ["ChemBench"] if args.quick else list(DATASETS)
    rows = []
    for name in names:
        scores = DATASETS[name]()
        for unit in ("cluster", "item"):
            rows.append(one_board(name, scores, unit))
        rows.append(one_board(f"{name}, 3 models", spread_of_three(scores), "cluster"))
    print(f"rankci.rank(scores, unit=...) at alpha = {ALPHA}, default vs exact_bound_n=0\n")
    print(table(rows))
    for r in rows:
        if r["unit"] == "cluster":
            d = r["floor_smallest_passing_dbar"]
            reach = "no difference can" if d is None else f"dbar >= {d:.3f} needed"
            reach += f"; the largest mean difference is {r['largest_mean_difference']:.3f}"
            print(
                f"\n{r['dataset']}, {r['units']} clusters: the floor's smallest p is "
                f"2^-{r['units']} = {r['floor_smallest_p']:.3g}; Holm's first threshold is "
                f"{r['holm_first_threshold']:.3g} ({reach})"
            )
    record = {"alpha": ALPHA, "rankci": rankci.__version__, "rows": rows}
    save_record(record, RESULTS, args.out, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
