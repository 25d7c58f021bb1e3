"""The web page of a board: the report's table and plots, refreshed while scores arrive.

The page itself is a small shell (styles, the guarantee in plain words, a script); the script
polls ``/boards/{id}/fragment`` and swaps in the sections when a new look has been taken. The
sections are built with the report's own pieces (:func:`rankci.report.html.leaderboard_section`,
:func:`~rankci.report.html.table_html`, :func:`~rankci.report.html.figure_html` and the plot
functions), rendered once per look and at most every few seconds, so an open page never slows
the ingestion much. A private board's page reads its token from the URL's fragment
(``#token=...``), which browsers never send to the server.
"""

from __future__ import annotations

import html
import time
from importlib import resources

import pandas as pd

from rankci._version import __version__
from rankci.report import plots
from rankci.report.html import figure_html, leaderboard_section, table_html
from rankci.sequential import MonitorRun
from rankci.service.board import Board
from rankci.service.spec import BoardSpec

__all__ = ["board_page", "fragment", "index_page", "plain_guarantee"]

MIN_RENDER_INTERVAL = 2.0  # seconds between two renderings of a board's sections
POLL_MS = 2000


def _asset(name: str) -> str:
    return resources.files("rankci.report").joinpath("assets", name).read_text(encoding="utf-8")


def plain_guarantee(spec: BoardSpec) -> str:
    """What the page guarantees, for a reader who has never heard of e-values."""
    level = f"{1 - spec.alpha:.0%}"
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


def _shell(title: str, body: str, script: str = "") -> str:
    extra = (
        "#status{margin:6px 0;color:var(--muted);font-size:.9rem}"
        ".notice{background:#fff6e5;border-left:4px solid #e09f3e;padding:8px 12px}"
        "dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}"
        "dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{html.escape(title)}</title><style>{_asset('report.css')}{extra}</style>"
        f"</head><body>{body}{script}</body></html>\n"
    )


def index_page(boards: list[dict]) -> str:
    rows = [
        [
            f'<a href="boards/{html.escape(b["id"])}">{html.escape(b["id"])}</a>',
            html.escape(b["benchmark"]),
            html.escape(b["run"]),
            str(b["n_models"]),
            str(b["n_items"]),
            html.escape(b["created_at"]),
        ]
        for b in boards
    ]
    table = (
        table_html(["board", "benchmark", "run", "models", "items", "created"], rows)
        if rows
        else "<p>No public board yet. Create one with <code>POST /api/boards</code>.</p>"
    )
    body = (
        "<header><h1>rankci leaderboards</h1>"
        f'<p class="meta">rankci {__version__} · <a href="docs">API documentation</a></p>'
        f"</header><main>{table}</main>"
    )
    return _shell("rankci leaderboards", body)


def header_html(spec: BoardSpec) -> str:
    """Title, facts and the guarantee in plain words."""
    meta = (
        f"{html.escape(spec.benchmark)} · run {html.escape(spec.run)} · {spec.n_models} models · "
        f"{spec.n_items:,} items · α = {spec.alpha:g} · made by rankci {__version__}"
    )
    return (
        f"<h1>{html.escape(spec.title)}</h1>"
        f'<p class="meta">{meta}</p>'
        '<p class="guarantee"><b>What this page guarantees.</b> '
        f"{html.escape(plain_guarantee(spec))}</p>"
    )


def board_page(spec: BoardSpec) -> str:
    """The page shell of a board (no data: the script fetches the sections). A private board's
    shell names nothing but its id: its title and facts come with the data, behind the token."""
    if spec.public:
        title, header = spec.title, header_html(spec)
    else:
        title = f"Board {spec.id}"
        header = f"<h1>{html.escape(title)}</h1>"
    body = (
        f'<header><div id="board-header">{header}</div>'
        '<p id="status" role="status">Loading…</p></header>'
        f'<main id="board" data-fragment="{html.escape(spec.id)}/fragment" '
        f'data-poll="{POLL_MS}" data-public="{int(spec.public)}"></main>'
    )
    script = (
        f'<script type="text/plain" id="report-js">{_asset("report.js")}</script>'
        f"<script>{_PAGE_JS}</script>"
    )
    return _shell(title, body, script)


