"""lm-evaluation-harness logs as people have them: older layouts, filters without a key,
corpus-level metrics, task selection, Git LFS pointers, tinyBenchmarks, one model's logs.

The variants in tests/fixtures/lm_eval_variants are the real 0.4.13 lines of tests/fixtures/lm_eval
rewritten in the older layouts (README.md there); every reading is checked against the harness's
own results file and against the reading of the same lines in the current layout.
"""

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import rankci
from rankci.adapters import detect_format, read_lm_eval

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = FIXTURES / "lm_eval" / "logs"
VARIANTS = FIXTURES / "lm_eval_variants"
MODELS = ("model-a", "model-b")


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_lm_eval(*args, **kwargs)


def cells(scores) -> dict:
    frame = scores.to_frame() if isinstance(scores, rankci.Scores) else scores
    return {(r.model, r.item): r.score for r in frame.itertuples(index=False)}


def task_means(scores) -> dict:
    frame = scores.to_frame()
    frame["task"] = frame["item"].str.split("/").str[0]
    return frame.groupby(["model", "task"], observed=True)["score"].mean().to_dict()


def modern(task, filter=None, n=None):
    """The same lines read from the real 0.4.13 logs, restricted to the kept documents."""
    scores = read([LOGS / m for m in MODELS], tasks=[task], filter=filter)
    keep = {k: v for k, v in cells(scores).items() if n is None or int(k[1].split("/")[1]) < n}
    return keep


@pytest.mark.parametrize("filter", ["strict", "first-letter"])
def test_the_0_4_2_layout_is_read_and_matches_the_harness(filter):
    root = VARIANTS / "v0.4.2"
    assert detect_format(root) == "lm-eval"
    scores = read(root, filter=filter)
    assert scores.models == MODELS
    assert scores.notes["log_layout"] == ["results.json + <model_args>_<task>.jsonl"]
    assert scores.notes["filter"] == {"toy_capitals": "none", "toy_echo": filter}
    means = task_means(scores)
    for model in MODELS:
        results = json.loads((root / model / "results.json").read_text())["results"]
        assert means[(model, "toy_capitals")] == pytest.approx(results["toy_capitals"]["acc,none"])
        assert means[(model, "toy_echo")] == pytest.approx(
            results["toy_echo"][f"exact_match,{filter}"]
        )
    # cell by cell the lines of the current layout
    got = cells(scores)
    assert {k: v for k, v in got.items() if "toy_echo" in k[1]} == modern("toy_echo", filter, 9)
    assert {k: v for k, v in got.items() if "toy_capitals" in k[1]} == modern(
        "toy_capitals", None, 10
    )


def test_the_0_4_2_layout_from_the_results_file_and_from_one_samples_file():
    model_a = VARIANTS / "v0.4.2" / "model-a"
    one = read(model_a / "results.json", filter="strict", as_frame=True)
    assert set(one["model"]) == {"model-a"} and len(one) == 10 + 9
    file_only = read(model_a / "pretrained__model-a_toy_capitals.jsonl", as_frame=True)
    assert set(file_only["item"].str.split("/").str[0]) == {"toy_capitals"}


def test_lines_without_a_filter_key_need_filter_and_the_error_says_so():
    root = VARIANTS / "v0.4.4"
    with pytest.raises(
        ValueError, match=r"2 filters \('strict', 'first-letter'\).*filter='strict'"
    ):
        read(root)
    for filter in ("strict", "first-letter"):
        scores = read(root, filter=filter)
        assert cells(scores) == modern("toy_echo", filter, 9)
        means = task_means(scores)
        for model in MODELS:
            (path,) = (root / model).glob("results_*.json")
            aggregate = json.loads(path.read_text())["results"]["toy_echo"]
            assert means[(model, "toy_echo")] == pytest.approx(aggregate[f"exact_match,{filter}"])


