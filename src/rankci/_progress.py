"""Progress bars for long work (resampling, replays, validation), drawn by ``tqdm.auto``.

``tqdm.auto`` draws a text bar on a terminal and a widget in a Jupyter notebook; without
ipywidgets rankci draws tqdm's text bar there itself (``tqdm.auto`` would warn "IProgress not
found" in every notebook). rankci decides whether to draw at all: on standard error only when
that is a terminal or the code runs in a notebook kernel, so logs, pipes and CI output stay clean;
``RANKCI_PROGRESS=0`` turns it off, ``RANKCI_PROGRESS=1`` forces it on.

The hand-written bar this replaces did nothing tqdm cannot (rate limiting is tqdm's
``mininterval``, the terminal test its ``disable``); tqdm adds notebook widgets, rates and
terminal-width handling.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

T = TypeVar("T")

__all__ = ["Progress", "progress"]

#: the text bar, as the hand-written one drew it: "desc [####    ]  50% 2/4 ETA 3s"
BAR_FORMAT = "{desc} [{bar:24}] {percentage:3.0f}% {n_fmt}/{total_fmt} {elapsed}<{remaining}"


class Progress:
    """``with Progress(total, "bootstrap") as bar: ... bar.update(k)``."""

    def __init__(
        self,
        total: int,
        desc: str = "",
        *,
        stream: IO[str] | None = None,
        enabled: bool | None = None,
        min_interval: float = 0.1,
    ) -> None:
        self.total = max(int(total), 0)
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            setting = os.environ.get("RANKCI_PROGRESS", "")
            enabled = setting == "1" or (
                setting != "0" and (_is_terminal(self.stream) or _in_notebook())
            )
        self.enabled = bool(enabled)
        self.done = 0
        self._bar = None
        if self.enabled:
            if _is_terminal(self.stream) or not _in_notebook() or not _has_widgets():
                from tqdm import tqdm  # the text bar on the given stream
            else:
                from tqdm.auto import tqdm  # a widget in a notebook
            self._bar = tqdm(
                total=self.total,
                desc=desc,
                file=self.stream,
                mininterval=min_interval,
                bar_format=BAR_FORMAT,
                ascii=" #",
                leave=True,
                dynamic_ncols=False,
            )

    def update(self, n: int = 1) -> None:
        step = min(self.total, self.done + n) - self.done
        self.done += step
        if self._bar is not None and step:
            self._bar.update(step)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(
    iterable: Iterable[T], total: int | None = None, desc: str = "", **options
) -> Iterator[T]:
    """Iterate with a progress bar (see :class:`Progress`)."""
    if total is None:
        total = len(iterable)  # type: ignore[arg-type]
    with Progress(total, desc, **options) as bar:
        for value in iterable:
            yield value
            bar.update()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (not a plain IPython terminal)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        return type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:  # noqa: BLE001 - any failure means "not a notebook"
        return False


def _has_widgets() -> bool:
    """Whether ipywidgets can be imported: tqdm's notebook widget needs it, and without it
    ``tqdm.auto`` warns "IProgress not found" in every notebook (the text bar is drawn then)."""
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None
