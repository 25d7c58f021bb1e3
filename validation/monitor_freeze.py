"""Frozen against unfrozen monitors on real boards (issue 25, item 7): how often the answers differ.

``freeze`` (the default above 8 models) stops updating the wealth of a certified pair and reads
the cap for it; since issue 25 the reverse of a certified pair is still updated, so the
<= alpha event is seen (``rankci.sequential.freezing``). With the exact, integer-program and
e-Bonferroni certifiers the answers are then identical to ``freeze=False`` (proved there and
tested); with the shortcut, the certifier of more than 16 models, the frozen run's certified set
contains the unfrozen one's at every look and meets the event no later. This study measures how
often the shortcut's statements differ in practice, and checks the event claim on real data.

Designs, on the bundled boards MMLU-Pro (32 models; the 10,298 questions scored by every model)
and ChemBench (35 models x 2,788 questions); the truth is each model's mean over the board, so a
certified "j better than l" with ``mean_j <= mean_l`` is false:

* ``order``: the board replayed in R seeded uniformly random orders
  (``rankci.sequential.replay.evaluation_order``, exactly the replay's order), sampling model F;
* ``iid``: 2,000 items drawn i.i.d. with replacement from the board, R seeded draws, sampling
  model S (the validity study's design);
* ``tied``: as ``iid``, from a pool in which every model's column is its own fixed random
  permutation of the median model's column (real scores, every model with the same mean: every
  certified pair is false, and errors and the <= alpha event are most frequent).

Mixture bet, the shortcut (``certifier="auto"``), a look every 1 %, alpha = 0.05 (the default)
and 0.3 (more errors, so that the <= alpha event happens in some runs). Each run is made twice,
``freeze=True`` and ``freeze=False``, on the same items.

Reported per board and alpha, with Monte-Carlo standard errors over the orders:

* orders whose look records (rank bounds at every look) differ, and the share of looks that do;
* orders where the frozen certified set is not a superset of the unfrozen one at some look before
  the frozen run's event (must be 0), and orders where the unfrozen run meets the event and the
  frozen one does not, or later (must be 0);
* orders with the event (frozen / unfrozen), and orders with some false statement (frozen /
  unfrozen): a false certified pair at any look before the run's event.

Run:  python validation/monitor_freeze.py           (100 runs per row; about 8 minutes)
      python validation/monitor_freeze.py --quick   (3 runs per row, MMLU-Pro only: the CI
      smoke run; results to a temporary folder, never over validation/results/monitor_freeze.json)
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from _results import save_record  # validation/_results.py

from rankci.datasets import load_chembench, load_mmlu_pro
from rankci.sequential import Monitor
from rankci.sequential.replay import evaluation_order
from rankci.sequential.spec import parse_look_every

RECORDED = Path(__file__).resolve().parent / "results" / "monitor_freeze.json"
QUICK_ORDERS = 3
ALPHAS = (0.05, 0.3)
DESIGNS = ("order", "iid", "tied")
IID_ITEMS = 2000


def board(name: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(items x models scores of the items scored by every model, their labels, models)."""
    scores = {"mmlu_pro": load_mmlu_pro, "chembench": load_chembench}[name]()
    units = scores.units("item", missing="pairwise")
    complete = np.isfinite(units.values).all(axis=1)
    labels = np.asarray(units.labels, dtype=str)[complete]
    return units.values[complete], labels, list(units.models)


def stream(values, labels, seed: int, design: str) -> np.ndarray:
    """The items in the order they are fed: the board in the replay's order (``order``), or
    ``IID_ITEMS`` items drawn i.i.d. with replacement from it (``iid``)."""
    if design == "order":
        return values[evaluation_order(labels, seed)]
    rng = np.random.default_rng(20260425 + seed)
    if design == "tied":
        values = tied_pool(values)
    return values[rng.integers(0, values.shape[0], IID_ITEMS)]


