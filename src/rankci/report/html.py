"""A self-contained HTML leaderboard report: one file, no network, images and styles inline.

The page has a sortable leaderboard table (score, rank interval, tier, top-k status, flags), the
plots, and the method with its guarantee in plain words. Further sections (score intervals,
omnibus tests, the monitor) are added by passing :class:`Section` objects.
"""

from __future__ import annotations

import base64
import html
import io
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rankci._base import LazyModule, format_pvalue
from rankci.data import Scores
from rankci.leaderboard import CLUSTER_UNITS, ClusterRankings, rank, rank_by_cluster
from rankci.method import MethodSpec
from rankci.ranking import Ranking
from rankci.targets import target_sentence

if TYPE_CHECKING:
    from matplotlib.figure import Figure

plots = LazyModule("rankci.report.plots")  # matplotlib on the first figure: a table needs none

__all__ = [
    "Section",
    "build_report",
    "write_report",
    "figure_html",
    "table_html",
    "page_html",
]


@dataclass(frozen=True)
class Section:
    """One titled block of the report; ``body`` is trusted HTML."""

    title: str
    body: str
    anchor: str = ""

    @property
    def id(self) -> str:
        return self.anchor or "".join(c if c.isalnum() else "-" for c in self.title.lower())


def figure_html(fig: Figure, alt: str, dpi: int = 110) -> str:
    """A figure as an inline PNG ``<img>`` (base64 data URI).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    alt : str
        Alternative text (escaped).
    dpi : int, default 110
        Resolution of the PNG.

    Returns
    -------
    str
        ``<img class="plot" alt="..." src="data:image/png;base64,...">``.

    References
    ----------
    Masinter, L. (1998). The "data" URL scheme. RFC 2397.
    Josefsson, S. (2006). The Base16, Base32, and Base64 Data Encodings. RFC 4648.
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> import base64
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(1, 1))
    >>> _ = fig.subplots().plot([0, 1], [0, 1])
    >>> tag = figure_html(fig, "a line")
    >>> head, data = tag.split(",", 1)
    >>> head
    '<img class="plot" alt="a line" src="data:image/png;base64'
    >>> base64.b64decode(data[:-2])[1:4]  # the PNG signature
    b'PNG'
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def table_html(
    header: Sequence[str],
    rows: Iterable[Sequence],
    sort_keys: Iterable[Sequence] | None = None,
    table_id: str = "",
    numeric: Sequence[bool] | None = None,
) -> str:
    """A sortable table; ``sort_keys`` gives each cell's sort value (numbers sort numerically).

    Cells are inserted as given (trusted HTML); headers and sort keys are escaped. The page's
    script sorts a column when its header is clicked.

    Parameters
    ----------
    header : sequence of str
        Column headers.
    rows : iterable of sequences
        Cells, row by row.
    sort_keys : iterable of sequences, optional
        Sort value of each cell (default: the cell itself).
    table_id : str
        ``id`` of the table element.
    numeric : sequence of bool, optional
        Columns aligned and sorted as numbers.

    Returns
    -------
    str

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/), tabular data: the ``table``
    element and ``data-*`` attributes.

    Examples
    --------
    >>> text = table_html(["model", "score"], [["a", "0.8"]], [["a", 0.8]], numeric=[False, True])
    >>> text.count("<tr>"), '<td class="num" data-sort="0.8">0.8</td>' in text
    (2, True)
    >>> text[text.index("<thead>"):text.index("</thead>")]
    '<thead><tr><th scope="col" class="" tabindex="0">model</th><th scope="col" class="num"
    tabindex="0">score</th></tr>'
    """
    numeric = numeric or [False] * len(header)
    head = "".join(
        f'<th scope="col" class="{"num" if is_num else ""}" tabindex="0">{html.escape(str(h))}</th>'
        for h, is_num in zip(header, numeric)
    )
    body = []
    keys = list(sort_keys) if sort_keys is not None else None
    for r, row in enumerate(rows):
        cells = []
        for c, value in enumerate(row):
            key = keys[r][c] if keys is not None else value
            cls = ' class="num"' if numeric[c] else ""
            cells.append(f'<td{cls} data-sort="{html.escape(str(key))}">{value}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    return (
        f'<div class="table-wrap"><table class="sortable"{ident}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _flags(ranking: Ranking, scores_excluded: dict) -> list[str]:
    """Short per-model notes: missing items, and ties with neighbours that are not resolved."""
    flags: list[list[str]] = [[] for _ in ranking.models]
    missing = scores_excluded.get("missing_cells_by_model", {})
    for j, model in enumerate(ranking.models):
        if missing.get(model):
            flags[j].append(f"{missing[model]} items unscored")
    if ranking.dominance is not None:
        order = ranking.order()
        for above, below in zip(order[:-1], order[1:]):
            if not ranking.dominance[above, below]:
                flags[below].append("not separated from the model above")
    return ["; ".join(f) for f in flags]


def leaderboard_section(ranking: Ranking, k: int | None = None, score_intervals=None) -> Section:
    """The leaderboard table: score [and interval], rank, rank interval, tier, top-k, flags."""
    order = ranking.order()
    flags = _flags(ranking, ranking.excluded)
    top = ranking.top_k(k) if k else None
    interval_of = {}
    if score_intervals is not None:
        frame = score_intervals.to_frame()
        interval_of = {row.model: (row.lower, row.upper) for row in frame.itertuples(index=False)}
    header = ["model", "score"]
    if interval_of:
        header.append(f"{1 - ranking.alpha:.0%} score interval")
    header += ["rank", "rank interval", "tier"]
    if top is not None:
        header.append(f"top-{k}")
    header.append("flags")
    rows, keys = [], []
    for j in order:
        model = ranking.models[j]
        row = [html.escape(model), f"{ranking.score[j]:.4f}"]
        key = [model, ranking.score[j]]
        if interval_of:
            lo, hi = interval_of.get(model, (np.nan, np.nan))
            row.append(f"[{lo:.4f}, {hi:.4f}]")
            key.append(lo)
        row += [
            str(ranking.rank[j]),
            f"[{ranking.lower[j]}, {ranking.upper[j]}]",
            "–" if ranking.tier is None else str(ranking.tier[j]),
        ]
        key += [
            ranking.rank[j],
            ranking.lower[j] + ranking.upper[j] / 1000,
            0 if ranking.tier is None else ranking.tier[j],
        ]
        if top is not None:
            row.append(top[j])
            key.append({"in": 0, "undetermined": 1, "out": 2}[top[j]])
        row.append(html.escape(flags[j]))
        key.append(flags[j])
        rows.append(row)
        keys.append(key)
    numeric = [h not in ("model", "flags") and not h.startswith("top-") for h in header]
    table = table_html(header, rows, keys, table_id="leaderboard-table", numeric=numeric)
    note = (
        '<p class="hint">Click a column header to sort. Rank 1 is best; a tier-s model has true '
        "rank s or worse.</p>"
    )
    return Section("Leaderboard", note + table, "leaderboard")


def _method_section(ranking: Ranking, scores: Scores) -> Section:
    procedure = ranking.procedure
    excluded = ranking.excluded
    items = [
        f"<li><b>Data</b>: {scores.n_models} models, {scores.n_items} items"
        + (f", {len(scores.clusters)} clusters" if scores.clusters else "")
        + (f", {len(scores.prompts)} prompt variants" if scores.prompts else "")
        + f"; {ranking.n_units} {html.escape(str(procedure.get('unit', '')))} units analysed.</li>",
        "<li><b>Evidence</b>: one-sided paired "
        f"{html.escape(str(procedure.get('test', '')))} tests "
        "for every ordered pair of models, indifference margin "
        f"δ = {procedure.get('delta', 0):g}.</li>",
        f"<li><b>Error control</b>: {html.escape(str(procedure.get('multiplicity', '')).title())}, "
        f"{ranking.coverage} coverage at α = {ranking.alpha:g}.</li>",
    ]
    if excluded.get("observations_excluded"):
        items.append(
            f"<li><b>Excluded</b>: {excluded['observations_excluded']} observations "
            f"({excluded['rows_excluded']} scores) — "
            f"{html.escape(excluded.get('reason', ''))}.</li>"
        )
    if excluded.get("clusters_dropped"):
        items.append(
            f"<li><b>Clusters dropped</b>: {excluded['clusters_dropped']} — "
            f"{html.escape(excluded.get('clusters_dropped_reason', ''))}.</li>"
        )
    items.extend(_data_notes(scores))
    return Section("Method", "<ul>" + "".join(items) + "</ul>", "method")


def plots_section(ranking: Ranking) -> Section:
    """The report's plots of a ranking: rank intervals, and the dominance graph if any."""
    parts = [figure_html(plots.plot_rank_intervals(ranking), "rank intervals")]
    if ranking.dominance is not None:
        parts.append(figure_html(plots.plot_tiers(ranking), "tiers"))
        parts.append(figure_html(plots.plot_dominance(ranking), "certified dominance matrix"))
    return Section("Rank intervals", "".join(parts), "rank-plots")


