"""docs/notebook.ipynb executes without error (nbclient, a real kernel), and its results render
as HTML with their guarantees."""

from __future__ import annotations

from pathlib import Path

import pytest
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebook.ipynb"


def test_the_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKCI_PROGRESS", "0")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=HANG_GUARD,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    html = [
        output["data"]["text/html"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]
    assert len(html) >= 7  # ranking, intervals, pairwise, two omnibus tests, replay, check
    assert any("every rank interval" in page for page in html)
    assert any("all at once" in page for page in html)
    errors = [
        o for c in notebook.cells for o in c.get("outputs", []) if o["output_type"] == "error"
    ]
    assert not errors
