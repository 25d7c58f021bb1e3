"""Anytime-valid early stopping inside a real Inspect evaluation (mock models, planned answers).

Several mockllm models answer a few hundred synthetic items; whether model j answers item i
correctly is planned in advance (``plan[i, j]``), so the truth is known: under the finite-benchmark
sampling model the abilities are the column means of the plan. One RankEarlyStopping manager is
shared by the models' tasks; the checks are

* the evaluation stops models early (evaluations saved) and Inspect's logs record it;
* every certified statement is true for the planned abilities;
* the run is the monitor fed the planned scores in the shuffled order (whatever order samples
  happened to finish in): same certified statements, same retirements;
* the refusals: unshuffled data, another order for one model, an unknown model.
"""

import warnings

import anyio
import numpy as np
import pytest

pytest.importorskip("inspect_ai")  # in the dev extra; the skip only guards a bare install

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

import rankci  # noqa: E402
from rankci.adapters import read_inspect  # noqa: E402
from rankci.adapters.inspect_stopping import RankEarlyStopping  # noqa: E402
from rankci.sequential import Monitor  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N_ITEMS = 240
ACCURACY = {"mockllm/a": 0.92, "mockllm/b": 0.88, "mockllm/c": 0.5, "mockllm/d": 0.35}
MODELS = tuple(ACCURACY)
K = 2
MAX_LEAD = 12
SLOW = "mockllm/c"
LEAD_TIMEOUT = 8.0  # seconds: short, yet above any wait of a run that does not stall


def planned_model(name: str, plan_column: np.ndarray, fail_on: int | None = None, delay=0.0):
    async def outputs(messages, tools, tool_choice, config):
        i = int(messages[-1].text.split()[-1])
        if i == fail_on:
            raise RuntimeError("planned failure")
        if delay:
            await anyio.sleep(delay)  # a slower model
        out = ModelOutput.from_content(model=name, content="yes" if plan_column[i] else "no")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model(name, custom_outputs=outputs)


def dataset(n: int) -> MemoryDataset:
    return MemoryDataset(
        [Sample(input=f"Question {i}", target="yes", id=f"q{i:03d}") for i in range(n)]
    )


@pytest.fixture(scope="module")
def plan():
    rng = np.random.default_rng(8)
    return rng.random((N_ITEMS, len(MODELS))) < np.array(list(ACCURACY.values()))


