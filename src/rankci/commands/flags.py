"""The flags every subcommand shares: DATA and how to read it, ``--alpha``, the output flags.

Building them imports nothing heavy (``rankci COMMAND --help`` stays fast).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rankci.formats import FORMATS, LAYOUTS, LOG_FORMATS, VOTE_LAYOUTS

__all__ = [
    "add_alpha_argument",
    "add_top_k_argument",
    "add_data_arguments",
    "add_output_arguments",
    "ALPHA_HELP",
]


#: the meaning of ``--alpha`` wherever it is the level of the command's statements
ALPHA_HELP = "level: statements hold with probability at least 1 - ALPHA (default 0.05)"


def add_alpha_argument(
    group: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = "statements hold",
    note: str = "",
) -> argparse.Action:
    """``--alpha`` (default 0.05), worded "level: WHAT with probability at least 1 - ALPHA".

    ``what`` says which statements hold (every interval covers, the whole family holds, ...);
    ``note`` adds a nuance after the level (for example "anytime-valid: at every look at once").
    """
    extra = f"; {note}" if note else ""
    return group.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help=f"level: {what} with probability at least 1 - ALPHA{extra} (default 0.05)",
    )


def top_k(text: str) -> int:
    """The value of ``--top-k``: an integer >= 1, refused when the flag is read (one rule for
    every command that takes it)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(
            f"K must be an integer >= 1 (the size of the top-K set), got {text!r}"
        )
    return value


def add_top_k_argument(
    group: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str = "also report top-K status",
) -> argparse.Action:
    """``--top-k K``: K >= 1, the same rule in rank, taubest, benchmarks and report."""
    return group.add_argument("--top-k", type=top_k, metavar="K", help=help)


def add_data_arguments(parser: argparse.ArgumentParser, many: bool = False) -> None:
    """DATA (one, or several with ``many``) plus the options that say how to read it."""
    parser.add_argument(
        "data",
        metavar="DATA",
        nargs="+" if many else None,
        help="scores file (.csv, .tsv, .parquet, .jsonl), or evaluation logs: an lm-eval output "
        "directory, Inspect .eval/.json logs, HELM runs (a file, directory or quoted glob)",
    )
    group = parser.add_argument_group("reading DATA")
    group.add_argument(
        "--from",
        dest="input_format",
        default="auto",
        choices=FORMATS + LOG_FORMATS,
        help="input format (default: from the file extension, or the logs found)",
    )
    group.add_argument(
        "--layout",
        default="auto",
        choices=LAYOUTS + VOTE_LAYOUTS[1:],
        help="long (one row per model and item) or wide (one column per model); a vote layout "
        "(battles, lmarena, arena-hard, mt-bench, alpaca-eval) says DATA holds pairwise votes",
    )
    group.add_argument("--model-col", help="model column (default: model, system, ...)")
    group.add_argument(
        "--item-col",
        help="item column (default: item, question, doc_id, ...); for logs, a field of the "
        "sample naming the item (doc.id, metadata.qid)",
    )
    group.add_argument("--score-col", help="score column (default: score, correct, acc, ...)")
    group.add_argument(
        "--cluster-col",
        help="cluster column (default: cluster, subject, category, task, ...); '' for none; "
        "for logs: task, group, benchmark, scenario or a sample field (metadata.subject)",
    )
    group.add_argument(
        "--prompt-col",
        help="prompt-variant column (default: prompt, variant, ...); a variant that not every "
        "model has is excluded (and counted)",
    )
    group.add_argument(
        "--trial-col",
        help="repeated-trial column, nested in the item (default: trial, trial_id, epoch, "
        "repeat); '' for none; each item's trials become one score by --per-item",
    )
    group.add_argument(
        "--per-item",
        default="mean",
        metavar="RULE",
        help="the score of an item from its repeated trials (--trial-col, Inspect --epochs "
        "trial): mean (default), pass@K (unbiased: some of K trials pass) or pass^K (all K "
        "pass); pass@K and pass^K need 0/1 scores and at least K trials on every item. Not "
        "HELM's --trials, which picks train trials",
    )
    group.add_argument(
        "--trial-gaps",
        choices=("refuse", "allow"),
        help="an item whose trial ids skip one the table has (trials 0, 1, 3 beside 0-3): "
        "refused (default, naming model, item and missing trials) or 'allow': read as fewer "
        "trials, counted and warned about",
    )
    group.add_argument(
        "--bounds",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="allowed score range (default 0 1); '-inf inf' accepts any finite score",
    )
    group.add_argument(
        "--metric",
        action="append",
        metavar="NAME",
        help="logs: the per-sample metric, lm-eval (acc, exact_match; 'exact_match,strict-match' "
        "also picks the filter) or HELM (exact_match); repeat for an order of preference",
    )
    group.add_argument(
        "--scorer",
        action="append",
        metavar="NAME",
        help="Inspect logs: the scorer whose value is the score (default: the first)",
    )
    group.add_argument(
        "--tasks",
        action="append",
        metavar="NAMES",
        help="logs: read only these tasks (comma-separated, repeatable; lm-eval groups, HELM "
        "scenarios or benchmarks, glob patterns such as 'mmlu_*')",
    )
    group.add_argument(
        "--exclude-tasks",
        action="append",
        metavar="NAMES",
        help="logs: leave these tasks out (comma-separated, repeatable, patterns allowed)",
    )
    group.add_argument(
        "--filter",
        dest="log_filter",
        action="append",
        metavar="NAME",
        help="lm-eval logs: the filter whose results are read (strict-match, flexible-extract); "
        "repeat for an order of preference",
    )
    group.add_argument(
        "--split",
        help="HELM logs: the split whose instances are read, for every scenario (default: per "
        "scenario, test where its runs have it, else the one split they evaluated, e.g. valid)",
    )
    group.add_argument(
        "--trials",
        choices=("all", "first", "common", "mean"),
        help="HELM logs: the train trials read, i.e. in-context example draws, not repeated "
        "samples (default all: each trial a prompt variant; first: trial 0; common: per "
        "scenario the trials every model ran; mean: each item's mean over its trials); "
        "repeated samples of an item are --trial-col / --per-item",
    )
    group.add_argument(
        "--repeats",
        choices=("metric", "trial"),
        help="lm-eval logs of tasks run with 'repeats: N': 'metric' reads the harness's one value "
        "per document (default), 'trial' scores each of the N responses against the target "
        "(exact_match of generate_until, acc/acc_norm of multiple_choice tasks) as a repeated "
        "trial of the item, scored by --per-item",
    )
    group.add_argument(
        "--epochs",
        choices=("prompt", "mean", "trial"),
        help="Inspect logs: 'prompt' reads each epoch as a prompt variant (default; an epoch "
        "that not every model has is left out for every model, and counted), 'mean' averages "
        "each item's epochs, 'trial' reads each epoch as a repeated trial of the item (scored "
        "by --per-item; unequal epochs per model kept and reported)",
    )


def add_output_arguments(parser: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    """``--format`` (one of ``formats``, the first the default) and ``-o/--output FILE``."""
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format",
        default=formats[0],
        choices=formats,
        help=f"output format (default: {formats[0]})",
    )
    group.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
