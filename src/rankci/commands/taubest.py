"""``rankci taubest DATA --tau T``: the confidence set for the T best models (T = 1: the best)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rankci.commands.flags import add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.method_flags import add_evidence_arguments, test_options
from rankci.commands.output import emit, target_sentence, to_json, with_target
from rankci.commands.tables import markdown_table, ranking_target, summary_lines, text_table

if TYPE_CHECKING:
    from rankci.analyses.best import TauBest

NAME = "taubest"
HELP = "confidence set for the tau best models (tau = 1: the best model), simultaneous coverage"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument(
        "--tau",
        type=int,
        default=1,
        help="the set covers every model of true rank <= TAU (default 1: the best)",
    )
    add_evidence_arguments(parser)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.analyses.best import tau_best

    options = test_options(args)  # a bad option fails before the data are read
    scores = load_data(args)
    result = tau_best(
        scores,
        args.tau,
        unit=args.unit,
        test=args.test,
        alpha=args.alpha,
        delta=args.delta,
        missing=args.missing,
        multiplicity=args.multiplicity,
        rng=args.seed,
        **options,
    )
    emit(render_tau_best(result, args.format), args)
    return 0


def render_tau_best(result: TauBest, fmt: str) -> str:
    unit, _ = ranking_target(result.ranking)
    if fmt == "json":
        return to_json(with_target(result.to_dict(), unit))
    frame = result.to_frame()
    if fmt == "csv":
        return frame.to_csv(index=False)
    frame["in_set"] = frame["in_set"].map({True: "yes", False: "no"})
    what = "the best model" if result.tau == 1 else f"the {result.tau} best models"
    members = ", ".join(result.members)
    headline = f"confidence set for {what} ({len(result.members)} models): {members}"
    if fmt == "markdown":
        return "\n\n".join(
            [
                " ".join(summary_lines(result.ranking)),
                headline,
                markdown_table(frame),
                result.guarantee,
                target_sentence(unit),
            ]
        )
    return "\n".join(
        [
            *summary_lines(result.ranking),
            headline,
            "",
            text_table(frame),
            "",
            result.guarantee,
            target_sentence(unit),
        ]
    )
