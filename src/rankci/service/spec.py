"""What a board is, fixed when it is created: its models, items, item order and monitor settings.

The shared item order follows the replay contract of :mod:`rankci.sequential.replay`: the item ids
sorted as strings, permuted by ``numpy.random.default_rng(order_seed).permutation(N)``. So a board's
evaluation can be reproduced offline with ``rankci monitor scores.csv --order-seed S`` (and the
same look and retirement settings) on its exported scores.

The monitor settings are one :class:`~rankci.sequential.spec.MonitorSpec` (``BoardSpec.monitor``),
stored in the board's JSON under ``"monitor"``. Boards stored before it existed (rankci at commit
3500ffd) held the settings at the top of the JSON; :meth:`BoardSpec.from_json` reads both.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from numbers import Integral
from typing import Any

import numpy as np

from rankci.sequential.certify import resolve_certifier
from rankci.sequential.entry import OpenMonitor
from rankci.sequential.monitor import Monitor
from rankci.sequential.replay import evaluation_order
from rankci.sequential.spec import REPLAY_DEFAULTS, MonitorSpec, parse_look_every

__all__ = [
    "BOARD_ID",
    "ITEM_ENTRIES",
    "KINDS",
    "MAX_CELLS",
    "MAX_MODELS",
    "OLD_SETTINGS",
    "VOTE_SETTINGS",
    "BoardSpec",
    "make_spec",
    "make_vote_spec",
]

BOARD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
MAX_MODELS = 1000
MAX_CELLS = 20_000_000  # models x items held in memory per board (160 MB of float64)
MAX_NAME = 200
MAX_TITLE = 500  # characters of a board's title
KINDS = ("scores", "votes")  # what a board holds
ITEM_ENTRIES = ("closed", "open")  # whether a score may bring a new item
#: The monitor settings a votes board allows (those of rankci.votes.sequential.ArenaMonitor).
VOTE_SETTINGS = (
    "sampling='iid', bet in (mixture, agrapa, fixed), certifier in (auto, bonferroni), "
    "retire='none', look_every a vote count, entry in (closed, open)"
)
#: The monitor settings a board's JSON held at its top level before ``"monitor"`` existed.
OLD_SETTINGS = ("alpha", "sampling", "bet", "certifier", "retire", "k", "width", "look_every")


@dataclass(frozen=True)
class BoardSpec:
    """A board's fixed description (stored as JSON; everything else is rebuilt from the scores).

    Attributes
    ----------
    id, benchmark, run, title : str
    models : tuple of str
    items : tuple of str
        Item ids, in the order they were given.
    clusters : tuple of str or None
        Each item's cluster (category, subject), or None.
    order_seed : int
        Seed of the shared item order (the replay contract).
    monitor : MonitorSpec
        The monitor's settings, as the monitor runs them: ``n_items`` is N under
        ``sampling="finite"``, ``look_every`` the item count, the certifier resolved for the
        models. ``alpha``, ``sampling``, ``certifier``, ``look_every``, ... read it.
    look_every_option : int or str
        ``look_every`` as given (``"1%"`` or an item count).
    public : bool
        Whether reads need no token.
    created_at : str
        ISO 8601, UTC.
    kind : {"scores", "votes"}
        What the board holds (boards stored before kinds existed hold scores). A votes board
        has no items (``items == ()``); its ``look_every`` is a vote count
        (:mod:`rankci.service.voteboard`).
    item_entry : {"closed", "open"}
        ``"open"``: a score for an item not on the board appends that item to the shared order
        (in the order the scores were committed; ``sampling="iid"`` only). Fixed at creation;
        boards stored before it existed load as ``"closed"`` (their items fixed).
    """

    id: str
    benchmark: str
    run: str
    models: tuple
    items: tuple
    clusters: tuple | None
    order_seed: int
    monitor: MonitorSpec = MonitorSpec(look_every=1)
    look_every_option: int | str = "1%"
    public: bool = True
    title: str = ""
    created_at: str = ""
    kind: str = "scores"
    item_entry: str = "closed"
    _order: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        # the monitor settings read as the board's own (spec.alpha, spec.look_every, ...)
        if name in _SETTING_NAMES:
            return getattr(self.monitor, name)
        raise AttributeError(f"'BoardSpec' object has no attribute {name!r}")

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def order(self) -> np.ndarray:
        """Item indices in evaluation order (position p holds item ``order[p]``)."""
        if self._order is None:
            object.__setattr__(self, "_order", evaluation_order(self.items, self.order_seed))
        return self._order

    def make_monitor(self) -> Monitor:
        """A fresh monitor with the board's settings (the look schedule of the replay contract)."""
        if self.monitor.entry == "open":  # models may join later
            return OpenMonitor(list(self.models), self.monitor)
        return Monitor(list(self.models), self.monitor)

    def settings(self) -> dict:
        """The monitor settings (JSON-safe) and the seed of the order."""
        out = {
            key: value
            for key, value in self.monitor.to_dict().items()
            if key not in ("flow", "version", "n_items")
        }
        return {**out, "order_seed": self.order_seed, "item_entry": self.item_entry}

    def to_json(self) -> str:
        data: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "_order"
        }
        data["monitor"] = self.monitor.to_dict()
        if self.kind == "scores":  # stored as before kinds existed
            del data["kind"]
        if self.item_entry == "closed":  # stored as before item entry existed
            del data["item_entry"]
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> BoardSpec:
        """The board a :meth:`to_json` wrote; also the JSON of boards stored before the
        ``"monitor"`` record (the settings at the top, :data:`OLD_SETTINGS`)."""
        data = json.loads(text)
        if not _valid_unicode(json.dumps(data, ensure_ascii=False)):
            raise ValueError(
                "the stored board holds text that is not valid Unicode (a lone UTF-16 "
                "surrogate): it cannot be served"
            )
        data["models"] = tuple(data["models"])
        data["items"] = tuple(data["items"])
        if data.get("clusters") is not None:
            data["clusters"] = tuple(data["clusters"])
        if "monitor" in data:
            data["monitor"] = MonitorSpec.from_dict(data["monitor"])
        else:  # stored by rankci before the MonitorSpec (commit 3500ffd and earlier)
            old = {key: data.pop(key) for key in OLD_SETTINGS if key in data}
            if old.get("sampling", "finite") == "finite":
                old["n_items"] = len(data["items"])
            data["monitor"] = MonitorSpec.from_dict(old)
        data.setdefault("kind", "scores")  # stored before kinds existed
        data.setdefault("item_entry", "closed")  # stored before items could grow
        if data["item_entry"] not in ITEM_ENTRIES:
            raise ValueError(f"the stored board has an unknown item_entry {data['item_entry']!r}")
        if data["kind"] not in KINDS:
            raise ValueError(f"the stored board has an unknown kind {data['kind']!r}")
        return cls(**data)


