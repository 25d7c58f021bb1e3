"""Reading DATA as the flags of :mod:`rankci.commands.flags` say, and the one-line summary of
what was read (printed to stderr).

numpy, the readers and the adapters are imported by the functions that use them.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from typing import TYPE_CHECKING

from rankci.formats import LOG_FORMATS, VoteTableError

if TYPE_CHECKING:
    from rankci.data import Scores

__all__ = [
    "data_format",
    "load_data",
    "reading_summary",
    "vote_layout_of",
    "vote_table_refusal",
    "VoteTableError",
    "score_bounds",
    "log_options",
]


_TABLE_ONLY = ("model_col", "score_col", "prompt_col", "trial_col", "bounds")


#: log-reading options, by their flags (refused for tables)
_LOG_ONLY = (
    ("metric", "--metric"),
    ("scorer", "--scorer"),
    ("tasks", "--tasks"),
    ("exclude_tasks", "--exclude-tasks"),
    ("log_filter", "--filter"),
    ("split", "--split"),
    ("trials", "--trials"),
    ("epochs", "--epochs"),
    ("repeats", "--repeats"),
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
    try:
        scores = _read(args, source, cluster)
        rule = getattr(args, "per_item", "mean") or "mean"
        if rule != "mean" or scores.trials is not None:
            scores = _per_item(scores, rule)
    except VoteTableError:
        raise  # keeps its type: rankci rank reads the votes
    except ValueError as error:
        raise ValueError(_trial_flags(str(error))) from None
    print(f"rankci: {reading_summary(scores, text)}", file=sys.stderr)
    return scores


def _per_item(scores: Scores, rule: str) -> Scores:
    """The per-item rule of ``--per-item`` applied to what was read (tables and logs)."""
    from rankci.trials import parse_per_item

    parse_per_item(rule, "--per-item")
    return scores.per_item(rule)


_TRIAL_FLAGS = "--trial-col; Inspect logs: --epochs trial; lm-eval logs: --repeats trial"


def _trial_flags(message: str) -> str:
    """The trial keywords of the library's messages in flag words."""
    return (
        message.replace("per_item=", "--per-item ")
        .replace("per_item must", "--per-item must")
        .replace("(name it with trial=...)", f"(name it with {_TRIAL_FLAGS})")
        .replace("name it with trial=...", f"name it with {_TRIAL_FLAGS}")
        .replace("trial_gaps='allow' (--trial-gaps allow)", "--trial-gaps allow")
    )


def log_options(args: argparse.Namespace) -> dict:
    """The log readers' own keywords of :func:`rankci.adapters.read_log` from their flags
    (``--metric``, ``--scorer``, ``--tasks``, ``--exclude-tasks``, ``--filter``, ``--split``,
    ``--trials``, ``--epochs``, ``--repeats``), for every command that reads logs."""
    return {
        "metric": getattr(args, "metric", None),
        "scorer": getattr(args, "scorer", None),
        "tasks": getattr(args, "tasks", None),
        "exclude_tasks": getattr(args, "exclude_tasks", None),
        "filter": getattr(args, "log_filter", None),
        "split": getattr(args, "split", None),
        "trials": getattr(args, "trials", None),
        "epochs": getattr(args, "epochs", None),
        "repeats": getattr(args, "repeats", None),
        "trial_gaps": getattr(args, "trial_gaps", None),
    }


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
            item=args.item_col,
            cluster=args.cluster_col if args.cluster_col is not None else cluster,
            **log_options(args),
        )
    given = [flag for dest, flag in _LOG_ONLY if getattr(args, dest, None)]
    if given:
        if given[:2] == ["--metric", "--scorer"] or given == ["--metric"] or given == ["--scorer"]:
            raise ValueError("--metric and --scorer apply to evaluation logs (--from lm-eval, ...)")
        raise ValueError(f"{given[0]} applies to evaluation logs (--from lm-eval, ...), not tables")
    from rankci.formats import VOTE_LAYOUTS

    if args.layout in VOTE_LAYOUTS[1:]:
        raise VoteTableError(vote_table_refusal(args, source, args.layout, True), args.layout)
    from rankci.io import read_scores

    bounds = score_bounds(args)
    try:
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
            trial=getattr(args, "trial_col", None),
            per_item=_table_rule(args),
            trial_gaps=getattr(args, "trial_gaps", None) or "refuse",
        )
    except VoteTableError as found:  # io recognised the votes: its layout, no second read
        raise VoteTableError(vote_table_refusal(args, source, found.layout), found.layout) from None
    except ValueError:
        layout = vote_layout_of(source, args)
        if layout is None:
            raise
        raise VoteTableError(vote_table_refusal(args, source, layout), layout) from None


def vote_layout_of(source, args: argparse.Namespace) -> str | None:
    """The vote layout of DATA (None: not a vote table, or read as scores on purpose).

    Asked when DATA failed to read as scores; a command that ranks votes can ask it first to
    branch to :func:`rankci.votes.read_votes`. ``--layout`` naming a vote layout is not looked at
    here (``args.layout`` says it).
    """
    if args.model_col or args.score_col or args.layout != "auto":
        return None  # read as scores on purpose
    from rankci.formats import vote_layout
    from rankci.votes.read import read_vote_frame

    try:
        frame = read_vote_frame(source, args.input_format)
    except (ValueError, OSError):
        return None
    return vote_layout(frame.columns)


def score_bounds(args: argparse.Namespace) -> tuple[float, float] | None:
    """The score range of ``--bounds LOW HIGH`` (default [0, 1]; ``-inf inf``: any finite score)."""
    bounds = getattr(args, "bounds", None)
    if bounds is None:
        return (0.0, 1.0)
    low, high = bounds
    if not low < high:
        raise ValueError(f"--bounds {low:g} {high:g}: LOW must be below HIGH")
    return None if (low, high) == (float("-inf"), float("inf")) else (low, high)


