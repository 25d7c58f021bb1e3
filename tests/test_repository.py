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


def _own_scores_commands() -> list[str]:
    """The command lines of the README's "Use it on your own scores" block, comments dropped."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Use it on your own scores") :]
    start = section.index("```bash") + len("```bash")
    block = section[start : section.index("```", start)]
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def _stand_ins(folder: Path) -> None:
    """Files named as the README names them: scores.csv (long, models A-F, 8 clusters),
    wide.parquet (its wide form), parts/ (it as Parquet files by item), out/ (the lm-eval
    fixture), logs/ (real Inspect logs)."""
    import shutil

    import numpy as np

    from rankci.simulate import simulate_scores

    sim = simulate_scores(np.array([2.0, 0.4, 0.2, 0.0, -0.2, -0.4]), 400, n_clusters=8, rng=3)
    frame = sim.scores.to_frame()
    frame["model"] = frame["model"].map(dict(zip(sim.scores.models, "ABCDEF")))
    frame.to_csv(folder / "scores.csv", index=False)
    wide = frame.pivot(index="item", columns="model", values="score").reset_index()
    wide.to_parquet(folder / "wide.parquet")
    (folder / "parts").mkdir()  # parts/: the long table cut by item into Parquet files
    items = sorted(frame["item"].unique())
    for k in range(4):
        chunk = frame[frame["item"].isin(items[k::4])][["model", "item", "score"]]
        chunk.to_parquet(folder / "parts" / f"part-{k}.parquet", index=False)
    shutil.copytree(ROOT / "tests" / "fixtures" / "lm_eval" / "logs", folder / "out")
    _inspect_logs(folder / "logs")


def _inspect_logs(folder: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    samples = [Sample(input=f"Question {i}", target="yes", id=f"q{i}") for i in range(12)]
    task = Task(dataset=MemoryDataset(samples), solver=generate(), scorer=match(), name="toy")
    for name, right in (("good", 11), ("fair", 6), ("poor", 1)):
        answers = ["yes" if i < right else "no" for i in range(12)]

        def outputs(messages, tools, tool_choice, config, name=name, answers=answers):
            i = int(messages[-1].text.split()[-1])
            out = ModelOutput.from_content(model=name, content=answers[i])
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # offline
            return out

        model = get_model(f"mockllm/{name}", custom_outputs=outputs)
        eval(task, model=model, log_dir=str(folder), display="none")


def test_the_readme_commands_run_as_written(tmp_path, monkeypatch, capsys):
    import shlex
    import warnings

    from rankci.cli import build_parser, main

    commands = _own_scores_commands()
    assert len(commands) >= 10 and all(c.startswith("rankci ") for c in commands)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # inspect_ai's own
        _stand_ins(tmp_path)
    monkeypatch.chdir(tmp_path)
    for command in commands:
        argv = shlex.split(command)[1:]
        if argv[0] == "serve":  # a long-running server (tests/service runs it): parse it only
            build_parser().parse_args(argv)
            continue
        status = main(argv)
        err = capsys.readouterr().err
        assert status == 0, (command, err)
    assert (tmp_path / "ranking.json").is_file() and (tmp_path / "report.html").is_file()


def test_monitor_docs_state_the_mixture_bets_floor_and_its_number_holds():
    """docs/monitor.md: no "good for gaps of all sizes"; its floor Δ/ρ < 0.015 is checked here by
    the exact long-run growth E log(1 + λY) of every default bet, for 0/1 scores under sampling
    (S) (Y = x_j - x_l in {-1, 0, 1}, gap Δ = P(Y=1) - P(Y=-1), disagreement ρ = P(Y≠0))."""
    import math

    from rankci.sequential.spec import MonitorSpec

    text = (ROOT / "docs" / "monitor.md").read_text()
    assert "gaps of all sizes" not in text and "Δ/ρ < 0.015 is never certified" in text

    def growth(bet: float, ratio: float, rho: float = 0.2) -> float:
        up, down = rho * (1 + ratio) / 2, rho * (1 - ratio) / 2
        return up * math.log1p(bet) + down * math.log1p(-bet)

    grid = MonitorSpec().grid
    assert min(grid) == 0.03
    assert all(growth(bet, 0.0149) < 0 for bet in grid)  # every bet loses: never certified
    assert growth(min(grid), 0.0151) > 0  # just above the floor the smallest bet gains


def test_the_agrapa_docstring_names_both_forms_of_the_plug_in():
    import rankci.sequential.wealth as wealth

    doc = " ".join(wealth.__doc__.split())
    assert "hat E[Y] / hat E[Y^2]" in doc and "1 + sum_{s<t} Y_s^2" in doc
    assert "Both are valid" in doc and "The code uses the ``1 +`` form because" in doc
