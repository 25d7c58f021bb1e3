"""``rankci votes VOTES``: read a vote table and say what was read.

The layout (battles, LMArena battles, Arena-Hard, MT-Bench, AlpacaEval) is recognised from the
fields or forced with ``--layout``; the output is every model's votes, wins, losses and ties,
with the one-line reading summary (layout, models, votes and every exclusion) on stderr.
"""

from __future__ import annotations

import argparse
import sys

from rankci.commands.flags import add_output_arguments
from rankci.commands.output import emit, to_json
from rankci.formats import MT_BENCH_GAMES, UNKNOWN_WINNER_RULES, VOTE_FORMATS, VOTE_LAYOUTS

NAME = "votes"
HELP = (
    "read pairwise votes (battles, LMArena, Arena-Hard, MT-Bench, AlpacaEval): each model's "
    "votes, wins, losses and ties, and every vote left out and why"
)
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data",
        metavar="VOTES",
        help="vote file (.csv, .tsv, .parquet, .jsonl, .json): battles, LMArena battles, "
        "Arena-Hard or MT-Bench judgments, AlpacaEval annotations",
    )
    group = parser.add_argument_group("reading VOTES")
    group.add_argument(
        "--from",
        dest="input_format",
        default="auto",
        choices=VOTE_FORMATS,
        help="file format (default: from the extension)",
    )
    group.add_argument(
        "--layout",
        default="auto",
        choices=VOTE_LAYOUTS,
        help="vote layout (default: recognised from the fields)",
    )
    group.add_argument("--model-a-col", help="battles: first model column (default: model_a)")
    group.add_argument("--model-b-col", help="battles: second model column (default: model_b)")
    group.add_argument("--winner-col", help="battles: winner column (default: winner)")
    for role, default in (
        ("prompt", "prompt, question_id, uid, ..."),
        ("voter", "voter, judge, annotator, ..."),
        ("category", "category, cluster, ..."),
        ("language", "language, lang"),
        ("turn", "turn"),
        ("timestamp", "timestamp, tstamp"),
        ("position", "position"),
    ):
        group.add_argument(f"--{role}-col", help=f"{role} column (default: {default}); '' for none")
    group.add_argument(
        "--covariate",
        action="append",
        default=[],
        metavar="COLUMN",
        help="a numeric column to keep (repeatable); a vote with it empty is left out",
    )
    group.add_argument(
        "--baseline", help="Arena-Hard: the baseline model when the judgments do not name it"
    )
    group.add_argument(
        "--strong-votes",
        type=int,
        default=3,
        help="Arena-Hard: votes a strong verdict (A>>B) counts as (default 3, as Arena-Hard)",
    )
    group.add_argument(
        "--min-votes",
        type=int,
        default=0,
        help="leave out models with fewer votes, and their votes (default 0: keep all)",
    )
    group.add_argument(
        "--unknown-winner",
        default="error",
        choices=UNKNOWN_WINNER_RULES,
        help="an unrecognised winner: refuse the file naming the row (default), or leave the "
        "vote out and count it",
    )
    group.add_argument(
        "--games",
        default="one",
        choices=MT_BENCH_GAMES,
        help="MT-Bench: one vote per judgment, as FastChat counts it (default), or one vote per "
        "game with its position",
    )
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci._base import jsonable
    from rankci.commands.tables import markdown_table, text_table
    from rankci.votes.read import read_votes, reading_summary, vote_tally

    votes = read_votes(
        args.data,
        layout=args.layout,
        format=args.input_format,
        model_a=args.model_a_col,
        model_b=args.model_b_col,
        winner=args.winner_col,
        prompt=args.prompt_col,
        voter=args.voter_col,
        category=args.category_col,
        language=args.language_col,
        turn=args.turn_col,
        timestamp=args.timestamp_col,
        position=args.position_col,
        covariates=tuple(args.covariate),
        baseline=args.baseline,
        strong_votes=args.strong_votes,
        min_votes=args.min_votes,
        unknown_winner=args.unknown_winner,
        games=args.games,
    )
    summary = reading_summary(votes)
    print(f"rankci: {summary}", file=sys.stderr)
    tally = vote_tally(votes)
    if args.format == "json":
        payload = {
            "layout": votes.source.get("layout"),
            "n_models": votes.n_models,
            "n_votes": votes.n_votes,
            "models": tally.to_dict(orient="records"),
            "excluded": votes.excluded,
            "columns": sorted(votes.columns),
            "source": votes.source,
            "summary": summary,
        }
        emit(to_json(jsonable(payload), args), args)
    elif args.format == "csv":
        emit(tally.to_csv(index=False), args)
    elif args.format == "markdown":
        emit(markdown_table(tally), args)
    else:
        emit(text_table(tally), args)
    return 0