_PAGE_JS = r"""
(function () {
  var main = document.getElementById('board'), status = document.getElementById('status');
  var headers = {};
  function readToken() {
    var match = location.hash.match(/token=([^&]+)/);
    headers = match ? {Authorization: 'Bearer ' + decodeURIComponent(match[1])} : {};
  }
  readToken();
  window.addEventListener('hashchange', readToken);
  var version = null, sorted = null, wait = parseInt(main.dataset.poll, 10) || 2000;
  main.addEventListener('click', function (e) {
    var th = e.target.closest('th');
    if (th && th.closest('#leaderboard-table')) {
      sorted = {col: th.cellIndex, asc: th.classList.contains('sorted-asc')};  // after the sort
    }
  });
  function restoreSort() {
    if (!sorted) { return; }
    var th = main.querySelectorAll('#leaderboard-table th')[sorted.col];
    if (!th) { return; }
    th.click();
    if (!sorted.asc) { th.click(); }
  }
  function refresh() {
    var url = main.dataset.fragment;
    if (version !== null) { url += '?since=' + encodeURIComponent(version); }
    fetch(url, {headers: headers, cache: 'no-store'}).then(function (r) {
      if (r.status === 401 || r.status === 403) {
        status.textContent = 'This board is private: open the link that ends in #token=… .';
        return null;
      }
      if (!r.ok) { throw new Error('HTTP ' + r.status); }
      return r.json();
    }).then(function (data) {
      if (!data) { return; }
      status.textContent = data.status;
      if (data.header !== undefined && main.dataset.public === '0' && !main.dataset.header) {
        document.getElementById('board-header').innerHTML = data.header;
        document.title = data.title;
        main.dataset.header = '1';
      }
      if (data.html !== undefined && data.version !== version) {
        var keep = sorted;
        main.innerHTML = data.html;
        version = data.version;
        new Function(document.getElementById('report-js').textContent)();
        sorted = keep;
        restoreSort();
        document.body.dataset.version = version;
      }
    }).catch(function (e) {
      status.textContent = 'Connection lost (' + e.message + '); retrying…';
    }).then(function () { setTimeout(refresh, wait); });
  }
  refresh();
})();
"""


# ---------------------------------------------------------------------- the sections
class _Intervals:
    """Score intervals in the shape the report's table expects (``to_frame()``)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def to_frame(self) -> pd.DataFrame:
        return self.frame


def status_line(progress: dict) -> str:
    words = {"open": "running", "finished": "finished", "error": "stopped by an error"}
    saved = progress["evaluations_saved"] / max(progress["evaluations_total"], 1)
    return (
        f"Evaluation {words[progress['state']]}: {progress['t']:,} of {progress['n_items']:,} "
        f"items consumed, {progress['scores_received']:,} scores received, "
        f"{progress['n_looks']} looks, {saved:.0%} of the evaluations saved so far. "
        f"Updated {time.strftime('%H:%M:%S')}."
    )


def fragment(board: Board, since: str | None = None) -> dict:
    """The sections for the page, re-rendered when a new look exists (at most every 2 s)."""
    board_data, ranking, looks = board.look_state()
    progress = board_data["progress"]
    version = f"{board_data['look']['number']}-{progress['state']}"
    out = {"status": status_line(progress)}
    if not board.spec.public:  # behind the token, like the data
        out["header"] = header_html(board.spec)
        out["title"] = board.spec.title
    cache = board.page_cache
    now = time.monotonic()
    fresh = cache.get("version") == version
    recent = now - cache.get("at", -1e9) < max(MIN_RENDER_INTERVAL, 4 * cache.get("cost", 0.0))
    if not fresh and not (recent and "html" in cache):
        with board.render_lock:  # one rendering at a time; the writer never waits for it
            if board.page_cache.get("version") != version:
                start = time.monotonic()
                html_text = _sections(board, board_data, ranking, looks)
                board.page_cache = {
                    "version": version,
                    "html": html_text,
                    "at": time.monotonic(),
                    "cost": time.monotonic() - start,
                }
        cache = board.page_cache
    out["version"] = cache["version"]
    if since != cache["version"]:
        out["html"] = cache["html"]
    return out


def _sections(board: Board, data: dict, ranking, looks: list[dict]) -> str:
    spec = board.spec
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
    parts.append(f'<section id="leaderboard"><h2>Leaderboard</h2>{board_section.body}</section>')
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
    parts.append(_method_section(spec, data))
    return "".join(parts)


def _progress_section(data: dict) -> str:
    p, look = data["progress"], data["look"]
    retired = ", ".join(
        f"{html.escape(m)} (at item {info['t']:,}, {html.escape(info['reason'])})"
        for m, info in p["retired"].items()
    )
    facts = [
        ("state", p["state"]),
        ("items consumed", f"{p['t']:,} of {p['n_items']:,} (next look at {p['next_look_at']})"),
        ("this page shows", f"look {look['number']} (after {look['t']:,} items)"),
        ("scores received", f"{p['scores_received']:,}"),
        (
            "evaluations",
            f"{p['evaluations']:,} used, {p['evaluations_saved']:,} saved, "
            f"{p['evaluations_remaining']:,} still needed of {p['evaluations_total']:,}",
        ),
        ("active models", f"{len(p['active'])}"),
        ("retired models", retired or "none"),
    ]
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
    reproduce = (
        f"rankci monitor scores.csv --order-seed {spec.order_seed} --look-every {spec.look_every}"
        f" --sampling {spec.sampling} --bet {spec.bet} --certifier {spec.certifier} "
        f"--alpha {spec.alpha:g}"
        + (
            f" --retire {spec.retire}" + (f":{spec.width}" if spec.retire == "width" else "")
            if spec.retire != "none"
            else ""
        )
        + (f" --k {spec.k}" if spec.k else "")
    )
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


def board_summary(spec: BoardSpec) -> dict:
    """The board's public description."""
    clusters = None if spec.clusters is None else sorted(set(spec.clusters))
    return {
        "id": spec.id,
        "benchmark": spec.benchmark,
        "run": spec.run,
        "title": spec.title,
        "models": list(spec.models),
        "n_models": spec.n_models,
        "n_items": spec.n_items,
        "clusters": clusters,
        "public": spec.public,
        "created_at": spec.created_at,
        **spec.settings(),
    }
