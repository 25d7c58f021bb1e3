"""The sections of a board's web page, rendered in the background after each look.

:class:`Renderer`, one background thread, renders the sections of a board that someone is
viewing after each of its looks, at most every few seconds, with the report's own pieces
(:func:`rankci.report.html.leaderboard_section`, :func:`~rankci.report.html.table_html`,
:func:`~rankci.report.html.figure_html` and the plot functions); :func:`fragment` answers the
page's script with the last rendering and never waits for one. The page shell is in
:mod:`rankci.service.page`.
"""

from __future__ import annotations

import html
import logging
import threading
import time

from rankci._base import LazyModule
from rankci._version import __version__
from rankci.report.html import figure_html, leaderboard_section, table_html
from rankci.sequential import MonitorRun
from rankci.service.board import Board
from rankci.service.spec import BoardSpec

pd = LazyModule("pandas")  # imported on the first page: a service answering JSON never needs it
plots = LazyModule("rankci.report.plots")  # matplotlib likewise

__all__ = [
    "MIN_RENDER_INTERVAL",
    "TIER_NOTE",
    "VIEWED_FOR",
    "Renderer",
    "fragment",
    "header_html",
    "plain_guarantee",
    "render",
    "status_line",
]

log = logging.getLogger("rankci.service")
MIN_RENDER_INTERVAL = 2.0  # seconds between two renderings of a board's sections
VIEWED_FOR = 600.0  # a board is re-rendered at its looks this long after its page was last read
TIER_NOTE = (
    "Tiers are not ranks. A model's tier is 1 plus the length of the longest chain of certified "
    "comparisons above it (A better than B better than C puts C in tier 3 or worse), so a "
    "model with a lower rank in the table can sit in a better tier when fewer certified "
    "comparisons have reached it yet. Read a tier s as: its true rank is s or worse."
)


def plain_guarantee(spec: BoardSpec) -> str:
    """What the page guarantees, for a reader who has never heard of e-values.

    Parameters
    ----------
    spec : BoardSpec
        The board (its ``alpha``, ``sampling`` and ``n_items`` enter the text).

    Returns
    -------
    str
        One paragraph of plain text.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md).

    Examples
    --------
    >>> from rankci.service.spec import make_spec
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b", "c"],
    ...                  items=[f"q{i}" for i in range(20)], order_seed=0, look_every=10)
    >>> text = plain_guarantee(spec)
    >>> "With probability at least 95%" in text, "all 20 items" in text
    (True, True)
    """
    level = f"{1 - spec.alpha:.0%}"
    if spec.kind == "votes":
        return (
            "This arena leaderboard changes as votes arrive, and you may look at it as often as "
            f"you like. With probability at least {level}, every “A beats B” it ever shows is "
            "true, at every moment at once, however often anyone looks and however the pairs "
            "were chosen: in a new vote like these between A and B, A is more likely to win "
            "than B (ties counted half). The rank intervals read those statements as an order; "
            "they hold when head-to-head preference is transitive (as under Bradley-Terry). "
            "The score is each model's observed share of its votes (wins + ties / 2)."
        )
    if spec.sampling == "finite":
        truth = (
            f"the ranking by mean score over all {spec.n_items:,} items of the benchmark (the "
            "items are evaluated in one random order, the same for every model)"
        )
    else:
        truth = "the ranking by expected score on new items like these (items drawn at random)"
    return (
        "This leaderboard changes while the evaluation runs, and you may look at it as often as "
        f"you like. With probability at least {level}, every statement it ever shows is true, "
        "at every moment at once: each “A is better than B”, each rank interval (the model's "
        "true rank lies inside), each top-k status and each tier (a model in tier s has true "
        f"rank s or worse) — about {truth}. This holds however often anyone looks, whenever "
        "the evaluation is stopped, and when models stop being evaluated early. Each score "
        f"interval contains the model's true score with probability at least {level} at every "
        "look (for each model on its own). Models whose intervals overlap may still be "
        "separated: only the certified comparisons say which model is better."
    )