def _cluster_section(cluster_rankings: ClusterRankings) -> Section:
    body = figure_html(
        plots.plot_cluster_rank_intervals(cluster_rankings), "per-cluster rank intervals"
    )
    if cluster_rankings.skipped:
        body += (
            "<p>Not ranked: "
            + "; ".join(
                f"{html.escape(c)} ({html.escape(r)})" for c, r in cluster_rankings.skipped.items()
            )
            + "</p>"
        )
    intro = (
        f"<p>Rank intervals within each cluster, each valid on its own at "
        f"{1 - cluster_rankings.alpha:.0%}.</p>"
    )
    return Section("By cluster", intro + body, "clusters")


def _p(p: float, equals: str = "") -> str:
    """A p-value for display; underflow to 0 is shown as a bound."""
    text = format_pvalue(p)
    return text if p == 0 else f"{equals}{text}"


def omnibus_section(scores: Scores, alpha: float = 0.05) -> Section:
    """Do the models differ at all, and where does the variance come from?

    Repeated-measures ANOVA and Friedman on the items every model answered, and the linear mixed
    model ``score ~ model + (1|cluster) + (1|cluster:item)`` with its variance components.
    """
    from rankci.analyses.omnibus import friedman, rm_anova
    from rankci.mixed import mixed_model

    complete = scores.units("item", missing="pairwise").values
    if not np.isfinite(complete).all(axis=1).any():
        raise ValueError(
            "the omnibus tests compare all models on the same items, and no item is scored by "
            "every model (the rank intervals above compare the models pair by pair)"
        )
    anova, fried = rm_anova(scores), friedman(scores)
    rows = [
        [
            "repeated-measures ANOVA",
            f"F({anova.df_num:g}, {anova.df_den:g}) = {anova.F:.4g}",
            _p(anova.p),
            f"Greenhouse–Geisser ε = {anova.gg_epsilon:.3f} (corrected p {_p(anova.p_gg, '= ')}); "
            f"partial η² = {anova.eta2_partial:.3f}",
        ],
        [
            "Friedman",
            f"χ²({fried.df:g}) = {fried.chi2:.4g}",
            _p(fried.p),
            f"Kendall's W = {fried.kendall_w:.3f}",
        ],
    ]
    parts = []
    if scores.clusters is not None and len(scores.clusters) > 1:
        model = mixed_model(scores, alpha=alpha, tukey=False)
        test = model.model_test
        rows.append(
            [
                "linear mixed model (REML)",
                f"F({test['df_num']:g}, {test['df_den']:.1f}) = {test['F']:.4g}",
                _p(test["p"]),
                "Type-III F, Satterthwaite df",
            ]
        )
        components = {k: v for k, v in model.variance_components.items() if v is not None}
        total = sum(components.values())
        parts.append(
            "<p>Variance components of the mixed model (score scale): "
            + ", ".join(
                f"{html.escape(name)} {value:.4g} ({value / total:.0%})"
                for name, value in components.items()
            )
            + ". Cluster and question effects are shared by all models, so they cancel in "
            "paired comparisons; a large question share is why paired tests are so much sharper "
            "than comparing intervals.</p>"
        )
    table = table_html(
        ["test", "statistic", "p", "notes"], rows, numeric=[False, False, True, False]
    )
    intro = (
        "<p>Omnibus tests ask whether the models differ at all (on the "
        f"{anova.n_items} items every model answered); the rank intervals above say which "
        "differences the data support.</p>"
    )
    return Section(
        "Omnibus tests and variance components", intro + table + "".join(parts), "omnibus"
    )