_SETTING_NAMES = frozenset(f.name for f in fields(MonitorSpec)) - {"n_items"}


def checked_name(value: object, what: str, limit: int = MAX_NAME, empty: bool = False) -> str:
    """A name that can be stored and served: valid Unicode (no lone surrogate, which UTF-8
    cannot encode), no control characters, 1-``limit`` characters (0 with ``empty``)."""
    if isinstance(value, bool) or not isinstance(value, (str, Integral)):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    text = str(value)
    shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
    if len(text) > limit or (not text and not empty):
        raise ValueError(
            f"{what} must be {0 if empty else 1}-{limit} characters, got {len(text):,}"
        )
    if _CONTROL.search(text):
        raise ValueError(f"{what} {shown} must be printable characters (no control characters)")
    if not _valid_unicode(text):
        raise ValueError(
            f"{what} {shown} is not valid Unicode (a lone UTF-16 surrogate cannot be stored)"
        )
    return text


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_unicode(text: str) -> bool:
    """Whether UTF-8 can encode ``text`` (it holds no lone UTF-16 surrogate)."""
    return _SURROGATE.search(text) is None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:48] or "board"


def make_spec(
    *,
    benchmark: str,
    run: str,
    models: Sequence[str],
    items: Sequence,
    clusters: Sequence[str] | None = None,
    board_id: str | None = None,
    order_seed: int | None = None,
    public: bool = True,
    title: str = "",
    monitor: MonitorSpec | None = None,
    item_entry: str = "closed",
    **settings: Any,
) -> BoardSpec:
    """Validate a board's description; every problem is a ValueError naming the field.

    ``items`` are ids, or mappings ``{"id": ..., "cluster": ...}`` (then ``clusters`` is taken
    from them). ``order_seed`` defaults to a fresh random seed, recorded in the spec.

    Parameters
    ----------
    benchmark, run : str
        Names of the benchmark and of the run (the default id is ``<benchmark>--<run>``).
    models : sequence of str
        The models (at least two).
    items : sequence
        Item ids, or mappings with ``id`` and ``cluster``.
    clusters : sequence of str, optional
        Cluster of each item.
    board_id : str, optional
        The board's id.
    order_seed : int, optional
        Seed of the evaluation order (:func:`rankci.sequential.replay.evaluation_order`).
    public : bool, default True
        A private board needs a token to be read.
    title : str
        Page title (default ``"<benchmark> · <run>"``).
    monitor : MonitorSpec, optional
        The monitor's settings (:class:`~rankci.sequential.spec.MonitorSpec`; ``n_items`` None
        or N). Or give them as keywords (``**settings``: alpha, sampling, bet, lam, grid, eps,
        certifier, retire, k, width, look_every, freeze), with ``look_every="1%"`` by default.
    item_entry : {"closed", "open"}, default "closed"
        ``"open"``: scores may name items not on the board, which then join the shared order
        at its end, in the order they are committed (``sampling="iid"``, no clusters; a
        percentage ``look_every`` is taken of the items given at creation).

    Returns
    -------
    BoardSpec

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md).

    Examples
    --------
    >>> from rankci.service.spec import make_spec
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b", "c"],
    ...                  items=[f"q{i}" for i in range(20)], order_seed=0, look_every=10)
    >>> spec.id, spec.n_models, spec.n_items, spec.title
    ('demo--r1', 3, 20, 'demo · r1')
    >>> spec.monitor.look_every, spec.monitor.n_items, spec.certifier
    (10, 20, 'exact')
    >>> from rankci.sequential.replay import evaluation_order
    >>> spec.order.tolist() == evaluation_order([f"q{i}" for i in range(20)], 0).tolist()
    True
    >>> make_spec(benchmark="demo", run="r1", models=["a"], items=["q0"])
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    settings = MonitorSpec.given(monitor, settings, "make_spec", defaults=REPLAY_DEFAULTS)
    benchmark = checked_name(benchmark, "benchmark")
    run = checked_name(run, "run")
    models = _model_names(models)
    items, clusters = _item_ids(items, clusters)
    _check_items(models, items)
    clusters = _cluster_names(clusters, items)
    board_id = _board_id(board_id, benchmark, run)
    order_seed = _order_seed(order_seed)
    if settings.look_every is None:
        raise ValueError("look_every must be an item count or 'P%': a board looks at a schedule")
    _check_item_entry(item_entry, settings.sampling, clusters)
    finite = settings.sampling == "finite"
    if finite and settings.n_items not in (None, len(items)):
        raise ValueError(f"n_items must be the number of items ({len(items)}) or None")
    # store the resolved values, so the spec says exactly what the monitor does
    resolved = settings.replace(
        n_items=len(items) if finite else settings.n_items,
        look_every=parse_look_every(settings.look_every, len(items)),
        certifier=(
            resolve_certifier(settings.certifier, len(models))
            if settings.entry == "closed"
            else "bonferroni"  # entry="open": the one certifier proved for models joining
        ),
    )
    resolved.check_models(len(models))
    return BoardSpec(
        id=board_id,
        benchmark=benchmark,
        run=run,
        models=models,
        items=items,
        clusters=clusters,
        order_seed=int(order_seed),
        monitor=resolved,
        look_every_option=settings.look_every,
        public=bool(public),
        title=checked_name(title or f"{benchmark} · {run}", "title", MAX_TITLE),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        item_entry=item_entry,
    )


def _check_item_entry(item_entry: object, sampling: str, clusters) -> None:
    """Items may grow only under ``sampling="iid"`` (the population of items is open) and on
    a board without clusters (a new item names none)."""
    if item_entry not in ITEM_ENTRIES:
        raise ValueError(f"item_entry must be 'closed' or 'open', got {item_entry!r}")
    if item_entry == "closed":
        return
    if sampling != "iid":
        raise ValueError(
            "item_entry 'open' needs sampling 'iid': under sampling 'finite' the benchmark is "
            "the fixed set of items given at creation, whose means are ranked"
        )
    if clusters is not None:
        raise ValueError("item_entry 'open' is for a board without clusters (a new item has none)")


def _model_names(models: Sequence[str]) -> tuple[str, ...]:
    """The board's models: a list of at least two distinct names, at most MAX_MODELS."""
    if isinstance(models, (str, Mapping)) or not isinstance(models, Sequence):
        raise ValueError("models must be a list of model names")
    models = tuple(checked_name(m, "model name") for m in models)
    if len(models) < 2:
        raise ValueError("a board needs at least two models")
    if len(models) > MAX_MODELS:
        raise ValueError(f"a board holds at most {MAX_MODELS} models, got {len(models)}")
    seen: set = set()
    for m in models:
        if m in seen:
            raise ValueError(f"model {m!r} is listed twice")
        seen.add(m)
    return models


