"""Reading lm-evaluation-harness --log_samples output (real files written by lm-eval 0.4.13).

The fixtures in tests/fixtures/lm_eval/logs were produced by the harness itself (PROVENANCE.md);
the reader is checked against the harness's own aggregates in results_*.json.
"""

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import rankci
from rankci.adapters import read_lm_eval

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval" / "logs"
TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval" / "tasks"
MODELS = ("model-a", "model-b", "model-c")


def results(model: str) -> dict:
    (path,) = (LOGS / model).glob("results_*.json")
    return json.loads(path.read_text())


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_lm_eval(*args, **kwargs)


def task_means(scores: rankci.Scores) -> dict:
    frame = scores.to_frame()
    frame["task"] = frame["item"].str.split("/").str[0]
    return frame.groupby(["model", "task"], observed=True)["score"].mean().to_dict()


@pytest.mark.parametrize(
    "metric, filter",
    [("acc", None), ("acc_norm", None), ("exact_match", "strict"), ("exact_match", "first-letter")],
)
def test_task_means_equal_the_harness_aggregates(metric, filter):
    tasks = ["toy_echo"] if metric == "exact_match" else ["toy_arith", "toy_capitals"]
    scores = read(LOGS, metric=metric, filter=filter, tasks=tasks)
    means = task_means(scores)
    assert scores.models == MODELS
    for model in MODELS:
        aggregate = results(model)["results"]
        for task in tasks:
            key = f"{metric},{filter or 'none'}"
            assert means[(model, task)] == pytest.approx(aggregate[task][key], abs=1e-12)


def test_group_cluster_mean_equals_the_harness_group_aggregate():
    scores = read(LOGS, cluster="group", tasks=["toy_arith", "toy_capitals"])
    assert scores.clusters == ("toy_mc",)
    frame = scores.to_frame()
    for model in MODELS:
        group = results(model)["groups"]["toy_mc"]
        got = frame.loc[frame["model"] == model, "score"].mean()
        assert got == pytest.approx(group["acc,none"], abs=1e-12)  # weight_by_size: pooled mean


def test_items_counts_and_clusters_follow_the_logs():
    scores = read(LOGS)
    assert scores.clusters == ("toy_arith", "toy_capitals", "toy_echo")
    frame = scores.to_frame()
    for model in MODELS:
        effective = {t: n["effective"] for t, n in results(model)["n-samples"].items()}
        counts = frame[frame["model"] == model].groupby("cluster", observed=True).size()
        assert counts.to_dict() == effective
    # default metric: acc where the task has it, exact_match otherwise, first filter
    assert scores.notes["metric"] == {
        "toy_arith": "acc",
        "toy_capitals": "acc",
        "toy_echo": "exact_match",
    }
    assert scores.notes["filter"]["toy_echo"] == "strict"


def test_item_ids_from_a_document_field_match_the_task_data():
    scores = read(LOGS, item="doc.id")
    ids = set()
    for name in ("arith", "capitals", "echo"):
        with open(TASKS / f"{name}.jsonl") as handle:
            ids |= {f"toy_{name}/{json.loads(line)['id']}" for line in handle}
    assert set(scores.items) == ids


# toy logs certify nothing: the subject is the report of missing items
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_missing_items_are_reported_not_dropped():
    with pytest.warns(rankci.RankciWarning, match="model-c' lacks 5"):
        scores = read_lm_eval(LOGS)
    missing = scores.notes["missing"]
    assert missing["items_missing_by_model"] == {"model-c": 5}
    assert missing["examples"]["model-c"] == [f"toy_arith/{k}" for k in range(25, 30)]
    assert scores.n_items == 65 and scores.n_rows == 3 * 65 - 5
    ranking = rankci.rank(scores)  # the analysis counts what it leaves out
    assert ranking.excluded["observations_excluded"] == 5
    assert ranking.n_units == 60


