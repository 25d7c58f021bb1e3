"""A real headless Chromium for page tests (Debian's `chromium`, driven through Playwright).

Browser tests run wherever Chromium is installed and always in CI (CI=true), where a missing
browser is a failure, not a skip.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager

import pytest

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    for name in (os.environ.get("RANKCI_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def require_chromium() -> str:
    path = chromium_path()
    if path is None:
        message = "Chromium not found: install it with `apt-get install chromium` (Debian)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@contextmanager
def browser():
    """A Chromium browser with a fresh, empty profile."""
    from playwright.sync_api import sync_playwright

    executable = require_chromium()
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=FLAGS
        )
        try:
            yield context
        finally:
            context.close()