def monitor_section(run) -> Section:
    """The anytime-valid replay: certified pairs and cost over time, interval widths per look."""
    config = run.config
    retire = config.get("retire", "none")
    k = config.get("k")
    words = (
        f"<p>The evaluation was replayed through the anytime-valid monitor in a random item order "
        f"(seed {config.get('order_seed')}), with a look every {config.get('look_every')} items "
        f"({config.get('sampling')} sampling, {config.get('bet')} bet, "
        f"{config.get('certifier')} certifier). With probability at least "
        f"{1 - config.get('alpha', 0.05):.0%}, every statement the monitor made is true at every "
        "look at once, so the evaluation may be stopped whenever the question is answered.</p>"
    )
    if retire != "none":
        words += (
            f"<p>Models were retired by the rule <code>{html.escape(str(retire))}</code>"
            + (f" (k = {k})" if k else "")
            + f": {run.n_consumed} of {run.n_items} items were consumed and "
            f"{run.evaluations:,} of {run.n_items * run.ranking.n_models:,} model–item "
            f"evaluations used — {1 - run.cost_fraction:.0%} of the cost saved.</p>"
        )
    body = (
        words
        + figure_html(plots.plot_monitor_progress(run), "certified pairs and cost over time")
        + figure_html(plots.plot_monitor_intervals(run), "rank-interval width at every look")
    )
    return Section("Anytime-valid monitor", body, "monitor")