def header_html(spec: BoardSpec) -> str:
    """Title, facts and the guarantee in plain words."""
    size = "votes board" if spec.kind == "votes" else f"{spec.n_items:,} items"
    meta = (
        f"{html.escape(spec.benchmark)} · run {html.escape(spec.run)} · {spec.n_models} models · "
        f"{size} · α = {spec.alpha:g} · made by rankci {__version__}"
    )
    return (
        f"<h1>{html.escape(spec.title)}</h1>"
        f'<p class="meta">{meta}</p>'
        '<p class="guarantee"><b>What this page guarantees.</b> '
        f"{html.escape(plain_guarantee(spec))}</p>"
    )


# ---------------------------------------------------------------------- the sections
class _Intervals:
    """Score intervals in the shape the report's table expects (``to_frame()``)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def to_frame(self) -> pd.DataFrame:
        return self.frame


def status_line(progress: dict) -> str:
    words = {"open": "running", "finished": "finished", "error": "stopped by an error"}
    if progress.get("kind") == "votes":
        return (
            f"Arena {words[progress['state']]}: {progress['votes_received']:,} votes received, "
            f"{progress['t']:,} in the last look, {progress['looks']} looks. "
            f"Updated {time.strftime('%H:%M:%S')}."
        )
    saved = progress["evaluations_saved"] / max(progress["evaluations_total"], 1)
    return (
        f"Evaluation {words[progress['state']]}: {progress['t']:,} of {progress['n_items']:,} "
        f"items consumed, {progress['scores_received']:,} scores received, "
        f"{progress['n_looks']} looks, {saved:.0%} of the evaluations saved so far. "
        f"Updated {time.strftime('%H:%M:%S')}."
    )


def fragment(board: Board, since: str | None = None, renderer: Renderer | None = None) -> dict:
    """The last rendering of the sections, with the live status line.

    With a ``renderer`` (the service), nothing is rendered inside the request: a new look asks
    the renderer's background thread, and the page gets the previous rendering (or a
    "rendering" placeholder) until it is done. Without one, the sections are rendered here.

    Parameters
    ----------
    board : Board
        The board.
    since : str, optional
        The version the page already shows; the HTML is left out when it is still current.
    renderer : Renderer, optional
        The background renderer.

    Returns
    -------
    dict
        ``status`` (a line of text), ``version`` (look number and state) and, unless ``since`` is
        current, ``html``; a private board adds ``header`` and ``title``.

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    A board on a SQLite file in a temporary folder, with every score posted (looks after 10 and 20
    items):

    >>> from rankci.service.spec import make_spec
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b", "c"],
    ...                  items=[f"q{i}" for i in range(20)], order_seed=0, look_every=10)
    >>> import os, tempfile
    >>> import numpy as np
    >>> from rankci.service.auth import hash_token, new_token
    >>> from rankci.service.board import Board
    >>> from rankci.service.storage import open_storage
    >>> folder = tempfile.TemporaryDirectory()
    >>> storage = open_storage(os.path.join(folder.name, "boards.db")).open()
    >>> stored = hash_token(new_token(), storage.token_key)
    >>> num = storage.create_board(spec.id, spec.to_json(), stored, None, spec.created_at)
    >>> board = Board(spec, num, storage)
    >>> scores = (np.random.default_rng(0).random((20, 3)) < [0.9, 0.5, 0.1]).astype(float)
    >>> entries = [(m, f"q{i}", scores[i, j]) for i in range(20) for j, m in enumerate("abc")]
    >>> posted = board.post(entries)
    >>> out = fragment(board)
    >>> sorted(out), out["version"]
    (['html', 'status', 'version'], '2-finished')
    >>> sorted(fragment(board, since=out["version"]))
    ['status', 'version']
    >>> storage.close()
    >>> folder.cleanup()
    """
    board.page_viewed_at = time.monotonic()
    board_data = board.leaderboard()
    progress = board_data["progress"]
    version = f"{board_data['look']['number']}-{progress['state']}"
    out = {"status": status_line(progress)}
    if not board.spec.public:  # behind the token, like the data
        out["header"] = header_html(board.spec)
        out["title"] = board.spec.title
    if board.page_cache.get("version") != version:
        if renderer is None:
            render(board)
        else:
            renderer.request(board)
    cache = board.page_cache
    if "html" not in cache:
        out["version"] = "rendering"
        if since != "rendering":
            out["html"] = '<p class="notice">Rendering the leaderboard…</p>'
        return out
    out["version"] = cache["version"]
    if since != cache["version"]:
        out["html"] = cache["html"]
    return out


def render(board: Board) -> None:
    """Render the board's sections for its current look into ``board.page_cache``."""
    with board.render_lock:  # one rendering of a board at a time; the writer never waits
        board_data, ranking, looks = board.look_state()
        version = f"{board_data['look']['number']}-{board_data['progress']['state']}"
        if board.page_cache.get("version") == version:
            return
        start = time.monotonic()
        html_text = _sections(board, board_data, ranking, looks)
        board.page_cache = {
            "version": version,
            "html": html_text,
            "at": time.monotonic(),
            "cost": time.monotonic() - start,
        }


