"""Anytime-valid leaderboards: rank confidence sequences with early stopping.

* :class:`MonitorSpec` - every setting of the anytime-valid flow, validated once (:mod:`.spec`).
* :class:`Monitor` - feed scores item by item or block by block; a :class:`rankci.Ranking` at any
  moment whose statements hold at every look simultaneously with probability >= 1 - alpha;
  retirement rules; save / restore.
* :func:`replay` - a finished evaluation replayed in a seeded random order (:class:`MonitorRun`).
* :class:`PairWealth` - the pairwise betting e-processes (:mod:`.wealth`).
* :func:`weighted_evalue`, :func:`log_weighted_evalue`, :func:`order_weighted_evalue` - the
  weighted E^W: e-values and e-processes combined by a weighted average (:mod:`.combine`).
* :class:`OpenMonitor` - a monitor whose models may join later (``MonitorSpec(entry="open")``,
  :mod:`.entry`).
* Certifiers (:mod:`.certify`, on the base class in :mod:`.certifier`; :mod:`.ilp`) and weak
  orders (:mod:`.orders`).

The names are imported on first use (PEP 562), so the command line reads :mod:`.spec` (the
settings and their choices) without loading numpy. See ``docs/monitor.md`` for the guarantee in
plain words.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

#: Where each public name lives (module of rankci.sequential).
_NAMES = {
    "BETS": "spec",
    "CERTIFIERS": "spec",
    "DEFAULT_GRID": "spec",
    "RETIRE_RULES": "spec",
    "SAMPLINGS": "spec",
    "MonitorSpec": "spec",
    "spec_from_dict": "spec",
    "parse_look_every": "spec",
    "Bonferroni": "certify",
    "Exact": "certify",
    "Shortcut": "certify",
    "make_certifier": "certify",
    "shortcut_statistic": "certify",
    "IntegerProgram": "ilp",
    "Monitor": "monitor",
    "OrderTable": "orders",
    "order_table": "orders",
    "ordered_bell": "orders",
    "weak_orders": "orders",
    "MonitorRun": "replay",
    "evaluation_order": "replay",
    "replay": "replay",
    "PairWealth": "wealth",
    "log_weighted_evalue": "combine",
    "order_weighted_evalue": "combine",
    "weighted_evalue": "combine",
    "OpenMonitor": "entry",
    "pair_level": "entry",
    "VOID_GUARANTEE": "changes",
    "WITHDRAW_GUARANTEE": "changes",
}

__all__ = [
    "BETS",
    "CERTIFIERS",
    "DEFAULT_GRID",
    "RETIRE_RULES",
    "SAMPLINGS",
    "VOID_GUARANTEE",
    "WITHDRAW_GUARANTEE",
    "Bonferroni",
    "Exact",
    "IntegerProgram",
    "Monitor",
    "MonitorRun",
    "MonitorSpec",
    "OpenMonitor",
    "OrderTable",
    "PairWealth",
    "Shortcut",
    "evaluation_order",
    "log_weighted_evalue",
    "make_certifier",
    "order_table",
    "order_weighted_evalue",
    "ordered_bell",
    "pair_level",
    "parse_look_every",
    "replay",
    "shortcut_statistic",
    "spec_from_dict",
    "weak_orders",
    "weighted_evalue",
]


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module 'rankci.sequential' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"rankci.sequential.{_NAMES[name]}"), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """``rankci.sequential.replay`` is the function, as the eager package had it.

    Importing the submodule of the same name binds the module to the package's attribute; the
    function (the public name) is kept there instead. ``from rankci.sequential.replay import ...``
    reads the module from ``sys.modules`` and is not affected.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "replay" and isinstance(value, types.ModuleType):
            value = value.replay
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from rankci.sequential.certify import (
        Bonferroni,
        Exact,
        Shortcut,
        make_certifier,
        shortcut_statistic,
    )
    from rankci.sequential.changes import VOID_GUARANTEE, WITHDRAW_GUARANTEE
    from rankci.sequential.combine import (
        log_weighted_evalue,
        order_weighted_evalue,
        weighted_evalue,
    )
    from rankci.sequential.entry import OpenMonitor, pair_level
    from rankci.sequential.ilp import IntegerProgram
    from rankci.sequential.monitor import Monitor
    from rankci.sequential.orders import OrderTable, order_table, ordered_bell, weak_orders
    from rankci.sequential.replay import MonitorRun, evaluation_order, replay
    from rankci.sequential.spec import (
        BETS,
        CERTIFIERS,
        DEFAULT_GRID,
        RETIRE_RULES,
        SAMPLINGS,
        MonitorSpec,
        parse_look_every,
        spec_from_dict,
    )
    from rankci.sequential.wealth import PairWealth
