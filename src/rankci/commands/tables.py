"""Tables for the terminal and for markdown, and the rank table (with its summary lines) that
``rank``, ``taubest``, ``benchmarks``, ``report`` and ``demo`` print.

pandas is imported by the functions that use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankci._base import format_pvalue
from rankci.commands.messages import early_stopping_note
from rankci.commands.output import ranking_json, target_sentence, to_json, with_target

if TYPE_CHECKING:
    import pandas as pd

    from rankci.leaderboard import ClusterRankings
    from rankci.ranking import Ranking

__all__ = [
    "display_frame",
    "markdown_table",
    "ranking_target",
    "render_clusters",
    "render_ranking",
    "summary_lines",
    "text_table",
]


#: the longest text cell a table prints; longer names keep their start and end around "…"
MAX_CELL = 40
_SHORTENED = (
    f"(… : names longer than {MAX_CELL} characters shortened; --format json has them in full)"
)
_CONTROL = None  # compiled on first use


def is_pvalue_column(name: str) -> bool:
    """p-value columns (``p``, ``p_GG``, ``p_adjusted``, ``pvalue``, ``holm_p``): a 0 there is an
    underflow, shown as ``< 1e-300``."""
    name = str(name).lower()
    return name == "p" or name.startswith("p_") or name.endswith("_p") or "pvalue" in name


def _text(value: str) -> tuple[str, bool]:
    """A text cell on one line: control characters escaped (a newline as ``\\n``), and at most
    MAX_CELL characters (start and end kept around "…"); whether it was shortened."""
    import re

    global _CONTROL
    if _CONTROL is None:
        _CONTROL = re.compile(r"[\x00-\x1f\x7f]")
    value = _CONTROL.sub(lambda m: repr(m.group())[1:-1], value)
    if len(value) <= MAX_CELL:
        return value, False
    tail = MAX_CELL // 3
    return value[: MAX_CELL - tail - 1] + "…" + value[-tail:], True


def _cell(value, floatfmt: str, pvalue: bool = False) -> tuple[str, bool]:
    import numpy as np
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "-", False
    if isinstance(value, (float, np.floating, int, np.integer)) and pvalue and value == 0:
        return format_pvalue(0.0), False
    if isinstance(value, (float, np.floating)):
        return format(float(value), floatfmt), False
    return _text(str(value))


def _cells(frame: pd.DataFrame, floatfmt: str) -> tuple[list[list[str]], bool]:
    """Every cell as text, and whether a name was shortened."""
    pvalues = [is_pvalue_column(c) for c in frame.columns]
    cells, shortened = [], False
    for row in frame.itertuples(index=False):
        line = []
        for value, pvalue in zip(row, pvalues):
            text, cut = _cell(value, floatfmt, pvalue)
            line.append(text)
            shortened |= cut
        cells.append(line)
    return cells, shortened


def text_table(frame: pd.DataFrame, floatfmt: str = ".4f") -> str:
    """Aligned plain-text table: text left-aligned, numbers right-aligned.

    Names stay on one line (control characters escaped) and within MAX_CELL characters (a
    note under the table says so when one was shortened); a 0 in a p-value column is shown as
    ``< 1e-300``.
    """
    import pandas as pd

    cells, shortened = _cells(frame, floatfmt)
    header = [_text(str(c))[0] for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    widths = [max([len(h), *(len(r[k]) for r in cells)]) for k, h in enumerate(header)]

    def line(values):
        parts = [
            v.rjust(w) if is_num else v.ljust(w) for v, w, is_num in zip(values, widths, numeric)
        ]
        return "  ".join(parts).rstrip()

    lines = [line(header), line(["-" * w for w in widths]), *map(line, cells)]
    return "\n".join(lines + ([_SHORTENED] if shortened else []))


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".4f") -> str:
    """GitHub-flavoured markdown table (cells as in :func:`text_table`, ``|`` escaped)."""
    import pandas as pd

    header = [_text(str(c))[0] for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    cells, shortened = _cells(frame, floatfmt)
    rows = [[v.replace("|", "\\|") for v in row] for row in cells]
    align = ["---:" if is_num else ":---" for is_num in numeric]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out + (["", _SHORTENED] if shortened else []))


def display_frame(ranking: Ranking, k: int | None) -> pd.DataFrame:
    """``ranking.to_frame(k)`` with the bounds shown as one "rank interval" column ``[L, U]``."""
    frame = ranking.to_frame(k)
    frame.insert(
        4,
        "rank interval",
        [f"[{lo}, {hi}]" for lo, hi in zip(frame["rank_lower"], frame["rank_upper"])],
    )
    return frame.drop(columns=["rank_lower", "rank_upper"])


def summary_lines(ranking: Ranking) -> list[str]:
    """The lines above a rank table: models, units, test, multiplicity, coverage, alpha, and
    what was excluded or dropped (and the early-stopping note, if any)."""
    procedure = ranking.procedure
    excluded = ranking.excluded
    multiplicity = procedure.get("multiplicity", "")
    if multiplicity.startswith("max-t"):
        multiplicity += (
            f" ({procedure.get('resampling')}, {procedure.get('draws')} draws, "
            f"{procedure.get('covariance')} covariance)"
        )
    head = (
        f"{ranking.n_models} models, {ranking.n_units} {procedure.get('unit', '')} units; "
        f"{procedure.get('test', '')} test, {multiplicity}, "
        f"{ranking.coverage} coverage, alpha = {ranking.alpha:g}"
    )
    if procedure.get("delta"):
        head += f", delta = {procedure['delta']:g}"
    lines = [head]
    stopped = early_stopping_note(ranking.early_stopped)
    if stopped:
        lines.append(stopped)
    if excluded.get("observations_excluded"):
        lines.append(
            f"excluded: {excluded['observations_excluded']} observations "
            f"({excluded['rows_excluded']} scores): {excluded.get('reason', '')}"
        )
    if excluded.get("clusters_dropped"):
        dropped = ranking.details.get("filter", {}).get("dropped", {})
        lines.append(f"clusters dropped as non-informative: {', '.join(dropped)}")
    return lines


def render_ranking(ranking: Ranking, fmt: str, k: int | None = None, pairs: bool = False) -> str:
    """A ranking as ``fmt`` (table, json, csv or markdown); ``pairs``: json with the pair list."""
    unit, flow = ranking_target(ranking)
    if fmt == "json":
        return ranking_json(with_target(ranking.to_dict(k, pairs=pairs), unit))
    if fmt == "csv":
        return ranking.to_frame(k).to_csv(index=False)
    frame = display_frame(ranking, k)
    aim = target_sentence(unit, flow)
    if fmt == "markdown":
        return "\n\n".join(
            [" ".join(summary_lines(ranking)), markdown_table(frame), ranking.guarantee, aim]
        )
    return "\n".join([*summary_lines(ranking), "", text_table(frame), "", ranking.guarantee, aim])


def ranking_target(ranking: Ranking) -> tuple[str, str]:
    """(unit or sampling model, flow) of a ranking: what its statements are about."""
    spec = ranking.spec
    sampling = getattr(spec, "sampling", None)
    if sampling is not None:
        return sampling, "anytime"
    return ranking.procedure.get("unit") or getattr(spec, "unit", None) or "item", "fixed"


def render_clusters(
    result: ClusterRankings, fmt: str, k: int | None = None, pairs: bool = False
) -> str:
    """Per-cluster rankings (``rankci rank --by-cluster``) as ``fmt``, one block per cluster."""
    unit = "item"
    if result.rankings:
        unit = ranking_target(next(iter(result.rankings.values())))[0]
    if fmt == "json":
        payload = with_target(result.to_dict(k), unit)
        if pairs:
            payload["clusters"] = {
                name: ranking.to_dict(k, pairs=True) for name, ranking in result.rankings.items()
            }
        return to_json(payload)
    if fmt == "csv":
        return result.to_frame(k).to_csv(index=False)
    blocks = []
    for name, ranking in result.rankings.items():
        frame = display_frame(ranking, k)
        table = markdown_table(frame) if fmt == "markdown" else text_table(frame)
        title = f"## {name}" if fmt == "markdown" else f"cluster {name!r}"
        blocks.append("\n".join([title, *summary_lines(ranking), "", table]))
    for name, reason in result.skipped.items():
        blocks.append(f"cluster {name!r} skipped: {reason}")
    if result.rankings:
        blocks.append(next(iter(result.rankings.values())).guarantee + " (within each cluster)")
    blocks.append(target_sentence(unit))
    return "\n\n".join(blocks)
