"""``rankci report votes.csv``: the arena board (rankci.report.arena), in a real browser too."""

import re

import numpy as np
import pandas as pd
import pytest
from browser import browser

from rankci.cli import main

NAMES = ["alpha", "beta", "gamma", "delta", "eps"]
TRUE = np.array([1.2, 0.6, 0.55, 0.0, -1.0])


def write_votes(path, n=5000, seed=11):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(NAMES), n)
    b = (a + rng.integers(1, len(NAMES), n)) % len(NAMES)
    win_a = rng.random(n) < 1 / (1 + np.exp(-(TRUE[a] - TRUE[b])))
    names = np.array(NAMES)
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": np.where(rng.random(n) < 0.1, "tie", np.where(win_a, "model_a", "model_b")),
            "question_id": rng.integers(0, 400, n),
        }
    )
    frame.to_csv(path, index=False)
    return frame


def cells(page: str, table: str) -> list[list[str]]:
    body = page[page.index(f'id="{table}"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("<tr>")[1:]]


def test_a_vote_file_is_recognised_and_drawn_as_the_arena_board(tmp_path, capsys):
    data, out = tmp_path / "votes.csv", tmp_path / "arena.html"
    write_votes(data)
    assert (
        main(["rank", str(data), "--format", "json", "--seed", "3", "-o", str(tmp_path / "r.json")])
        == 0
    )
    import json

    ranked = json.loads((tmp_path / "r.json").read_text())
    assert main(["report", str(data), "--seed", "3", "-o", str(out), "--top-k", "2"]) == 0
    page = out.read_text()
    for section in ("arena", "rank-plots", "probes", "method"):
        assert f'<section id="{section}">' in page
    assert "leaderboard-table" not in page and 'id="omnibus"' not in page  # no score sections
    rows = cells(page, "arena-table")
    assert [r[0] for r in rows] == [
        m["model"] for m in sorted(ranked["models"], key=lambda m: m["rank"])
    ]
    by_model = {m["model"]: m for m in ranked["models"]}
    for row in rows:  # the same board as rankci rank: rating, interval, Rank (UB) beside it
        m = by_model[row[0]]
        assert row[1] == f"{m['rating']:.1f}"
        assert row[5] == f"[{m['rank_lower']}, {m['rank_upper']}]"
        assert row[6] == str(m["rank_ub"])
    assert "Target: new votes like these" in page
    assert ranked["guarantee"] in page.replace("&#x27;", "'")
    probes = cells(page, "probes-table")
    assert {"connectivity", "separation", "position"} <= {r[0] for r in probes}
    assert main(["report", str(data), "--no-probes", "-o", str(out)]) == 0
    assert 'id="probes"' not in out.read_text()
    assert main(["report", str(data), "--monitor", "-o", str(out)]) == 2
    assert "--monitor replays scores" in capsys.readouterr().err


@pytest.mark.browser
def test_the_arena_page_renders_its_table_in_a_real_browser(tmp_path):
    data, out = tmp_path / "votes.csv", tmp_path / "arena.html"
    write_votes(data)
    assert main(["report", str(data), "--votes", "--seed", "1", "-o", str(out)]) == 0
    with browser() as context:
        page = context.new_page()
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        assert page.locator("#arena-table tbody tr").count() == len(NAMES)
        headers = page.locator("#arena-table th").all_inner_texts()
        assert headers[:7] == [
            "model",
            "rating",
            "strength",
            "se",
            "rank",
            "rank interval",
            "Rank (UB)",
        ]
        images = page.evaluate(
            "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
        )
        assert images and all(ok and w > 0 and h > 0 for ok, w, h in images)
        page.locator("#arena-table th").nth(1).click()  # rating, ascending: the weakest first
        assert page.locator("#arena-table tbody tr td").first.inner_text() == "eps"
        assert problems == []
