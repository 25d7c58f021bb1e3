"""The log-reader registry: one entry per format, and read_log / detect_format read only it."""

from __future__ import annotations

import inspect as pyinspect

import pytest

from rankci import adapters
from rankci.adapters import READERS, LogReader, read_log
from rankci.formats import LOG_FORMATS, LOG_READERS


def test_every_format_has_one_reader_named_by_its_module():
    assert tuple(READERS) == LOG_FORMATS == tuple(LOG_READERS)
    for name, reader in READERS.items():
        assert isinstance(reader, LogReader)
        assert reader.format == name
        assert reader.score_option in ("metric", "scorer")
        assert reader.score_option in reader.takes


def test_reader_keywords_exist_in_the_reader_function():
    """What a reader says it takes, its function accepts (so read_log never passes a stray one)."""
    for reader in READERS.values():
        parameters = pyinspect.signature(reader.read).parameters
        for name in reader.takes:
            assert name in parameters, (reader.format, name)


@pytest.mark.parametrize(
    ("fmt", "keyword", "message"),
    [
        ("inspect", "metric", "Inspect logs are scored by scorers: use scorer=, not metric="),
        ("lm-eval", "scorer", "scorer= applies to Inspect logs; lm-eval logs take metric="),
        ("helm", "scorer", "scorer= applies to Inspect logs; helm logs take metric="),
        ("helm", "item", "HELM items are its instance ids; item= does not apply"),
        ("inspect", "filter", "filter= applies to lm-eval logs, not to inspect logs"),
        ("lm-eval", "split", "split= applies to HELM logs, not to lm-eval logs"),
        ("inspect", "split", "split= applies to HELM logs, not to inspect logs"),
    ],
)
def test_a_keyword_the_format_does_not_take_is_refused_before_reading(fmt, keyword, message):
    with pytest.raises(ValueError) as error:
        read_log(fmt, "no/such/path", **{keyword: "x"})
    assert str(error.value) == message


def test_a_new_reader_is_one_entry(monkeypatch, tmp_path):
    """A format registered with its READER is read and detected with no other change."""
    seen = {}

    def read_toy(source, *, metric=None, **options):
        seen.update(source=source, metric=metric, **options)
        return "scores"

    toy = LogReader(format="toy", label="Toy", read=read_toy, takes=frozenset({"metric"}),
                    names_a_log=lambda path: path.suffix == ".toy",
                    marks_directory=lambda path: path.suffix == ".toy")
    monkeypatch.setattr(adapters, "READERS", {**READERS, "toy": toy})
    monkeypatch.setattr(adapters, "LOG_FORMATS", (*LOG_FORMATS, "toy"))
    assert read_log("toy", "run.toy", metric="acc") == "scores"
    assert seen["metric"] == "acc" and seen["source"] == "run.toy"
    (tmp_path / "a.toy").write_text("x")
    assert adapters.detect_format(tmp_path) == "toy"
    with pytest.raises(ValueError, match="scorer= applies to Inspect logs; toy logs take metric="):
        read_log("toy", "run.toy", scorer="s")
