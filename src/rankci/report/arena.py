"""The arena board as a self-contained HTML page: a vote ranking (rankci.votes.rank_votes).

The page shows, per model, the Elo-scale rating, the strength (centred log-odds) and its
standard error, the certified simultaneous rank interval and, beside it, LMArena's "Rank (UB)"
(1 + the models whose marginal 95% interval lies wholly above: an overlap rule with no joint
guarantee), the tier and top-k status; then the rank-interval plots, the style and position
coefficients, the probes (each with its test, threshold and verdict) and the method with its
guarantee and target (new votes like these).
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from rankci.ranking import Ranking
from rankci.report.html import Section, page_html, plots_section, table_html

__all__ = ["build_arena_report", "write_arena_report", "arena_board_section"]


def arena_board_section(ranking: Ranking, k: int | None = None) -> Section:
    """The board: rating, strength, se, rank, rank interval, Rank (UB), tier, top-k."""
    cols = ranking.model_columns or {}
    rating, se, rank_ub = cols.get("rating"), cols.get("se"), cols.get("rank_ub")
    top = ranking.top_k(k) if k else None
    header = ["model", "rating", "strength", "se", "rank", "rank interval", "Rank (UB)", "tier"]
    if top is not None:
        header.append(f"top-{k}")
    rows, keys = [], []
    for j in ranking.order():
        row = [
            html.escape(ranking.models[j]),
            f"{rating[j]:.1f}",
            f"{ranking.score[j]:+.4f}",
            f"{se[j]:.4f}",
            str(ranking.rank[j]),
            f"[{ranking.lower[j]}, {ranking.upper[j]}]",
            str(int(rank_ub[j])),
            "–" if ranking.tier is None else str(ranking.tier[j]),
        ]
        key = [
            ranking.models[j],
            rating[j],
            ranking.score[j],
            se[j],
            ranking.rank[j],
            ranking.lower[j] + ranking.upper[j] / 1000,
            int(rank_ub[j]),
            0 if ranking.tier is None else ranking.tier[j],
        ]
        if top is not None:
            row.append(top[j])
            key.append({"in": 0, "undetermined": 1, "out": 2}[top[j]])
        rows.append(row)
        keys.append(key)
    numeric = [h != "model" and not h.startswith("top-") for h in header]
    table = table_html(header, rows, keys, table_id="arena-table", numeric=numeric)
    note = (
        '<p class="hint">Click a column header to sort. The rank interval is certified for all '
        "models at once; Rank (UB) is LMArena's overlap rule (1 + the models whose marginal 95% "
        "interval lies wholly above), shown beside it for comparison: it carries no joint "
        "guarantee.</p>"
    )
    return Section("Arena board", note + table, "arena")


def _coefficients_section(ranking: Ranking) -> Section | None:
    coefficients = ranking.details.get("coefficients") or {}
    if not coefficients:
        return None
    level = f"{1 - ranking.alpha:.0%}"
    rows = [
        [
            html.escape(name),
            f"{c['estimate']:+.4f}",
            f"{c['se']:.4f}",
            f"[{c['lower']:+.4f}, {c['upper']:+.4f}]",
        ]
        for name, c in coefficients.items()
    ]
    header = ["coefficient", "estimate (log-odds)", "se", f"{level} interval (marginal)"]
    return Section(
        "Position and style coefficients",
        table_html(header, rows, numeric=[False, True, True, False]),
        "coefficients",
    )


def probes_section(probes: dict) -> Section:
    """One row per probe: verdict, its message, the test and the threshold."""
    rows = []
    for name, p in probes.items():
        if not isinstance(p, dict) or "flagged" not in p:
            continue
        verdict = "FLAGGED" if p["flagged"] else "ok"
        rows.append(
            [
                html.escape(name),
                f"<b>{verdict}</b>" if p["flagged"] else verdict,
                html.escape(str(p.get("message", ""))),
                html.escape(str(p.get("test", ""))),
                html.escape(str(p.get("threshold", ""))),
            ]
        )
    header = ["probe", "verdict", "finding", "test", "threshold"]
    body = table_html(header, rows, table_id="probes-table") if rows else "<p>no probe ran</p>"
    return Section("Probes", body, "probes")


def _method_section(ranking: Ranking, votes) -> Section:
    spec = ranking.spec
    excluded = ranking.excluded or {}
    items = [
        f"<li><b>Data</b>: {ranking.n_models} models, {ranking.n_units} votes"
        + (f" ({votes.n_votes} read)" if votes is not None else "")
        + ".</li>",
        f"<li><b>Fit</b>: Bradley-Terry, ties {html.escape(spec.ties)}"
        + (", first-position effect" if spec.position else "")
        + (f", covariates {html.escape(', '.join(spec.covariates))}" if spec.covariates else "")
        + f"; covariance {html.escape(spec.covariance)}"
        + (f" clustered by {html.escape(spec.cluster)}" if spec.cluster else "")
        + ".</li>",
        f"<li><b>Error control</b>: {html.escape(spec.multiplicity)}, {ranking.coverage} "
        f"coverage at α = {ranking.alpha:g}, indifference margin δ = {spec.delta:g} "
        "(log-odds).</li>",
    ]
    counted = {k: v for k, v in excluded.items() if isinstance(v, (int, float)) and v}
    items.append(
        "<li><b>Excluded</b>: "
        + (
            ", ".join(f"{html.escape(str(k))}: {v}" for k, v in counted.items())
            if counted
            else "no vote"
        )
        + ".</li>"
    )
    return Section("Method", "<ul>" + "".join(items) + "</ul>", "method")


def build_arena_report(
    ranking: Ranking,
    *,
    votes=None,
    probes: dict | None = None,
    title: str = "Arena board with rank intervals",
    k: int | None = None,
) -> str:
    """The arena report as an HTML string.

    Parameters
    ----------
    ranking : Ranking
        A :func:`rankci.votes.rank_votes` result (its ``model_columns`` rating, se, rank_ub).
    votes : Votes, optional
        The votes read (for the counts in the method section).
    probes : dict, optional
        :func:`rankci.votes.probes.probe_votes` of the same votes; drawn as a table.
    title : str
    k : int, optional
        Report top-k status.

    Returns
    -------
    str
        A complete, self-contained HTML document.

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> import numpy as np
    >>> from rankci.votes import Votes, rank_votes
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 3000); b = (a + rng.integers(1, 3, 3000)) % 3
    >>> s = np.array([1.0, 0.0, -1.0])
    >>> out = (rng.random(3000) > 1 / (1 + np.exp(s[b] - s[a]))).astype(int)
    >>> page = build_arena_report(rank_votes(Votes.from_arrays(a, b, out, models=list("xyz")),
    ...                                      seed=1))
    >>> page.startswith("<!DOCTYPE html>"), 'id="arena-table"' in page
    (True, True)
    """
    if ranking.procedure.get("flow") != "votes":
        raise ValueError("build_arena_report draws a vote ranking (rankci.votes.rank_votes)")
    blocks = [arena_board_section(ranking, k), plots_section(ranking)]
    coefficients = _coefficients_section(ranking)
    if coefficients is not None:
        blocks.append(coefficients)
    if probes is not None:
        blocks.append(probes_section(probes))
    blocks.append(_method_section(ranking, votes))
    meta = f"{ranking.n_models} models · {ranking.n_units} votes"
    return page_html(title, meta, ranking, blocks)


def write_arena_report(ranking: Ranking, path: str | os.PathLike, **options) -> Path:
    """Write :func:`build_arena_report` to ``path`` (UTF-8) and return it."""
    path = Path(path)
    path.write_text(build_arena_report(ranking, **options), encoding="utf-8")
    return path
