"""``--from FORMAT``: every command that takes DATA reads evaluation logs (real fixtures)."""

import json
import warnings
from pathlib import Path

import pytest

import rankci
from rankci.adapters import detect_format, read_helm, read_lm_eval
from rankci.cli import build_parser, main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LM_EVAL = FIXTURES / "lm_eval" / "logs"
HELM = FIXTURES / "helm" / "runs"


def quiet(reader, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return reader(*args, **kwargs)


@pytest.mark.parametrize("how", [[], ["--from", "lm-eval"]])
# toy logs certify nothing: the subject is that the CLI reads them as the API does
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_rank_reads_lm_eval_logs_like_the_python_api(capsys, how):
    metrics = ["--metric", "acc_norm", "--metric", "exact_match"]
    assert main(["rank", str(LM_EVAL), *how, *metrics, "--format", "json"]) == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    expected = rankci.rank(quiet(read_lm_eval, LM_EVAL, metric=["acc_norm", "exact_match"]))
    assert payload["models"] == expected.to_dict()["models"]
    assert "rankci: warning:" in captured.err and "'model-c' lacks 5" in captured.err


def test_lm_eval_metric_with_filter_and_cluster(capsys):
    args = ["rank", str(LM_EVAL), "--metric", "exact_match,first-letter", "--metric", "acc"]
    assert main([*args, "--cluster-col", "group", "--by-cluster", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "toy_mc" in out and "toy_echo" in out
    reference = quiet(read_lm_eval, LM_EVAL, metric=["exact_match", "acc"], filter="first-letter")
    assert reference.notes["filter"]["toy_echo"] == "first-letter"


def test_helm_runs_are_detected_and_read(capsys):
    assert main(["rank", str(HELM / "toy" / "*"), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = rankci.rank(quiet(read_helm, HELM)).to_dict()
    assert payload["models"] == expected["models"]


def test_report_takes_logs_too(tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(HELM), "--from", "helm", "-o", str(out), "--no-clusters"]) == 0
    assert "mock/strong" in out.read_text()


def test_options_that_do_not_apply_are_refused(capsys):
    assert main(["rank", str(HELM), "--model-col", "who"]) == 2
    assert "--model-col applies to tables" in capsys.readouterr().err
    assert main(["rank", str(HELM), "--scorer", "match"]) == 2
    assert "--scorer applies to Inspect logs; helm logs take --metric" in capsys.readouterr().err
    table = FIXTURES / "oracles" / "small.csv.gz"
    assert main(["rank", str(table), "--metric", "acc"]) == 2
    assert "--metric and --scorer apply to evaluation logs" in capsys.readouterr().err


def test_detect_format(tmp_path):
    assert detect_format(LM_EVAL) == "lm-eval"
    assert detect_format(HELM) == "helm"
    assert detect_format(FIXTURES / "oracles" / "small.csv.gz") == "table"
    with pytest.raises(ValueError, match="more than one kind of scores"):
        detect_format(FIXTURES)
    with pytest.raises(ValueError, match="found no scores"):
        detect_format(tmp_path)


# toy logs certify nothing: the subject is the grouping of the tables
@pytest.mark.filterwarnings("ignore:table '.*'. nothing is certified:rankci.RankciWarning")
def test_benchmarks_from_one_log_directory_uses_top_level_groups(capsys):
    assert main(["benchmarks", str(LM_EVAL), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["benchmarks"]) == {"toy_mc", "toy_echo"}
    scores = quiet(read_lm_eval, LM_EVAL, cluster="benchmark")
    expected = json.loads(json.dumps(rankci.rank_benchmarks(scores, benchmark="cluster").to_dict()))
    record = payload.pop("spec")
    assert record["command"] == "benchmarks"  # how the output was made
    assert record["method"] == expected.pop("spec")  # ... with the method (issue 24)
    assert payload["target"] == expected["target"] == "new items like these"  # (issue 26)
    assert payload == expected


def _takes_data(command) -> bool:
    import argparse

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return any(action.dest == "data" for action in parser._actions)


def test_every_command_that_takes_data_reads_logs(capsys):
    from rankci.commands import COMMANDS

    # every command that reads scores; `rankci votes` reads pairwise votes, never logs
    with_data = [c for c in COMMANDS if _takes_data(c) and c.NAME != "votes"]
    assert {c.NAME for c in with_data} >= {"rank", "report", "benchmarks", "monitor"}
    for command in with_data:
        parser = build_parser()
        args = parser.parse_args([command.NAME, str(HELM), "--from", "helm", "--metric", "x"])
        assert args.input_format == "helm" and args.metric == ["x"]
        with pytest.raises(ValueError, match="has no per-instance stat 'x'"):
            command.run(args)


VARIANTS = FIXTURES / "lm_eval_variants"


# toy logs certify nothing: the subject is the task selection
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_tasks_exclude_tasks_and_filter_on_the_command_line(capsys):
    args = ["rank", str(LM_EVAL), "--tasks", "toy_mc", "--exclude-tasks", "toy_capitals"]
    assert main([*args, "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["n_units"] == 25  # toy_arith, scored by every model on 25 documents
    # lines without a filter key: the error names the flag that picks one, and the flag works
    assert main(["rank", str(VARIANTS / "v0.4.4")]) == 2
    err = capsys.readouterr().err
    assert "choose one with --filter strict" in err and "filter=" not in err
    assert (
        main(["rank", str(VARIANTS / "v0.4.4"), "--filter", "first-letter", "--format", "json"])
        == 0
    )
    expected = rankci.rank(quiet(read_lm_eval, VARIANTS / "v0.4.4", filter="first-letter"))
    assert json.loads(capsys.readouterr().out)["models"] == expected.to_dict()["models"]
    table = FIXTURES / "oracles" / "small.csv.gz"
    assert main(["rank", str(table), "--tasks", "x"]) == 2
    assert "--tasks applies to evaluation logs" in capsys.readouterr().err


def test_the_reading_summary_names_what_the_readers_set_aside(capsys):
    assert main(["rank", str(VARIANTS / "corpus")]) == 0
    err = capsys.readouterr().err
    assert "rankci: warning:" in err and "tasks skipped (corpus-level metric): toy_echo" in err
    assert main(["rank", str(VARIANTS / "tiny")]) == 0
    assert (
        "IRT-scored tasks (tinyBenchmarks) read as raw item scores: tinyArc"
        in capsys.readouterr().err
    )
    assert main(["rank", str(VARIANTS / "lfs")]) == 2
    assert "Git LFS pointer file" in capsys.readouterr().err
