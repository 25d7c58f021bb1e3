"""``rankci report`` takes what ``rankci rank`` takes (issue 15): every data and method option, and
a section that cannot be computed becomes a one-line note instead of aborting the report."""

import argparse
import re

import numpy as np
import pandas as pd

import rankci
from rankci.cli import main
from rankci.commands import ppi_flags, votes_rank
from rankci.commands import rank as rank_command
from rankci.commands import report as report_command
from rankci.report import build_report


def dests(command) -> set[str]:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return {a.dest for a in parser._actions}


def test_report_has_every_data_and_method_option_of_rank():
    output_only = {"format"}  # rank's table/json/csv/markdown; the report is HTML
    # rank --q-values adds a per-pair FDR table to rank's own output; the report draws FWER
    # statements only (issue 26, item 3: FDR columns are never mixed into FWER statements)
    output_only |= {"q_values"}
    # the report draws the arena board of a vote table (issue 27), so it takes --votes and
    # every vote flag of rank; rank's opt-in --probes is the report's default (--no-probes
    # leaves them out, as --no-omnibus and --no-clusters leave out their sections)
    output_only |= {"probes"}
    # rank's PPI path (judge scores corrected by human labels, issue 28: --judge, --human, --lam,
    # --inclusion-col) ranks rectified units the report does not draw; the report must not
    # read judge scores as plain scores
    parser = argparse.ArgumentParser()
    ppi_flags.add_ppi_arguments(parser, per_pair=True)
    output_only |= {a.dest for a in parser._actions} - {"help"}
    # rank's out-of-core path (issue 30: --out-of-core, --dask) reduces a table larger than
    # memory to sufficient statistics; the report draws per-item views that need the table
    output_only |= {"out_of_core", "dask"}
    assert dests(rank_command) - output_only <= dests(report_command)
    parser = argparse.ArgumentParser()
    votes_rank.add_vote_arguments(parser)
    vote_flags = {a.dest for a in parser._actions} - {"help", "probes"}
    assert vote_flags <= dests(report_command) and "no_probes" in dests(report_command)


def no_complete_item(path):
    rng = np.random.default_rng(0)
    rows = [
        (m, f"i{i:02d}", f"c{i % 4}", float(rng.random() < p))
        for i in range(60)
        for j, (m, p) in enumerate(zip("abc", (0.8, 0.5, 0.3)))
        if i % 3 != j  # every item lacks one model
    ]
    pd.DataFrame(rows, columns=["model", "item", "cluster", "score"]).to_csv(path, index=False)


def notes(page: str) -> list[str]:
    return re.findall(r'<p class="note">Not computed for these data: ([^<]*)</p>', page)


def test_missing_pairwise_replaces_the_omnibus_section_by_a_note(tmp_path, capsys):
    data = tmp_path / "scores.csv"
    no_complete_item(data)
    out = tmp_path / "report.html"
    assert main(["rank", str(data), "--missing", "pairwise"]) == 0
    assert main(["report", str(data), "--missing", "pairwise", "-o", str(out)]) == 0
    page = out.read_text()
    (note,) = notes(page)
    assert "no item is scored by every model" in note
    assert 'id="omnibus"' in page and 'id="leaderboard"' in page


def test_a_section_that_fails_is_a_one_line_note(monkeypatch):
    import rankci.report.html as html_module

    def refuse(*args, **kwargs):
        raise ValueError("cluster 'c0' has one item per model")

    monkeypatch.setattr(html_module, "rank_by_cluster", refuse)
    rng = np.random.default_rng(1)
    x = (rng.random((80, 3)) < [0.8, 0.5, 0.3]).astype(float)
    scores = rankci.Scores.from_matrix(
        x, models=["a", "b", "c"], clusters=[f"c{i % 4}" for i in range(80)]
    )
    page = build_report(scores, omnibus=False, score_intervals=None)
    assert notes(page) == ["cluster &#x27;c0&#x27; has one item per model"]
    assert 'id="clusters"' in page and 'id="method"' in page
