"""``rankci monitor DATA``: replay an evaluation through the anytime-valid monitor.

Contract for reproducibility: items missing a score for any model are excluded (and counted); the
remaining n items are sorted by item id as strings; the evaluation order is
``numpy.random.default_rng(S).permutation(n)`` of that list (``--order-seed S``); looks fall on
every K-th item (``--look-every K`` or ``P%`` of n, rounded up) and on the last item.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rankci.commands.flags import add_alpha_argument, add_data_arguments
from rankci.commands.loading import load_data
from rankci.commands.output import emit, to_json
from rankci.commands.tables import text_table

if TYPE_CHECKING:
    from rankci.sequential import MonitorRun

NAME = "monitor"
HELP = (
    "anytime-valid rank intervals while an evaluation runs: replay DATA in a seeded random "
    "order, certify at every look, retire models early"
)
OUTPUT_FORMATS = ("table", "json")
# the libraries' tuples, repeated so that building the parser imports no statistics
# (tests/commands/test_startup.py checks that they agree with rankci.sequential's)
SAMPLINGS = ("finite", "iid")
BETS = ("mixture", "agrapa", "ons", "fixed")
CERTIFIERS = ("auto", "exact", "shortcut", "ilp", "bonferroni")
RETIRE_RULES = ("none", "topk", "topk-safe", "resolved", "stop-at-goal", "width")
FREEZE_CHOICES = {"auto": "auto", "on": True, "off": False}  # --freeze -> Monitor(freeze=)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    group = parser.add_argument_group("monitor")
    group.add_argument(
        "--sampling",
        default="finite",
        choices=SAMPLINGS,
        help="finite: the items are the whole benchmark, evaluated in random order (default); "
        "iid: items are i.i.d. draws from a population",
    )
    group.add_argument(
        "--order-seed", type=int, default=0, metavar="S", help="seed of the item order (default 0)"
    )
    group.add_argument("--bet", default="mixture", choices=BETS, help="betting strategy")
    group.add_argument(
        "--certifier",
        default="auto",
        choices=CERTIFIERS,
        help="auto = exact for up to 8 models, the integer program (ilp) for 9-16, the shortcut "
        "above; ilp = exact by integer programs",
    )
    group.add_argument(
        "--freeze",
        default="auto",
        choices=tuple(FREEZE_CHOICES),
        help="stop updating the wealths of settled pairs (valid; see docs/monitor.md): auto = for "
        "more than 8 models (default), on, off = the exact mode (every wealth at every item)",
    )
    group.add_argument(
        "--look-every",
        default="1%",
        metavar="K",
        help="look every K items, or every P%% of the items (default 1%%)",
    )
    group.add_argument(
        "--retire",
        default="none",
        metavar="RULE",
        help="retire models early: " + ", ".join(RETIRE_RULES) + " (width:T for U - L <= T)",
    )
    group.add_argument("--k", type=int, metavar="K", help="the top-K question (top-k rules)")
    add_alpha_argument(group, note="anytime-valid: at every look at once")
    output = parser.add_argument_group("output")
    output.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    output.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def parse_retire(value: str) -> tuple[str, int]:
    """``RULE`` or ``width:T`` -> (rule, width target)."""
    rule, _, target = value.partition(":")
    if rule != "width" and target:
        raise ValueError(f"--retire {value!r}: only the width rule takes a target (width:T)")
    if rule not in RETIRE_RULES:
        raise ValueError(
            f"unknown retirement rule {rule!r}; choose one of " + ", ".join(RETIRE_RULES)
        )
    if not target:
        return rule, 0
    try:
        width = int(target)
    except ValueError:
        raise ValueError(f"--retire {value!r}: the width target must be an integer") from None
    return rule, width


def run(args: argparse.Namespace) -> int:
    from rankci.sequential import replay

    rule, width = parse_retire(args.retire)
    scores = load_data(args)
    result = replay(
        scores,
        order_seed=args.order_seed,
        alpha=args.alpha,
        sampling=args.sampling,
        bet=args.bet,
        certifier=args.certifier,
        look_every=args.look_every,
        retire=rule,
        k=args.k,
        width=width,
        freeze=FREEZE_CHOICES[args.freeze],
    )
    emit(render(result, args.format, args), args)
    return 0


def render(result: MonitorRun, fmt: str, args: argparse.Namespace | None = None) -> str:
    import pandas as pd

    if fmt == "json":
        return to_json(result.to_dict(), args)
    config = result.config
    frame = result.to_frame()
    frame.insert(
        4,
        "rank interval",
        [f"[{lo}, {hi}]" for lo, hi in zip(frame["rank_lower"], frame["rank_upper"])],
    )
    frame = frame.drop(columns=["rank_lower", "rank_upper"])
    if "rank_set" in frame:
        frame["rank_set"] = ["{" + ", ".join(map(str, s)) + "}" for s in frame["rank_set"]]
    retired = result.ranking.details.get("retired", {})
    frame["retired at"] = pd.array([retired.get(m, {}).get("t") for m in frame["model"]])
    head = (
        f"{result.ranking.n_models} models, {result.n_items} items "
        f"(sampling {config['sampling']}, order seed {config['order_seed']}); "
        f"{config['certifier']} certifier, {config['bet']} bet, alpha = {config['alpha']:g}"
        f"{', settled pairs frozen' if config.get('freeze') else ''}; "
        f"{len(result.looks)} looks, one every {config['look_every']} items"
    )
    lines = [head]
    if result.excluded.get("items_excluded"):
        lines.append(
            f"excluded: {result.excluded['items_excluded']} items not scored by every model"
        )
    prompts = result.excluded.get("inconsistent_prompts")
    if prompts:
        lines.append(
            f"excluded when the table was read: {prompts['rows']} rows of "
            f"{len(prompts['variants'])} {prompts['reason']} ({', '.join(prompts['variants'])})"
        )
    lines.append(
        f"stopped after {result.n_consumed} items; evaluations used: {result.evaluations} "
        f"({result.cost_fraction:.1%} of the full evaluation)"
    )
    checkpoints = _checkpoints(result.looks)
    if checkpoints:
        lines.append("certified pairs: " + ", ".join(f"{n} at t={t}" for t, n in checkpoints))
    return "\n".join([*lines, "", text_table(frame), "", result.ranking.guarantee])


def _checkpoints(looks: list[dict], count: int = 5) -> list[tuple[int, int]]:
    """A few looks spread over the run, the last one included."""
    if not looks:
        return []
    picks = sorted({round(i * (len(looks) - 1) / (count - 1)) for i in range(count)})
    return [(looks[i]["t"], looks[i]["n_certified"]) for i in picks]
