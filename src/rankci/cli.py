"""The ``rankci`` command: argument parsing shared by the subcommands in :mod:`rankci.commands`.

Every subcommand module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args)``
returning an exit status; bad input ends with ``rankci: error: ...`` and status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .data import Scores
from .io import FORMATS, LAYOUTS, read_scores

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .commands import COMMANDS

    parser = argparse.ArgumentParser(
        prog="rankci",
        description="How much of a model leaderboard do your data support? Rank intervals, "
        "top-k sets and tiers with stated guarantees.",
    )
    parser.add_argument("--version", action="version", version=f"rankci {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        child = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(child)
        child.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except ValueError as error:
        print(f"rankci: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `rankci rank ... | head`
        return 0


# ---------------------------------------------------------------------- shared arguments
def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """DATA plus the options that say how to read it."""
    parser.add_argument("data", metavar="DATA", help="scores file (.csv, .tsv, .parquet, .jsonl)")
    group = parser.add_argument_group("reading DATA")
    group.add_argument(
        "--from",
        dest="input_format",
        default="auto",
        choices=FORMATS,
        help="input format (default: from the file extension)",
    )
    group.add_argument(
        "--layout",
        default="auto",
        choices=LAYOUTS,
        help="long (one row per model and item) or wide (one column per model)",
    )
    group.add_argument("--model-col", help="model column (default: model, system, ...)")
    group.add_argument("--item-col", help="item column (default: item, question, doc_id, ...)")
    group.add_argument("--score-col", help="score column (default: score, correct, acc, ...)")
    group.add_argument(
        "--cluster-col",
        help="cluster column (default: cluster, subject, category, task, ...); '' for none",
    )
    group.add_argument("--prompt-col", help="prompt-variant column (default: prompt, variant, ...)")


def load_data(args: argparse.Namespace) -> Scores:
    return read_scores(
        args.data,
        model=args.model_col,
        item=args.item_col,
        score=args.score_col,
        cluster=args.cluster_col,
        prompt=args.prompt_col,
        layout=args.layout,
        format=args.input_format,
    )


def add_output_arguments(parser: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format",
        default=formats[0],
        choices=formats,
        help=f"output format (default: {formats[0]})",
    )
    group.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def emit(text: str, args: argparse.Namespace) -> None:
    """Write the command's output to ``-o FILE`` or stdout."""
    if not text.endswith("\n"):
        text += "\n"
    if getattr(args, "output", None):
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


def to_json(payload: dict) -> str:
    return json.dumps(payload, indent=2, allow_nan=False)


# ---------------------------------------------------------------------- text tables
def _cell(value, floatfmt: str) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "-"
    if isinstance(value, (float, np.floating)):
        return format(float(value), floatfmt)
    return str(value)


def text_table(frame: pd.DataFrame, floatfmt: str = ".4f") -> str:
    """Aligned plain-text table: text left-aligned, numbers right-aligned."""
    cells = [[_cell(v, floatfmt) for v in row] for row in frame.itertuples(index=False)]
    header = [str(c) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    widths = [max([len(h), *(len(r[k]) for r in cells)]) for k, h in enumerate(header)]

    def line(values):
        parts = [
            v.rjust(w) if is_num else v.ljust(w) for v, w, is_num in zip(values, widths, numeric)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, cells)])


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".4f") -> str:
    """GitHub-flavoured markdown table."""
    header = [str(c) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    rows = [
        [_cell(v, floatfmt).replace("|", "\\|") for v in row]
        for row in frame.itertuples(index=False)
    ]
    align = ["---:" if is_num else ":---" for is_num in numeric]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
