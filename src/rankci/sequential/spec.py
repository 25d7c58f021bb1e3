"""The monitor specification: one frozen, validated record of every anytime-valid setting.

A :class:`MonitorSpec` holds what the anytime-valid flow is run with: the level **alpha**, the
**sampling** model (and the benchmark size **n_items** under model F), the **bet** of the
e-processes (**lam**, **grid**, **eps**), the **certifier**, the **retire** rule (**k**, **width**),
the look schedule **look_every** and **freeze**. It is validated once, when it is made, and
every consumer takes it: :class:`~rankci.sequential.Monitor` (``Monitor(models, spec)``),
:func:`~rankci.sequential.replay` (``replay(scores, spec, order_seed=0)``), the service's board
description (:class:`rankci.service.spec.BoardSpec`), its request body
(:class:`rankci.service.schemas.BoardCreate`, whose setting fields are built from this one list)
and ``rankci monitor`` (whose flags are built from it too). Every anytime-valid
:class:`rankci.Ranking` carries the spec it was made with (``ranking.spec``); its JSON
(``ranking.to_dict()["spec"]``) says ``"flow": "anytime"``, and :func:`spec_from_dict` reads
either flow's spec back.

Adding a setting is one field here (its default, help text and CLI words in the metadata, its
check in :func:`_validated`) and its use where it acts; the CLI flag and the service's request
field follow from the field. The default must reproduce the behaviour before the setting existed:
saved dicts written without the field then load with it (:meth:`MonitorSpec.from_dict` fills the
missing fields with their defaults; an unknown field is refused).

This module imports nothing heavy (no numpy), so the command line builds its flags from it.

References
----------
Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
:mod:`rankci.sequential`; docs/references.md),
Sections 3-4 (the settings) and Appendix B (the bets).

Examples
--------
>>> spec = MonitorSpec(sampling="iid", certifier="exact", retire="topk", k=1)
>>> spec.replace(alpha=0.1).alpha
0.1
>>> MonitorSpec.from_dict(spec.to_dict()) == spec
True
>>> spec.to_dict()["flow"]
'anytime'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

from rankci._base import check_alpha, check_choice, check_positive_int

__all__ = [
    "BETS",
    "CERTIFIERS",
    "DEFAULT_GRID",
    "ENTRIES",
    "FLOW",
    "FREEZE_WORDS",
    "REPLAY_DEFAULTS",
    "RETIRE_RULES",
    "SAMPLINGS",
    "SETTINGS",
    "TOPK_RULES",
    "VERSION",
    "MonitorSpec",
    "check_bet",
    "check_eps",
    "parse_look_every",
    "spec_from_dict",
]

SAMPLINGS = ("finite", "iid")
BETS = ("mixture", "agrapa", "ons", "fixed")
CERTIFIERS = ("auto", "exact", "shortcut", "ilp", "bonferroni")
RETIRE_RULES = ("none", "topk", "topk-safe", "resolved", "stop-at-goal", "width")
TOPK_RULES = ("topk", "topk-safe", "stop-at-goal")  # the rules that need k
#: ``entry``: ``closed`` (the models are fixed at creation) or ``open`` (models may join later,
#: :mod:`rankci.sequential.entry`).
ENTRIES = ("closed", "open")
DEFAULT_GRID = (0.03, 0.06, 0.12, 0.25, 0.5)
#: ``rankci monitor --freeze`` words -> the ``freeze`` value.
FREEZE_WORDS: Mapping[str, bool | str] = MappingProxyType(
    {"auto": "auto", "on": True, "off": False}
)
#: What ``to_dict`` writes under ``"flow"``: the spec of the anytime-valid flow.
FLOW = "anytime"
#: The version of the dict form; a dict without ``"version"`` is version 1.
VERSION = 1
#: The look schedule of a replayed evaluation and of a service board (a :class:`Monitor` fed by
#: hand looks only when asked, or at item N: ``look_every=None``).
REPLAY_DEFAULTS: Mapping[str, Any] = MappingProxyType({"look_every": "1%"})


def _setting(default: Any, help: str, **cli: Any) -> Any:
    """A MonitorSpec field: its default, its help text (CLI and API) and its CLI words.

    ``cli`` keys: ``flag`` (None: set from the data, no flag), ``type`` (``float``, ``int``,
    ``floats``, ``text``), ``choices``, ``words`` (CLI word -> value), ``metavar``.
    """
    return field(default=default, metadata=MappingProxyType({"help": help, **cli}))


def check_bet(value: object, name: str) -> float:
    """A constant bet in (0, 0.9] (``lam``, each value of ``grid``)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) <= 0.9:
        raise ValueError(f"{name} must be a bet in (0, 0.9], got {value!r}")
    return float(value)


