"""Options and output helpers shared by the subcommands in :mod:`rankci.commands`.

Importing this module is cheap: numpy, pandas and the readers are imported by the functions
that use them, so that ``rankci --version`` and ``rankci COMMAND --help`` start quickly.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
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
    "check_output_paths",
    "cli_message",
    "data_format",
    "early_stopping_note",
    "emit",
    "load_data",
    "markdown_table",
    "reading_summary",
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
    group.add_argument(
        "--prompt-col",
        help="prompt-variant column (default: prompt, variant, ...); a variant that not every "
        "model has is excluded (and counted)",
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
        help="HELM logs: the split whose instances are read (default: test; valid, ...)",
    )


_TABLE_ONLY = ("model_col", "score_col", "prompt_col", "bounds")
#: log-reading options, by their flags (refused for tables)
_LOG_ONLY = (
    ("metric", "--metric"),
    ("scorer", "--scorer"),
    ("tasks", "--tasks"),
    ("exclude_tasks", "--exclude-tasks"),
    ("log_filter", "--filter"),
    ("split", "--split"),
)
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
    """Read DATA (or ``path``) as the options say; ``cluster`` is a default for logs.

    A one-line reading summary goes to stderr (:func:`reading_summary`).
    """
    source = path if path is not None else args.data
    text = os.fspath(source) if isinstance(source, (str, os.PathLike)) else str(source)
    if isinstance(source, (str, os.PathLike)) and not glob.has_magic(text):
        if not os.path.exists(text):
            raise FileNotFoundError(f"no such file or directory: {text!r}")
    scores = _read(args, source, cluster)
    print(f"rankci: {reading_summary(scores, text)}", file=sys.stderr)
    return scores


def _read(args: argparse.Namespace, source, cluster: str | None) -> Scores:
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
            tasks=getattr(args, "tasks", None),
            exclude_tasks=getattr(args, "exclude_tasks", None),
            filter=getattr(args, "log_filter", None),
            split=getattr(args, "split", None),
        )
    given = [flag for dest, flag in _LOG_ONLY if getattr(args, dest, None)]
    if given:
        if given[:2] == ["--metric", "--scorer"] or given == ["--metric"] or given == ["--scorer"]:
            raise ValueError("--metric and --scorer apply to evaluation logs (--from lm-eval, ...)")
        raise ValueError(f"{given[0]} applies to evaluation logs (--from lm-eval, ...), not tables")
    from rankci.io import read_scores

    bounds = getattr(args, "bounds", None)
    if bounds is not None:
        low, high = bounds
        if not low < high:
            raise ValueError(f"--bounds {low:g} {high:g}: LOW must be below HIGH")
        bounds = None if (low, high) == (float("-inf"), float("inf")) else (low, high)
    else:
        bounds = (0.0, 1.0)
    return read_scores(
        source,
        model=args.model_col,
        item=args.item_col,
        score=args.score_col,
        cluster=args.cluster_col,
        prompt=args.prompt_col,
        layout=args.layout,
        format=fmt,
        bounds=bounds,
    )


def reading_summary(scores: Scores, source: str) -> str:
    """One line: what was read from ``source`` (models, items, clusters, prompts, scores) and
    what was excluded or left unscored, and why."""
    import numpy as np

    notes = scores.notes
    how = [notes[key] for key in ("layout",) if key in notes]
    if "delimiter" in notes:
        how.append({",": "comma", "\t": "tab", ";": "semicolon"}[notes["delimiter"]] + "-separated")
    parts = [f"{scores.n_models} models", f"{scores.n_items} items"]
    if scores.clusters is not None:
        parts.append(f"{len(scores.clusters)} clusters")
    if scores.prompts is not None:
        parts.append(f"{len(scores.prompts)} prompt variants")
    parts.append(f"{scores.n_rows} scores")
    line = f"read {source}" + (f" ({', '.join(how)})" if how else "") + ": " + ", ".join(parts)
    excluded = notes.get("excluded", {})
    if excluded:
        line += "; rows excluded: " + ", ".join(
            f"{record['rows']} ({record['reason']})" for record in excluded.values()
        )
    else:
        line += "; rows excluded: none"
    n_prompts = 1 if scores.prompts is None else len(scores.prompts)
    prompt_code = 0 if scores.prompt_code is None else scores.prompt_code
    n_obs = np.unique(scores.item_code.astype(np.int64) * n_prompts + prompt_code).size
    unscored = n_obs * scores.n_models - scores.n_rows
    if unscored:
        counts = n_obs - np.bincount(scores.model_code, minlength=scores.n_models)
        worst = sorted(
            ((int(c), m) for m, c in zip(scores.models, counts) if c), key=lambda t: (-t[0], t[1])
        )
        shown = ", ".join(f"{m} {c}" for c, m in worst[:3]) + (", ..." if len(worst) > 3 else "")
        line += f"; {unscored} cells not scored ({shown}): --missing decides"
    return line + "".join(_log_notes(notes))


def _log_notes(notes: dict) -> list[str]:
    """What a log reader set aside or flagged, for the reading summary."""
    parts = []
    set_aside = notes.get("set_aside") or notes.get("superseded")
    if set_aside:
        parts.append(f"; logs set aside: {len(set_aside)} (older or unfinished runs)")
    for key, what in (
        ("tasks_skipped_corpus_metric", "tasks skipped (corpus-level metric)"),
        ("logs_without_samples", "logs without samples"),
        ("models_without_scores", "models without scores"),
    ):
        if notes.get(key):
            listed = notes[key]
            names = list(listed) if isinstance(listed, (dict, list)) else [listed]
            parts.append(
                f"; {what}: {', '.join(map(str, names[:4]))}" + (", ..." if len(names) > 4 else "")
            )
    if notes.get("irt_scored"):
        parts.append(
            "; IRT-scored tasks (tinyBenchmarks) read as raw item scores: "
            + ", ".join(notes["irt_scored"])
        )
    if notes.get("early_stopped"):
        parts.append(
            "; early-stopped logs: fixed-sample guarantees do not hold for adaptively stopped "
            "data (anytime-valid: rankci monitor)"
        )
    return parts


def early_stopping_note(stopped: dict | None) -> str | None:
    """One line for the output of a fixed-sample command on adaptively stopped data.

    ``stopped`` is ``Scores.notes["early_stopped"]`` (``"model/task"`` -> the stopping record
    of an Inspect log written under early stopping); None when the data were not stopped early.
    """
    if not stopped:
        return None
    listed = [
        f"{key} ({record.get('samples_stopped', '?')} samples stopped)"
        if isinstance(record, dict)
        else str(key)
        for key, record in stopped.items()
    ]
    shown = ", ".join(listed[:4]) + (", ..." if len(listed) > 4 else "")
    return (
        f"early stopping: these scores come from logs written under early stopping ({shown}); the "
        "fixed-sample guarantees do not hold for adaptively stopped data. Anytime-valid path: "
        "the stopping manager's own record (results.early_stopping.metadata), or the evaluation "
        "run through rankci monitor / RankEarlyStopping"
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


#: the options naming files a command writes, with the flag shown in messages
_OUTPUTS = (("output", "-o/--output"), ("report", "--report"))


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output path that cannot be written: a directory, or a file in
    a directory that does not exist or is not writable."""
    for dest, flag in _OUTPUTS:
        value = getattr(args, dest, None)
        if not isinstance(value, str) or (dest == "report" and getattr(args, "no_report", False)):
            continue
        if value == "":
            raise ValueError(f"{flag}: the file name is empty")
        if os.path.isdir(value):
            raise ValueError(f"{flag} {value!r} is a directory; name a file to write")
        parent = os.path.dirname(value) or "."
        if not os.path.exists(parent):
            raise ValueError(f"{flag} {value!r}: the directory {parent!r} does not exist")
        if not os.path.isdir(parent):
            raise ValueError(f"{flag} {value!r}: {parent!r} is not a directory")
        if not os.access(parent, os.W_OK) or (
            os.path.exists(value) and not os.access(value, os.W_OK)
        ):
            raise ValueError(f"{flag} {value!r}: no permission to write there")