class Renderer:
    """One background thread rendering the pages of boards that are being viewed, after each of
    their looks, at most every ``max(MIN_RENDER_INTERVAL, 4 x last cost)`` seconds per board."""

    def __init__(self) -> None:
        self._pending: dict[int, Board] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False

    def request(self, board: Board) -> None:
        """Render ``board`` soon (coalesced: one pending rendering per board)."""
        with self._wake:
            self._pending[id(board)] = board
            if self._thread is None and not self._stop:
                self._thread = threading.Thread(
                    target=self._loop, name="rankci-render", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def looked(self, board: Board) -> None:
        """Called by the board after a new look: re-render if someone viewed it lately."""
        if time.monotonic() - board.page_viewed_at < VIEWED_FOR:
            self.request(board)

    def stop(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stop:
                    self._wake.wait()
                if self._stop:
                    return
                now = time.monotonic()
                due = {
                    key: board
                    for key, board in self._pending.items()
                    if now - board.page_cache.get("at", -1e9)
                    >= max(MIN_RENDER_INTERVAL, 4 * board.page_cache.get("cost", 0.0))
                }
                if not due:
                    self._wake.wait(0.2)
                    continue
                for key in due:
                    del self._pending[key]
            for board in due.values():
                try:
                    render(board)
                except Exception:  # pragma: no cover - a page must never stop the service
                    log.exception("rendering board %s failed", board.spec.id)


def _vote_sections(board: Board, data: dict, ranking, looks: list[dict]) -> str:
    """The page of a votes board: progress, the leaderboard (win share, votes, rank interval),
    the rank-interval, tier and dominance figures, and the method."""
    spec, p = board.spec, data["progress"]
    facts = [
        ("state", p["state"]),
        ("votes received", f"{p['votes_received']:,} (next look at {p['next_look_at']:,})"),
        ("this page shows", f"look {data['look']['number']} (after {data['look']['t']:,} votes)"),
        ("target", data["target"]),
    ]
    rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts)
    parts = [f'<section id="progress"><h2>Progress</h2><dl class="facts">{rows}</dl></section>']
    if not looks:
        parts.append(
            '<p class="notice">No look yet: the first look is taken after the first '
            f"{spec.look_every} votes.</p>"
        )
        return "".join(parts)
    header = ["model", "win share", "votes", "rank interval", "tier"]
    cells, keys = [], []
    for r in data["models"]:
        cells.append(
            [
                html.escape(r["model"]),
                f"{r['score']:.3f}",
                f"{r['n_votes']:,}",
                f"{r['rank_lower']}–{r['rank_upper']}",
                str(r["tier"]),
            ]
        )
        keys.append([r["model"], r["score"], r["n_votes"], r["rank_lower"], r["tier"]])
    table = table_html(header, cells, keys, "leaderboard-table", [False, True, True, True, True])
    parts.append(f'<section id="leaderboard"><h2>Leaderboard</h2>{table}</section>')
    if board.error:
        parts.append(f'<p class="notice">{html.escape(board.error)}</p>')
    figures = [
        figure_html(plots.plot_rank_intervals(ranking), "rank intervals"),
        figure_html(plots.plot_tiers(ranking), "tiers"),
        figure_html(plots.plot_dominance(ranking), "certified dominance matrix"),
    ]
    parts.append(f'<section id="plots"><h2>Intervals and tiers</h2>{"".join(figures)}</section>')
    s = spec.settings()
    items = [
        "<li><b>Evidence</b>: a betting e-process on the head-to-head votes of every ordered "
        f"pair ({html.escape(s['bet'])} bet), e-Bonferroni over the pairs, a look every "
        f"{s['look_every']} votes (docs/arena-monitor.md).</li>",
        f"<li><b>Guarantee</b>: {html.escape(data['guarantee'])}</li>",
    ]
    parts.append(f'<section id="method"><h2>Method</h2><ul>{"".join(items)}</ul></section>')
    return "".join(parts)


def _sections(board: Board, data: dict, ranking, looks: list[dict]) -> str:
    spec = board.spec
    if spec.kind == "votes":
        return _vote_sections(board, data, ranking, looks)
    parts = [_progress_section(data)]
    if not looks:
        parts.append(
            '<p class="notice">No look yet: the first look is taken once the first '
            f"{spec.look_every} items in the shared order have a score from every model.</p>"
        )
        return "".join(parts)
    table = pd.DataFrame(
        [
            {
                "model": r["model"],
                "score": r["score"],
                "lower": r["score_lower"],
                "upper": r["score_upper"],
            }
            for r in data["models"]
        ]
    )
    board_section = leaderboard_section(ranking, spec.k, _Intervals(table))
    parts.append(
        f'<section id="leaderboard"><h2>Leaderboard</h2>{board_section.body}'
        f'<p class="hint" id="tier-note">{html.escape(TIER_NOTE)}</p></section>'
    )
    if board.error:
        parts.append(f'<p class="notice">{html.escape(board.error)}</p>')
    figures = [
        figure_html(plots.plot_score_intervals(table, "Score intervals (anytime-valid)"), "score"),
        figure_html(plots.plot_rank_intervals(ranking), "rank intervals"),
        figure_html(plots.plot_tiers(ranking), "tiers"),
        figure_html(plots.plot_dominance(ranking), "certified dominance matrix"),
    ]
    parts.append(f'<section id="plots"><h2>Intervals and tiers</h2>{"".join(figures)}</section>')
    if "subscores" in data:
        parts.append(_subscores_section(data))
    run = MonitorRun(
        ranking=ranking,
        looks=looks,
        n_items=spec.n_items,
        n_consumed=int(data["look"]["t"]),
        evaluations=int(data["look"]["evaluations"]),
        cost_fraction=float(data["look"]["cost_fraction"]),
        order=(),
        excluded={},
        config=spec.settings(),
    )
    monitor_figures = figure_html(
        plots.plot_monitor_progress(run, "Certified pairs and evaluations used so far"),
        "certified pairs and cost over time",
    ) + figure_html(plots.plot_monitor_intervals(run), "rank-interval width at every look")
    parts.append(
        '<section id="monitor"><h2>Over time</h2><p>Certified pairs and the evaluation cost '
        "against items evaluated, and each model's rank-interval width at every look.</p>"
        f"{monitor_figures}</section>"
    )
    parts.append(history_section(board.history(), len(looks)))
    parts.append(_method_section(spec, data))
    return "".join(parts)


def history_section(history: dict, n_looks: int, limit: int = 100) -> str:
    """The page's history: when each model joined and its number of scores, and the look that
    first certified each pair (up to ``limit`` rows; the rest are in ``GET .../history``), of the
    looks up to ``n_looks`` (the look the page shows)."""
    rows = "".join(
        f"<tr><td>{html.escape(e['model'])}</td><td>{e['t']}</td><td>{e['look']}</td>"
        f"<td>{html.escape(e['at'] or '-')}</td><td>{e['n_scores']}</td></tr>"
        for e in history["entries"]
    )
    pairs = [p for p in history["first_certified"] if p["look"] <= n_looks]
    shown = "".join(
        f"<tr><td>{html.escape(p['winner'])} &gt; {html.escape(p['loser'])}</td>"
        f"<td>{p['look']}</td><td>{p['t']}</td></tr>"
        for p in pairs[:limit]
    )
    more = (
        f'<p class="hint">{len(pairs) - limit} more pairs: GET /api/boards/{{id}}/history</p>'
        if len(pairs) > limit
        else ""
    )
    certified = (
        "<table><thead><tr><th>certified</th><th>first at look</th><th>items</th></tr></thead>"
        f"<tbody>{shown}</tbody></table>{more}"
        if pairs
        else "<p>No pair certified yet.</p>"
    )
    return (
        '<section id="history"><h2>History</h2><table><thead><tr><th>model</th>'
        "<th>joined at item</th><th>after look</th><th>joined (UTC)</th><th>scores</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>{certified}</section>"
    )


def _next_look(progress: dict) -> str:
    """``next look at 300``, or why there is none (the board is done)."""
    if progress.get("next_look_at") is None:
        return f"no further look: the board is {progress.get('state', 'done')}"
    return f"next look at {progress['next_look_at']:,}"


def _progress_section(data: dict) -> str:
    p, look = data["progress"], data["look"]
    retired = ", ".join(
        f"{m} (at item {info['t']:,}, {info['reason']})" for m, info in p["retired"].items()
    )
    facts = [
        ("state", p["state"]),
        ("items consumed", f"{p['t']:,} of {p['n_items']:,} ({_next_look(p)})"),
        ("this page shows", f"look {look['number']} (after {look['t']:,} items)"),
        ("scores received", f"{p['scores_received']:,}"),
        (
            "evaluations",
            f"{p['evaluations']:,} used, {p['evaluations_saved']:,} saved, "
            f"{p['evaluations_remaining']:,} still needed of {p['evaluations_total']:,}",
        ),
        ("active models", f"{len(p['active'])}"),
        ("retired models", retired or "none"),
    ]  # every value is plain text, escaped once here
    if p.get("withdrawn"):  # models withdrawn by their owners, with the look at which they left
        withdrawn = ", ".join(
            f"{m} (at look {info['look']}, item {info['t']:,})"
            for m, info in p["withdrawn"].items()
        )
        facts.append(("withdrawn models", withdrawn))
    if p.get("voided"):  # items voided from a look on: later scores stored, never used
        voided = ", ".join(f"{item} (at look {info['look']})" for item, info in p["voided"].items())
        facts.append(("voided items", f"{voided}. {p['void_guarantee']}"))
    rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts)
    return f'<section id="progress"><h2>Progress</h2><dl class="facts">{rows}</dl></section>'