def check_eps(value: object, name: str = "eps") -> float:
    """The clipping margin of the model-F offset, strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def parse_look_every(value: int | str, n_items: int, name: str = "look_every") -> int:
    """An item count K >= 1, or ``"P%"`` -> ``ceil(P / 100 * n_items)`` (at least 1).

    Parameters
    ----------
    value : int or str
        Items between looks, or a percentage ``"P%"`` with 0 < P <= 100.
    n_items : int
        Number of items the percentage refers to.
    name : str
        The setting's name in the error message (``--look-every`` on the command line).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For a non-positive count, a percentage outside (0, 100] or anything else.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md)
    (looks may be taken at any stopping times).

    Examples
    --------
    >>> parse_look_every("1%", 250), parse_look_every("10%", 1000), parse_look_every(25, 1000)
    (3, 100, 25)
    """
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            percent = float(value.strip()[:-1])
        except ValueError:
            percent = float("nan")
        if not 0.0 < percent <= 100.0:
            raise ValueError(f"{name} {value!r}: the percentage must be in (0, 100]")
        return max(1, math.ceil(percent / 100.0 * n_items - 1e-9))
    message = f"{name} must be a positive item count or 'P%', got {value!r}"
    try:
        k = int(value)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if isinstance(value, bool) or k < 1 or (not isinstance(value, str) and k != value):
        raise ValueError(message)
    return k


@dataclass(frozen=True)
class MonitorSpec:
    """Every setting of the anytime-valid monitor, validated once and frozen.

    Parameters
    ----------
    alpha : float, default 0.05
        Every statement of every look holds, at all looks at once, with probability at least
        ``1 - alpha``.
    sampling : {"finite", "iid"}, default "finite"
        ``finite`` (model F): a fixed benchmark of ``n_items`` items evaluated in one uniformly
        random order shared by all models; abilities are the means over the whole benchmark.
        ``iid`` (model S): items are i.i.d. draws; abilities are expected scores.
    n_items : int, optional
        N, the benchmark's size: required by a monitor under ``sampling="finite"``. Replays and
        boards set it from their items (left None, it is filled in).
    bet : {"mixture", "agrapa", "ons", "fixed"}, default "mixture"
        The betting strategy of the e-processes (:mod:`rankci.sequential.wealth`).
    lam : float, default 0.25
        The constant bet of ``bet="fixed"``, in (0, 0.9].
    grid : sequence of float, default (0.03, 0.06, 0.12, 0.25, 0.5)
        The constant bets averaged by ``bet="mixture"``, each in (0, 0.9].
    eps : float, default 0.01
        Under model F the offset is clipped to ``[-1 + eps, 1]``.
    certifier : {"auto", "exact", "shortcut", "ilp", "bonferroni"}, default "auto"
        ``auto``: exact up to 8 models, the integer program for 9-16, the shortcut above.
    retire : {"none", "topk", "topk-safe", "resolved", "stop-at-goal", "width"}, default "none"
        When a model's evaluation stops (:mod:`rankci.sequential.retirement`).
    k : int, optional
        The top-k question (needed by ``topk``, ``topk-safe`` and ``stop-at-goal``).
    width : int, default 0
        Target ``U - L`` of the ``width`` rule.
    look_every : int or str, optional
        Look after every K-th item, or every ``"P%"`` of N (of the replayed items); None: only
        when asked (and at item N under model F). Replays and boards default to ``"1%"``
        (:data:`REPLAY_DEFAULTS`).
    freeze : {"auto", True, False}, default "auto"
        Stop updating the wealths of certified pairs (their reverses are still updated, so
        the <= alpha event is seen; :mod:`rankci.sequential.freezing`); ``"auto"``: for more
        than 8 models; False is the exact mode.
    entry : {"closed", "open"}, default "closed"
        ``closed``: the models are fixed at creation (every output as before the setting
        existed). ``open``: models may join later (:meth:`Monitor.add_model
        <rankci.sequential.Monitor.add_model>`); each ordered pair gets its own level, fixed when
        its later model joins, by the weight rule of :mod:`rankci.sequential.entry` (the levels of
        all pairs that could ever exist sum to ``alpha``). Needs ``sampling="iid"``, the
        ``bonferroni`` (or ``auto``) certifier and no freezing.

    Raises
    ------
    ValueError
        For an invalid value, naming the setting (:meth:`from_flags` names the CLI flag).

    Examples
    --------
    >>> MonitorSpec(retire="topk")
    Traceback (most recent call last):
    ...
    ValueError: retire='topk' needs k, the size of the top-k set
    >>> MonitorSpec(look_every="5%").describe()
    'anytime-valid, alpha = 0.05, sampling finite, mixture bet, auto certifier, a look every 5%'
    """

    alpha: float = _setting(
        0.05,
        "level: every statement holds at every look at once with probability at least 1 - ALPHA",
        type="float",
    )
    sampling: str = _setting(
        "finite",
        "finite: the items are the whole benchmark, evaluated in one shared random order; "
        "iid: items are i.i.d. draws from a population",
        choices=SAMPLINGS,
    )
    n_items: int | None = _setting(
        None, "N, the benchmark's size (sampling finite)", flag=None, type="int"
    )
    bet: str = _setting("mixture", "betting strategy of the e-processes", choices=BETS)
    lam: float = _setting(0.25, "the constant bet of bet fixed, in (0, 0.9]", type="float")
    grid: tuple = _setting(
        DEFAULT_GRID,
        "the constant bets averaged by bet mixture, each in (0, 0.9]",
        type="floats",
        metavar="B,B,...",
    )
    eps: float = _setting(
        0.01, "under sampling finite the offset is clipped to [-1 + EPS, 1]", type="float"
    )
    certifier: str = _setting(
        "auto",
        "auto = exact for up to 8 models, the integer program (ilp) for 9-16, the shortcut "
        "above; ilp = exact by integer programs",
        choices=CERTIFIERS,
    )
    retire: str = _setting(
        "none",
        "when a model's evaluation stops: " + ", ".join(RETIRE_RULES),
        choices=RETIRE_RULES,
        metavar="RULE",
    )
    k: int | None = _setting(None, "the top-K question (top-k rules)", type="int", metavar="K")
    width: int = _setting(0, "target U - L of the width rule", flag="--retire width:T", type="int")
    look_every: int | str | None = _setting(
        None, "look every K items, or every P% of the items", type="text", metavar="K"
    )
    freeze: bool | str = _setting(
        "auto",
        "stop updating the wealths of certified pairs (valid; see docs/monitor.md): auto (for more "
        "than 8 models), on (true) or off (false: the exact mode, every wealth at every item)",
        words=FREEZE_WORDS,
    )
    entry: str = _setting(
        "closed",
        "closed: the models are fixed at creation; open: models may join later (weighted "
        "e-Bonferroni levels fixed at entry, see docs/monitor.md)",
        choices=ENTRIES,
    )

    def __post_init__(self) -> None:
        values = _validated({name: getattr(self, name) for name in SETTINGS}, _PYTHON)
        for name, value in values.items():
            object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ building
    @classmethod
    def check_setting(cls, name: str, value: Any) -> Any:
        """One setting checked on its own (the others at their defaults), normalised.

        What a request body's field validator calls, so that an error is reported at the field;
        the checks between settings (``retire="topk"`` needs ``k``) are made when the whole spec
        is built.

        Examples
        --------
        >>> MonitorSpec.check_setting("look_every", " 5% ")
        '5%'
        >>> MonitorSpec.check_setting("alpha", float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: alpha must be a number strictly between 0 and 1, got nan
        """
        if name not in SETTINGS:
            raise ValueError(f"MonitorSpec has no setting {name!r}")
        values = {**_defaults(), name: value}
        if name == "retire" and value in TOPK_RULES:
            values["k"] = 1  # the rule's own value is checked here; k with the whole spec
        if name == "entry" and value == "open":
            values["sampling"] = "iid"  # likewise: what open entry needs, with the whole spec
        return _validated(values, _PYTHON)[name]

    @classmethod
    def from_flags(cls, values: Mapping[str, Any]) -> MonitorSpec:
        """The spec of command-line values (field -> value); errors name the CLI flags.

        Examples
        --------
        >>> MonitorSpec.from_flags({"look_every": "0"})
        Traceback (most recent call last):
        ...
        ValueError: --look-every must be a positive item count or 'P%', got '0'
        """
        _unknown(values, "MonitorSpec")
        return cls(**_validated({**_defaults(), **values}, _CLI))

    @classmethod
    def given(
        cls,
        spec: MonitorSpec | None,
        settings: Mapping[str, Any],
        caller: str,
        defaults: Mapping[str, Any] | None = None,
    ) -> MonitorSpec:
        """The one spec of a call that takes ``spec`` or the settings as keywords.

        Without ``spec`` the keywords (over ``defaults``) make it; with ``spec``, a keyword is
        accepted only if it agrees with the spec (a conflict is an error: use
        :meth:`replace`). An unknown keyword is a TypeError naming ``caller``.

        Examples
        --------
        >>> MonitorSpec.given(None, {"k": 2}, "Monitor").k
        2
        >>> MonitorSpec.given(MonitorSpec(alpha=0.1), {"alpha": 0.05}, "Monitor")
        Traceback (most recent call last):
        ...
        ValueError: Monitor(spec, alpha=0.05) conflicts with the spec's alpha=0.1; pass ...
        """
        unknown = sorted(set(settings) - set(SETTINGS))
        if unknown:
            raise TypeError(
                f"{caller}() got an unexpected keyword {unknown[0]!r}; its settings are "
                + ", ".join(SETTINGS)
            )
        if spec is None:
            return cls(**{**(defaults or {}), **settings})
        if not isinstance(spec, MonitorSpec):
            raise TypeError(f"{caller}: spec must be a MonitorSpec, got {type(spec).__name__}")
        changed = spec.replace(**settings)
        for name in settings:
            if getattr(changed, name) != getattr(spec, name):
                value = settings[name]
                raise ValueError(
                    f"{caller}(spec, {name}={value!r}) conflicts with the spec's "
                    f"{name}={getattr(spec, name)!r}; pass spec.replace({name}={value!r})"
                )
        return spec

    def check_models(self, n_models: int) -> None:
        """The checks that need the number of models M: ``k < M``."""
        if self.k is not None and self.k >= n_models:
            raise ValueError(
                f"k must be smaller than the number of models ({n_models}), got {self.k}"
            )

    def look_every_items(self) -> int:
        """``look_every`` as a number of items: a count as given, ``"P%"`` of ``n_items``.

        Examples
        --------
        >>> MonitorSpec(look_every="10%", n_items=51).look_every_items()
        6
        """
        every = self.look_every
        if not isinstance(every, str):
            return every
        if self.n_items is None:
            raise ValueError(
                f"look_every={every!r} is a percentage of n_items, which this monitor does "
                "not have (sampling='iid'): give an item count"
            )
        return parse_look_every(every, self.n_items)

    # ------------------------------------------------------------------ conversions
    def replace(self, **changes: Any) -> MonitorSpec:
        """A copy with some settings changed, validated again.

        Examples
        --------
        >>> MonitorSpec().replace(certifier="shortcut").certifier
        'shortcut'
        """
        _unknown(changes, "MonitorSpec")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``{"flow": "anytime", "version": 1, <every setting>}``."""
        out: dict[str, Any] = {"flow": FLOW, "version": VERSION}
        for name in SETTINGS:
            value = getattr(self, name)
            if name == "entry" and value == "closed":
                continue  # the default: a closed spec's dict is the one written before entry
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> MonitorSpec:
        """The spec a :meth:`to_dict` describes (a Ranking's JSON ``"spec"``, saved state).

        A setting missing from ``values`` takes its default (each setting added after version 1
        has a default that reproduces the behaviour before it existed, so older dicts load); an
        unknown key, another flow or a newer version is refused.

        Examples
        --------
        >>> MonitorSpec.from_dict({"alpha": 0.1}).alpha
        0.1
        >>> MonitorSpec.from_dict({"entries": "open"})
        Traceback (most recent call last):
        ...
        ValueError: unknown field 'entries' in the monitor specification; its fields are flow, ...
        """
        if not isinstance(values, Mapping):
            raise ValueError(f"a monitor specification is a mapping, got {type(values).__name__}")
        values = dict(values)
        flow = values.pop("flow", FLOW)
        if flow != FLOW:
            raise ValueError(f"not a monitor specification: its flow is {flow!r}, not {FLOW!r}")
        version = values.pop("version", 1)
        if isinstance(version, bool) or not isinstance(version, Integral) or version < 1:
            raise ValueError(f"version of a monitor specification must be >= 1, got {version!r}")
        if version > VERSION:
            raise ValueError(
                f"this monitor specification is version {version}, written by a newer rankci; "
                f"this one reads versions up to {VERSION}"
            )
        unknown = sorted(set(values) - set(SETTINGS))
        if unknown:
            raise ValueError(
                f"unknown field {unknown[0]!r} in the monitor specification; its fields are "
                + ", ".join(["flow", "version", *SETTINGS])
            )
        return cls(**values)

    def to_flags(self) -> list[str]:
        """The ``rankci monitor`` flags of these settings (``n_items`` comes from the data; a
        ``look_every`` of None has no flag: the command looks every 1% by default).

        Examples
        --------
        >>> MonitorSpec(retire="width", width=2, look_every=50).to_flags()[-8:]
        ['--retire', 'width:2', '--look-every', '50', '--freeze', 'auto', '--entry', 'closed']
        """
        out: list[str] = []
        for setting in dataclasses.fields(self):
            flag = setting.metadata.get("flag", "--" + setting.name.replace("_", "-"))
            value = getattr(self, setting.name)
            if flag is None or " " in flag or value is None:  # width: in --retire width:T
                continue
            words = setting.metadata.get("words")
            if words:
                value = next(w for w, v in words.items() if v is value or v == value)
            elif isinstance(value, tuple):
                value = ",".join(map(repr, value))
            elif setting.name == "retire" and value == "width":
                value = f"width:{self.width}"
            out += [flag, value if isinstance(value, str) else repr(value)]
        return out

    def describe(self) -> str:
        """One line: the settings in words (the defaults of bet and retirement left out)."""
        parts = [f"anytime-valid, alpha = {self.alpha:g}", f"sampling {self.sampling}"]
        if self.n_items is not None and self.sampling == "finite":
            parts[-1] += f" over {self.n_items} items"
        bet = f"{self.bet} bet" + (f" (lambda = {self.lam:g})" if self.bet == "fixed" else "")
        parts += [bet, f"{self.certifier} certifier"]
        if self.retire != "none":
            target = {"width": f" (width {self.width})"}.get(self.retire, "")
            parts.append(f"retire {self.retire}{target}")
        if self.k is not None:
            parts.append(f"k = {self.k}")
        if self.look_every is not None:
            unit = "" if isinstance(self.look_every, str) else " items"
            parts.append(f"a look every {self.look_every}{unit}")
        if self.freeze != "auto":
            parts.append("settled pairs frozen" if self.freeze else "exact mode (no freezing)")
        if self.entry == "open":
            parts.append("open entry (models may join later)")
        return ", ".join(parts)


#: Every setting of :class:`MonitorSpec`, in order (the one list the CLI and the API follow).
SETTINGS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(MonitorSpec))


