"""Every paper a docstring cites is cited in full in docs/references.md, the one bibliography."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIBLIOGRAPHY = (ROOT / "docs" / "references.md").read_text()
#: "Surname, A." (first author) ... "(1979)"; "Student (1908)"
AUTHOR_YEAR = re.compile(
    r"\b([A-Z][A-Za-z'\-]+), [A-Z]\.[^()]*?\((\d{4})\)|\b(Student|NIST) \((\d{4})\)"
)


def _reference_blocks() -> list[tuple[Path, str]]:
    """The text under each numpydoc ``References`` heading of every module in src/rankci."""
    blocks = []
    for path in sorted((ROOT / "src" / "rankci").rglob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines[:-1]):
            if line.strip() != "References" or set(lines[i + 1].strip()) != {"-"}:
                continue
            body = []
            for following in lines[i + 2 :]:
                text = following.strip()
                if text.startswith('"""') or text in ("Examples", "Notes", "See Also"):
                    break
                body.append(text)
            blocks.append((path, " ".join(body)))
    return blocks


def test_there_are_references_to_check():
    assert len(_reference_blocks()) > 100


def test_every_cited_author_and_year_is_in_the_bibliography():
    entries = [line for line in BIBLIOGRAPHY.splitlines() if line.strip()]
    joined = "\n".join(entries)
    # a bibliography entry may wrap: join each "- " item onto one line
    items = [" ".join(item.split()) for item in re.split(r"\n(?=- )", joined)]
    missing = set()
    for path, text in _reference_blocks():
        for match in AUTHOR_YEAR.finditer(text):
            surname = match.group(1) or match.group(3)
            year = match.group(2) or match.group(4)
            if not any(surname in item and f"({year})" in item for item in items):
                missing.add((path.relative_to(ROOT).as_posix(), surname, year))
    assert not missing, f"cited in a docstring but not in docs/references.md: {sorted(missing)}"


def test_the_source_documents_are_cited_with_their_full_title_and_the_pointer():
    for path, text in _reference_blocks():
        for match in re.finditer(r"Rank confidence sequences[^.]*\.", text):
            tail = text[match.start() : match.start() + 200]
            assert tail.startswith(
                "Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026"
            ), (path, tail)
            assert "docs/references.md" in tail, (path, tail)


def test_no_source_file_points_outside_the_repository():
    """No pointer to the design document or data a clone does not have."""
    for path in list((ROOT / "src").rglob("*.py")) + list((ROOT / "tests").rglob("*.py")):
        if path.name in ("test_references.py", "test_repository.py"):
            continue
        text = path.read_text()
        assert "DESIGN.md" not in text, path
        assert "shared/seeds" not in text and "shared/data" not in text, path
