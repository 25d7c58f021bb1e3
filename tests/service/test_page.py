"""A board's web page in a real headless Chromium, served by the real `rankci serve`: the table
and plots appear, the guarantee is stated, and the page refreshes itself as scores arrive."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
from browser import browser
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from matplotlib.image import imread
from service_server import running

pytestmark = pytest.mark.browser


def _wait_for(page, expression: str, timeout: float = WAIT_GUARD) -> None:
    """Poll a JavaScript expression (page.evaluate is not subject to the page's CSP, which
    forbids eval and so Playwright's wait_for_function)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.1)


def _post_items(api, board, token, models, items, x, rows):
    scores = [
        {"model": m, "item": items[i], "score": float(x[i, j])}
        for i in rows
        for j, m in enumerate(models)
    ]
    status, answer = api.post(f"/api/boards/{board}/scores", {"scores": scores}, token)
    assert status == 200, answer
    return answer["progress"]


def test_board_page_shows_the_leaderboard_and_refreshes(tmp_path):
    rng = np.random.default_rng(5)
    m, n = 5, 300
    models = [f"model-{c}" for c in "abcde"]
    items = [f"q{i}" for i in range(n)]
    x = (rng.random((n, m)) < np.array([0.85, 0.7, 0.55, 0.4, 0.25])).astype(float)
    with running(str(tmp_path / "boards.sqlite"), tmp_path / "server.log") as server:
        api = server.client()
        status, created = api.post(
            "/api/boards",
            {
                "benchmark": "page-bench",
                "run": "week-1",
                "title": "Page test <board>",
                "models": models,
                "items": [
                    {"id": it, "cluster": ["law", "math"][i % 2]} for i, it in enumerate(items)
                ],
                "order_seed": 2,
                "look_every": 10,
                "k": 2,
            },
        )
        board, token = created["board"]["id"], created["write_token"]
        status, private = api.post(
            "/api/boards",
            {
                "benchmark": "page-bench",
                "run": "private",
                "models": models,
                "items": items,
                "public": False,
            },
        )
        _, needs = api.get(f"/api/boards/{board}/needs?limit={n * m}")
        order = list(dict.fromkeys(e["item"] for e in needs["evaluations"]))
        index = {item: i for i, item in enumerate(items)}
        _post_items(api, board, token, models, items, x, [index[it] for it in order[:100]])
        url = f"http://127.0.0.1:{server.port}/boards/{board}"
        with browser() as context:
            page = context.new_page()
            problems = []
            page.on(
                "console", lambda msg: problems.append(msg.text) if msg.type == "error" else None
            )
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.goto(url)
            page.wait_for_selector("#leaderboard-table tbody tr", timeout=WAIT_GUARD * 1000)
            assert page.locator("#leaderboard-table tbody tr").count() == m
            assert page.title() == "Page test <board>"
            guarantee = page.locator(".guarantee").inner_text()
            assert "every statement it ever shows is true" in guarantee
            assert "95%" in guarantee and "however often anyone looks" in guarantee
            assert "100 of 300 items consumed" in page.locator("#status").inner_text()
            _wait_for(
                page,
                "document.images.length >= 6 && Array.from(document.images)"
                ".every(i => i.complete && i.naturalWidth > 0)",
            )
            # the table fits 1,400 px (the flags column included), and the tiers are explained
            page.set_viewport_size({"width": 1400, "height": 900})
            fits = (
                "(() => { const t = document.getElementById('leaderboard-table');"
                " const box = t.parentElement; return t.getBoundingClientRect().right <= 1400"
                " && box.scrollWidth <= box.clientWidth + 1; })()"
            )
            assert page.evaluate(fits)
            note = page.locator("#tier-note").inner_text()
            assert "longest chain of certified" in note and "better tier" in note
            assert page.locator("#subscores-table tbody tr").count() == m
            first_version = page.evaluate("document.body.dataset.version")
            cells = page.locator("#leaderboard-table tbody tr:first-child td").all_inner_texts()
            assert cells[0] == "model-a"
            # sort by score ascending, then let scores arrive: the page refreshes, keeps the sort
            page.locator("#leaderboard-table th").nth(1).click()
            assert page.locator("#leaderboard-table tbody tr td").first.inner_text() == "model-e"
            progress = _post_items(
                api, board, token, models, items, x, [index[it] for it in order[100:]]
            )
            assert progress["state"] == "finished"
            _wait_for(page, f"document.body.dataset.version !== {first_version!r}")
            _wait_for(page, "document.getElementById('status').textContent.includes('finished')")
            assert page.locator("#leaderboard-table tbody tr td").first.inner_text() == "model-e"
            shot = imread(io.BytesIO(page.screenshot(full_page=True)))
            assert shot.shape[0] > 1500
            assert len(np.unique(shot[::7, ::7].reshape(-1, shot.shape[-1]), axis=0)) > 20
            assert problems == []  # no script error and no CSP violation

            # a private board: the page needs the token in the URL's fragment
            private_url = f"http://127.0.0.1:{server.port}/boards/{private['board']['id']}"
            page.goto(private_url)
            _wait_for(page, "document.getElementById('status').textContent.includes('private')")
            # nothing about the board without the token but its id (which is in the address)
            assert page.locator(".meta").count() == 0 and page.locator(".guarantee").count() == 0
            page = context.new_page()  # (a change of fragment alone does not reload)
            page.goto(private_url + "#token=" + private["read_token"])
            _wait_for(page, "document.getElementById('status').textContent.includes('0 of 300')")
            page.wait_for_selector(".guarantee")
            assert "page-bench" in page.locator(".meta").inner_text()
        api.close()