#: the failures of an optional section that replace it by a note instead of aborting the report
_NOT_COMPUTABLE = (ValueError, ArithmeticError, np.linalg.LinAlgError)


def _degenerate_note(degenerate: dict | None) -> str:
    """A note naming the models whose score interval has zero width, with the reason."""
    if not degenerate:
        return ""
    items = "".join(
        f"<li>{html.escape(model)}: {html.escape(reason)}</li>"
        for model, reason in degenerate.items()
    )
    return (
        f'<p class="note">{len(degenerate)} degenerate (zero-width) interval(s):</p>'
        f'<ul class="note">{items}</ul>'
    )


def _not_computed(title: str, anchor: str, error: BaseException) -> Section:
    """A section that could not be computed: one line saying why."""
    reason = " ".join(str(error).split()) or type(error).__name__
    return Section(
        title, f'<p class="note">Not computed for these data: {html.escape(reason)}</p>', anchor
    )


def _data_notes(scores: Scores) -> list[str]:
    """What the log readers set aside or flagged, as list items of the Method section."""
    notes = scores.notes or {}
    items = []
    if notes.get("early_stopped"):
        items.append(
            "<li><b>Early stopping</b>: the logs were written under early stopping ("
            + html.escape(", ".join(notes["early_stopped"]))
            + "), so the items each model answered were chosen adaptively. The fixed-sample "
            "guarantee of this page does not hold for adaptively stopped data; the anytime-valid "
            "statements are the stopping manager's own record, and <code>rankci monitor</code> "
            "is the anytime-valid path.</li>"
        )
    if notes.get("irt_scored"):
        items.append(
            "<li><b>IRT-scored tasks</b>: "
            + html.escape(", ".join(notes["irt_scored"]))
            + " are tinyBenchmarks tasks, whose harness score is an IRT estimate; this page "
            "compares the raw per-item scores.</li>"
        )
    set_aside = notes.get("set_aside") or notes.get("superseded")
    if set_aside:
        items.append(
            f"<li><b>Logs set aside</b>: {len(set_aside)} (older or unfinished runs).</li>"
        )
    for key, what in (
        ("tasks_skipped_corpus_metric", "Tasks skipped (corpus-level metric)"),
        ("logs_without_samples", "Logs without samples"),
        ("models_without_scores", "Models without scores"),
    ):
        if notes.get(key):
            items.append(f"<li><b>{what}</b>: {html.escape(', '.join(map(str, notes[key])))}.</li>")
    if "rankci.adapters" in sys.modules:  # only a log reader leaves these notes
        from rankci.adapters import run_identity_notes

        items.extend(
            f"<li>{html.escape(phrase[:1].upper() + phrase[1:])}.</li>"
            for phrase in run_identity_notes(notes)
        )
    return items


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def _cluster_spec(ranking: Ranking) -> MethodSpec | None:
    """The main ranking's method for the per-cluster rankings (units nested in a cluster)."""
    if not isinstance(ranking.spec, MethodSpec):  # the monitor, the mixed model: the defaults
        return None
    unit = ranking.spec.unit if ranking.spec.unit in CLUSTER_UNITS else "item"
    return ranking.spec.replace(unit=unit, alpha=ranking.alpha, cluster_filter=None)


