"""The progress bar draws only on terminals and can be forced on or off."""

import io

from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

from rankci._progress import Progress, progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_silent_when_the_stream_is_not_a_terminal(monkeypatch):
    monkeypatch.delenv("RANKCI_PROGRESS", raising=False)
    stream = io.StringIO()
    assert list(progress(range(5), desc="work", stream=stream)) == [0, 1, 2, 3, 4]
    assert stream.getvalue() == ""


def test_draws_on_a_terminal_and_ends_the_line(monkeypatch):
    monkeypatch.delenv("RANKCI_PROGRESS", raising=False)
    stream = Terminal()
    with Progress(4, "boot", stream=stream, min_interval=0) as bar:
        for _ in range(4):
            bar.update()
    text = stream.getvalue()
    assert "boot [" in text and "100% 4/4" in text and text.endswith("\n")


def test_environment_switch(monkeypatch):
    monkeypatch.setenv("RANKCI_PROGRESS", "0")
    stream = Terminal()
    list(progress(range(3), stream=stream))
    assert stream.getvalue() == ""
    monkeypatch.setenv("RANKCI_PROGRESS", "1")
    stream = io.StringIO()
    list(progress(range(3), stream=stream, min_interval=0))
    assert "3/3" in stream.getvalue()


def test_the_bar_is_tqdm(monkeypatch):
    """tqdm (its auto mode in notebooks) draws the bar; rankci only decides whether to draw."""
    from tqdm import tqdm

    monkeypatch.delenv("RANKCI_PROGRESS", raising=False)
    with Progress(3, "work", stream=Terminal()) as bar:
        assert isinstance(bar._bar, tqdm)
        bar.update(5)  # more than the total is clipped, as before
        assert bar.done == 3
    with Progress(3, "work", stream=io.StringIO()) as bar:
        assert bar._bar is None  # not a terminal, not a notebook: no tqdm at all


def test_a_notebook_without_ipywidgets_gets_a_text_bar_not_tqdms_iprogress_warning(
    tmp_path, monkeypatch
):
    """In a real Jupyter kernel (nbclient), without ipywidgets, the bar is tqdm's text bar:
    tqdm.auto would warn "IProgress not found" in every notebook output."""
    import importlib.util

    import pytest

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    assert importlib.util.find_spec("ipywidgets") is None  # the case of the issue
    monkeypatch.setenv("RANKCI_PROGRESS", "1")
    source = (
        "from rankci._progress import Progress\n"
        "with Progress(50, 'work') as bar:\n"
        "    for _ in range(50):\n"
        "        bar.update()\n"
        "print('done')"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    client = nbclient.NotebookClient(
        notebook,
        timeout=HANG_GUARD,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = notebook.cells[0]["outputs"]
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "done" in text and "50/50" in text  # the bar was drawn, as text
    assert "IProgress" not in text and not [o for o in outputs if o["output_type"] == "error"]
