"""The repository keeps its promises to a newcomer: the README's commands and CI agree."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()[:12]
    fenced = lines.index("```bash")
    return [line.split("#")[0].strip() for line in lines[fenced + 1 : lines.index("```", fenced)]]


def test_readme_opens_with_the_two_commands():
    install_demo, install_test = _readme_commands()
    assert install_demo.endswith("rankci demo")
    assert "[dev]" in install_test and "pytest" in install_test


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in [line.strip() for line in ci]


def test_package_code_never_reads_the_shared_folder():
    for path in list((ROOT / "src").rglob("*.py")) + list((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        if path.name == "test_repository.py":
            continue
        assert "../shared" not in text and "/shared/" not in text, path


def _command_names() -> list[str]:
    """Every subcommand the parser offers (read from the parser, not from a list kept by hand)."""
    import argparse

    from rankci.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_readme_lists_every_command_with_a_line_and_a_link():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Commands") :]
    section = section[: section.index("\n## ", 3)]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`rankci "):
            rows[cells[0].strip("`").split()[1]] = cells
    names = _command_names()
    assert len(names) >= 11
    missing = [name for name in names if name not in rows]
    assert not missing, f"commands missing from the README's Commands table: {missing}"
    extra = set(rows) - set(names)
    assert sorted(rows) == names, f"the README lists commands the parser lacks: {extra}"
    for name, (_, answer, link) in rows.items():
        assert len(answer) > 20, name
        target = link[link.index("(") + 1 : link.index(")")]
        assert (ROOT / target).is_file(), (name, target)