def tied_pool(values: np.ndarray) -> np.ndarray:
    """Every model's column replaced by its own fixed random permutation of the median model's
    column: real scores, and every model has exactly the same mean over the pool."""
    means = values.mean(axis=0)
    column = values[:, int(np.argsort(means)[means.size // 2])]
    rng = np.random.default_rng(20260426)
    return np.column_stack([rng.permutation(column) for _ in range(values.shape[1])])


def run(x, models, alpha: float, freeze: bool, design: str) -> dict:
    """One monitor, fed look by look: the certified set at every look and the event."""
    n = x.shape[0]
    every = parse_look_every("1%", n)
    sampling = "finite" if design == "order" else "iid"  # iid and tied: model S
    mon = Monitor(models, sampling=sampling, n_items=n if design == "order" else None,
                  alpha=alpha, look_every=every, freeze=freeze)  # fmt: skip
    sets = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the <= alpha event's warning: recorded below
        for start in range(0, n, every):
            mon.update_block(x[start : start + every])
            sets.append(mon.ranking().dominance.copy())
    event = mon.alpha_event
    return {
        "looks": [(r["t"], r["lower"], r["upper"]) for r in mon.looks],
        "sets": sets,
        "event_t": np.inf if event is None else event["t"],
        "certifier": mon.certifier,
        "freeze": mon.freeze,
    }


def rate(count: int, total: int) -> dict:
    count, total = int(count), int(total)
    p = count / total
    return {"count": count, "of": total, "rate": p, "se": float(np.sqrt(p * (1 - p) / total))}


def compare(name: str, design: str, alpha: float, orders: int) -> dict:
    values, labels, models = board(name)
    truth = values.mean(axis=0)
    false_pair = truth[:, None] <= truth[None, :]  # "j better than l" false
    if design == "tied":  # equal means (their floating-point sums may differ in the last bit)
        false_pair[:] = True
    tally = dict.fromkeys(
        ["differ", "not_superset", "event_missed", "event_f", "event_u", "false_f", "false_u"], 0
    )
    looks_differ = looks_total = 0
    for seed in range(orders):
        x = stream(values, labels, seed, design)
        f = run(x, models, alpha, True, design)
        u = run(x, models, alpha, False, design)
        assert f["freeze"] and not u["freeze"] and f["certifier"] == "shortcut"
        same = [a == b for a, b in zip(f["looks"], u["looks"])]
        looks_differ += len(same) - sum(same)
        looks_total += len(same)
        tally["differ"] += not all(same)
        tally["event_f"] += np.isfinite(f["event_t"])
        tally["event_u"] += np.isfinite(u["event_t"])
        tally["event_missed"] += f["event_t"] > u["event_t"]
        for (t, _, _), sf, su in zip(f["looks"], f["sets"], u["sets"]):
            if t < f["event_t"] and (su & ~sf).any():
                tally["not_superset"] += 1
                break
        for key, r in (("false_f", f), ("false_u", u)):
            tally[key] += any(
                (s & false_pair).any() for (t, _, _), s in zip(r["looks"], r["sets"])
                if t < r["event_t"]
            )  # fmt: skip
    out = {key: rate(count, orders) for key, count in tally.items()}
    out["looks_differ"] = rate(looks_differ, looks_total)
    out.update(board=name, design=design, alpha=alpha, models=len(models),
               items=int(values.shape[0]) if design == "order" else IID_ITEMS)  # fmt: skip
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ORDERS} orders, MMLU-Pro")
    parser.add_argument("--out", help="where to write the JSON (default: validation/results/)")
    args = parser.parse_args(argv)
    orders = QUICK_ORDERS if args.quick else args.orders
    boards = ("mmlu_pro",) if args.quick else ("mmlu_pro", "chembench")
    start = time.perf_counter()
    rows = [
        compare(name, design, alpha, orders)
        for name in boards
        for design in DESIGNS
        for alpha in ALPHAS
    ]
    seconds = time.perf_counter() - start

    def fmt(r):
        return f"{r['count']}/{r['of']} ({r['rate']:.3f} +- {r['se']:.3f})"

    print(f"frozen vs unfrozen shortcut monitors, {orders} orders per row ({seconds:.0f} s)")
    for row in rows:
        print(f"\n{row['board']}, {row['design']} ({row['models']} models x {row['items']} "
              f"items), alpha = {row['alpha']}")  # fmt: skip
        print(f"  orders whose rank bounds differ at some look: {fmt(row['differ'])}")
        print(f"  looks whose rank bounds differ:               {fmt(row['looks_differ'])}")
        print(f"  frozen set not a superset before its event:   {fmt(row['not_superset'])}")
        print(f"  unfrozen event missed or met later (frozen):  {fmt(row['event_missed'])}")
        print(f"  <= alpha event, frozen / unfrozen:            "
              f"{fmt(row['event_f'])} / {fmt(row['event_u'])}")  # fmt: skip
        print(f"  some false statement, frozen / unfrozen:      "
              f"{fmt(row['false_f'])} / {fmt(row['false_u'])}")  # fmt: skip
    record = {"orders": orders, "seconds": round(seconds, 1), "rows": rows}
    save_record(record, RECORDED, args.out, args.quick)


if __name__ == "__main__":
    main()
