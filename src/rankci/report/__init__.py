"""Plots (matplotlib figures) and the self-contained HTML report."""

from rankci.report.html import Section, build_report, write_report
from rankci.report.plots import (
    plot_cluster_rank_intervals,
    plot_dominance,
    plot_monitor_intervals,
    plot_monitor_progress,
    plot_rank_intervals,
    plot_score_intervals,
    plot_tiers,
)

__all__ = [
    "Section",
    "build_report",
    "write_report",
    "plot_cluster_rank_intervals",
    "plot_dominance",
    "plot_monitor_intervals",
    "plot_monitor_progress",
    "plot_rank_intervals",
    "plot_score_intervals",
    "plot_tiers",
]
