"""lm-eval ``repeats: 3`` logs read with repeats="trial" (real files written by lm-eval 0.4.13).

The fixtures in tests/fixtures/lm_eval_repeats/logs were produced by the harness itself
(PROVENANCE.md). The reader is checked against the harness's own numbers: its one metric value per
document (the score of the response its filter keeps) and its aggregates in results_*.json, and
against the raw responses re-scored here by plain string comparison / argmax.
"""

import json
import shutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import rankci
from rankci.adapters import read_lm_eval, read_log
from rankci.adapters.lm_eval_repeats import response_scores
from rankci.cli import main

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_repeats" / "logs"
MODELS = ("model-a", "model-b", "model-c")


def lines(model: str, task: str) -> list[dict]:
    (path,) = (LOGS / model).glob(f"samples_{task}_*.jsonl")
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def aggregates(model: str) -> dict:
    (path,) = (LOGS / model).glob("results_*.json")
    return json.loads(path.read_text())["results"]


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_lm_eval(*args, **kwargs)


def trial_rows(scores) -> dict:
    frame = scores.trials.frame
    return {(r.model, r.item, int(r.trial)): r.score for r in frame.itertuples()}


def test_generated_responses_become_trials_scored_against_the_target():
    scores = read(LOGS, repeats="trial", filter="first", tasks="toy_rep_echo")
    rows = trial_rows(scores)
    assert scores.notes["repeated_trials"]["trials_per_item"] == [3, 3]
    assert len(rows) == 3 * 20 * 3
    for model in MODELS:
        first = [x for x in lines(model, "toy_rep_echo") if x["filter"] == "first"]
        for line in first:
            responses = line["resps"][0]
            for r, text in enumerate(responses):  # the raw response against the target
                got = rows[(model, f"toy_rep_echo/{line['doc_id']}", r)]
                assert got == float(text == line["target"])
            # the harness's own value is that of the first response
            assert rows[(model, f"toy_rep_echo/{line['doc_id']}", 0)] == line["exact_match"]
        # trial 0's mean is the harness's aggregate exact_match,first
        mean0 = np.mean([rows[(model, f"toy_rep_echo/{x['doc_id']}", 0)] for x in first])
        assert mean0 == pytest.approx(aggregates(model)["toy_rep_echo"]["exact_match,first"])
    # the per-item score is the mean over the three responses
    frame = scores.to_frame().set_index(["model", "item"])["score"]
    line = lines("model-b", "toy_rep_echo")[4]
    expected = np.mean([t == line["target"] for t in line["resps"][0]])
    assert frame[("model-b", f"toy_rep_echo/{line['doc_id']}")] == pytest.approx(expected)


def test_majority_vote_filter_gives_the_same_trials_and_is_checked_against_the_harness():
    first = read(LOGS, repeats="trial", filter="first", tasks="toy_rep_echo")
    majority = read(LOGS, repeats="trial", filter="maj@3", tasks="toy_rep_echo")
    assert trial_rows(first) == trial_rows(majority)
    # the harness's maj@3 value is the score of the most common response (oracle: Counter)
    for model in MODELS:
        for line in lines(model, "toy_rep_echo"):
            if line["filter"] != "maj@3":
                continue
            vote = Counter(line["resps"][0]).most_common(1)[0][0]
            assert float(vote == line["target"]) == line["exact_match"]


@pytest.mark.parametrize("metric", ["acc", "acc_norm"])
def test_multiple_choice_repeats_are_scored_by_the_argmax_of_each_repeat(metric):
    scores = read(LOGS, repeats="trial", metric=metric, tasks="toy_rep_sums")
    rows = trial_rows(scores)
    for model in MODELS:
        doc_lines = lines(model, "toy_rep_sums")
        for line in doc_lines:
            lls = np.array([[float(p[0]) for p in choice] for choice in line["resps"]])
            if metric == "acc_norm":
                lengths = [len(c) for c in line["doc"]["choices"]]
                lls = lls / np.array(lengths, dtype=float)[:, None]
            gold = line["doc"]["answer"]
            for r in range(3):
                got = rows[(model, f"toy_rep_sums/{line['doc_id']}", r)]
                assert got == float(int(np.argmax(lls[:, r])) == gold)
            assert rows[(model, f"toy_rep_sums/{line['doc_id']}", 0)] == line[metric]
        mean0 = np.mean([rows[(model, f"toy_rep_sums/{x['doc_id']}", 0)] for x in doc_lines])
        assert mean0 == pytest.approx(aggregates(model)["toy_rep_sums"][f"{metric},none"])


def test_default_keeps_the_harness_value_per_document():
    plain = read(LOGS, filter="first")
    assert plain.trials is None and "repeated_trials" not in plain.notes
    frame = plain.to_frame().set_index(["model", "item"])["score"]
    for model in MODELS:
        for line in lines(model, "toy_rep_echo"):
            if line["filter"] == "first":
                assert frame[(model, f"toy_rep_echo/{line['doc_id']}")] == line["exact_match"]
    with pytest.raises(ValueError, match="unknown repeats 'samples'; choose one of"):
        read(LOGS, repeats="samples")


