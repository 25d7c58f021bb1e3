"""rankci.parallel: executors for replicates and bootstrap chunks (issue 18, item 4).

The reference for every seeded answer is NumPy's own ``SeedSequence(seed).spawn(n)`` with one
``default_rng`` per child, computed here by hand; serial, local processes (1 or 2 workers, any
chunking) and a Dask ``LocalCluster`` must all give exactly that.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from functools import partial
from operator import methodcaller
from pathlib import Path

import numpy as np
import pytest
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

from rankci.evidence.bootstrap import (
    bootstrap_means,
    cluster_bootstrap_means,
    resample_counts,
)
from rankci.parallel import (
    INSTALL_DISTRIBUTED,
    DaskExecutor,
    SerialExecutor,
    add_executor_arguments,
    child_seeds,
    executor_from_arguments,
    executor_scope,
    executor_workers,
    get_executor,
    map_replicates,
)

ROOT = Path(__file__).resolve().parents[1]
DRAW = methodcaller("normal", size=3)  # picklable: a replicate is three N(0, 1) draws


def by_hand(replicate, reps, seed):
    """NumPy's recipe for parallel streams, one generator per spawned child."""
    return [replicate(np.random.default_rng(s)) for s in np.random.SeedSequence(seed).spawn(reps)]


def failing(rng):
    if rng.random() < 0.5:
        raise ValueError("replicate failed")
    return 1


@pytest.fixture
def cluster():
    distributed = pytest.importorskip("distributed", reason="needs rankci[distributed]")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as local:
        yield local


# ---------------------------------------------------------------------------- get_executor


def test_default_is_local_processes_one_per_core():
    import os

    with get_executor() as pool:
        assert isinstance(pool, ProcessPoolExecutor)
        assert executor_workers(pool) == os.cpu_count()
    with get_executor("processes", workers=1) as pool:
        assert isinstance(pool, ProcessPoolExecutor) and executor_workers(pool) == 1


def test_serial_runs_in_the_caller_and_closes():
    pool = get_executor("serial")
    assert isinstance(pool, SerialExecutor) and executor_workers(pool) == 1
    calls = []
    future = pool.submit(calls.append, 1)
    assert calls == [1] and future.done()  # ran at submit, here
    error = pool.submit(int, "x")
    assert isinstance(error.exception(), ValueError)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(abs, 1)


def test_an_executor_is_passed_through_and_left_open():
    with ThreadPoolExecutor(max_workers=3) as threads:
        assert get_executor(threads) is threads
        with executor_scope(threads) as inside:
            assert inside is threads
        assert threads.submit(abs, -4).result() == 4  # the scope did not shut it down
        assert executor_workers(threads) == 3


def test_a_scope_shuts_down_what_it_opened():
    with executor_scope("processes", workers=1) as pool:
        assert pool.submit(abs, -2).result() == 2
    with pytest.raises(RuntimeError):
        pool.submit(abs, -2)


@pytest.mark.parametrize("bad", ["threads", "localhost:8786", 3, object()])
def test_unknown_executor_is_a_value_error_naming_the_keyword(bad):
    with pytest.raises(ValueError, match=r"executor must be None, 'processes', 'serial'"):
        get_executor(bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_workers_names_the_keyword(bad):
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        get_executor("processes", workers=bad)


def test_scheduler_without_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError) as caught:
        get_executor("tcp://127.0.0.1:8786")
    assert INSTALL_DISTRIBUTED in str(caught.value)
    assert 'pip install "rankci[distributed]"' in str(caught.value)
    assert "tcp://127.0.0.1:8786" in str(caught.value)


