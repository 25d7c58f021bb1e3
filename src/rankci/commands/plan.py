"""``rankci plan DATA``: how many items are enough (interval width, separating a pair)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from rankci._base import jsonable
from rankci.commands.flags import add_alpha_argument, add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.output import command_record, emit, to_json
from rankci.commands.ppi_flags import add_ppi_arguments, ppi_requested, run_plan
from rankci.commands.tables import text_table

if TYPE_CHECKING:
    from rankci.analyses.planning import Plan

NAME = "plan"
HELP = "how many items are enough: expected interval width and pairwise resolution against n"
OUTPUT_FORMATS = ("table", "json")
#: rankci.analyses.planning.MULTIPLICITY (tests/commands/test_startup.py checks that they agree)
MULTIPLICITY = ("none", "bonferroni")
#: rankci.method.COVARIANCES: the one spelling of clustered inference with items as the units
COVARIANCES = ("independent", "cluster")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    group = parser.add_argument_group("planning")
    group.add_argument(
        "--target-width",
        type=float,
        metavar="W",
        help="items each model needs for an interval at most W wide",
    )
    group.add_argument(
        "--pair", nargs=2, metavar=("A", "B"), help="items needed to separate model A from model B"
    )
    group.add_argument(
        "--difference",
        type=float,
        metavar="D",
        help="plan for this gap instead of the pilot's observed differences",
    )
    group.add_argument(
        "--items",
        type=int,
        nargs="+",
        metavar="N",
        help="numbers of items to evaluate (default: the pilot's n x 1/2, 1, 2, 4)",
    )
    group.add_argument(
        "--covariance",
        default="independent",
        choices=COVARIANCES,
        help="covariance of the model means: items independent (default) or cluster-robust, "
        "new items coming in clusters like the pilot's (cluster); as rankci rank --covariance",
    )
    add_alpha_argument(group, "planned intervals and pair tests hold")
    group.add_argument(
        "--power",
        type=float,
        default=0.8,
        help="probability of separating a pair to plan for (default 0.8)",
    )
    group.add_argument(
        "--multiplicity",
        default="none",
        choices=MULTIPLICITY,
        help="test each pair at alpha (none) or at alpha over all pairs (bonferroni)",
    )
    group.add_argument(
        "--missing",
        default="complete",
        choices=("complete", "pairwise"),
        help="only the items every model has (default, as in rankci rank) or each model on the "
        "items it has",
    )
    trials = parser.add_argument_group("items x trials (DATA with repeated trials: --trial-col)")
    trials.add_argument(
        "--trials-per-item",
        type=int,
        nargs="+",
        metavar="T",
        help="trials per item to plan for, beside --items (default 1 2 5 10); the budgets are "
        "every --items x --trials-per-item",
    )
    trials.add_argument(
        "--max-items",
        type=int,
        metavar="N",
        help="the most items there are, for the cheapest split of --target-width (default: "
        "the pilot's items)",
    )
    trials.add_argument(
        "--item-cost",
        type=float,
        default=0.0,
        metavar="C",
        help="cost of one more item in units of one trial (default 0: only runs cost)",
    )
    add_ppi_arguments(parser, per_pair=False, lam=False)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.planning import plan

    if ppi_requested(args):  # human labels needed for judge scores corrected by them
        return run_plan(args)
    scores = load_data(args)
    pilot = plan(
        scores,
        covariance=args.covariance,
        alpha=args.alpha,
        power=args.power,
        multiplicity=args.multiplicity,
        missing=args.missing,
    )
    sizes = args.items or sorted({max(2, round(pilot.n_pilot * f)) for f in (0.5, 1, 2, 4)})
    payload = _payload(pilot, sizes, args)
    if scores.trials is not None:
        payload["items_x_trials"] = _trials_payload(scores, sizes, args)
    elif args.trials_per_item or args.max_items is not None:
        raise ValueError(
            f"{'--trials-per-item' if args.trials_per_item else '--max-items'} plans repeated "
            "trials, but DATA has none: name the trial column with --trial-col (Inspect logs: "
            "--epochs trial)"
        )
    text = to_json(command_record(payload, args)) if args.format == "json" else None
    emit(text or _text(pilot, payload), args)
    return 0


def _trials_payload(scores, sizes: list[int], args: argparse.Namespace) -> dict:
    from rankci.analyses.trials import plan_trials

    if args.item_cost < 0:
        raise ValueError(f"--item-cost must be >= 0, got {args.item_cost:g}")
    for flag, values in (("--trials-per-item", args.trials_per_item), ("--items", args.items)):
        if values and min(values) < 1:
            raise ValueError(f"{flag} must be positive integers, got {min(values)}")
    if args.max_items is not None and args.max_items < 2:
        raise ValueError(f"--max-items must be at least 2, got {args.max_items}")
    result = plan_trials(
        scores,
        items=sizes,
        trials=args.trials_per_item,
        alpha=args.alpha,
        target_width=args.target_width,
        max_items=args.max_items,
        item_cost=args.item_cost,
        multiplicity=args.multiplicity,
    )
    return {
        "budgets": jsonable(result.budgets.to_dict(orient="records")),
        "cheapest": jsonable(result.cheapest),
        "components": jsonable(result.components.to_dict(orient="records")),
    }


def _trials_text(payload: dict) -> list[str]:
    import pandas as pd

    lines = [
        "",
        "items x trials: widest model's interval width, expected share of pairs separated "
        "(resolution), cost = items x trials",
        text_table(pd.DataFrame(payload["budgets"])),
    ]
    cheapest = payload["cheapest"]
    if cheapest is not None:
        if cheapest["feasible"]:
            lines.append(
                f"cheapest split for width {cheapest['target_width']:g}: {cheapest['items']} "
                f"items x {cheapest['trials']} trials (at most {cheapest['max_items']} items; "
                f"item cost {cheapest['item_cost']:g} trials)"
            )
        else:
            lines.append(f"width {cheapest['target_width']:g} not reachable: {cheapest['why']}")
    return lines


def _finite(value: float):
    return None if not math.isfinite(value) else int(value)


def _payload(pilot: Plan, sizes: list[int], args: argparse.Namespace) -> dict:
    out = pilot.to_dict()
    out["n_pilot"] = pilot.n_pilot
    widths = pilot.curve(sizes)
    out["width_curve"] = jsonable(widths.to_dict(orient="records"))
    out["resolution"] = jsonable(pilot.resolution(sizes, args.difference).to_dict(orient="records"))
    if args.target_width is not None:
        needed = pilot.items_for_width(args.target_width)
        out["target_width"] = {
            "width": args.target_width,
            "items": {m: int(k) for m, k in zip(pilot.models, needed, strict=True)},
            "all_models": int(needed.max()),
        }
    if args.pair is not None:
        a, b = args.pair
        n_needed = pilot.items_to_separate(a, b, difference=args.difference)
        j, l = pilot.models.index(a), pilot.models.index(b)
        import numpy as np

        prob = pilot.separation_probability(np.asarray(sizes, dtype=float), args.difference)
        out["pair"] = {
            "first": a,
            "second": b,
            "difference": float(pilot.score[j] - pilot.score[l]),
            "planned_difference": args.difference,
            "sd": float(pilot.difference_sd()[j, l]),
            "items_needed": _finite(n_needed),
            "probability": [
                {"n": int(n), "probability": float(p)}
                for n, p in zip(sizes, prob[:, j, l], strict=True)
            ],
        }
    return out


def _text(pilot: Plan, payload: dict) -> str:
    import pandas as pd

    kind = "clustered like the pilot's" if pilot.kind == "cluster" else "independent"
    level = "each pair at alpha" if pilot.multiplicity == "none" else "Bonferroni over all pairs"
    lines = [
        f"pilot: {pilot.n_models} models, {pilot.n_pilot} {pilot.unit} units ({kind} items); "
        f"alpha = {pilot.alpha:g}, power = {pilot.power:g}, {level}",
        "",
    ]
    curve = pd.DataFrame(payload["width_curve"])
    table = curve.pivot(index="model", columns="n", values="width")
    order = list(pilot.to_frame()["model"])
    table = table.loc[order]
    table.columns = [f"width@{n}" for n in table.columns]
    table.insert(0, "score", pilot.score[[pilot.models.index(m) for m in order]])
    lines += ["expected interval width", text_table(table.reset_index()), ""]
    resolution = pd.DataFrame(payload["resolution"])
    lines += [
        "pairs separated (probability >= power) and expected number separated",
        text_table(resolution, floatfmt=".1f"),
    ]
    if "target_width" in payload:
        target = payload["target_width"]
        worst = max(target["items"], key=target["items"].get)
        lines += [
            "",
            f"items for intervals at most {target['width']:g} wide: {target['all_models']} "
            f"(for every model; the widest is {worst})",
        ]
    if "pair" in payload:
        pair = payload["pair"]
        gap = (
            pair["planned_difference"]
            if pair["planned_difference"] is not None
            else (pair["difference"])
        )
        needed = pair["items_needed"]
        words = f"{needed} items" if needed is not None else "never (no difference to detect)"
        lines += [
            "",
            f"{pair['first']} vs {pair['second']}: difference {gap:+.4f}, per-item sd of the "
            f"difference {pair['sd']:.4f}; separated with probability {pilot.power:g} at: {words}",
        ]
        lines += [
            f"  n = {row['n']}: probability {row['probability']:.3f}" for row in pair["probability"]
        ]
    if "items_x_trials" in payload:
        lines += _trials_text(payload["items_x_trials"])
    lines += [
        "",
        "Normal approximation from the pilot's variances; observed differences are estimates, "
        "so plan with --difference for the smallest gap that matters.",
    ]
    return "\n".join(lines)
