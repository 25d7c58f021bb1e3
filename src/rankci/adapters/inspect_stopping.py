"""Anytime-valid early stopping inside Inspect AI: an EarlyStopping manager backed by the monitor.

One :class:`RankEarlyStopping` is shared by the tasks of several models evaluated on the same
shuffled dataset (``eval(task, model=[...])``, or several tasks given the same manager). Inspect
calls it before it runs each sample and after each sample is scored; the manager

* feeds the monitor (:class:`rankci.sequential.Monitor`) item by item **in the dataset's shuffled
  order**: item p is fed once every model still evaluated has scored it (its epochs averaged), and
  only after items 0, ..., p - 1, so the order in which samples happen to finish plays no part;
* answers ``schedule_sample`` with an ``EarlyStop`` for a model the monitor has retired -- its
  question (for example top-k membership) is settled -- so its remaining samples are not run;
  with ``max_lead`` it first holds back a model that is too far ahead of the others;
* records in each task's log (``results.early_stopping.metadata``) the certified statements, rank
  intervals, top-k statuses and the evaluations saved.

Why the order matters. The monitor's finite-benchmark guarantee (sampling model F) assumes the N
items are revealed in one uniformly random order shared by all models. The manager therefore
refuses to run unless every model's task holds the same samples in the same order, shuffled with a
seed: by :meth:`RankEarlyStopping.shuffle` (recommended) or by Inspect's
``eval(..., sample_shuffle=<seed>)``. Feeding items in completion order instead would let the
time a sample takes (which may depend on its difficulty) choose the order.

Errored samples. A sample that ends in an error (with ``fail_on_error=False``, after Inspect's own
``retry_on_error`` retries) is never scored, so that model's score on that item is missing. The
monitor's finite-benchmark e-processes cannot skip one item of one model (the offsets assume that
every item is revealed to every pair), so the rule is: **a model is retired at the item where its
sample errored** (reason ``"errored sample <id>"``). Its pairs keep the wealth they had after the
items before it. The guarantee is time-uniform (Ville's inequality bounds the chance that a wealth
*ever* reaches 1/alpha), and a frozen wealth is one of the values the unfrozen one took, so
freezing at any time -- even one chosen by the data, as an error is -- keeps every statement made
about the model, then or later, true with the stated probability for the accuracies over the whole
dataset (the argument of Proposition 4.5 of the source for retirements); the item, and every
later one, is fed without its score, and its remaining samples are not run. The manager learns of
the error from Inspect's ``on_sample_end`` hook (registered, once,
when the first task starts), so the other models never wait for a score that will not come.
Inspect's ``retry_on_error=N`` retries a passing failure before it counts as one.

Honest records. A model whose question is settled only after every one of its samples had run or
started saved nothing: the summary lists it under ``retired_nothing_saved``, never as retired.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from numbers import Integral

import numpy as np

from rankci._base import check_positive_int
from rankci.adapters.inspect import inspect_value_to_float
from rankci.sequential.spec import MonitorSpec

__all__ = ["RankEarlyStopping"]

MANAGER = "rankci"
#: the managers alive, told of errored samples by the one Inspect hook (:func:`_install_hook`)
_MANAGERS: weakref.WeakSet = weakref.WeakSet()
_HOOK: list = []  # the hook class, once registered with Inspect


class RankEarlyStopping:
    """Inspect ``EarlyStopping`` manager that stops models whose question the monitor has settled.

    Parameters
    ----------
    models : sequence of str
        The Inspect model names (``"openai/gpt-4o"``, ``"mockllm/a"``), fixed in advance.
    k : int, optional
        The top-k question; needed by the top-k retirement rules.
    retire : str, default "topk"
        The monitor's retirement rule (``"topk"``, ``"topk-safe"``, ``"resolved"``,
        ``"stop-at-goal"``, ``"width"``; see :class:`rankci.sequential.Monitor`).
    alpha : float, default 0.05
    order_seed : int, default 0
        Seed of :meth:`shuffle`.
    scorer : str, optional
        The scorer whose value is the score (default: the first one in each sample's scores).
    score_key : str, optional
        For scorers whose value is a dict.
    look_every : int, default 1
        Certify after every ``look_every`` items (and at the last).
    max_lead : int, optional
        Keep models in step: a model does not start item p before items up to ``p - max_lead``
        have been fed (its sample waits in ``schedule_sample``). Without it a fast model may run
        through the dataset before the slow ones let the monitor settle anything, and nothing
        is saved on it. Waiting samples hold their Inspect concurrency slot.
    lead_timeout : float, default 600
        Seconds a sample waits for the others at most (then it runs): a last resort, since an
        errored sample retires its model at once (see the module's "Errored samples") and so
        holds nobody up.
    **monitor_options
        Passed to :class:`rankci.sequential.Monitor` (``certifier``, ``bet``, ``width``, ...).
        ``sampling`` is ``"finite"`` with ``n_items`` the number of samples in the task.

    Examples
    --------
    >>> stopper = RankEarlyStopping(["openai/a", "openai/b", "openai/c"], k=1)  # doctest: +SKIP
    >>> stopper.shuffle(dataset)                                                  # doctest: +SKIP
    >>> task = Task(dataset=dataset, solver=generate(), scorer=match(),
    ...             early_stopping=stopper)                                       # doctest: +SKIP
    >>> eval(task, model=["openai/a", "openai/b", "openai/c"])                   # doctest: +SKIP
    >>> stopper.ranking()                                                         # doctest: +SKIP
    """

    def __init__(
        self,
        models: Sequence[str],
        *,
        k: int | None = None,
        retire: str = "topk",
        alpha: float = 0.05,
        order_seed: int = 0,
        scorer: str | None = None,
        score_key: str | None = None,
        look_every: int = 1,
        max_lead: int | None = None,
        lead_timeout: float = 600.0,
        **monitor_options,
    ) -> None:
        if isinstance(models, str) or not isinstance(models, Sequence) or len(models) < 2:
            raise ValueError("models must be a sequence of at least two Inspect model names")
        self.models = tuple(str(m) for m in models)
        if len(set(self.models)) != len(self.models):
            raise ValueError("model names must be distinct")
        if "sampling" in monitor_options or "n_items" in monitor_options:
            raise ValueError(
                "the manager evaluates a fixed dataset in a shuffled order: sampling is 'finite' "
                "and n_items is the number of samples"
            )
        if not isinstance(order_seed, Integral) or isinstance(order_seed, bool):
            raise ValueError(f"order_seed must be an integer, got {order_seed!r}")
        self.order_seed = int(order_seed)
        # the monitor's settings as one MonitorSpec, so that bad options fail before Inspect
        # starts (n_items, the number of samples, is filled in when the dataset is known)
        self.spec = MonitorSpec.given(
            None,
            {"alpha": alpha, "sampling": "finite", "retire": retire, "k": k,
             "look_every": check_positive_int(look_every, "look_every"), **monitor_options},
            "RankEarlyStopping",
        )
        self.spec.check_models(len(self.models))
        self.alpha, self.k, self.retire = self.spec.alpha, self.spec.k, self.spec.retire
        self.look_every = self.spec.look_every
        self.scorer = scorer
        self.score_key = score_key
        self.max_lead = None if max_lead is None else check_positive_int(max_lead, "max_lead")
        if not (isinstance(lead_timeout, (int, float)) and lead_timeout >= 0):
            raise ValueError(f"lead_timeout must be a number of seconds >= 0, got {lead_timeout!r}")
        self.lead_timeout = float(lead_timeout)
        self.monitor = None
        self._prepared: list[str] | None = None
        self._order: list[str] | None = None
        self._position: dict[str, int] = {}
        self._epochs = 1
        self._shuffle_source: str | None = None
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._sums: np.ndarray | None = None  # items x models: sum of epoch scores
        self._counts: np.ndarray | None = None  # items x models: epochs scored
        self._next = 0  # position of the next item to feed
        self._used = dict.fromkeys(self.models, 0)
        self._saved = dict.fromkeys(self.models, 0)
        self._ignored = dict.fromkeys(self.models, 0)
        self._waits = dict.fromkeys(self.models, 0)
        self._timeouts = dict.fromkeys(self.models, 0)
        self._errored: dict[str, list[str]] = {m: [] for m in self.models}  # sample ids
        self._failed: np.ndarray | None = None  # items x models: a sample of it errored
        self._eval_ids: dict[str, str] = {}  # Inspect's eval_id of each model's task -> model

    def _new_monitor(self, n_items: int):
        from rankci.sequential import Monitor

        return Monitor(self.models, self.spec.replace(n_items=n_items))

    # ------------------------------------------------------------------ preparing the data
    def shuffle(self, dataset) -> None:
        """Shuffle an Inspect dataset in place with this manager's seed and remember the order.

        Uses the dataset's own ``shuffle(seed)`` (a uniformly random permutation). Every model's
        task must then present exactly this order.
        """
        dataset.shuffle(seed=self.order_seed)
        self._prepared = [str(sample.id) for sample in dataset]
        if any(i == "None" for i in self._prepared) or len(set(self._prepared)) != len(dataset):
            raise ValueError("every sample needs a distinct id for early stopping")

    # ------------------------------------------------------------------ the protocol
    async def start_task(self, task, samples, epochs: int) -> str:
        """Register a model's task; refuse unless its order is the shared, seeded shuffle."""
        model = self._model(str(task.model))
        if model in self._started:
            raise ValueError(f"rankci early stopping: model {model!r} started a second task")
        order = [str(s.id) for s in samples]
        if self._order is None:
            self._check_shuffled(task, order)
            self._order = order
            self._position = {sample_id: p for p, sample_id in enumerate(order)}
            if len(self._position) != len(order):
                raise ValueError("rankci early stopping: sample ids must be distinct")
            self._epochs = int(epochs)
            self.monitor = self._new_monitor(len(order))
            self._sums = np.zeros((len(order), len(self.models)))
            self._counts = np.zeros((len(order), len(self.models)), dtype=np.int64)
            self._failed = np.zeros((len(order), len(self.models)), dtype=bool)
        elif order != self._order or int(epochs) != self._epochs:
            raise ValueError(
                f"rankci early stopping: model {model!r} sees its samples in another order (or "
                "with other epochs) than the first model; every model must see the same seeded "
                "shuffle of the same samples"
            )
        else:
            self._check_shuffled(task, order)
        self._started.add(model)
        eval_id = getattr(task, "eval_id", None)
        if eval_id:
            self._eval_ids[str(eval_id)] = model
        _install_hook()
        _MANAGERS.add(self)
        return MANAGER

    async def schedule_sample(self, id, epoch: int):
        """``EarlyStop`` for a model the monitor no longer needs, else None (after waiting for
        the other models when ``max_lead`` is set)."""
        model = self._current()
        if model is None or self.monitor is None:
            return None
        if self.max_lead is not None and model in self._needed():
            await self._keep_in_step(model, str(id), int(epoch))
        if model in self._needed():
            return None
        from inspect_ai.util import EarlyStop

        self._saved[model] += 1
        info = self.monitor.retired.get(model, {})
        reason = (
            f"rankci: {model} retired after {info.get('t', self.monitor.t)} items "
            f"({info.get('reason', 'evaluation finished')})"
        )
        return EarlyStop(id=id, epoch=epoch, reason=reason, metadata={"items": self.monitor.t})

    async def complete_sample(self, id, epoch: int, scores) -> None:
        """Record a model's score for one sample; feed every item now complete, in order."""
        model = self._current()
        if model is None or self.monitor is None:
            return
        position = self._position.get(str(id))
        if position is None:
            raise ValueError(f"rankci early stopping: sample {id!r} was not registered")
        j = self.models.index(model)
        self._used[model] += 1
        if position < self._next or not self.monitor.active[j]:
            self._ignored[model] += 1  # already fed without it, or the model is retired
            return
        self._sums[position, j] += self._value(scores, id, epoch)
        self._counts[position, j] += 1
        self._advance()

    def sample_errored(self, model: str, id, epoch: int) -> None:
        """A sample of ``model`` ended in an error: that model is retired at that item (see the
        module's "Errored samples"); the items after it are fed without waiting for it."""
        if self.monitor is None or model not in self.models:
            return
        position = self._position.get(str(id))
        if position is None:
            return
        j = self.models.index(model)
        if not self._failed[position, j]:
            self._failed[position, j] = True
            self._errored[model].append(str(id))
        self._advance()

    def _sample_ended(self, eval_id: str, sample) -> None:
        """Inspect's ``on_sample_end``: only errored samples of this manager's tasks matter."""
        if getattr(sample, "error", None) is None:
            return
        model = self._eval_ids.get(str(eval_id))
        if model is not None:
            self.sample_errored(model, sample.id, int(getattr(sample, "epoch", 1) or 1))

    async def complete_task(self) -> dict:
        """The summary stored in the task's log: certified statements, evaluations saved."""
        model = self._current()
        if model is not None:
            self._ended.add(model)
            self._advance()
        return self.summary(model)

    async def _keep_in_step(self, model: str, id: str, epoch: int) -> None:
        """Wait while this item is ``max_lead`` or more items ahead of the monitor."""
        import time

        import anyio

        position = self._position.get(id)
        if position is None or epoch < self._epochs:  # earlier epochs are needed anyway
            return
        deadline = time.monotonic() + self.lead_timeout
        waited = False
        while model in self._needed() and position >= self._next + self.max_lead:
            if time.monotonic() >= deadline:
                self._timeouts[model] += 1
                return
            waited = True
            await anyio.sleep(0.01)
        self._waits[model] += int(waited)

    # ------------------------------------------------------------------ results
    def ranking(self):
        """The monitor's current :class:`rankci.Ranking` (anytime-valid)."""
        if self.monitor is None:
            raise ValueError("no task has started yet")
        return self.monitor.ranking()

    def summary(self, model: str | None = None) -> dict:
        """JSON-safe summary: certified statements, rank intervals, top-k, evaluations saved."""
        if self.monitor is None:
            return {"manager": MANAGER, "started": False}
        ranking = self.monitor.ranking()
        statuses = ranking.top_k(self.k) if self.k is not None else None
        models = {}
        for j, name in enumerate(ranking.models):
            entry = {
                "score": None if np.isnan(ranking.score[j]) else float(ranking.score[j]),
                "rank_interval": [int(ranking.lower[j]), int(ranking.upper[j])],
                "evaluations_used": self._used[name],
                "evaluations_saved": self._saved[name],
                "evaluations_not_fed": self._ignored[name],
            }
            if self.max_lead is not None:
                entry["samples_waited"] = self._waits[name]
                entry["waits_timed_out"] = self._timeouts[name]
            if statuses is not None:
                entry[f"top_{self.k}"] = str(statuses[j])
            if self._errored[name]:
                entry["samples_errored"] = list(self._errored[name])
            if name in self.monitor.retired:
                record = {**self.monitor.retired[name], "evaluations_saved": self._saved[name]}
                # a retirement that stopped no sample saved nothing: never reported as one
                entry["retired" if self._saved[name] else "retired_nothing_saved"] = record
            models[name] = entry
        return {
            "manager": MANAGER,
            "model": model,
            "alpha": self.alpha,
            "k": self.k,
            "retire": self.retire,
            "max_lead": self.max_lead,
            "order": self._shuffle_source,
            "n_items": len(self._order),
            "epochs": self._epochs,
            "items_consumed": int(self.monitor.t),
            "certified": [list(pair) for pair in ranking.dominance_pairs()],
            "models": models,
            "evaluations_saved": int(sum(self._saved.values())),
            "retired": sorted(m for m, e in models.items() if "retired" in e),
            "retired_nothing_saved": sorted(
                m for m, e in models.items() if "retired_nothing_saved" in e
            ),
            "errors": (
                "a model whose sample ended in an error is retired at that item; its pairs keep "
                "the evidence of the items before it (a stopped e-process is an e-process)"
            ),
            "excluded": dict(self.monitor.excluded),
            "guarantee": ranking.guarantee,
        }

    def __repr__(self) -> str:
        state = "not started" if self.monitor is None else repr(self.monitor)
        return f"RankEarlyStopping({len(self.models)} models, k={self.k}, {state})"

    # ------------------------------------------------------------------ internals
    def _model(self, name: str) -> str:
        if name not in self.models:
            raise ValueError(
                f"rankci early stopping: model {name!r} is not one of the manager's models ("
                + ", ".join(repr(m) for m in self.models)
                + ")"
            )
        return name

    def _current(self) -> str | None:
        """The model of the task whose hook is running (Inspect keeps it in the task's context)."""
        from inspect_ai.model import get_model

        name = str(get_model())
        return name if name in self.models else None

    def _check_shuffled(self, task, order: list[str]) -> None:
        if self._prepared is not None and order == self._prepared:
            self._shuffle_source = f"RankEarlyStopping.shuffle(order_seed={self.order_seed})"
            return
        seed = getattr(task.config, "sample_shuffle", None)
        if isinstance(seed, int) and not isinstance(seed, bool):
            self._shuffle_source = f"eval(sample_shuffle={seed})"
            return
        problem = (
            "its samples are not in the order RankEarlyStopping.shuffle() made"
            if self._prepared is not None
            else "its dataset was not shuffled with a known seed"
        )
        raise ValueError(
            f"rankci early stopping refuses to run model {str(task.model)!r}: {problem}. The "
            "anytime-valid guarantee needs every model to see the same uniformly shuffled, seeded "
            "order: call stopper.shuffle(dataset) before building the task, or pass "
            "eval(..., sample_shuffle=<seed>)"
        )

    def _needed(self) -> set[str]:
        return set(self.monitor.needs())

    def _value(self, scores, id, epoch) -> float:
        if not scores:
            raise ValueError(f"rankci early stopping: sample {id!r} epoch {epoch} has no score")
        name = self.scorer if self.scorer is not None else next(iter(scores))
        if name not in scores:
            raise ValueError(
                f"rankci early stopping: sample {id!r} has no scorer {name!r}; it has: "
                + ", ".join(repr(s) for s in scores)
            )
        value = scores[name].score.value
        if isinstance(value, dict):
            if self.score_key is None or self.score_key not in value:
                raise ValueError(
                    f"rankci early stopping: scorer {name!r} gives a dict; name its key with "
                    "score_key="
                )
            value = value[self.score_key]
        return inspect_value_to_float(value, f"sample {id!r} epoch {epoch}: ")

    def _advance(self) -> None:
        """Feed items in order while every active model has scored all epochs of the next one."""
        monitor = self.monitor
        n = len(self._order)
        ended = np.array([m in self._ended for m in self.models])
        while self._next < n and not monitor.finished:
            failed = self._failed[self._next] & monitor.active
            for j in np.flatnonzero(failed):
                item = self._order[self._next]
                monitor.retire(self.models[j], reason=f"errored sample {item}")
            if monitor.finished:
                return
            active = monitor.active
            counts = self._counts[self._next]
            done = counts >= self._epochs
            waiting = active & ~done & ~ended
            if waiting.any():
                return
            row = np.full(len(self.models), np.nan)
            ok = active & done
            row[ok] = self._sums[self._next, ok] / counts[ok]
            monitor.update(row)
            self._next += 1


def _install_hook() -> None:
    """Register, once, the Inspect hook that tells the live managers of errored samples.

    Inspect calls ``on_sample_end`` when a sample has finished for good (scored, or errored with
    no retry left); it does not call the manager's ``complete_sample`` for an errored sample.
    """
    if _HOOK:
        return
    from inspect_ai.hooks import Hooks, hooks

    class _ErroredSamples(Hooks):
        def enabled(self) -> bool:
            return len(_MANAGERS) > 0

        async def on_sample_end(self, data) -> None:
            for manager in list(_MANAGERS):
                manager._sample_ended(data.eval_id, data.sample)

    hooks(name="rankci_early_stopping", description="rankci: errored samples under early stopping")(
        _ErroredSamples
    )
    _HOOK.append(_ErroredSamples)