def _defaults() -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(MonitorSpec)}


def _unknown(values: Mapping[str, Any], what: str) -> None:
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        listed = ", ".join(SETTINGS)
        raise ValueError(f"{what} has no setting {unknown[0]!r}; its settings are {listed}")


class _Words:
    """How an error names a setting: its keyword (Python) or its flag (the command line)."""

    def __init__(self, cli: bool) -> None:
        self.cli = cli

    def name(self, setting: str) -> str:
        if not self.cli:
            return setting
        if setting == "width":
            return "the T of --retire width:T"
        flag = _FIELDS[setting].metadata.get("flag", "--" + setting.replace("_", "-"))
        return setting if flag is None else flag

    def said(self, setting: str, value: object) -> str:
        return f"{self.name(setting)} {value}" if self.cli else f"{setting}={value!r}"


_FIELDS = {f.name: f for f in dataclasses.fields(MonitorSpec)}
_PYTHON, _CLI = _Words(False), _Words(True)


def _validated(values: dict[str, Any], words: _Words) -> dict[str, Any]:
    """Every setting checked (an error names it in ``words``) and normalised."""
    name = words.name
    out = dict(values)
    out["alpha"] = check_alpha(values["alpha"], name("alpha"))
    for setting, choices in (
        ("sampling", SAMPLINGS),
        ("bet", BETS),
        ("certifier", CERTIFIERS),
        ("retire", RETIRE_RULES),
    ):
        check_choice(name(setting), values[setting], choices)
    if values["n_items"] is not None:
        out["n_items"] = check_positive_int(values["n_items"], name("n_items"))
    out["lam"] = check_bet(values["lam"], name("lam"))
    grid = values["grid"]
    if isinstance(grid, (str, Mapping)) or not isinstance(grid, Sequence):
        raise ValueError(f"{name('grid')} must be a sequence of bets, got {grid!r}")
    out["grid"] = tuple(check_bet(g, f"{name('grid')} value") for g in grid)
    if not out["grid"]:
        raise ValueError(f"{name('grid')} must hold at least one bet")
    out["eps"] = check_eps(values["eps"], name("eps"))
    if values["k"] is not None:
        out["k"] = check_positive_int(values["k"], name("k"))
    out["width"] = check_positive_int(values["width"], name("width"), minimum=0)
    if values["retire"] in TOPK_RULES and values["k"] is None:
        raise ValueError(
            f"{words.said('retire', values['retire'])} needs {name('k')}, "
            "the size of the top-k set"
        )
    every = values["look_every"]
    if every is not None:
        count = parse_look_every(every, 1, name("look_every"))
        percent = isinstance(every, str) and every.strip().endswith("%")
        out["look_every"] = every.strip() if percent else count
    freeze = values["freeze"]
    if isinstance(freeze, str) and freeze == "auto":
        out["freeze"] = "auto"
    elif type(freeze).__name__ in ("bool", "bool_"):  # numpy's booleans too
        out["freeze"] = bool(freeze)
    else:
        raise ValueError(f"{name('freeze')} must be True, False or 'auto', got {freeze!r}")
    check_choice(name("entry"), values["entry"], ENTRIES)
    if values["entry"] == "open":
        _check_open(out, words)
    return out


