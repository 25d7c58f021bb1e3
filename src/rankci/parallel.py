"""Executors for embarrassingly parallel work: Monte-Carlo replicates and bootstrap chunks.

One interface, :class:`concurrent.futures.Executor`, for three places the work can run:

* ``"processes"`` (the default of :func:`get_executor`): a local
  :class:`~concurrent.futures.ProcessPoolExecutor`, one worker per core;
* ``"serial"``: :class:`SerialExecutor`, every call run in the caller at ``submit`` (tests,
  debugging, profiling);
* a Dask scheduler address (``"tcp://host:8786"``): :class:`DaskExecutor` on a
  ``distributed.Client`` (``pip install "rankci[distributed]"``); Dask is imported only then.

Any :class:`~concurrent.futures.Executor` (or a ``distributed.Client``) passed in is used as it is.

Reproducible by construction: :func:`map_replicates` gives replicate ``i`` its own generator from
the ``i``-th child of one :class:`numpy.random.SeedSequence`,

    ``seed_i = SeedSequence(seed).spawn(reps)[i]``,  ``result_i = replicate(default_rng(seed_i))``,

so ``result_i`` is a function of ``(replicate, seed, i)`` alone: the same seed gives the same
answers in any executor, with any number of workers and any chunking. Spawned children are
statistically independent streams (L'Ecuyer et al. 2017; NumPy's "Parallel random number
generation"), unlike ``seed + i``.

References
----------
L'Ecuyer, P., Munger, D., Oreshkin, B. and Simard, R. (2017). Random numbers for parallel
computers: requirements and methods, with emphasis on GPUs. Mathematics and Computers in
Simulation 135, 3-17.
NumPy documentation, "Parallel random number generation" (``SeedSequence.spawn``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from rankci._base import check_positive_int
from rankci._progress import Progress

if TYPE_CHECKING:  # numpy and argparse are imported by the functions that need them
    import argparse

    import numpy as np

T = TypeVar("T")

__all__ = [
    "EXECUTORS",
    "SCHEDULER_SCHEMES",
    "INSTALL_DISTRIBUTED",
    "SerialExecutor",
    "DaskExecutor",
    "get_executor",
    "executor_scope",
    "executor_workers",
    "child_seeds",
    "map_replicates",
    "run_replicates",
    "collect",
    "add_executor_arguments",
    "executor_from_arguments",
]

#: the named executors; anything else is a scheduler address or an Executor
EXECUTORS = ("processes", "serial")
#: the address schemes of a Dask scheduler (distributed's comm backends)
SCHEDULER_SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")
#: what to run when Dask distributed is missing
INSTALL_DISTRIBUTED = 'pip install "rankci[distributed]"'


class SerialExecutor(Executor):
    """An Executor that runs each call in the caller, at ``submit``.

    The answers are those of any other executor (see :func:`map_replicates`); use it to debug a
    replicate function (tracebacks and breakpoints stay in one process) or to profile it.

    Examples
    --------
    >>> with SerialExecutor() as pool:
    ...     pool.submit(pow, 2, 10).result()
    1024
    """

    def __init__(self) -> None:
        self._shutdown = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future[T] = Future()
        try:
            result = fn(*args, **kwargs)
        except Exception as error:  # the Future carries it, as a worker's would
            future.set_exception(error)
        else:
            future.set_result(result)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True


class DaskExecutor(Executor):
    """The :class:`concurrent.futures.Executor` interface on a ``distributed.Client``.

    Calls are submitted with ``pure=False`` (every replicate chunk is a new task, and Dask does not
    hash the arguments). ``shutdown`` waits for (or cancels) the submitted work and closes the
    client if this executor opened it.

    Parameters
    ----------
    client : distributed.Client
        A connected client.
    close_client : bool
        Close ``client`` at ``shutdown`` (True when :func:`get_executor` opened it).

    Examples
    --------
    >>> from distributed import Client, LocalCluster            # doctest: +SKIP
    >>> cluster = LocalCluster(n_workers=2, processes=False)      # doctest: +SKIP
    >>> with get_executor(cluster.scheduler_address) as pool:     # doctest: +SKIP
    ...     pool.submit(pow, 2, 10).result()
    1024
    """

    def __init__(self, client: Any, *, close_client: bool = False) -> None:
        self.client = client
        self.close_client = close_client
        self._inner = client.get_executor(pure=False)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        return self._inner.submit(fn, *args, **kwargs)

    @property
    def workers(self) -> int:
        """Threads across the cluster's workers (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._inner.shutdown(wait=wait and not cancel_futures)
        if self.close_client:
            self.client.close()
            self.close_client = False