def _item_ids(items: Sequence, clusters: Sequence[str] | None) -> tuple[tuple[str, ...], Any]:
    """Item ids and clusters, from ids or from mappings ``{"id": ..., "cluster": ...}``."""
    if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence) or not items:
        raise ValueError("items must be a non-empty list of item ids")
    if isinstance(items[0], Mapping):
        if clusters is not None:
            raise ValueError("give clusters either inside items or as a list, not both")
        ids, found = [], []
        for n, entry in enumerate(items):
            if not isinstance(entry, Mapping) or "id" not in entry:
                raise ValueError(f"item {n} must be an object with an 'id'")
            ids.append(entry["id"])
            found.append(entry.get("cluster"))
        items = ids
        has = [c is not None for c in found]
        if any(has) and not all(has):
            raise ValueError(f"item {has.index(False)} has no cluster while others do")
        clusters = found if all(has) else None
    return tuple(checked_name(i, "item id") for i in items), clusters


def _check_items(models: tuple[str, ...], items: tuple[str, ...]) -> None:
    """At most MAX_CELLS scores per board, and every item listed once."""
    if len(models) * len(items) > MAX_CELLS:
        raise ValueError(
            f"{len(models)} models x {len(items)} items exceeds {MAX_CELLS:,} scores per board"
        )
    if len(set(items)) != len(items):
        counts: dict = {}
        for i in items:
            counts[i] = counts.get(i, 0) + 1
        twice = next(i for i, c in counts.items() if c > 1)
        raise ValueError(f"item {twice!r} is listed twice")


