"""Writing a command's output: the ``-o`` path checked before any work, the text written to
``-o FILE`` or stdout, and the JSON (with the command's own specification recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rankci.targets import target, target_sentence

__all__ = [
    "check_output_paths",
    "command_record",
    "command_spec",
    "emit",
    "ranking_json",
    "target",
    "target_sentence",
    "to_json",
    "with_target",
]


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


def ranking_json(payload: dict) -> str:
    """:func:`to_json` of a ranking's payload, with a long ``dominance`` pair list written fast.

    The indented encoder of the standard library is pure Python; a pair list of millions of
    entries is written by its C encoder instead, one line for the list (same JSON values).
    """
    dominance = payload.get("dominance")
    if not isinstance(dominance, list) or len(dominance) < 10_000:
        return to_json(payload)
    marker = "@@rankci-dominance-pairs@@"
    text = to_json({**payload, "dominance": marker})
    return text.replace(json.dumps(marker), json.dumps(dominance, allow_nan=False), 1)


def command_record(payload: dict, args: argparse.Namespace) -> dict:
    """A result's JSON with ``"spec"`` recording the command's own options as well.

    For the commands whose result carries a :class:`~rankci.method.MethodSpec` beside options of
    their own (benchmarks, check, plan): ``"spec"`` is the command's options, as for the
    commands without a MethodSpec, and its ``"method"`` is the result's MethodSpec
    (``MethodSpec.from_dict(payload["spec"]["method"])`` reads it back).
    """

    method = payload.get("spec")
    record = {"command": getattr(args, "command", None), **command_spec(args), "method": method}
    return {**payload, "spec": record}


def with_target(payload: dict, unit_or_sampling: str) -> dict:
    """The payload with its ``"target"`` (:func:`rankci.targets.target`)."""
    return {**payload, "target": target(unit_or_sampling)}
