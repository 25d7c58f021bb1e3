"""The progress bar draws only on terminals and can be forced on or off."""

import io

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
