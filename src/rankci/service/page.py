"""The web page of a board: the report's table and plots, refreshed while scores arrive.

The page itself is a small shell (styles, the guarantee in plain words, a script); the script
(``/static/page.js``, no inline script, so the Content-Security-Policy allows scripts from the
server only) polls ``/boards/{id}/fragment`` and swaps in the sections when a new look has been
taken. The sections (:mod:`rankci.service.sections`) are built with the report's own pieces
(:func:`rankci.report.html.leaderboard_section`, :func:`~rankci.report.html.table_html`,
:func:`~rankci.report.html.figure_html` and the plot functions) by :class:`Renderer`, a
background thread, after each look of a board that someone is viewing and at most every few
seconds; a viewer's request only copies the last rendering, never waits for one. A private
board's page reads its token from the URL's fragment (``#token=...``), which browsers never send
to the server; an unknown board id gets the same shell as a private board.
"""

from __future__ import annotations

import html
from importlib import resources

from rankci._version import __version__
from rankci.report.html import table_html
from rankci.service.sections import TIER_NOTE, Renderer, fragment, header_html, plain_guarantee
from rankci.service.spec import BoardSpec

__all__ = [  # TIER_NOTE, Renderer, fragment, plain_guarantee: from sections.py, as before
    "PAGE_JS",
    "TIER_NOTE",
    "Renderer",
    "board_page",
    "board_summary",
    "fragment",
    "header_html",
    "index_page",
    "plain_guarantee",
    "report_js",
]

POLL_MS = 2000


def _asset(name: str) -> str:
    return resources.files("rankci.report").joinpath("assets", name).read_text(encoding="utf-8")


def _shell(title: str, body: str, script: str = "") -> str:
    extra = (
        "#status{margin:6px 0;color:var(--muted);font-size:.9rem}"
        ".notice{background:#fff6e5;border-left:4px solid #e09f3e;padding:8px 12px}"
        "dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}"
        "dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}"
        "header,main{max-width:1360px}"
        "#leaderboard-table td:last-child{white-space:normal;min-width:10em}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{html.escape(title)}</title><style>{_asset('report.css')}{extra}</style>"
        f"</head><body>{body}{script}</body></html>\n"
    )


def index_page(boards: list[dict]) -> str:
    """The service's front page: a table of the public boards.

    Parameters
    ----------
    boards : list of dict
        Board summaries with ``id``, ``benchmark``, ``run``, ``n_models``, ``n_items`` and
        ``created_at`` (as listed by ``GET /api/boards``).

    Returns
    -------
    str
        A complete HTML document.

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> page = index_page([])
    >>> page.startswith("<!DOCTYPE html>"), "No public board yet" in page
    (True, True)
    >>> row = {"id": "demo--r1", "benchmark": "demo", "run": "r1", "n_models": 3, "n_items": 20,
    ...        "created_at": "2026-01-01T00:00:00Z"}
    >>> '<a href="boards/demo--r1">demo--r1</a>' in index_page([row])
    True
    """
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


def board_page(spec: BoardSpec | None, board_id: str | None = None) -> str:
    """The page shell of a board (no data: the script fetches the sections).

    A private board's shell names nothing but its id: its title and facts come with the data,
    behind the token.

    Parameters
    ----------
    spec : BoardSpec or None
        The board; None for a private board or an unknown id (the same shell for both).
    board_id : str, optional
        The id, when ``spec`` is None.

    Returns
    -------
    str
        A complete HTML document.

    References
    ----------
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> from rankci.service.spec import make_spec
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b", "c"],
    ...                  items=[f"q{i}" for i in range(20)], order_seed=0, look_every=10)
    >>> page = board_page(spec)
    >>> page.startswith("<!DOCTYPE html>"), "<title>demo · r1</title>" in page
    (True, True)
    """
    public = spec is not None and spec.public
    if public:
        board_id = spec.id
        title, header = spec.title, header_html(spec)
    else:
        board_id = board_id if board_id is not None else spec.id
        title = f"Board {board_id}"
        header = f"<h1>{html.escape(title)}</h1>"
    body = (
        f'<header><div id="board-header">{header}</div>'
        '<p id="status" role="status">Loading…</p></header>'
        f'<main id="board" data-fragment="{html.escape(board_id)}/fragment" '
        f'data-poll="{POLL_MS}" data-public="{int(public)}"></main>'
    )
    script = '<script src="../static/report.js"></script><script src="../static/page.js"></script>'
    return _shell(title, body, script)


def report_js() -> str:
    """The report's table script wrapped as ``window.rankciReport``, called after each swap.

    Parameters
    ----------
    None

    Returns
    -------
    str
        JavaScript defining ``window.rankciReport`` around the report's ``report.js``.

    References
    ----------
    ECMA International. ECMAScript Language Specification (ECMA-262).
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> script = report_js()
    >>> script.startswith("window.rankciReport = function () {"), script.rstrip().endswith("};")
    (True, True)
    """
    return "window.rankciReport = function () {\n" + _asset("report.js") + "\n};\n"


PAGE_JS = r"""
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
      if (r.status === 401 || r.status === 403 || r.status === 404) {
        status.textContent = 'No such board, or a private board: open the link that ends in ' +
          '#token=… .';
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
        window.rankciReport();
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


def board_summary(spec: BoardSpec) -> dict:
    """The board's public description."""
    clusters = None if spec.clusters is None else sorted(set(spec.clusters))
    if spec.kind != "scores":  # a scores board's description is as before kinds existed
        return {**_summary(spec, clusters), "kind": spec.kind}
    return _summary(spec, clusters)


def _summary(spec: BoardSpec, clusters) -> dict:
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