def _is_client(value: object) -> bool:
    """A ``distributed.Client`` (checked by name, so Dask is never imported to ask)."""
    kind = type(value)
    return kind.__name__ == "Client" and kind.__module__.startswith("distributed")


def get_executor(executor: object = None, *, workers: int | None = None) -> Executor:
    """The :class:`concurrent.futures.Executor` named by ``executor``.

    ==============================  ===========================================================
    ``executor``                    returns
    ==============================  ===========================================================
    ``None`` or ``"processes"``     ``ProcessPoolExecutor(workers or os.cpu_count())``
    ``"serial"``                    :class:`SerialExecutor` (runs in the caller)
    ``"tcp://host:port"`` (a Dask   :class:`DaskExecutor` on ``distributed.Client(address)``,
    scheduler address)              closed with the executor
    a ``distributed.Client``        :class:`DaskExecutor` on it (left open)
    an ``Executor``                 itself
    ==============================  ===========================================================

    The caller shuts down what it gets (``with get_executor(...) as pool:``), or uses
    :func:`executor_scope`, which shuts down only what it created.

    Parameters
    ----------
    executor : None, str, concurrent.futures.Executor or distributed.Client
        Where to run (table above).
    workers : int, optional
        Local worker processes (``"processes"`` only; default ``os.cpu_count()``). A Dask
        cluster has its own workers.

    Returns
    -------
    concurrent.futures.Executor

    Raises
    ------
    ValueError
        For any other ``executor`` (the message lists the accepted forms) or a bad ``workers``.
    ImportError
        For a scheduler address when Dask distributed is not installed (names the extra to
        install).

    References
    ----------
    Python documentation, ``concurrent.futures``; Dask distributed, ``Client.get_executor``.

    Examples
    --------
    >>> with get_executor("serial") as pool:
    ...     list(pool.map(abs, [-1, 2, -3]))
    [1, 2, 3]
    >>> with get_executor("processes", workers=2) as pool:
    ...     list(pool.map(abs, [-1, 2, -3]))
    [1, 2, 3]
    >>> get_executor("threads")
    Traceback (most recent call last):
    ...
    ValueError: executor must be None, 'processes', 'serial', a Dask scheduler address ...
    """
    if workers is not None:
        workers = check_positive_int(workers, "workers")
    if isinstance(executor, Executor):
        return executor
    if _is_client(executor):
        return DaskExecutor(executor)
    if executor is None or executor == "processes":
        return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    if executor == "serial":
        return SerialExecutor()
    if isinstance(executor, str) and executor.startswith(SCHEDULER_SCHEMES):
        return _dask_executor(executor)
    raise ValueError(
        "executor must be None, 'processes', 'serial', a Dask scheduler address such as "
        "'tcp://host:8786', a distributed.Client or a concurrent.futures.Executor; "
        f"got {executor!r}"
    )


def _dask_executor(address: str) -> DaskExecutor:
    try:
        from distributed import Client
    except ImportError as error:
        raise ImportError(
            f"executor={address!r} (a Dask scheduler) needs Dask distributed, which is not "
            f"installed: {INSTALL_DISTRIBUTED}"
        ) from error
    try:
        client = Client(address)
    except OSError as error:
        raise OSError(f"could not reach the Dask scheduler at {address!r}: {error}") from error
    return DaskExecutor(client, close_client=True)