#: the library's keywords in messages -> the command line's flags (applied by cli_message)
_KEYWORD_FLAGS = (
    (
        re.compile(r"\bpass format= one of 'csv', 'tsv', 'parquet', 'jsonl'"),
        "pass --from csv, tsv, parquet or jsonl",
    ),
    (re.compile(r" \(format=\)"), ""),
    (re.compile(r"\bformat=(?=[\s,;)]|$)"), "--from"),
    (re.compile(r"\blayout='(\w+)'"), r"--layout \1"),
    (re.compile(r"\bmodel= and score= name columns"), "--model-col and --score-col name columns"),
    (
        re.compile(r"\bname them with model=, item=, score="),
        "name them with --model-col, --item-col, --score-col",
    ),
    (
        re.compile(r"\bname them with item=, cluster=, prompt="),
        "name them with --item-col, --cluster-col, --prompt-col",
    ),
    (re.compile(r"\b(model|item|score|cluster|prompt)=\.\.\. ?"), r"--\1-col "),
    (re.compile(r"\b(cluster|prompt)=(\"\"|'')"), r"--\1-col ''"),
    (re.compile(r"\b(model|item|score|cluster|prompt)=(?=[\s,;)]|$)"), r"--\1-col"),
    (re.compile(r"\bbounds=\(low, high\)"), "--bounds LOW HIGH"),
    (re.compile(r"\bbounds=None"), "--bounds -inf inf"),
    (re.compile(r"\bmissing='(\w+)'"), r"--missing \1"),
    (re.compile(r"\bfilter='([^']+)'"), r"--filter \1"),
    (re.compile(r"\bsplit='([^']+)'"), r"--split \1"),
    (re.compile(r"\b(metric|filter|scorer|split|tasks)=(?=[\s,;)]|$)"), r"--\1"),
    (re.compile(r"\bexclude_tasks=(?=[\s,;)]|$)"), "--exclude-tasks"),
    (re.compile(r"\bunit='(\w+)'"), r"--unit \1"),
    (re.compile(r"\bmultiplicity='([\w-]+)'"), r"--multiplicity \1"),
    (re.compile(r"\btest='([\w-]+)'"), r"--test \1"),
    (re.compile(r"\bor overall=False"), "or --no-overall"),
    (re.compile(r"\bsmall_sample='cr2'"), "--cr2"),
    (re.compile(r"\bmethod='([\w-]+)'"), r"--method \1"),
    (re.compile(r"\bexact_bound_n=(\d+)"), r"--exact-bound-n \1"),
    (re.compile(r"\bexact_bound_n(?=[\s,;)]|$)"), "--exact-bound-n"),
)


def cli_message(message: str, args: argparse.Namespace | None = None) -> str:
    """A library message with its Python keywords replaced by the command line's flags.

    The library names its keywords (``bounds=None``, ``missing='pairwise'``, ``item=``); the
    command line names the flags that set them (``--bounds``, ``--missing pairwise``,
    ``--item-col``). A flag the command lacks is not suggested: ``--missing`` for instance.
    """
    for pattern, flag in _KEYWORD_FLAGS:
        message = pattern.sub(flag, message)
    if args is not None and not hasattr(args, "missing"):
        message = message.replace(
            "use --missing pairwise", "use rankci rank or scores with --missing pairwise"
        )
    return message


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
