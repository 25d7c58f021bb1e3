"""The version of rankci (one place: pyproject.toml reads nothing from here, so keep both equal)."""

__version__ = "0.1.0"