def _check_open(values: dict[str, Any], words: _Words) -> None:
    """What ``entry="open"`` needs (docs/monitor.md, "Models that join later")."""
    said = words.said("entry", "open")
    if values["sampling"] != "iid":
        raise ValueError(
            f"{said} needs {words.said('sampling', 'iid')}: under sampling 'finite' a model "
            "that joins late never sees the items drawn before it, so no e-process of its pairs "
            "tests the mean over the whole benchmark"
        )
    if values["certifier"] not in ("auto", "bonferroni"):
        raise ValueError(
            f"{said} needs {words.said('certifier', 'bonferroni')} (or auto): the exact, "
            "integer-program and shortcut certifiers are proved for a family of pairs fixed in "
            "advance, and with models joining the family is countable; e-Bonferroni with a "
            "level per pair fixed at entry is the procedure proved for it"
        )
    if values["freeze"] is True:
        raise ValueError(
            f"{said} does not freeze pairs ({words.said('freeze', True)}): with e-Bonferroni "
            "freezing changes no statement, so an open board runs without it"
        )


def spec_from_dict(values: Mapping[str, Any]):
    """The specification a ranking's JSON ``"spec"`` describes, of either flow.

    ``{"flow": "anytime", ...}`` is a :class:`MonitorSpec` (the monitor, replays, boards); a
    dict without ``"flow"`` is a fixed-sample :class:`rankci.method.MethodSpec`.

    Examples
    --------
    >>> type(spec_from_dict(MonitorSpec().to_dict())).__name__
    'MonitorSpec'
    >>> from rankci.method import MethodSpec
    >>> spec_from_dict(MethodSpec(test="wilcoxon").to_dict()).test
    'wilcoxon'
    """
    from rankci.method import MethodSpec

    if not isinstance(values, Mapping):
        raise ValueError(f"a specification is a mapping, got {type(values).__name__}")
    if "flow" in values:
        return MonitorSpec.from_dict(values)
    return MethodSpec.from_dict(values)
