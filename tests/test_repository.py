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