@contextmanager
def executor_scope(executor: object = None, *, workers: int | None = None) -> Iterator[Executor]:
    """``with executor_scope(executor) as pool:`` -- shuts down only an executor it created.

    An :class:`~concurrent.futures.Executor` (or client) passed in stays open for the caller; a
    name or address is opened with :func:`get_executor` and shut down at the end (its pending
    work cancelled if the block raised).

    Examples
    --------
    >>> pool = SerialExecutor()
    >>> with executor_scope(pool) as inside:
    ...     inside is pool
    True
    >>> pool.submit(abs, -2).result()  # still open
    2
    """
    created = get_executor(executor, workers=workers)
    owned = created is not executor
    try:
        yield created
    except BaseException:
        if owned:
            created.shutdown(wait=False, cancel_futures=True)
            owned = False
        raise
    finally:
        if owned:
            created.shutdown(wait=True)


def executor_workers(executor: Executor) -> int:
    """How many calls ``executor`` runs at once (1 if it does not say).

    Examples
    --------
    >>> executor_workers(SerialExecutor())
    1
    >>> with ProcessPoolExecutor(max_workers=3) as pool:
    ...     executor_workers(pool)
    3
    """
    if isinstance(executor, DaskExecutor):
        return executor.workers
    count = getattr(executor, "_max_workers", None)  # Process- and ThreadPoolExecutor
    return count if isinstance(count, int) and count > 0 else 1


def child_seeds(rng: object, count: int) -> list[np.random.SeedSequence]:
    """``count`` independent child seeds of ``rng`` (``SeedSequence.spawn``).

    An int or None seeds ``SeedSequence(rng)`` (None: fresh entropy); a SeedSequence is spawned
    from (its spawn counter advances); a Generator gives up four 64-bit words of its stream as the
    entropy of a new SeedSequence, so the generator advances by the same amount every time.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The parent seed.
    count : int
        Number of children.

    Returns
    -------
    list of numpy.random.SeedSequence

    References
    ----------
    NumPy documentation, "Parallel random number generation".

    Examples
    --------
    >>> import numpy as np
    >>> first = child_seeds(7, 3)
    >>> [s.spawn_key for s in first]
    [(0,), (1,), (2,)]
    >>> [s.spawn_key for s in np.random.SeedSequence(7).spawn(3)] == [(0,), (1,), (2,)]
    True
    >>> child_seeds(7, 3)[2].generate_state(2).tolist() == first[2].generate_state(2).tolist()
    True
    """
    import numpy as np

    count = check_positive_int(count, "count", minimum=0)
    if isinstance(rng, np.random.Generator):
        root = np.random.SeedSequence(rng.integers(0, 2**64, size=4, dtype=np.uint64).tolist())
    elif isinstance(rng, np.random.SeedSequence):
        root = rng
    elif rng is None or (isinstance(rng, int) and not isinstance(rng, bool) and rng >= 0):
        root = np.random.SeedSequence(rng)
    else:
        raise ValueError(
            "rng must be None, a non-negative int seed, a numpy.random.SeedSequence or a "
            f"numpy.random.Generator, got {rng!r}"
        )
    return root.spawn(count)


def run_replicates(replicate: Callable[[np.random.Generator], T], seeds: list) -> list[T]:
    """``[replicate(default_rng(s)) for s in seeds]``: one chunk of :func:`map_replicates`.

    Module-level, so that every executor can pickle it.

    Examples
    --------
    >>> import numpy as np
    >>> from operator import methodcaller
    >>> seeds = child_seeds(1, 2)
    >>> run_replicates(methodcaller("integers", 100), seeds) == [
    ...     int(np.random.default_rng(s).integers(100)) for s in seeds]
    True
    """
    import numpy as np

    return [replicate(np.random.default_rng(seed)) for seed in seeds]


