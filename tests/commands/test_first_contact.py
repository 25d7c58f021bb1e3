"""A first contact without surprises (issue 26, item 6): each case a new user met, through the
real command line (``rankci.cli.main``, or a subprocess where the process matters)."""

import gzip
import json
import zipfile

import pandas as pd
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit

from rankci.cli import main

ROWS = [("möd", "q1", 1), ("möd", "q2", 0), ("b", "q1", 1), ("b", "q2", 1), ("c", "q1", 0)]
TEXT = "model,item,score\n" + "".join(f"{m},{i},{s}\n" for m, i, s in ROWS)


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("rankci: error:") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "encoding, byte, guess",
    [("latin-1", "0xf6", "Latin-1"), ("cp1252", "0x92", "Windows-1252")],
)
def test_a_file_not_in_utf8_names_its_byte_line_encoding_and_the_fix(
    tmp_path, capsys, encoding, byte, guess
):
    path = tmp_path / "scores.csv"
    text = TEXT if encoding == "latin-1" else TEXT.replace("ö", "\u2019")
    path.write_bytes(text.encode(encoding))
    err = _error(capsys, ["rank", str(path)])
    assert "'utf-8' codec" not in err
    assert f"{str(path)!r} is not UTF-8 (byte {byte} on line 2)" in err
    assert guess in err and "re-save it as UTF-8" in err and "iconv" in err


