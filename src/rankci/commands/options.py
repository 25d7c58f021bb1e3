"""Options and output helpers shared by the subcommands in :mod:`rankci.commands`.

Importing this module is cheap: numpy, pandas and the readers are imported by the functions
that use them, so that ``rankci --version`` and ``rankci COMMAND --help`` start quickly.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankci.formats import FORMATS, LAYOUTS, LOG_FORMATS

if TYPE_CHECKING:
    import pandas as pd

    from rankci.data import Scores

__all__ = [
    "ALPHA_HELP",
    "add_alpha_argument",
    "add_data_arguments",
    "add_output_arguments",
    "data_format",
    "emit",
    "load_data",
    "markdown_table",
    "text_table",
    "to_json",
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


# ---------------------------------------------------------------------- reading DATA
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
        choices=LAYOUTS,
        help="long (one row per model and item) or wide (one column per model)",
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
    group.add_argument("--prompt-col", help="prompt-variant column (default: prompt, variant, ...)")
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


_TABLE_ONLY = ("model_col", "score_col", "prompt_col")
# files with these extensions are tables whatever their name: no log reader claims them
# (rankci.adapters.detect_format says "table" for them), so they need not load the adapters
_TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")


def _plain_table(source) -> bool:
    text = os.fspath(source)
    return (
        not glob.has_magic(text)
        and os.path.splitext(text)[1] in _TABLE_SUFFIXES
        and not os.path.isdir(text)
    )


def data_format(args: argparse.Namespace, path: str | None = None) -> str:
    """The format of DATA: a table format, or one of the log formats."""
    fmt = args.input_format
    if fmt == "auto":
        source = path if path is not None else args.data
        if _plain_table(source):
            return fmt
        from rankci.adapters import detect_format

        detected = detect_format(source)
        fmt = "auto" if detected == "table" else detected
    return fmt


def load_data(
    args: argparse.Namespace, path: str | None = None, cluster: str | None = None
) -> Scores:
    """Read DATA (or ``path``) as the options say; ``cluster`` is a default for logs."""
    source = path if path is not None else args.data
    fmt = data_format(args, source)
    if fmt in LOG_FORMATS:
        used = [f"--{a.replace('_', '-')}" for a in _TABLE_ONLY if getattr(args, a, None)]
        if used or args.layout != "auto":
            raise ValueError(
                f"{(used or ['--layout'])[0]} applies to tables; {fmt} logs name their models, "
                "scores and prompts themselves"
            )
        from rankci.adapters import read_log

        return read_log(
            fmt,
            source,
            metric=getattr(args, "metric", None),
            scorer=getattr(args, "scorer", None),
            item=args.item_col,
            cluster=args.cluster_col if args.cluster_col is not None else cluster,
        )
    if getattr(args, "metric", None) or getattr(args, "scorer", None):
        raise ValueError("--metric and --scorer apply to evaluation logs (--from lm-eval, ...)")
    from rankci.io import read_scores

    return read_scores(
        source,
        model=args.model_col,
        item=args.item_col,
        score=args.score_col,
        cluster=args.cluster_col,
        prompt=args.prompt_col,
        layout=args.layout,
        format=fmt,
    )


# ---------------------------------------------------------------------- output
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


def command_spec(args: argparse.Namespace) -> dict:
    """The command's own specification: every option as given or defaulted (JSON-safe).

    Recorded as ``"spec"`` in the JSON output of the commands whose result carries no
    :class:`rankci.method.MethodSpec` (scores, plan, omnibus, monitor, benchmarks), so that every
    output says how it was made and can be made again.
    """
    skip = {"run", "data", "output", "format", "command"}
    return {
        key: (list(value) if isinstance(value, tuple) else value)
        for key, value in sorted(vars(args).items())
        if key not in skip
        and (value is None or isinstance(value, (str, int, float, bool, list, tuple)))
    }


def to_json(payload: dict, args: argparse.Namespace | None = None) -> str:
    """The JSON text of a payload; with ``args``, the command's spec is recorded unless present."""
    if args is not None and "spec" not in payload:
        spec = {"command": getattr(args, "command", None), **command_spec(args)}
        payload = {**payload, "spec": spec}
    return json.dumps(payload, indent=2, allow_nan=False)


# ---------------------------------------------------------------------- text tables
def _cell(value, floatfmt: str) -> str:
    import numpy as np
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "-"
    if isinstance(value, (float, np.floating)):
        return format(float(value), floatfmt)
    return str(value)


def text_table(frame: pd.DataFrame, floatfmt: str = ".4f") -> str:
    """Aligned plain-text table: text left-aligned, numbers right-aligned."""
    import pandas as pd

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
    import pandas as pd

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
