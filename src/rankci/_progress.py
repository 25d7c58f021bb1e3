"""A small progress bar for long work (resampling, replays, validation), standard library only.

It draws on standard error only when that is a terminal, so logs, pipes and CI output stay clean;
``RANKCI_PROGRESS=0`` turns it off, ``RANKCI_PROGRESS=1`` forces it on.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

T = TypeVar("T")

__all__ = ["Progress", "progress"]


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
            enabled = setting == "1" or (setting != "0" and _is_terminal(self.stream))
        self.enabled = enabled
        self.done = 0
        self.start = time.monotonic()
        self._last = 0.0
        self._min_interval = min_interval

    def update(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        now = time.monotonic()
        if self.enabled and (now - self._last >= self._min_interval or self.done == self.total):
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        fraction = self.done / self.total if self.total else 1.0
        width = 24
        filled = int(round(width * fraction))
        elapsed = now - self.start
        eta = elapsed * (1 - fraction) / fraction if fraction > 0 else float("nan")
        eta_text = f"ETA {eta:.0f}s" if fraction < 1 and eta == eta else f"{elapsed:.1f}s"
        self.stream.write(
            f"\r{self.desc} [{'#' * filled}{' ' * (width - filled)}] {fraction:4.0%} "
            f"{self.done}/{self.total} {eta_text}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
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