def vote_table_refusal(args: argparse.Namespace, source, layout: str, forced: bool = False) -> str:
    """What a score command says of vote DATA (until votes are ranked on the command line)."""
    text = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "DATA"
    what = (
        f"--layout {layout} says {text} holds pairwise votes"
        if forced
        else f"{text} is a vote table (layout {layout}), not per-item scores"
    )
    return (
        f"{what}; vote tables are read by "
        f"rankci.votes.read_votes (rankci votes {text} shows what is read). rankci "
        f"{getattr(args, 'command', None) or 'rank'} reads per-item scores; pass --layout long "
        "or --layout wide to read DATA as scores anyway"
    )


def _table_rule(args: argparse.Namespace) -> str:
    """``--per-item`` for a table read with a trial column (else checked after reading)."""
    from rankci.trials import parse_per_item

    rule = getattr(args, "per_item", "mean") or "mean"
    parse_per_item(rule, "--per-item")
    return rule


def reading_summary(scores: Scores, source: str) -> str:
    """One line: what was read from ``source`` (models, items, clusters, prompts, scores) and
    what was excluded or left unscored, and why."""
    import numpy as np

    from rankci.data import distinct_count

    notes = scores.notes
    how = [notes[key] for key in ("layout",) if key in notes]
    if "delimiter" in notes:
        how.append({",": "comma", "\t": "tab", ";": "semicolon"}[notes["delimiter"]] + "-separated")
    if "encoding" in notes:
        how.append(f"decoded as {notes['encoding'].upper()}")
    parts = [f"{scores.n_models} models", f"{scores.n_items} items"]
    if scores.clusters is not None:
        parts.append(f"{len(scores.clusters)} clusters")
    if scores.prompts is not None:
        parts.append(f"{len(scores.prompts)} prompt variants")
    parts.append(f"{scores.n_rows} scores")
    if "repeated_trials" in notes:
        parts.append(_trials_phrase(notes["repeated_trials"]))
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
    n_obs = distinct_count(
        scores.item_code.astype(np.int64) * n_prompts + prompt_code, len(scores.items) * n_prompts
    )
    unscored = n_obs * scores.n_models - scores.n_rows
    if unscored:
        counts = n_obs - np.bincount(scores.model_code, minlength=scores.n_models)
        worst = sorted(
            ((int(c), m) for m, c in zip(scores.models, counts) if c), key=lambda t: (-t[0], t[1])
        )
        shown = ", ".join(f"{m} {c}" for c, m in worst[:3]) + (", ..." if len(worst) > 3 else "")
        line += f"; {unscored} cells not scored ({shown}): --missing decides"
    return line + "".join(_log_notes(notes))


def _trials_phrase(record: dict) -> str:
    """The trials part of the reading summary: counts, unequal counts, the per-item rule."""
    low, high = record["trials_per_item"]
    count = f"{low}" if low == high else f"{low}-{high} (unequal"
    if low != high:
        by_model = record.get("trials_by_model", {})
        shown = ", ".join(f"{m} {a}-{b}" for m, (a, b) in list(by_model.items())[:3])
        more = ", ..." if len(by_model) > 3 else ""
        count += f"; {shown}{more}; each item scored on its own trials)"
    return (
        f"{record['trial_rows']} trials ({count} per item, column {record['column']!r}; "
        f"per-item score: {record['per_item']})"
    )


def _log_notes(notes: dict) -> list[str]:
    """What a log reader set aside or flagged, for the reading summary."""
    parts = []
    set_aside = notes.get("set_aside") or notes.get("superseded")
    if set_aside:
        unscored = [
            os.path.basename(a["path"])
            for a in set_aside
            if isinstance(a, dict) and a.get("scored") is False and a.get("samples")
        ]
        why = "older or unfinished runs"
        if unscored:
            why = (
                f"{len(unscored)} whose samples carry no score, for a scored log: "
                + ", ".join(unscored[:4])
                + (", ..." if len(unscored) > 4 else "")
                + (
                    f"; {len(set_aside) - len(unscored)} older or unfinished runs"
                    if len(set_aside) > len(unscored)
                    else ""
                )
            )
        parts.append(f"; logs set aside: {len(set_aside)} ({why})")
    if notes.get("task_variants"):
        labels = [label for named in notes["task_variants"].values() for label in named]
        parts.append(
            "; tasks told apart by their settings (never paired): "
            + ", ".join(labels[:6])
            + (", ..." if len(labels) > 6 else "")
        )
    epochs_differ = notes.get("epochs_differ")
    if epochs_differ or notes.get("epochs_averaged"):
        differ = "; ".join(
            f"{task}: " + ", ".join(f"{m} {n}" for m, n in counts.items())
            for task, counts in (epochs_differ or {}).items()
        )
        if notes.get("epochs_averaged"):
            listed = f"; {differ}" if differ else ""
            parts.append(f"; epochs averaged per item (--epochs mean{listed})")
        else:
            parts.append(
                f"; epochs differ between models ({differ}): an epoch not every model has is "
                "left out for every model (--epochs mean averages each item's epochs)"
            )
    for key, what in (
        ("files_skipped", "files skipped (not Inspect logs)"),
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
    if "rankci.adapters" in sys.modules:  # only a log reader leaves these notes; a score file
        from rankci.adapters import run_identity_notes  # must not import the readers

        parts.extend(f"; {phrase}" for phrase in run_identity_notes(notes))
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