def test_import_rankci_parallel_loads_no_dask_and_no_numpy(tmp_path):
    code = (
        "import sys, rankci.parallel; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('dask', 'distributed', 'numpy')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- seeds


def test_child_seeds_are_numpys_spawned_children():
    ours = child_seeds(11, 4)
    numpys = np.random.SeedSequence(11).spawn(4)
    for a, b in zip(ours, numpys, strict=True):
        assert a.generate_state(4).tolist() == b.generate_state(4).tolist()
    states = {tuple(s.generate_state(2)) for s in ours}
    assert len(states) == 4  # four different streams


def test_child_seeds_from_a_generator_advance_it_and_repeat_for_the_same_state():
    first, second = np.random.default_rng(3), np.random.default_rng(3)
    a, b = child_seeds(first, 2), child_seeds(second, 2)
    assert [s.generate_state(2).tolist() for s in a] == [s.generate_state(2).tolist() for s in b]
    assert first.random() == second.random()  # both advanced by the same amount
    assert child_seeds(first, 2)[0].generate_state(2).tolist() != a[0].generate_state(2).tolist()


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True, np.random.RandomState(0)])
def test_bad_rng_names_the_keyword(bad):
    with pytest.raises(ValueError, match="rng must be None"):
        child_seeds(bad, 2)


# ---------------------------------------------------------------------------- map_replicates