def _subscores_section(data: dict) -> str:
    clusters = data["subscores"]
    order = [r["model"] for r in data["models"]]
    header = ["model"] + [f"{c['cluster']} ({c['n_items']})" for c in clusters]
    cells = {c["cluster"]: {r["model"]: r for r in c["models"]} for c in clusters}
    rows, keys = [], []
    for model in order:
        row, key = [html.escape(model)], [model]
        for c in clusters:
            r = cells[c["cluster"]][model]
            if r["score"] is None:
                row.append("–")
                key.append(-1)
            else:
                row.append(f"{r['score']:.3f} [{r['score_lower']:.3f}, {r['score_upper']:.3f}]")
                key.append(r["score"])
        rows.append(row)
        keys.append(key)
    table = table_html(header, rows, keys, "subscores-table", [False] + [True] * len(clusters))
    intro = (
        "<p>Each model's mean score within each cluster and its anytime-valid interval "
        "(valid for each model and cluster on its own).</p>"
    )
    return f'<section id="subscores"><h2>By cluster</h2>{intro}{table}</section>'


def _method_section(spec: BoardSpec, data: dict) -> str:
    s = spec.settings()
    flags = " ".join(spec.monitor.to_flags())  # every setting, in the flags of rankci monitor
    reproduce = f"rankci monitor scores.csv --order-seed {spec.order_seed} {flags}"
    items = [
        f"<li><b>Evidence</b>: a betting e-process for every ordered pair of models "
        f"({html.escape(s['bet'])} bet, {html.escape(s['sampling'])} sampling), certified by "
        f"the {html.escape(s['certifier'])} certifier at a look every {s['look_every']} items."
        "</li>",
        f"<li><b>Retirement</b>: {html.escape(s['retire'])}"
        + (f" (k = {s['k']})" if s["k"] else "")
        + ".</li>",
        f"<li><b>Guarantee</b>: {html.escape(data['guarantee'])}</li>",
        f"<li><b>Score intervals</b>: {html.escape(data['score_guarantee'])}</li>",
        "<li><b>Reproduce</b> from the exported scores (all models scored on every item): "
        f"<code>{html.escape(reproduce)}</code></li>",
    ]
    return f'<section id="method"><h2>Method</h2><ul>{"".join(items)}</ul></section>'
