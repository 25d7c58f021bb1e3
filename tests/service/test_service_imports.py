"""Start-up cost of the live service: a server answering JSON imports no matplotlib, pandas or
scipy.optimize; they come in with the first page that draws a figure (or a frame, or an integer
program). Checked on a real ``rankci serve`` under ``-X importtime`` (Python writes every import,
lazy ones included, to standard error, which the server's log holds). No timed assertions: the
start-up times are in BENCHMARKS.md.
"""

from __future__ import annotations

import re
import time

from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from service_server import ADMIN, running

#: what a JSON-only service must not import (matplotlib 0.5 s, pandas 0.3 s, scipy.optimize
#: 0.3 s of a 2 s start before they were made lazy)
LAZY = ("matplotlib", "pandas", "scipy.optimize")


def _imported(log_text: str) -> set[str]:
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", log_text, re.M))


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules for lazy in LAZY if m == lazy or m.startswith(lazy + ".")}


def test_a_json_service_imports_no_plotting_frames_or_solver_until_a_page_needs_them(tmp_path):
    log = tmp_path / "server.log"
    with running(str(tmp_path / "boards.sqlite"), log, env={"PYTHONPROFILEIMPORTTIME": "1"}) as s:
        api = s.client()
        items = [f"q{i}" for i in range(40)]
        body = {"benchmark": "imports", "run": "r1", "models": ["a", "b", "c"], "items": items}
        status, created = api.post("/api/boards", body, ADMIN)
        assert status == 201, created
        board, token = created["board"]["id"], created["write_token"]
        scores = [
            {"model": m, "item": item, "score": float((i + k) % 3 == 0)}
            for i, item in enumerate(items)
            for k, m in enumerate("abc")
        ]
        status, answer = api.post(f"/api/boards/{board}/scores", {"scores": scores}, token)
        assert status == 200, answer
        status, leaderboard = api.get(f"/api/boards/{board}/leaderboard")
        assert status == 200, leaderboard
        assert leaderboard["progress"]["scores_received"] == 120, leaderboard["progress"]
        after_json = _imported(log.read_text(errors="replace"))
        assert "rankci.service.app" in after_json  # the log does hold the server's imports
        assert not _heavy(after_json), sorted(_heavy(after_json))

        deadline = time.monotonic() + WAIT_GUARD
        while True:  # what the page fetches; drawn in the background, "rendering" until then
            status, fragment = api.get(f"/boards/{board}/fragment")
            assert status == 200, fragment
            if fragment["version"] != "rendering" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "data:image/png;base64," in fragment["html"]  # figures drawn ...
        after_page = _imported(log.read_text(errors="replace"))
        assert "matplotlib" in after_page  # ... with matplotlib, imported only now