def test_utf16_with_a_byte_order_mark_is_decoded_and_said(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_bytes(TEXT.encode("utf-16"))
    assert main(["scores", str(path), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "decoded as UTF-16" in captured.err
    assert {row["model"] for row in json.loads(captured.out)["models"]} == {"möd", "b", "c"}


def test_gzip_under_a_csv_name_is_named_with_the_fix(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_bytes(gzip.compress(TEXT.encode()))
    err = _error(capsys, ["rank", str(path)])
    assert f"{str(path)!r} is gzip-compressed" in err and ".gz" in err


def test_parquet_under_a_csv_name_says_pass_from_parquet(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    pd.DataFrame(ROWS, columns=["model", "item", "score"]).to_parquet(path)
    err = _error(capsys, ["rank", str(path)])
    assert f"{str(path)!r} is a Parquet file" in err and "pass --from parquet" in err
    assert main(["rank", str(path), "--from", "parquet", "--format", "json"]) == 0


def _workbook(path):
    with zipfile.ZipFile(path, "w") as archive:  # the parts every .xlsx has
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")


@pytest.mark.parametrize("name", ["scores.xlsx", "scores.csv"])
def test_an_excel_workbook_is_told_to_save_as_csv_not_to_pass_from_csv(tmp_path, capsys, name):
    path = tmp_path / name
    _workbook(path)
    err = _error(capsys, ["rank", str(path)])
    assert "Excel workbook" in err and "CSV UTF-8" in err and "--from csv" not in err


@pytest.mark.parametrize("name", ["scores.jsonl", "scores.json"])
def test_a_json_array_is_named_with_what_json_lines_expects(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_text(json.dumps([{"model": m, "item": i, "score": s} for m, i, s in ROWS]))
    err = _error(capsys, ["rank", str(path)])
    assert "JSON array" in err and "one JSON object per line" in err
    assert "not a JSON object" not in err


def test_two_columns_of_one_name_are_refused_with_both_positions(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_text("model,item,score,score\na,q1,1,0\na,q2,0,1\nb,q1,1,1\nb,q2,1,0\n")
    err = _error(capsys, ["rank", str(path)])
    assert "column 'score' appears twice" in err and "columns 3 and 4" in err


def test_a_key_written_twice_in_a_json_line_is_refused(tmp_path, capsys):
    path = tmp_path / "scores.jsonl"
    path.write_text('{"model": "a", "item": "q1", "score": 1, "score": 0}\n')
    err = _error(capsys, ["rank", str(path)])
    assert "column 'score' appears twice" in err and "line 1" in err


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    import numpy as np

    from rankci.simulate import simulate_scores

    sim = simulate_scores(np.linspace(1.0, -1.0, 5), 200, n_clusters=4, rng=1)
    path = tmp_path_factory.mktemp("board") / "scores.csv"
    sim.scores.to_frame().to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["rank", "report", "benchmarks"])
@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_top_k_has_one_rule_in_every_command(board, tmp_path, capsys, command, value):
    argv = [command, str(board), "--top-k", value, "-o", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--top-k" in err and "K must be an integer >= 1" in err
    assert not (tmp_path / "out").exists()  # report used to drop the column and write the page


def test_report_checks_the_monitor_flags_in_their_own_words(board, tmp_path, capsys):
    page = tmp_path / "r.html"
    err = _error(
        capsys, ["report", str(board), "--monitor", "--look-every", "abc", "-o", str(page)]
    )
    assert "--look-every must be" in err and "look_every" not in err and not page.exists()


def test_unit_cluster_with_by_cluster_gets_advice_not_unknown_unit(board, capsys):
    err = _error(capsys, ["rank", str(board), "--unit", "cluster", "--by-cluster"])
    assert "unknown unit" not in err
    assert "drop --unit cluster" in err and "drop --by-cluster" in err


@pytest.fixture(scope="module")
def percent_board(board, tmp_path_factory):
    frame = pd.read_csv(board, dtype={"item": str})
    frame["score"] = frame["score"] * 100
    path = tmp_path_factory.mktemp("percent") / "percent.csv"
    frame.to_csv(path, index=False)
    return path


def test_bounds_minus_inf_inf_is_accepted_as_the_docs_recommend(percent_board, capsys):
    assert main(["rank", str(percent_board), "--bounds", "-inf", "inf", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert max(row["score"] for row in payload["models"]) > 1  # the percentages, as they are


def test_monitor_rescales_scores_read_with_bounds_and_says_so(board, percent_board, capsys):
    assert main(["monitor", str(percent_board), "--bounds", "0", "100", "--format", "json"]) == 0
    rescaled = json.loads(capsys.readouterr().out)
    assert main(["monitor", str(board), "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert rescaled["rescaled_from"] == [0, 100] and "rescaled_from" not in plain
    assert rescaled["final"]["dominance"] == plain["final"]["dominance"]
    assert [row["score"] for row in rescaled["final"]["models"]] == pytest.approx(
        [row["score"] for row in plain["final"]["models"]]
    )
    assert main(["monitor", str(percent_board), "--bounds", "0", "100"]) == 0
    assert "scores rescaled from [0, 100]" in capsys.readouterr().out


def test_monitor_refuses_infinite_bounds_with_the_fix(percent_board, capsys):
    err = _error(capsys, ["monitor", str(percent_board), "--bounds", "-inf", "inf"])
    assert "--bounds -inf inf is not finite" in err and "--bounds 0 100" in err
    assert "rescale them first" not in err


def test_demo_in_a_folder_it_cannot_write_leaves_the_report_out_and_says_why(
    tmp_path, monkeypatch, capsys
):
    import os

    monkeypatch.chdir(tmp_path)
    real_access = os.access

    def access(path, mode, **kwargs):  # the tests run as root, who may write anywhere
        if mode & os.W_OK and os.path.abspath(path).startswith(str(tmp_path)):
            return False
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    assert main(["demo", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "--report" not in captured.err.split("pass --report FILE")[0]
    assert "the HTML report was not written" in captured.err and "not writable" in captured.err
    assert json.loads(captured.out)["models"] and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["taubest", "{data}", "--tau", "0"], "--tau must be an integer >= 1"),
        (["rank", "{data}", "--alpha", "2"], "--alpha must be a number strictly between 0 and 1"),
        (["rank", "{data}", "--delta", "-1"], "--delta must be a finite number >= 0"),
        (["monitor", "{data}", "--retire", "topk-safe"], "--retire topk-safe needs --k"),
    ],
)
def test_cli_messages_name_flags_not_python_keywords(board, capsys, argv, flag):
    err = _error(capsys, [a.format(data=board) for a in argv])
    assert flag in err


def test_the_cluster_filter_states_the_whole_procedures_level_not_the_rankings(tmp_path, capsys):
    import numpy as np

    from rankci.simulate import simulate_scores

    sim = simulate_scores(np.linspace(1.5, -1.5, 8), 1600, n_clusters=8, rng=2)
    path = tmp_path / "scores.csv"
    sim.scores.to_frame().to_csv(path, index=False)
    assert main(["rank", str(path), "--filter-uninformative", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    text = payload["guarantee"]
    # screen at 0.3 * 0.05 = 0.015 and ranking at 0.7 * 0.05 = 0.035: 95 % for both together
    assert text.startswith("With probability at least 95%,") and "96%" not in text
    assert "0.015 + 0.035 = 0.05" in text


@pytest.mark.parametrize(
    "name, text, where",
    [
        # header = line 1; a blank line and a quoted field over two lines count as lines
        ("long.csv", 'model,item,score\na,q1,1\n\n"b\nx",q1,0\na,q2,x\n', "at line 6"),
        ("dup.csv", "model,item,score\na,q1,1\nb,q1,0\na,q1,1\n", "at lines 2 and 4"),
        ("wide.csv", "item,m1,m2\nq1,1,0\nq2,1,0\nq2,0,1\n", "at lines 3 and 4"),
        (
            "s.jsonl",
            '{"model":"a","item":"q","score":1}\n\n{"model":"b","item":"q","score":"x"}\n',
            "at line 3",
        ),
    ],
)
def test_messages_name_the_1_based_file_line(tmp_path, capsys, name, text, where):
    path = tmp_path / name
    path.write_text(text)
    argv = ["rank", str(path)] + (["--layout", "wide"] if name == "wide.csv" else [])
    err = _error(capsys, argv)
    assert where in err and " row " not in err.replace("duplicated rows", "")


@pytest.fixture(scope="module")
def far_apart(tmp_path_factory):
    """Three models far apart on 20,000 items: their p-values underflow to 0."""
    import numpy as np

    from rankci.simulate import simulate_scores

    sim = simulate_scores(np.array([4.0, -4.0, 0.0]), 20000, n_clusters=10, rng=2)
    path = tmp_path_factory.mktemp("far") / "far.csv"
    sim.scores.to_frame().to_csv(path, index=False)
    return path


def test_an_underflowed_p_value_is_printed_as_a_bound_not_p_0(far_apart, capsys):
    assert main(["check", str(far_apart), "--claim", "m0 > m1"]) == 0
    out = capsys.readouterr().out
    assert "p < 1e-300, Holm-adjusted < 1e-300" in out and "p = 0," not in out
    assert main(["omnibus", str(far_apart)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("model "))
    assert row.count("< 1e-300") == 3  # p, p_GG and p_HF of the model row


def test_text_tables_shorten_long_names_and_escape_newlines(board, tmp_path, capsys):
    frame = pd.read_csv(board, dtype={"item": str})
    long_name, two_lines = "x" * 10_000, "two\nlines"
    frame["model"] = frame["model"].replace({"m0": long_name, "m1": two_lines})
    path = tmp_path / "names.csv"
    frame.to_csv(path, index=False)
    assert main(["rank", str(path)]) == 0
    out = capsys.readouterr().out
    assert len(out) < 3000 and "…" in out and "names longer than 40 characters" in out
    assert "two\\nlines" in out and "two\nlines" not in out
    table = out[out.index("model ") :].splitlines()
    assert all(len(line) < 100 for line in table[:7])
    assert main(["rank", str(path), "--format", "json"]) == 0
    names = {row["model"] for row in json.loads(capsys.readouterr().out)["models"]}
    assert long_name in names and two_lines in names  # JSON keeps the names in full


@pytest.mark.parametrize(
    "argv, target",
    [
        (["rank", "{data}"], "new items like these"),
        (["rank", "{data}", "--unit", "cluster"], "new clusters like these"),
        (["rank", "{data}", "--by-cluster"], "new items like these"),
        (["taubest", "{data}"], "new items like these"),
        (["scores", "{data}"], "new items like these"),
        (["check", "{data}", "--claim", "m0 > m4"], "new items like these"),
        (["benchmarks", "{data}", "--benchmark-col", "cluster"], "new items like these"),
        (["monitor", "{data}"], "these items"),
        (["monitor", "{data}", "--sampling", "iid"], "new items like these"),
        (["omnibus", "{data}"], "new items like these"),
        (["omnibus", "{data}", "--method", "mixed"], "new clusters and items like these"),
    ],
)
def test_every_output_states_its_target_in_text_and_json(board, capsys, argv, target):
    argv = [a.format(data=board) for a in argv]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.count("Target: ") == 1 and f"Target: {target}: every statement is about" in text
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == target


def test_check_explains_a_verdict_changed_by_the_family_a_rank_claim_grows(tmp_path, capsys):
    import numpy as np

    from rankci.simulate import simulate_scores

    sim = simulate_scores(np.r_[np.linspace(0.3, -0.3, 34), 0.3], 300, rng=5)
    path = tmp_path / "many.csv"
    sim.scores.to_frame().to_csv(path, index=False)
    claims = ["--claim", "m00 > m33", "--claim", "m00 ~ m34 within 0.15"]
    main(["check", str(path), *claims])
    alone = capsys.readouterr().out
    assert "supported     m00 ~ m34 within 0.15" in alone and "Holm over 6 tests)" in alone
    main(["check", str(path), *claims, "--claim", "m00 in top 3"])
    out = capsys.readouterr().out
    # 35 models: 35 * 34 = 1190 ordered pairs, 2 of them (m00 vs m33 at margin 0) already among
    # the 6 tests of the pair claims: 6 + 1188 = 1194
    assert "Holm over 1194 tests: 6 for the pair claims, 1188 for the ordered pairs" in out
    equivalence = next(line for line in out.splitlines() if "two one-sided tests" in line)
    assert out.count("not decided   m00 ~ m34 within 0.15") == 1
    assert "without the rank claims it would be supported" in equivalence
    assert "the rank claims add 1188 tests to the family, 1194 in all" in equivalence
    main(["check", str(path), *claims, "--claim", "m00 in top 3", "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["details"]["family"]["size"] == payload["family_size"] == 1194
    assert payload["claims"][1]["without_rank_claims"] == "supported"


def test_report_warnings_about_one_cluster_name_it(tmp_path, capsys):
    import numpy as np

    from rankci.simulate import simulate_scores

    sim = simulate_scores(np.linspace(0.2, -0.2, 4), 60, n_clusters=3, rng=1)
    path = tmp_path / "weak.csv"
    sim.scores.to_frame().to_csv(path, index=False)
    page = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(page), "--no-omnibus"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    about_clusters = [line for line in warned if "with 20 item units" in line]  # 60 items / 3
    assert len(about_clusters) == 3
    assert [line.split(":")[2].strip() for line in about_clusters] == [
        "cluster 'c0'",
        "cluster 'c1'",
        "cluster 'c2'",
    ]


def test_the_served_page_of_a_finished_board_says_so_not_next_look_at_none(tmp_path):
    import time

    import numpy as np
    from service_server import running

    models, items = ["a", "b", "c"], [f"q{i}" for i in range(12)]
    x = (np.random.default_rng(0).random((12, 3)) < [0.9, 0.5, 0.2]).astype(float)
    with running(str(tmp_path / "boards.sqlite"), tmp_path / "server.log") as server:
        api = server.client()
        body = {"benchmark": "bench", "run": "r1", "models": models, "items": items}
        status, created = api.post("/api/boards", body)
        assert status == 201, created
        board, token = created["board"]["id"], created["write_token"]
        scores = [
            {"model": m, "item": q, "score": float(x[i, j])}
            for i, q in enumerate(items)
            for j, m in enumerate(models)
        ]
        status, posted = api.post(f"/api/boards/{board}/scores", {"scores": scores}, token)
        assert status in (200, 201), posted
        deadline, page = time.monotonic() + WAIT_GUARD, ""
        while time.monotonic() < deadline and "items consumed" not in page:
            status, fragment = api.get(f"/boards/{board}/fragment")
            page = fragment.get("html", "") if status == 200 else ""
            time.sleep(0.2)
        api.close()
    assert "12 of 12" in page and "no further look: the board is finished" in page
    assert "None" not in page


@pytest.mark.parametrize(
    "method, header",
    [("anova", "model    mean"), ("friedman", "model  mean_rank"), ("mixed", "model  emmean")],
)
def test_omnibus_lists_models_best_first_not_alphabetically(
    board, tmp_path, capsys, method, header
):
    frame = pd.read_csv(board, dtype={"item": str})
    names = {"m0": "zeta", "m1": "alpha", "m2": "mu", "m3": "beta", "m4": "omega"}
    frame["model"] = frame["model"].map(names)
    path = tmp_path / "named.csv"
    frame.to_csv(path, index=False)
    best_first = frame.groupby("model")["score"].mean().sort_values(ascending=False).index.tolist()
    assert best_first != sorted(best_first)
    assert main(["omnibus", str(path), "--method", method]) == 0
    out = capsys.readouterr().out
    block = out[out.index(header) :].splitlines()[2:7]
    assert [line.split()[0] for line in block] == best_first


def test_the_report_page_states_its_target(board, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(board), "-o", str(page), "--no-omnibus", "--no-clusters"]) == 0
    head = page.read_text().split('<p class="guarantee">', 1)[1].split("</p>", 1)[0]
    assert "Target: new items like these: every statement is about" in head