def map_replicates(
    replicate: Callable[[np.random.Generator], T],
    reps: int,
    rng: object = None,
    *,
    executor: object = None,
    workers: int | None = None,
    chunk_size: int | None = None,
    desc: str = "",
) -> list[T]:
    """Run ``replicate(generator)`` ``reps`` times, in chunks on ``executor``, in order.

    Replicate i draws from ``default_rng(child_seeds(rng, reps)[i])``, so the list returned is
    the same whatever the executor, the number of workers and the chunking: a function of
    ``(replicate, rng, reps)`` alone when ``rng`` is an int. Chunks of ``chunk_size`` replicates
    (default: about four chunks per worker) are the tasks; results come back in replicate order.

    Parameters
    ----------
    replicate : callable
        ``replicate(generator) -> result``; picklable for processes and Dask (a module-level
        function, or ``functools.partial`` of one).
    reps : int
        Number of replicates.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The parent seed (see :func:`child_seeds`); pass an int to reproduce a study.
    executor : None, str, Executor or distributed.Client
        Where to run (see :func:`get_executor`; None = local processes). One passed in stays open.
    workers : int, optional
        Local worker processes when ``executor`` is None or ``"processes"``.
    chunk_size : int, optional
        Replicates per task. Changes the speed, never the answers.
    desc : str
        Label of the progress bar (drawn on a terminal; see ``RANKCI_PROGRESS``).

    Returns
    -------
    list
        ``[replicate(generator_0), ..., replicate(generator_{reps-1})]``.

    References
    ----------
    L'Ecuyer, P. et al. (2017). Random numbers for parallel computers: requirements and methods.
    Mathematics and Computers in Simulation 135, 3-17.

    Examples
    --------
    >>> import numpy as np
    >>> from operator import methodcaller
    >>> draw = methodcaller("normal")                     # one N(0, 1) draw per replicate
    >>> serial = map_replicates(draw, 6, rng=42, executor="serial")
    >>> local = map_replicates(draw, 6, rng=42, workers=2, chunk_size=4)   # 2 processes
    >>> serial == local
    True
    >>> serial == [np.random.default_rng(s).normal() for s in np.random.SeedSequence(42).spawn(6)]
    True
    """
    reps = check_positive_int(reps, "reps", minimum=0)
    if chunk_size is not None:
        chunk_size = check_positive_int(chunk_size, "chunk_size")
    seeds = child_seeds(rng, reps)
    if reps == 0:
        return []
    with executor_scope(executor, workers=workers) as pool:
        if chunk_size is None:
            chunk_size = max(1, math.ceil(reps / (4 * executor_workers(pool))))
        starts = range(0, reps, chunk_size)
        futures = [
            pool.submit(run_replicates, replicate, seeds[start : start + chunk_size])
            for start in starts
        ]
        chunks = collect(futures, reps, desc)
    return [result for chunk in chunks for result in chunk]


def collect(
    futures: list[Future[T]], total: int, desc: str = "", *, count: Callable[[T], int] = len
) -> list[T]:
    """The results of ``futures`` in their order, with a progress bar over ``total`` units.

    Each finished future advances the bar by ``count(result)``. The first exception cancels the
    futures not yet started and is raised.

    Examples
    --------
    >>> pool = SerialExecutor()
    >>> collect([pool.submit(list, range(k)) for k in (2, 3)], 5)
    [[0, 1], [0, 1, 2]]
    """
    with Progress(total, desc, min_interval=0.5) as bar:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    raise error
                bar.update(count(future.result()))
    return [future.result() for future in futures]


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--executor``, ``--workers`` and ``--scheduler`` to a script's argument parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_executor_arguments(parser)
    >>> args = parser.parse_args(["--executor", "serial"])
    >>> isinstance(executor_from_arguments(args), SerialExecutor)
    True
    """
    group = parser.add_argument_group("where the replicates run")
    group.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="processes",
        help="local worker processes (default) or serial, in this process; the answers are the "
        "same for a given --seed",
    )
    group.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes for --executor processes (default: one per core)",
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="a Dask scheduler address, e.g. tcp://host:8786 (overrides --executor; needs pip "
        'install "rankci[distributed]")',
    )


def executor_from_arguments(args: argparse.Namespace) -> Executor:
    """The executor the flags of :func:`add_executor_arguments` ask for (the caller shuts it down).

    A bad ``--scheduler`` or ``--workers`` is a ValueError naming the flag.
    """
    workers = getattr(args, "workers", None)
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ValueError(f"--workers must be an integer >= 1, got {workers!r}")
    scheduler = getattr(args, "scheduler", None)
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler.startswith(SCHEDULER_SCHEMES):
            raise ValueError(
                f"--scheduler must be a Dask scheduler address such as tcp://host:8786, "
                f"got {scheduler!r}"
            )
        return get_executor(scheduler)
    return get_executor(getattr(args, "executor", "processes"), workers=workers)