def build_report(
    scores: Scores,
    *,
    ranking: Ranking | None = None,
    title: str = "Leaderboard with rank intervals",
    k: int | None = None,
    by_cluster: bool = True,
    score_intervals="auto",
    omnibus: bool = True,
    monitor=None,
    sections: Sequence[Section] = (),
    rng: int | np.random.Generator | None = 0,
    **rank_options,
) -> str:
    """The report as an HTML string.

    Parameters
    ----------
    scores : Scores
    ranking : Ranking, optional
        Computed with ``rankci.rank(scores, **rank_options)`` when not given.
    k : int, optional
        Report top-k status.
    by_cluster : bool, default True
        Add per-cluster rank intervals when the data have clusters.
    score_intervals : str, ScoreIntervals or None, default "auto"
        A method of :func:`rankci.score_intervals` (computed with ``rng``; ``"auto"`` is
        Clopper-Pearson on 0/1 scores, the percentile bootstrap otherwise), a result with
        ``to_frame()`` (model, score, lower, upper), or None to leave score intervals out.
        Zero-width (degenerate) intervals are named under the plot.
    omnibus : bool, default True
        Add the repeated-measures ANOVA, Friedman test and mixed-model variance components.
    monitor : MonitorRun, dict or None
        Add the anytime-valid monitor section: a :class:`rankci.sequential.MonitorRun`, or a dict
        of :func:`rankci.sequential.replay` options to replay the scores with.
    rng : int, Generator or None, default 0
        Seed for the bootstrap score intervals (and resampling tests), so a report is reproducible.
    sections : sequence of Section
        Extra sections appended after the built-in ones (omnibus tests, monitor, ...).

    Returns
    -------
    str
        A complete, self-contained HTML document (styles, script and PNG plots inline).

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> page = build_report(scores, omnibus=False, score_intervals=None, title="Demo")
    >>> page.startswith("<!DOCTYPE html>"), "<title>Demo</title>" in page
    (True, True)
    >>> "3 models · 200 items" in page, page.count('<img class="plot"') >= 1
    (True, True)
    """
    if ranking is None:
        ranking = rank(scores, rng=rng, **rank_options)
    blocks = []
    interval_note = None
    if isinstance(score_intervals, str):
        from rankci.analyses.intervals import score_intervals as compute_intervals

        # the same units and missing-data rule as the ranking, so each interval is about the
        # score shown beside it
        method = score_intervals
        try:
            score_intervals = compute_intervals(
                scores,
                method,
                alpha=ranking.alpha,
                rng=rng,
                unit=ranking.procedure.get("unit", "item"),
                missing=ranking.procedure.get("missing", "complete"),
                verdict=False,
            )
        except _NOT_COMPUTABLE as error:
            score_intervals = None
            interval_note = _not_computed("Score intervals", "score-intervals", error)
    blocks.append(leaderboard_section(ranking, k, score_intervals))
    if score_intervals is not None:
        blocks.append(
            Section(
                "Score intervals",
                figure_html(
                    plots.plot_score_intervals(score_intervals.to_frame()), "score intervals"
                )
                + _degenerate_note(getattr(score_intervals, "degenerate", None)),
                "score-intervals",
            )
        )
    elif interval_note is not None:
        blocks.append(interval_note)
    blocks.append(plots_section(ranking))
    if by_cluster and scores.clusters is not None and len(scores.clusters) > 1:
        spec = _cluster_spec(ranking)
        try:
            by_cluster = (
                rank_by_cluster(scores, alpha=ranking.alpha, rng=rng)
                if spec is None
                else rank_by_cluster(scores, spec=spec, rng=rng)
            )
            blocks.append(_cluster_section(by_cluster))
        except _NOT_COMPUTABLE as error:
            blocks.append(_not_computed("By cluster", "clusters", error))
    if omnibus:
        try:
            blocks.append(omnibus_section(scores, ranking.alpha))
        except _NOT_COMPUTABLE as error:
            blocks.append(_not_computed("Omnibus tests and variance components", "omnibus", error))
    if monitor is not None:
        try:
            if isinstance(monitor, dict):
                from rankci.sequential import replay

                monitor = replay(scores, **{"alpha": ranking.alpha, **monitor})
            blocks.append(monitor_section(monitor))
        except _NOT_COMPUTABLE as error:
            blocks.append(_not_computed("Anytime-valid monitor", "monitor", error))
    blocks.extend(sections)
    blocks.append(_method_section(ranking, scores))
    return page_html(
        title, f"{scores.n_models} models · {scores.n_items} items", ranking, blocks
    )


