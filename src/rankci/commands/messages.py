"""What the command line says in its own words: library messages with their Python keywords
turned into the flags that set them, and the note on adaptively stopped data.
"""

from __future__ import annotations

import argparse
import re

__all__ = [
    "cli_message",
    "early_stopping_note",
]


#: the library's keywords in messages -> the command line's flags (applied by cli_message)
_KEYWORD_FLAGS = (
    (
        re.compile(r"\bpass format= one of 'csv', 'tsv', 'parquet', 'jsonl'"),
        "pass --from csv, tsv, parquet or jsonl",
    ),
    (re.compile(r" \(format=\)"), ""),
    (re.compile(r"\bformat='(\w+)'"), r"--from \1"),
    (re.compile(r"\bformat=(?=[\s,;)]|$)"), "--from"),
    (re.compile(r"\blayout='(\w+)'"), r"--layout \1"),
    (re.compile(r"\bforce a layout with layout="), "force a layout with --layout"),
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
    (re.compile(r"\btrials='(\w+)'"), r"--trials \1"),
    (re.compile(r"\bepochs='(\w+)'"), r"--epochs \1"),
    (re.compile(r"\b(metric|filter|scorer|split|trials|tasks|epochs)=(?=[\s,;)]|$)"), r"--\1"),
    (re.compile(r"\bexclude_tasks=(?=[\s,;)]|$)"), "--exclude-tasks"),
    (re.compile(r"\bunit='(\w+)'"), r"--unit \1"),
    (re.compile(r"\bmultiplicity='([\w-]+)'"), r"--multiplicity \1"),
    (re.compile(r"\btest='([\w-]+)'"), r"--test \1"),
    (re.compile(r"\bor overall=False"), "or --no-overall"),
    (re.compile(r"\bsmall_sample='cr2'"), "--cr2"),
    (re.compile(r"\bmethod='([\w-]+)'"), r"--method \1"),
    (re.compile(r"\bwild_weights='(\w+)'"), r"--wild-weights \1"),
    (re.compile(r"\ba larger alpha \(now alpha=([\d.e-]+)\)"), r"a larger --alpha (now \1)"),
    (re.compile(r"\bexact_bound_n=(\d+)"), r"--exact-bound-n \1"),
    (re.compile(r"\bexact_bound_n(?=[\s,;)]|$)"), "--exact-bound-n"),
    (re.compile(r"\bretire='([\w:-]+)'"), r"--retire \1"),
    (re.compile(r"\bneeds k\b"), "needs --k"),
    (re.compile(r"(?<![\w-])look_every\b"), "--look-every"),
    (re.compile(r"(?<![\w-])(alpha|delta|tau|seed) must be"), r"--\1 must be"),
    (re.compile(r"(?<![\w-])k must be an integer"), "--top-k must be an integer"),
    (
        re.compile(r"\bwith model_a=, model_b=, winner="),
        "with --model-a-col, --model-b-col, --winner-col",
    ),
    (
        re.compile(r"\bmodel_a=, model_b= and winner="),
        "--model-a-col, --model-b-col and --winner-col",
    ),
    (re.compile(r"\bunknown_winner='(\w+)'"), r"--unknown-winner \1"),
    (re.compile(r"\bpass baseline="), "pass --baseline"),
    (re.compile(r"\bgames='(\w+)'"), r"--games \1"),
    (re.compile(r"\bbaseline=(?='|[\s,;)]|$)"), "--baseline "),
    (
        re.compile(r"\b(strong_votes|min_votes)(?= must)"),
        lambda m: "--" + m.group(1).replace("_", "-"),
    ),
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
