"""Where a validation study's results go: the recorded JSON, or a scratch copy in quick mode.

A ``--quick`` run (CI's smoke run) must not overwrite the recorded results of the full study
that ``validation/README.md`` reports, so without ``--out`` it writes to a temporary folder that
is removed at once (the write itself is still exercised).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

__all__ = ["save_record", "write_json"]


def write_json(record: dict, path: Path) -> None:
    """``record`` as indented JSON at ``path`` (folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def save_record(record: dict, recorded: Path, out: str | None, quick: bool) -> None:
    """Write ``record`` to ``out`` if given, else to ``recorded``, except that a quick run
    without ``out`` writes a scratch copy and keeps the recorded results."""
    if quick and out is None:
        with tempfile.TemporaryDirectory() as scratch:
            write_json(record, Path(scratch) / recorded.name)
    else:
        write_json(record, Path(out) if out else recorded)