def test_pass_at_k_over_the_responses_matches_brute_force():
    scores = read(LOGS, repeats="trial", filter="first").per_item("pass@2")
    frame = scores.to_frame().set_index(["model", "item"])["score"]
    line = lines("model-c", "toy_rep_echo")[7]
    outcomes = [t == line["target"] for t in line["resps"][0]]
    pairs = [(i, j) for i in range(3) for j in range(i + 1, 3)]
    expected = np.mean([outcomes[i] or outcomes[j] for i, j in pairs])
    assert frame[("model-c", f"toy_rep_echo/{line['doc_id']}")] == pytest.approx(expected)


def test_a_filter_that_rewrites_responses_is_refused_naming_task_filter_and_metric():
    with pytest.raises(ValueError) as error:
        read(LOGS, repeats="trial", filter="first-letter", tasks="toy_rep_echo")
    message = str(error.value)
    assert "task 'toy_rep_echo', metric 'exact_match'" in message
    assert "filter 'first-letter' (regex -> take_first) rewrites the responses" in message


def test_metrics_and_configs_that_cannot_be_rescored_are_refused():
    line = lines("model-a", "toy_rep_echo")[0]
    kwargs = dict(task="toy_x", filter_name="none", path="samples_toy_x.jsonl")
    config = {"output_type": "loglikelihood", "metric_list": [{"metric": "perplexity"}]}
    with pytest.raises(
        ValueError,
        match="task 'toy_x': the per-response value of metric "
        "'perplexity' \\(loglikelihood task\\) cannot be determined",
    ):
        response_scores([line], config, metric="perplexity", **kwargs)
    with pytest.raises(ValueError, match="repeats='trial' needs the task's config"):
        response_scores([line], None, metric="exact_match", **kwargs)
    custom = {"output_type": "generate_until", "process_results": "!function utils.score"}
    with pytest.raises(ValueError, match="its own process_results"):
        response_scores([line], custom, metric="exact_match", **kwargs)
    options = {
        "output_type": "generate_until",
        "metric_list": [{"metric": "exact_match", "ignore_case": True}],
    }
    # ignore_case is re-applied: "Cat" scores as "cat"
    assert response_scores(
        [{"target": "cat", "resps": [["Cat", "dog"]], "exact_match": 1.0}],
        options,
        metric="exact_match",
        **kwargs,
    ) == [[1.0, 0.0]]


def test_a_logged_value_the_rescoring_does_not_reproduce_is_an_error(tmp_path):
    copy = tmp_path / "logs"
    shutil.copytree(LOGS, copy)
    (path,) = (copy / "model-b").glob("samples_toy_rep_echo_*.jsonl")
    records = [json.loads(x) for x in path.read_text().splitlines()]
    target = next(r for r in records if r["filter"] == "first")
    target["exact_match"] = 1.0 - target["exact_match"]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ValueError) as error:
        read(copy, repeats="trial", filter="first", tasks="toy_rep_echo")
    message = str(error.value)
    assert f"doc_id {target['doc_id']}" in message and "the harness logged exact_match" in message


def test_read_log_and_the_command_line_take_repeats(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        scores = read_log("lm-eval", LOGS, repeats="trial", filter="first")
    assert scores.notes["repeated_trials"]["trial_rows"] == 3 * 40 * 3
    with pytest.raises(ValueError, match="repeats= applies to lm-eval logs"):
        read_log("inspect", LOGS, repeats="trial")
    argv = [
        "rank",
        str(LOGS),
        "--repeats",
        "trial",
        "--filter",
        "first",
        "--per-item",
        "pass@2",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["spec"]["trials"] == "pass@2"
    assert out["details"]["repeated_trials"]["per_item"] == "pass@2"
    assert "unbiased pass@2 over its trials (3 per item)" in out["guarantee"]
    assert "360 trials (3 per item" in captured.err
    # rankci check records the rule end to end
    argv = [
        "check",
        str(LOGS),
        "--repeats",
        "trial",
        "--filter",
        "first",
        "--per-item",
        "pass^2",
        "--claim",
        "model-a > model-c",
        "--format",
        "json",
    ]
    main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["spec"]["method"]["trials"] == "pass^2"
    assert out["details"]["repeated_trials"]["per_item"] == "pass^2"
    assert "unbiased pass^2 over its trials (3 per item)" in out["guarantee"]


def test_trial_gaps_is_a_keyword_of_the_trial_readers_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        scores = read_log("lm-eval", LOGS, repeats="trial", filter="first", trial_gaps="allow")
    assert scores.trials.gaps == "allow"
    with pytest.raises(ValueError, match="trial_gaps= applies to lm-eval and Inspect logs"):
        read_log("helm", LOGS, trial_gaps="allow")