def test_blocks_that_contradict_the_harness_aggregates_are_refused(tmp_path):
    import shutil

    shutil.copytree(VARIANTS / "v0.4.4", tmp_path / "logs")
    (path,) = (tmp_path / "logs" / "model-a").glob("results_*.json")
    results = json.loads(path.read_text())
    results["results"]["toy_echo"]["exact_match,strict"] = 0.9
    path.write_text(json.dumps(results))
    with pytest.raises(ValueError, match="do not fall into blocks in the order of its filters"):
        read(tmp_path / "logs", filter="strict")


def test_a_corpus_level_metric_skips_its_task_with_a_note():
    root = VARIANTS / "corpus"
    with pytest.warns(rankci.RankciWarning, match="'toy_echo': metric 'bleu' is aggregated over"):
        scores = read_lm_eval(root)
    assert "toy_echo" in scores.notes["tasks_skipped_corpus_metric"]
    assert scores.clusters == ("toy_capitals",)
    means = task_means(scores)
    for model in MODELS:
        (path,) = (root / model).glob("results_*.json")
        aggregate = json.loads(path.read_text())["results"]["toy_capitals"]["acc,none"]
        assert means[(model, "toy_capitals")] == pytest.approx(aggregate)
    # asked for by name, it is skipped too; when nothing else is left, the error says why
    with pytest.raises(ValueError, match="every task read has only corpus-level metrics"):
        read(root, metric="bleu", tasks=["toy_echo"])


def test_tasks_and_exclude_tasks_select_by_name_group_and_pattern():
    scores = read(LOGS, tasks=["toy_mc"])  # a group: its subtasks
    assert scores.clusters == ("toy_arith", "toy_capitals")
    assert read(LOGS, tasks="toy_a*").clusters == ("toy_arith",)
    assert read(LOGS, exclude_tasks=["toy_mc"]).clusters == ("toy_echo",)
    assert read(LOGS, tasks="toy_mc,toy_echo", exclude_tasks="toy_arith").clusters == (
        "toy_capitals",
        "toy_echo",
    )
    assert read(LOGS, exclude_tasks=["toy_echo"]).notes["tasks_skipped"] == ["toy_echo"]
    with pytest.raises(ValueError, match="excluded task 'gsm8k' is not in the logs"):
        read(LOGS, exclude_tasks=["gsm8k"])
    with pytest.raises(ValueError, match="no task is left"):
        read(LOGS, tasks=["toy_echo"], exclude_tasks=["toy_e*"])


def test_a_git_lfs_pointer_is_named_as_such():
    with pytest.raises(ValueError, match="is a Git LFS pointer file.*git lfs pull"):
        read(VARIANTS / "lfs")


def test_tinybenchmarks_tasks_are_flagged_as_irt_scored():
    root = VARIANTS / "tiny"
    with pytest.warns(rankci.RankciWarning, match="'tinyArc' are tinyBenchmarks tasks.*IRT"):
        scores = read_lm_eval(root)
    assert "IRT estimate" in scores.notes["irt_scored"]["tinyArc"]
    frame = scores.to_frame()
    for model in MODELS:
        (path,) = (root / model).glob("results_*.json")
        harness = json.loads(path.read_text())["results"]["tinyArc"]["acc_norm,none"]
        (samples,) = (root / model).glob("samples_*.jsonl")
        raw = pd.read_json(samples, lines=True)["acc_norm"].mean()
        mine = frame.loc[frame["model"] == model, "score"].mean()
        assert mine == pytest.approx(raw)  # the raw item mean ...
        assert mine != pytest.approx(harness)  # ... which is not the harness's IRT estimate


def test_one_models_logs_load_as_a_table_and_combine():
    with pytest.raises(ValueError, match="only one model, 'model-a'.*as_frame=True"):
        read(LOGS / "model-a")
    frames = [read(LOGS / m, as_frame=True) for m in ("model-a", "model-b")]
    assert list(frames[0].columns) == ["model", "item", "cluster", "score"]
    assert frames[0].attrs["notes"]["metric"]["toy_arith"] == "acc"
    combined = rankci.read_scores(pd.concat(frames), cluster="cluster")
    assert cells(combined) == cells(read([LOGS / "model-a", LOGS / "model-b"]))