def test_map_replicates_equals_numpys_recipe_on_every_local_executor():
    expected = by_hand(DRAW, 7, 2024)
    with ThreadPoolExecutor(2) as threads:
        in_threads = map_replicates(DRAW, 7, rng=2024, executor=threads, chunk_size=1)
    runs = {
        "threads, chunks of 1": in_threads,
        "serial": map_replicates(DRAW, 7, rng=2024, executor="serial"),
        "1 process": map_replicates(DRAW, 7, rng=2024, workers=1),
        "2 processes, chunks of 3": map_replicates(DRAW, 7, rng=2024, workers=2, chunk_size=3),
    }
    for name, found in runs.items():
        assert len(found) == 7, name
        for a, b in zip(found, expected, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_map_replicates_seed_matters_and_edge_sizes():
    a = map_replicates(DRAW, 3, rng=1, executor="serial")
    b = map_replicates(DRAW, 3, rng=2, executor="serial")
    assert not np.array_equal(np.stack(a), np.stack(b))
    assert map_replicates(DRAW, 0, rng=1, executor="serial") == []
    with pytest.raises(ValueError, match="reps must be an integer >= 0"):
        map_replicates(DRAW, -1, rng=1)
    with pytest.raises(ValueError, match="chunk_size must be an integer >= 1"):
        map_replicates(DRAW, 3, rng=1, chunk_size=0)


@pytest.mark.parametrize("executor", ["serial", "processes"])
def test_a_failing_replicate_raises_its_error(executor):
    with pytest.raises(ValueError, match="replicate failed"):
        map_replicates(failing, 20, rng=0, executor=executor, workers=2)


def test_dask_local_cluster_gives_the_same_answers(cluster):
    expected = by_hand(DRAW, 9, 77)
    by_address = map_replicates(DRAW, 9, rng=77, executor=cluster.scheduler_address)
    from distributed import Client

    with Client(cluster) as client:
        pool = get_executor(client)
        assert isinstance(pool, DaskExecutor) and executor_workers(pool) == 2
        by_client = map_replicates(DRAW, 9, rng=77, executor=client, chunk_size=2)
        assert client.status == "running"  # a client passed in stays open
    for found in (by_address, by_client):
        for a, b in zip(found, expected, strict=True):
            np.testing.assert_array_equal(a, b)


def test_dask_executor_closes_the_client_it_opened(cluster):
    pool = get_executor(cluster.scheduler_address)
    assert pool.submit(abs, -5).result() == 5
    pool.shutdown()
    assert pool.client.status in {"closed", "closing"}


# ---------------------------------------------------------------------------- a validation study


def _coverage_holm():
    sys.path.insert(0, str(ROOT / "validation"))
    try:
        import coverage_holm
    finally:
        sys.path.remove(str(ROOT / "validation"))
    return coverage_holm


def test_a_validation_study_is_the_same_serial_in_processes_and_on_dask(cluster):
    study = _coverage_holm()
    design = study.DESIGNS[2]  # clustered items, cluster units: three methods
    rows = {
        name: study.run_design(design, 6, 5, executor)
        for name, executor in (
            ("serial", "serial"),
            ("processes", "processes"),
            ("dask", cluster.scheduler_address),
        )
    }
    assert rows["serial"] == rows["processes"] == rows["dask"]
    # and equal to the replicates run by hand from NumPy's spawned children
    found = by_hand(partial(study.replicate, design), 6, 5)
    for row in rows["serial"]:
        key = (row["test"], row["coverage"])
        covered = sum(bool(rep[key][0].all()) for rep in found)
        assert row["simultaneous_coverage"] == covered / 6
        assert row["mean_width"] == pytest.approx(np.mean([rep[key][1] for rep in found]))


def test_study_flags(capsys):
    parser = argparse.ArgumentParser()
    add_executor_arguments(parser)
    assert isinstance(executor_from_arguments(parser.parse_args([])), ProcessPoolExecutor)
    serial = executor_from_arguments(parser.parse_args(["--executor", "serial"]))
    assert isinstance(serial, SerialExecutor)
    with pytest.raises(ValueError, match="--scheduler must be a Dask scheduler address"):
        executor_from_arguments(parser.parse_args(["--scheduler", "localhost:8786"]))
    with pytest.raises(ValueError, match="--workers must be an integer >= 1"):
        executor_from_arguments(parser.parse_args(["--workers", "0"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--executor", "threads"])
    assert "invalid choice: 'threads'" in capsys.readouterr().err


# ---------------------------------------------------------------------------- bootstrap


def _scores(missing: bool):
    rng = np.random.default_rng(8)
    x = (rng.random((400, 6)) < np.linspace(0.3, 0.8, 6)).astype(float)
    if missing:
        x[rng.random(x.shape) < 0.1] = np.nan
    return x, rng.integers(0, 30, 400)


def test_bootstrap_default_path_is_the_weights_formula():
    x, _ = _scores(False)
    means = bootstrap_means(x, 50, np.random.default_rng(4))
    weights = resample_counts(np.random.default_rng(4), 50, 400)  # one chunk at this size
    np.testing.assert_array_equal(means, weights @ x / 400)


@pytest.mark.parametrize("missing", [False, True])
def test_bootstrap_chunks_are_the_same_on_every_executor(missing, cluster):
    x, cluster_codes = _scores(missing)
    for draw in (
        partial(bootstrap_means, x, 203),
        partial(cluster_bootstrap_means, x, cluster_codes, 30, 203),
    ):
        serial = draw(np.random.default_rng(6), executor="serial")
        assert serial.shape == (203, 6)
        for executor in ("processes", cluster.scheduler_address):
            np.testing.assert_array_equal(draw(np.random.default_rng(6), executor=executor), serial)
        with ProcessPoolExecutor(max_workers=1) as one:
            np.testing.assert_array_equal(draw(np.random.default_rng(6), executor=one), serial)


def test_bootstrap_chunks_are_a_bootstrap():
    """Monte-Carlo: the resampled means centre on the column means with variance s^2 / n."""
    x, _ = _scores(False)
    draws = bootstrap_means(x, 4000, np.random.default_rng(9), executor="serial")
    n = x.shape[0]
    se = x.std(axis=0) / np.sqrt(n)  # the bootstrap's plug-in standard error (ddof 0)
    np.testing.assert_allclose(draws.mean(axis=0), x.mean(axis=0), atol=float(4 * se.max() / 63))
    np.testing.assert_allclose(draws.std(axis=0), se, rtol=0.08)
    # chunks come from different child streams: no two chunks repeat each other
    assert len({row.tobytes() for row in draws}) > 3900


def test_bootstrap_bad_executor_names_the_keyword():
    x, _ = _scores(False)
    with pytest.raises(ValueError, match="executor must be None"):
        bootstrap_means(x, 10, np.random.default_rng(0), executor="gpu")


# ---------------------------------------------------------------------------- the benchmark


def test_bench_parallel_quick_runs_and_every_executor_agrees():
    pytest.importorskip("distributed", reason="needs rankci[distributed]")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_parallel.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    labels = [row.split("|")[1].strip() for row in rows]
    assert any(label.startswith("processes") for label in labels)
    assert any(label.startswith("dask LocalCluster") for label in labels)
    # the answers equal the serial run's: study on processes and dask, bootstrap on processes
    assert sum(row.rstrip().endswith("| True |") for row in rows) == 3
    assert "load average before" in done.stdout


def test_executor_classes_are_executors():
    assert issubclass(SerialExecutor, Executor) and issubclass(DaskExecutor, Executor)
