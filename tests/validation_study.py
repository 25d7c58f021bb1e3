"""A validation/ script loaded as a module, for the tests of its pieces and its quick mode.

The scripts import ``validation/_results.py`` and each other by name, so validation/ is on
``sys.path`` while the script executes (and only then).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

VALIDATION = Path(__file__).resolve().parents[1] / "validation"


def load_study(name: str) -> ModuleType:
    """``validation/<name>.py`` as a fresh module."""
    sys.path.insert(0, str(VALIDATION))
    try:
        spec = importlib.util.spec_from_file_location(name, VALIDATION / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(VALIDATION))
    return module