def _cluster_names(clusters: Sequence[str] | None, items: tuple[str, ...]):
    """One cluster name per item, or None."""
    if clusters is None:
        return None
    if isinstance(clusters, str) or len(clusters) != len(items):
        raise ValueError(f"clusters must give one cluster per item ({len(items)})")
    return tuple(checked_name(c, "cluster") for c in clusters)


def _board_id(board_id: str | None, benchmark: str, run: str) -> str:
    """The given id, or ``<benchmark>--<run>`` slugged; 1-100 safe characters."""
    if board_id is None:
        board_id = f"{_slug(benchmark)}--{_slug(run)}"
    if not isinstance(board_id, str) or not BOARD_ID.match(board_id):
        raise ValueError(
            f"board id {board_id!r} must be 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return board_id


def _order_seed(order_seed: int | None) -> int:
    """The seed of the evaluation order: the given one, or a fresh random one."""
    if order_seed is None:
        order_seed = secrets.randbits(63)
    if isinstance(order_seed, bool) or not isinstance(order_seed, Integral) or order_seed < 0:
        raise ValueError(f"order_seed must be an integer >= 0, got {order_seed!r}")
    return int(order_seed)


def make_vote_spec(
    *,
    benchmark: str,
    run: str,
    models: Sequence[str],
    board_id: str | None = None,
    public: bool = True,
    title: str = "",
    given: frozenset | None = None,
    **settings: Any,
) -> BoardSpec:
    """Validate a votes board's description (``kind="votes"``); a ValueError names the field.

    The monitor is :class:`rankci.votes.sequential.ArenaMonitor`: the settings it allows are
    :data:`VOTE_SETTINGS`. Settings not in ``given`` (default: those passed; the API passes
    the fields its request set, the others being the scores board's defaults) take
    the arena's (``sampling="iid"``, ``certifier="bonferroni"``, ``retire="none"``,
    ``look_every=100`` votes).

    Examples
    --------
    >>> spec = make_vote_spec(benchmark="arena", run="r1", models=["x", "y"], look_every=50)
    >>> spec.kind, spec.monitor.sampling, spec.monitor.look_every, spec.items
    ('votes', 'iid', 50, ())
    >>> make_vote_spec(benchmark="arena", run="r1", models=["x", "y"], bet="ons")
    Traceback (most recent call last):
    ...
    ValueError: bet='ons' is not offered for votes; ... (a votes board allows sampling='iid', ...)
    """
    from rankci.votes.sequential import ArenaMonitor

    given = frozenset(settings) if given is None else given
    arena = {"sampling": "iid", "certifier": "bonferroni", "retire": "none", "look_every": 100}
    for key, value in arena.items():
        if key not in given:
            settings[key] = value
    settings.pop("n_items", None)
    look_every = settings.get("look_every")
    if isinstance(look_every, bool) or not isinstance(look_every, Integral) or look_every < 1:
        raise ValueError(
            f"look_every must be a vote count >= 1 on a votes board (a percentage needs a fixed "
            f"number of items), got {look_every!r}"
        )
    if settings.get("certifier") == "auto":
        settings["certifier"] = "bonferroni"
    try:
        monitor = MonitorSpec(**settings)
        models = _model_names(models)
        ArenaMonitor(models, monitor)
    except ValueError as error:
        raise ValueError(f"{error} (a votes board allows {VOTE_SETTINGS})") from None
    benchmark = checked_name(benchmark, "benchmark")
    run = checked_name(run, "run")
    return BoardSpec(
        id=_board_id(board_id, benchmark, run),
        benchmark=benchmark,
        run=run,
        models=models,
        items=(),
        clusters=None,
        order_seed=0,
        monitor=monitor,
        look_every_option=int(look_every),
        public=bool(public),
        title=checked_name(title or f"{benchmark} · {run}", "title", MAX_TITLE),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        kind="votes",
    )