@pytest.fixture(scope="module")
def run(plan, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("stopping")
    stopper = RankEarlyStopping(MODELS, k=K, retire="topk", order_seed=2026, max_lead=MAX_LEAD)
    data = dataset(N_ITEMS)
    stopper.shuffle(data)
    order = [int(sample.id[1:]) for sample in data]
    task = Task(dataset=data, solver=generate(), scorer=match(), early_stopping=stopper)
    models = [
        planned_model(m, plan[:, j], delay=0.003 if m == SLOW else 0.0)
        for j, m in enumerate(MODELS)
    ]
    logs = eval(task, model=models, log_dir=str(log_dir), display="none", max_tasks=len(MODELS))
    return {"stopper": stopper, "logs": logs, "order": order, "dir": log_dir}


def test_models_are_stopped_and_inspect_records_it(run):
    logs = {log.eval.model: log for log in run["logs"]}
    assert [log.status for log in logs.values()] == ["success"] * len(MODELS)
    summary = run["stopper"].summary()
    saved = sum(len(log.results.early_stopping.early_stops) for log in logs.values())
    assert saved == summary["evaluations_saved"] > 0.5 * N_ITEMS * len(MODELS)
    for name, log in logs.items():
        early = log.results.early_stopping
        assert early.manager == "rankci"
        assert early.metadata["models"][name]["evaluations_saved"] == len(early.early_stops)
        assert early.metadata["certified"]  # the statements certified when the task ended
        assert early.metadata["order"] == "RankEarlyStopping.shuffle(order_seed=2026)"
        scored = sum(1 for s in log.samples if s.scores)
        assert scored + len(early.early_stops) == N_ITEMS
    # the weak models' top-2 status is settled: they are certified out and were retired
    final = summary["models"]
    assert final["mockllm/c"]["top_2"] == final["mockllm/d"]["top_2"] == "out"
    assert {"mockllm/c", "mockllm/d"} <= set(run["stopper"].monitor.retired)


def test_max_lead_keeps_fast_models_in_step_with_the_slow_one(run):
    """A model starts item p only once items up to p - max_lead are fed, so after retiring at
    item t it has run at most t + max_lead samples, however fast it is."""
    summary = run["stopper"].summary()["models"]
    for name, entry in summary.items():
        retired_at = entry["retired"]["t"]
        assert entry["evaluations_used"] <= retired_at + MAX_LEAD, name
        assert entry["waits_timed_out"] == 0
    assert sum(entry["samples_waited"] for entry in summary.values()) > 0


def test_every_certified_statement_is_true_for_the_planned_abilities(run, plan):
    theta = dict(zip(MODELS, plan.mean(axis=0)))
    certified = run["stopper"].summary()["certified"]
    assert certified
    for better, worse in certified:
        assert theta[better] > theta[worse], (better, worse)


def test_the_run_equals_the_monitor_fed_in_the_shuffled_order(run, plan):
    """Completion order plays no part: the same statements and retirements as an offline feed."""
    assert_is_the_offline_monitor(run["stopper"], plan, run["order"])


def assert_is_the_offline_monitor(stopper, plan, order, errored=None):
    """The manager's monitor equals one fed the planned scores in the shuffled order offline
    (``errored``: (model, t), that model retired before item t, as the errored-sample rule says)."""
    reference = Monitor(
        MODELS, sampling="finite", n_items=len(order), retire="topk", k=K, look_every=1
    )
    for t, i in enumerate(order):
        if reference.finished:
            break
        if errored is not None and t == errored[1] and errored[0] not in reference.retired:
            reference.retire(errored[0], reason=f"errored sample q{i:03d}")
        row = plan[i].astype(float)
        row[~reference.active] = np.nan
        reference.update(row)
    assert stopper.monitor.t == reference.t
    assert stopper.monitor.retired == reference.retired
    np.testing.assert_array_equal(stopper.ranking().dominance, reference.ranking().dominance)


def test_logs_of_a_stopped_run_read_with_the_stops_reported(run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        scores = read_inspect(run["dir"])
    counts = scores.to_frame().groupby("model", observed=True).size()
    summary = run["stopper"].summary()["models"]
    for name in MODELS:
        assert counts[name] == N_ITEMS - summary[name]["evaluations_saved"]
    # items one model ran and another was stopped before are reported as missing
    assert scores.notes["missing"]["items_missing_by_model"]


def test_unshuffled_data_is_refused(tmp_path, plan):
    stopper = RankEarlyStopping(MODELS[:2], k=1)
    task = Task(dataset=dataset(20), solver=generate(), scorer=match(), early_stopping=stopper)
    models = [planned_model(m, plan[:, j]) for j, m in enumerate(MODELS[:2])]
    logs = eval(task, model=models, log_dir=str(tmp_path), display="none")
    assert all(log.status == "error" for log in logs)
    assert "not shuffled with a known seed" in logs[0].error.message


def test_a_model_with_another_order_is_refused(tmp_path, plan):
    stopper = RankEarlyStopping(MODELS[:2], k=1, order_seed=1)
    first, second = dataset(20), dataset(20)
    stopper.shuffle(first)
    second.shuffle(seed=99)
    tasks = [
        Task(dataset=d, solver=generate(), scorer=match(), early_stopping=stopper, name=f"t{n}")
        for n, d in enumerate((first, second))
    ]
    log_a = eval(tasks[0], model=planned_model(MODELS[0], plan[:, 0]), log_dir=str(tmp_path))
    log_b = eval(tasks[1], model=planned_model(MODELS[1], plan[:, 1]), log_dir=str(tmp_path))
    assert log_a[0].status == "success"
    assert log_b[0].status == "error"
    assert "in another order" in log_b[0].error.message


def test_an_unknown_model_and_bad_options_are_refused(tmp_path, plan):
    with pytest.raises(ValueError, match="needs k"):
        RankEarlyStopping(MODELS, retire="topk")
    with pytest.raises(ValueError, match="sampling is 'finite'"):
        RankEarlyStopping(MODELS, k=1, sampling="iid")
    stopper = RankEarlyStopping(MODELS[:2], k=1)
    data = dataset(10)
    stopper.shuffle(data)
    task = Task(dataset=data, solver=generate(), scorer=match(), early_stopping=stopper)
    logs = eval(task, model=planned_model("mockllm/z", plan[:, 0]), log_dir=str(tmp_path))
    assert logs[0].status == "error"
    assert "'mockllm/z' is not one of the manager's models" in logs[0].error.message


def test_an_errored_sample_under_the_brake_neither_stalls_nor_reports_empty_retirements(plan):
    """The issue-26 case: fail_on_error=False, one errored sample early on, max_lead=20 and a short
    lead_timeout. Before, the models waited for the errored score until lead_timeout, then ran
    every sample, and the summary listed retirements that saved nothing. Now the errored model
    is retired at that item (its pairs keep the evidence of the items before it), nobody waits
    for its score, and every retirement reported saved samples."""
    import tempfile

    n_items, failing, at = 160, "mockllm/b", 25
    rng = np.random.default_rng(26)
    planned = rng.random((n_items, len(MODELS))) < np.array(list(ACCURACY.values()))
    # a lead_timeout far above any wait a loaded machine needs: on the old code the models waited
    # for the errored score until it ran out (so waits_timed_out > 0 however long it is); now
    # nobody waits for it, so no wait runs out, whatever the machine's load (no wall-clock bound)
    stopper = RankEarlyStopping(
        MODELS, k=K, retire="topk", order_seed=2026, max_lead=20, lead_timeout=120
    )
    data = dataset(n_items)
    stopper.shuffle(data)
    order = [int(sample.id[1:]) for sample in data]
    task = Task(dataset=data, solver=generate(), scorer=match(), early_stopping=stopper)
    models = [
        planned_model(m, planned[:, j], fail_on=order[at] if m == failing else None)
        for j, m in enumerate(MODELS)
    ]
    with tempfile.TemporaryDirectory() as log_dir, warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        logs = eval(task, model=models, log_dir=log_dir, display="none", fail_on_error=False,
                    max_tasks=len(MODELS), log_buffer=n_items)
    assert [log.status for log in logs] == ["success"] * len(MODELS)
    summary = stopper.summary()
    entries = summary["models"]
    # it never stalled: no wait ran into lead_timeout
    assert all(entry["waits_timed_out"] == 0 for entry in entries.values()), entries
    # the rule: the errored model is retired at that item, its sample named
    assert entries[failing]["samples_errored"] == [f"q{order[at]:03d}"]
    assert entries[failing]["retired"]["t"] == at
    assert entries[failing]["retired"]["reason"] == f"errored sample q{order[at]:03d}"
    # honest retirements: every one reported stopped samples, as Inspect's logs record them
    stops = {log.eval.model: len(log.results.early_stopping.early_stops) for log in logs}
    assert summary["retired"] and summary["evaluations_saved"] > n_items
    for name in summary["retired"]:
        assert entries[name]["retired"]["evaluations_saved"] == stops[name] > 0
    for name in summary["retired_nothing_saved"]:
        assert stops[name] == 0 and "retired" not in entries[name]
    assert set(summary["retired"]) | set(summary["retired_nothing_saved"]) == set(
        stopper.monitor.retired
    )
    # the guarantee: every certified statement is true for the accuracies over all 300 items
    theta = dict(zip(MODELS, planned.mean(axis=0)))
    for better, worse in summary["certified"]:
        assert theta[better] > theta[worse], (better, worse)
    # and the run is the monitor fed in the shuffled order, the errored model retired at item 25
    assert_is_the_offline_monitor(stopper, planned, order, errored=(failing, at))


def test_an_error_on_the_last_item_retires_with_nothing_saved_and_says_so(tmp_path, plan):
    stopper = RankEarlyStopping(MODELS[:3], k=1, retire="none", order_seed=5)
    data = dataset(30)
    stopper.shuffle(data)
    last = int(list(data)[-1].id[1:])
    task = Task(dataset=data, solver=generate(), scorer=match(), early_stopping=stopper)
    models = [
        planned_model(m, plan[:, j], fail_on=last if j == 1 else None)
        for j, m in enumerate(MODELS[:3])
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        logs = eval(task, model=models, log_dir=str(tmp_path), display="none", fail_on_error=False)
    assert [log.status for log in logs] == ["success"] * 3
    summary = stopper.summary()
    assert stopper.monitor.t == 30  # every item fed, the last one without the errored model
    assert stopper.monitor.excluded["items_excluded"] == 0
    assert summary["retired"] == [] and summary["evaluations_saved"] == 0
    assert summary["retired_nothing_saved"] == [MODELS[1]]
    record = summary["models"][MODELS[1]]["retired_nothing_saved"]
    assert record == {"t": 29, "reason": f"errored sample q{last:03d}", "evaluations_saved": 0}


def test_inspects_own_seeded_shuffle_is_accepted(tmp_path, plan):
    stopper = RankEarlyStopping(MODELS[:2], k=1, retire="none")
    task = Task(dataset=dataset(20), solver=generate(), scorer=match(), early_stopping=stopper)
    models = [planned_model(m, plan[:, j]) for j, m in enumerate(MODELS[:2])]
    logs = eval(task, model=models, log_dir=str(tmp_path), display="none", sample_shuffle=7)
    assert [log.status for log in logs] == ["success", "success"]
    summary = stopper.summary()
    assert summary["order"] == "eval(sample_shuffle=7)"
    assert summary["items_consumed"] == 20 and summary["evaluations_saved"] == 0
    order = [str(sample.id) for sample in logs[0].samples]
    assert sorted(order) == [f"q{i:03d}" for i in range(20)]
