"""Plain reference implementations for the anytime-valid monitor tests.

Written independently of ``rankci.sequential``: one Python loop per item and per pair, log space,
the formulas of docs/design.md ("Anytime-valid rank confidence sequences") and nothing else.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

GRID = (0.03, 0.06, 0.12, 0.25, 0.5)


# rcs-examples.md, A: rows = models, columns = items 1..10 (transposed: items x models)
EXAMPLE_A = np.array(
    [
        [1, 1, 1, 0, 1, 1, 0, 1, 1, 1],
        [0, 1, 0, 0, 1, 0, 1, 0, 1, 0],
        [1, 0, 0, 1, 1, 0, 0, 1, 0, 0],
    ],
    dtype=float,
).T
#: the ordered pairs in the order of rcs-examples.md's tables
PAIRS_A = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]


def pair_log_wealth(z, *, n_items=None, bet="mixture", lam=0.25, eps=0.01, frozen_after=None):
    """Log-wealth path of one ordered pair from its differences z_t = x_tj - x_tl.

    ``n_items`` None means model (S); ``frozen_after`` = number of items after which the pair is
    frozen (retirement of one of its models).
    """
    s = 0.0
    logs = [0.0] * len(GRID)
    log_w = 0.0
    sum_y = sum_y2 = 0.0
    ons_lam, ons_a = 0.0, 1.0
    path = []
    for t, zt in enumerate(z, start=1):
        if frozen_after is not None and t > frozen_after:
            path.append(path[-1] if path else 0.0)
            continue
        b = 0.0 if n_items is None else min(max(-s / (n_items - t + 1), -1 + eps), 1.0)
        y = (zt - b) / (1 + b)
        if bet == "fixed":
            log_w += math.log1p(lam * y)
        elif bet == "mixture":
            logs = [v + math.log1p(g * y) for v, g in zip(logs, GRID)]
            top = max(logs)
            log_w = top + math.log(sum(math.exp(v - top) for v in logs) / len(logs))
        elif bet == "agrapa":
            bet_t = min(max(sum_y / (1 + sum_y2), 0.0), 0.75)
            log_w += math.log1p(bet_t * y)
            sum_y += y
            sum_y2 += y * y
        elif bet == "ons":
            log_w += math.log1p(ons_lam * y)
            g = -y / (1 + ons_lam * y)
            ons_a += g * g
            ons_lam = min(max(ons_lam - (2 / (2 - math.log(3))) * g / ons_a, 0.0), 0.5)
        else:
            raise ValueError(bet)
        s += zt
        path.append(log_w)
    return path


def all_log_wealth(x, *, n_items=None, bet="mixture", lam=0.25, retired_at=None):
    """M x M final log-wealth of every ordered pair (NaN diagonal); ``retired_at[j]`` = items
    after which model j stops (None = never)."""
    x = np.asarray(x, dtype=float)
    m = x.shape[1]
    retired_at = retired_at or [None] * m
    out = np.full((m, m), np.nan)
    for j in range(m):
        for l in range(m):
            if j == l:
                continue
            stops = [s for s in (retired_at[j], retired_at[l]) if s is not None]
            path = pair_log_wealth(
                x[:, j] - x[:, l],
                n_items=n_items,
                bet=bet,
                lam=lam,
                frozen_after=min(stops) if stops else None,
            )
            out[j, l] = path[-1] if path else 0.0
    return out


def weak_orders_bruteforce(m):
    """Every weak order of m models as a tuple of levels (0 = top), from all level vectors."""
    out = []
    for levels in itertools.product(range(m), repeat=m):
        used = set(levels)
        if used == set(range(len(used))):
            out.append(levels)
    return out


def exact_path(log_wealths, alpha):
    """Exact certifier along a path of M x M log-wealth matrices; yields (certified, rank sets).

    An order is eliminated for good at the first look where the mean of E over T(W) is >= 1/alpha.
    """
    m = log_wealths[0].shape[0]
    orders = weak_orders_bruteforce(m)
    alive = [True] * len(orders)
    for lw in log_wealths:
        e = np.exp(np.nan_to_num(lw, nan=0.0))
        for i, levels in enumerate(orders):
            if not alive[i]:
                continue
            terms = [
                e[j, l] for j in range(m) for l in range(m) if j != l and levels[j] >= levels[l]
            ]
            if sum(terms) / len(terms) >= 1 / alpha:
                alive[i] = False
        survivors = [o for o, a in zip(orders, alive) if a]
        certified = np.zeros((m, m), dtype=bool)
        if survivors:
            for j in range(m):
                for l in range(m):
                    certified[j, l] = j != l and all(o[j] < o[l] for o in survivors)
        else:
            certified[:] = ~np.eye(m, dtype=bool)
        rank_sets = [
            sorted({1 + sum(o[l] < o[j] for l in range(m)) for o in survivors}) for j in range(m)
        ]
        yield certified, rank_sets


def shortcut_naive(lw, alpha):
    """B^{jl} = E^{jl} + sum_{m != j,l} min(E^{jm}, E^{ml}) >= M(M-1)/alpha, by loops."""
    m = lw.shape[0]
    e = np.exp(np.nan_to_num(lw, nan=-np.inf))
    threshold = m * (m - 1) / alpha
    out = np.zeros((m, m), dtype=bool)
    for j in range(m):
        for l in range(m):
            if j == l:
                continue
            b = e[j, l] + sum(min(e[j, k], e[k, l]) for k in range(m) if k not in (j, l))
            out[j, l] = b >= threshold
    return out