def test_preference_lists_and_mappings_choose_per_task():
    scores = read(LOGS, metric=["acc_norm", "exact_match"], filter={"toy_echo": "first-letter"})
    assert scores.notes["metric"]["toy_arith"] == "acc_norm"
    assert scores.notes["metric"]["toy_echo"] == "exact_match"
    assert scores.notes["filter"]["toy_echo"] == "first-letter"


def test_models_can_be_renamed_and_selected_by_glob():
    scores = read(str(LOGS / "model-[ab]"), model={"model-a": "A"})
    assert scores.models == ("A", "model-b")
    listed = read([LOGS / "model-a", LOGS / "model-c"], model=str.upper)
    assert listed.models == ("MODEL-A", "MODEL-C")
    with pytest.raises(ValueError, match="only one model"):
        read(LOGS / "model-a")
    with pytest.raises(ValueError, match="names one model, but the logs hold 3"):
        read(LOGS, model="x")


def test_unknown_metric_filter_task_and_cluster_name_what_exists():
    with pytest.raises(ValueError, match="task 'toy_arith' has no metric 'f1'; it has: 'acc'"):
        read(LOGS, metric="f1")
    with pytest.raises(ValueError, match="has no filter 'nope'.*'strict', 'first-letter'"):
        read(LOGS, filter="nope", tasks=["toy_echo"])
    with pytest.raises(ValueError, match="task 'gsm8k' is not in the logs"):
        read(LOGS, tasks=["gsm8k"])
    with pytest.raises(ValueError, match="unknown cluster 'subtask'"):
        read(LOGS, cluster="subtask")
    with pytest.raises(ValueError, match="no lm-evaluation-harness samples files"):
        read(TASKS)


def _copy(tmp_path) -> Path:
    target = tmp_path / "logs"
    shutil.copytree(LOGS, target)
    return target


def test_different_documents_under_one_id_are_refused(tmp_path):
    logs = _copy(tmp_path)
    (path,) = (logs / "model-b").glob("samples_toy_capitals_*.jsonl")
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["doc_hash"] = "0" * 64
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="item 'toy_capitals/0' is a different document"):
        read(logs)


def test_a_later_run_supersedes_an_earlier_one_and_says_so(tmp_path):
    logs = _copy(tmp_path)
    (old,) = (logs / "model-a").glob("samples_toy_echo_*.jsonl")
    newer = old.with_name("samples_toy_echo_2099-01-01T00-00-00.000000.jsonl")
    records = [json.loads(line) for line in old.read_text().splitlines()]
    for r in records:
        r["exact_match"] = 1.0
    newer.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    scores = read(logs, tasks=["toy_echo"])
    assert scores.notes["superseded"] == [str(old.resolve())]
    frame = scores.to_frame()
    assert frame.loc[frame["model"] == "model-a", "score"].eq(1.0).all()


def test_corpus_level_metrics_alone_are_refused_with_the_reason(tmp_path):
    logs = _copy(tmp_path)
    (path,) = (logs / "model-a").glob("samples_toy_echo_*.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:
        r["metrics"] = ["bleu"]
        r["bleu"] = [r["target"], "lol"]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(ValueError, match="only corpus-level metrics.*toy_echo.*bleu"):
        read(logs / "model-a", tasks=["toy_echo"])


def test_scores_match_the_raw_sample_lines():
    """Cell by cell: the (model, item) score is the metric field of that model's line."""
    scores = read(LOGS, tasks=["toy_capitals"])
    values = scores.units("item").values
    for j, model in enumerate(scores.models):
        (path,) = (LOGS / model).glob("samples_toy_capitals_*.jsonl")
        raw = {
            f"toy_capitals/{r['doc_id']}": r["acc"]
            for r in map(json.loads, path.read_text().splitlines())
        }
        got = dict(zip(scores.units("item").labels, values[:, j]))
        assert got == raw
    assert np.isin(values, [0.0, 1.0]).all()
