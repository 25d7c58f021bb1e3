"""``rankci votes VOTES``: read a vote table and say what was read.

The layout (battles, LMArena battles, Arena-Hard, MT-Bench, AlpacaEval) is recognised from the
fields or forced with ``--layout``; the output is every model's votes, wins, losses and ties,
with the one-line reading summary (layout, models, votes and every exclusion) on stderr.

With ``--judge COL --human COL`` (or either, or ``--inclusion-col``, ``--lam``) the winners are
a judge's verdicts on every battle and ``--human`` holds human verdicts on a subset (empty
elsewhere): the board is ranked by prediction-powered inference
(:func:`rankci.votes.rank_votes` with ``human=``), with the three fits side by side -- judge only
(biased), human only (wide), PPI -- their rank intervals and the effective number of labels.
"""

from __future__ import annotations

import argparse
import sys

from rankci.commands.flags import add_alpha_argument, add_output_arguments
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
    ppi = parser.add_argument_group(
        "judge verdicts corrected by human verdicts (PPI; docs/arena.md)"
    )
    ppi.add_argument(
        "--judge",
        metavar="COL",
        help="the judge's verdict column (model_a / model_b / tie, every battle; default: the "
        "winner column); with --judge or --human the board is ranked by PPI",
    )
    ppi.add_argument(
        "--human",
        metavar="COL",
        help="human verdict column, empty where the battle was not labelled (default: human)",
    )
    ppi.add_argument(
        "--inclusion-col",
        metavar="COL",
        help="stratified labelling: each battle's known probability of being labelled "
        "(default: uniform at random, probability n_labelled / N)",
    )
    ppi.add_argument(
        "--lam",
        metavar="LAM",
        help="PPI power tuning (auto or a number in [0, 1]; default auto: PPI++ trace-optimal; "
        "1: classic PPI; 0: human only)",
    )
    add_alpha_argument(ppi, "every rank interval holds simultaneously")
    ppi.add_argument(
        "--multiplicity",
        default="max-t",
        choices=("max-t", "holm"),
        help="certifier of the PPI board (default max-t)",
    )
    ppi.add_argument("--seed", type=int, help="seed of the max-t critical values")
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.commands.ppi_flags import ppi_requested

    if ppi_requested(args):
        return run_ppi(args)
    return run_tally(args)


def run_ppi(args: argparse.Namespace) -> int:
    """The PPI board: judge verdicts (the winner column) corrected by the human verdicts."""
    import warnings

    from rankci._base import RankciWarning, jsonable
    from rankci.commands.output import ranking_json
    from rankci.commands.ppi_flags import flag_words, parse_lam
    from rankci.commands.tables import text_table
    from rankci.votes import rank_votes
    from rankci.votes.read import read_votes, reading_summary

    lam = parse_lam(args.lam, per_pair=False)
    human = args.human or "human"
    keep = (human,) + ((args.inclusion_col,) if args.inclusion_col else ())
    if args.judge and args.winner_col and args.judge != args.winner_col:
        raise ValueError(
            f"--judge {args.judge} and --winner-col {args.winner_col} name two verdict columns; "
            "the judge's verdicts are the winners: give one"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RankciWarning)
        try:
            votes = read_votes(
                args.data,
                layout=args.layout,
                format=args.input_format,
                model_a=args.model_a_col,
                model_b=args.model_b_col,
                winner=args.judge or args.winner_col,
                keep=keep,
                min_votes=args.min_votes,
                unknown_winner=args.unknown_winner,
            )
            print(f"rankci: {reading_summary(votes)}", file=sys.stderr)
            ranking = rank_votes(
                votes,
                alpha=args.alpha,
                multiplicity=args.multiplicity,
                human=human,
                inclusion=args.inclusion_col,
                lam=lam,
                seed=args.seed,
            )
        except ValueError as error:
            raise ValueError(flag_words(str(error))) from None
    notes = [flag_words(str(w.message)) for w in caught if issubclass(w.category, RankciWarning)]
    for message in notes:
        print(f"rankci: warning: {message}", file=sys.stderr)
    ppi = ranking.details["ppi"]
    if args.format == "json":
        payload = jsonable(ranking.to_dict())
        payload["warnings"] = notes
        emit(ranking_json(payload), args)
        return 0
    rows = []
    for row in sorted(ppi["fits"], key=lambda r: -r["ppi"]):
        out = {"model": row["model"]}
        for name in ("judge", "human", "ppi"):
            rank = row[f"{name}_rank"]
            out[name] = row[name]
            out[f"{name}_se"] = row[f"{name}_se"]
            out[f"{name}_rank"] = "" if rank is None else f"{rank[0]}-{rank[1]}"
        out["n_labelled"] = row["n_labelled"]
        out["effective_labels"] = row["effective_labels"]
        rows.append(out)
    import pandas as pd

    table = pd.DataFrame(rows).round(3)
    if args.format == "csv":
        emit(table.to_csv(index=False), args)
        return 0
    head = (
        f"{ranking.n_models} models, {ppi['n_battles']} battles judged, {ppi['n_labelled']} "
        f"with a human verdict ({ppi['sampling']} labelling); lam = {ppi['lam']:.3f} "
        f"({ppi['lam_rule']}); {args.multiplicity}, alpha = {ranking.alpha:g}"
    )
    lines = [
        head,
        "three fits side by side (Bradley-Terry strengths, log-odds; rank intervals through the "
        "same certification): judge only (all battles, biased if the judge is), human only (the "
        "labelled battles), PPI",
        "",
        text_table(table) if args.format == "table" else markdown_table_of(table),
        "",
        f"effective human labels: PPI is worth {ppi['effective_labels']:.1f} labelled battles "
        f"from {ppi['n_labelled']} (n_labelled x tr Cov(human only) / tr Cov(PPI))",
        ranking.guarantee,
    ]
    lines += [f"warning: {m}" for m in notes]
    emit("\n".join(lines), args)
    return 0


def markdown_table_of(frame) -> str:
    from rankci.commands.tables import markdown_table

    return markdown_table(frame)


def run_tally(args: argparse.Namespace) -> int:
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