def page_html(title: str, meta: str, ranking: Ranking, blocks: Sequence[Section]) -> str:
    """The self-contained page: header (``meta``, the ranking's guarantee and target), the
    navigation and the sections (shared by the score report and the arena report)."""
    nav = "".join(f'<a href="#{s.id}">{html.escape(s.title)}</a>' for s in blocks)
    body = "".join(
        f'<section id="{s.id}"><h2>{html.escape(s.title)}</h2>{s.body}</section>' for s in blocks
    )
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    from rankci._version import __version__

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_asset('report.css')}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1>"
        f'<p class="meta">{html.escape(meta)} · made by rankci '
        f"{__version__} on {stamp}</p>"
        '<p class="guarantee"><b>What this page guarantees.</b> '
        f"{html.escape(ranking.guarantee)} {html.escape(_target(ranking))}</p>"
        f"<nav>{nav}</nav></header><main>{body}</main>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )


def _target(ranking: Ranking) -> str:
    """The page's target sentence (:func:`rankci.targets.target_sentence`)."""
    sampling = getattr(ranking.spec, "sampling", None)
    if sampling is not None:
        return target_sentence(sampling, "anytime")
    if ranking.procedure.get("flow") == "votes":
        return target_sentence("vote")
    return target_sentence(ranking.procedure.get("unit") or "item")


def write_report(scores: Scores, path: str | os.PathLike, **options) -> Path:
    """Write :func:`build_report` to ``path`` and return it.

    Parameters
    ----------
    scores : Scores
        The data.
    path : str or os.PathLike
        The HTML file to write (UTF-8).
    **options
        As for :func:`build_report`.

    Returns
    -------
    pathlib.Path

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = (np.random.default_rng(0).random((200, 3)) < [0.8, 0.6, 0.3]).astype(float)
    >>> scores = rankci.Scores.from_matrix(x, models=["a", "b", "c"])
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     out = write_report(scores, os.path.join(folder, "report.html"), omnibus=False,
    ...                        score_intervals=None)
    ...     text = out.read_text(encoding="utf-8")
    >>> out.name, text.startswith("<!DOCTYPE html>")
    ('report.html', True)
    """
    path = Path(path)
    path.write_text(build_report(scores, **options), encoding="utf-8")
    return path
