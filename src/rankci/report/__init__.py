"""Plots (matplotlib figures) and the self-contained HTML report.

The plot functions are imported from :mod:`rankci.report.plots` on first use, so that importing
the report (as the live service does for its tables) does not import matplotlib.
"""

from rankci.report.html import Section, build_report, write_report

_PLOTS = (
    "plot_cluster_rank_intervals",
    "plot_dominance",
    "plot_monitor_intervals",
    "plot_monitor_progress",
    "plot_rank_intervals",
    "plot_score_intervals",
    "plot_tiers",
)

__all__ = ["Section", "build_report", "write_report", *_PLOTS]


def __getattr__(name: str) -> object:
    if name in _PLOTS:
        from rankci.report import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'rankci.report' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PLOTS])
