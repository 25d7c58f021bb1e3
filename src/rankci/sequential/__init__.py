"""Anytime-valid leaderboards: rank confidence sequences with early stopping.

* :class:`Monitor` - feed scores item by item or block by block; a :class:`rankci.Ranking` at any
  moment whose statements hold at every look simultaneously with probability >= 1 - alpha;
  retirement rules; save / restore.
* :func:`replay` - a finished evaluation replayed in a seeded random order (:class:`MonitorRun`).
* :class:`PairWealth` - the pairwise betting e-processes (:mod:`.wealth`).
* Certifiers (:mod:`.certify`, on the base class in :mod:`.certifier`; :mod:`.ilp`) and weak
  orders (:mod:`.orders`).

See ``docs/monitor.md`` for the guarantee in plain words.
"""

from rankci.sequential.certify import (
    CERTIFIERS,
    Bonferroni,
    Exact,
    Shortcut,
    make_certifier,
    shortcut_statistic,
)
from rankci.sequential.ilp import IntegerProgram
from rankci.sequential.monitor import RETIRE_RULES, Monitor
from rankci.sequential.orders import OrderTable, order_table, ordered_bell, weak_orders
from rankci.sequential.replay import MonitorRun, parse_look_every, replay
from rankci.sequential.wealth import BETS, DEFAULT_GRID, SAMPLINGS, PairWealth

__all__ = [
    "BETS",
    "CERTIFIERS",
    "DEFAULT_GRID",
    "RETIRE_RULES",
    "SAMPLINGS",
    "Bonferroni",
    "Exact",
    "IntegerProgram",
    "Monitor",
    "MonitorRun",
    "OrderTable",
    "PairWealth",
    "Shortcut",
    "make_certifier",
    "order_table",
    "ordered_bell",
    "parse_look_every",
    "replay",
    "shortcut_statistic",
    "weak_orders",
]
