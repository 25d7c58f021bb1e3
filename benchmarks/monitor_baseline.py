"""The reference-code baseline for the anytime-valid monitor: a plain NumPy per-item loop.

This is the algorithm of the rank-confidence-sequences paper (Section 3, Algorithms 1 and 2,
Appendix B.1) written the way a paper's reference implementation is written: a Python loop over
the items, each item's update vectorised over the M x M ordered pairs, log-wealths stored per
constant bet of the grid, and a look (certify, then count) every K items. Nothing is shared with
``rankci.sequential`` except the replay contract (the item order and the look spacing), so that
the two can be compared number for number (issue 9: benchmarks beside peers).

Per ordered pair (j, l) and item t (1-based), under sampling model F with N items:

* ``Z_t = x_tj - x_tl``; ``S_{t-1} = sum_{s<t} Z_s``;
* ``b_t = clip(-S_{t-1} / (N - t + 1), -1 + eps, 1)`` (``b_t = 0`` under model S);
* ``Y_t = (Z_t - b_t) / (1 + b_t)``;
* ``log E_t^(k) += log(1 + lambda_k Y_t)`` for every bet ``lambda_k`` of the grid;
* mixture ``E_t = mean_k E_t^(k)``.

Certifiers at a look (wealths capped at ``M(M-1)/alpha`` first, which changes no decision):

* e-Bonferroni: ``E^{jl} >= M(M-1)/alpha``;
* shortcut: ``E^{jl} + sum_{m != j,l} min(E^{jm}, E^{ml}) >= M(M-1)/alpha``;
* exact (M <= 8): every weak order W with ``mean_{(j,l) in T(W)} E^{jl} >= 1/alpha`` is dropped
  for good; certified are the pairs on which every surviving order agrees.

``certifier="auto"`` here is the paper's rule: exact for M <= 8, else the shortcut (rankci's
``auto`` uses its integer program for 9 <= M <= 16, which this baseline does not implement, so
:func:`rankci_replay` passes the baseline's resolved certifier to rankci). Certified pairs are
kept across looks, closed under transitivity, and counted:
``L_j = 1 + #{l above j}``, ``U_j = M - #{l below j}``.

Run ``python benchmarks/monitor_baseline.py [--quick]`` for the timing table (baseline against
``rankci.sequential.replay``, a look every 1 %, binary scores from a logistic model).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import time

import numpy as np

GRID = (0.03, 0.06, 0.12, 0.25, 0.5)  # rankci.sequential.DEFAULT_GRID
MAX_EXACT = 8


# ---------------------------------------------------------------------- the replay contract
def item_order(n_items: int, order_seed: int) -> np.ndarray:
    """Row indices in evaluation order, as ``rankci.sequential.replay`` orders a matrix.

    The contract sorts the item ids as strings and permutes them with
    ``numpy.random.default_rng(order_seed).permutation(n)``. ``Scores.from_matrix`` labels the
    rows with zero-padded ids that sort in row order, so this is the shared function applied to
    those labels.
    """
    from rankci.sequential.replay import evaluation_order

    width = len(str(max(n_items - 1, 0)))
    return evaluation_order([f"i{i:0{width}d}" for i in range(n_items)], order_seed)


def look_spacing(look_every: int | str, n_items: int) -> int:
    """Items between looks: an item count, or ``"P%"`` of the items rounded up."""
    from rankci.sequential import parse_look_every

    return parse_look_every(look_every, n_items)


# ---------------------------------------------------------------------- the algorithm
def mixture_log_wealth(log_wealth_k: np.ndarray) -> np.ndarray:
    """``log(mean_k E^(k))`` from the per-bet log-wealths (K x M x M), NaN diagonal."""
    top = log_wealth_k.max(axis=0)
    out = top + np.log(np.exp(log_wealth_k - top).sum(axis=0)) - np.log(log_wealth_k.shape[0])
    np.fill_diagonal(out, np.nan)
    return out


def capped(log_e: np.ndarray, cap: float) -> np.ndarray:
    """``min(E, cap)`` with a zero diagonal."""
    e = np.exp(np.minimum(np.nan_to_num(log_e, nan=-np.inf), math.log(cap)))
    e[log_e >= math.log(cap)] = cap
    np.fill_diagonal(e, 0.0)
    return e


def certify_bonferroni(log_e: np.ndarray, alpha: float) -> np.ndarray:
    m = log_e.shape[0]
    cap = m * (m - 1) / alpha
    out = capped(log_e, cap) >= cap
    np.fill_diagonal(out, False)
    return out


def certify_shortcut(log_e: np.ndarray, alpha: float) -> np.ndarray:
    m = log_e.shape[0]
    cap = m * (m - 1) / alpha
    e = capped(log_e, cap)
    # B[j, l] = E[j, l] + sum_m min(E[j, m], E[m, l]); the zero diagonal drops m = j and m = l
    pooled = e + np.minimum(e[:, :, None], e[None, :, :]).sum(axis=1)
    out = pooled >= cap
    np.fill_diagonal(out, False)
    return out


def all_weak_orders(m: int) -> np.ndarray:
    """Every weak order of m models as levels (0 = top): ordered set partitions, recursively."""

    def partitions(models):
        if not models:
            yield []
            return
        for size in range(1, len(models) + 1):
            for top in itertools.combinations(models, size):
                rest = [j for j in models if j not in top]
                for tail in partitions(rest):
                    yield [top, *tail]

    rows = []
    for blocks in partitions(list(range(m))):
        level = [0] * m
        for depth, block in enumerate(blocks):
            for j in block:
                level[j] = depth
        rows.append(level)
    return np.array(rows, dtype=np.int64)


class ExactEnumeration:
    """Algorithm 1: keep the weak orders not yet eliminated."""

    def __init__(self, m: int, alpha: float, chunk: int = 32768) -> None:
        if m > MAX_EXACT:
            raise ValueError(f"exact enumeration is for at most {MAX_EXACT} models, got {m}")
        self.alpha = alpha
        self.levels = all_weak_orders(m)  # surviving orders
        self.chunk = chunk

    def look(self, log_e: np.ndarray) -> np.ndarray:
        m = log_e.shape[0]
        e = capped(log_e, m * (m - 1) / self.alpha)
        keep = []
        for start in range(0, len(self.levels), self.chunk):
            lev = self.levels[start : start + self.chunk]
            # T(W): ordered pairs (j, l), j != l, with j not strictly above l
            t_w = lev[:, :, None] >= lev[:, None, :]
            t_w[:, np.arange(m), np.arange(m)] = False
            mean = (t_w * e).sum(axis=(1, 2)) / t_w.sum(axis=(1, 2))
            keep.append(mean < 1.0 / self.alpha)
        if keep:
            self.levels = self.levels[np.concatenate(keep)]
        if len(self.levels) == 0:  # every order eliminated: everything is "certified"
            out = np.ones((m, m), dtype=bool)
        else:
            out = (self.levels[:, :, None] < self.levels[:, None, :]).all(axis=0)
        np.fill_diagonal(out, False)
        return out

    def rank_sets(self) -> list[list[int]]:
        ranks = 1 + (self.levels[:, None, :] < self.levels[:, :, None]).sum(axis=2)
        return [sorted(set(ranks[:, j].tolist())) for j in range(self.levels.shape[1])]


def close_and_count(dominance: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Transitive closure (Warshall), then ``L = 1 + #above``, ``U = M - #below``."""
    closed = dominance.copy()
    m = closed.shape[0]
    for k in range(m):
        closed |= closed[:, k : k + 1] & closed[k : k + 1, :]
    if closed.diagonal().any():
        raise ValueError("the certified dominances form a cycle")
    return closed, 1 + closed.sum(axis=0), m - closed.sum(axis=1)


def baseline_replay(
    x: np.ndarray,
    *,
    alpha: float = 0.05,
    look_every: int | str = "1%",
    order_seed: int = 0,
    certifier: str = "auto",
    sampling: str = "finite",
    grid: tuple = GRID,
    eps: float = 0.01,
) -> dict:
    """Replay an items x models score matrix (scores in [0, 1]) item by item.

    Returns a dict with ``log_wealth`` (final M x M mixture log-wealth, NaN diagonal),
    ``lower`` / ``upper`` (final rank intervals), ``dominance`` (closed certified pairs),
    ``looks`` (number of looks), ``look_records`` (``t``, ``n_certified``, ``lower``, ``upper``
    at each look, as in ``MonitorRun.looks``), ``certifier`` (the resolved name) and, for the
    exact certifier, ``rank_sets``.
    """
    x = np.asarray(x, dtype=float)
    n, m = x.shape
    if not (np.isfinite(x).all() and x.min() >= 0.0 and x.max() <= 1.0):
        raise ValueError("scores must be finite and lie in [0, 1]")
    if certifier == "auto":
        certifier = "exact" if m <= MAX_EXACT else "shortcut"
    exact = ExactEnumeration(m, alpha) if certifier == "exact" else None
    rule = {"shortcut": certify_shortcut, "bonferroni": certify_bonferroni}.get(certifier)
    if exact is None and rule is None:
        raise ValueError(f"unknown certifier {certifier!r}")
    every = look_spacing(look_every, n)
    xs = x[item_order(n, order_seed)]
    lam = np.asarray(grid, dtype=float)[:, None, None]

    log_w = np.zeros((len(grid), m, m))  # log-wealth of each constant bet
    running = np.zeros(m)  # per-model score sums: S^{jl} = running_j - running_l
    dominance = np.zeros((m, m), dtype=bool)
    records = []
    lower, upper = np.ones(m, dtype=np.int64), np.full(m, m, dtype=np.int64)
    for t in range(1, n + 1):
        row = xs[t - 1]
        z = row[:, None] - row[None, :]
        if sampling == "finite":
            b = -(running[:, None] - running[None, :]) / (n - t + 1)
            b = np.clip(b, -1.0 + eps, 1.0)
            y = (z - b) / (1.0 + b)
            running += row
        else:
            y = z
        log_w += np.log1p(lam * y)
        if t % every == 0 or t == n:
            log_e = mixture_log_wealth(log_w)
            new = exact.look(log_e) if exact is not None else rule(log_e, alpha)
            dominance, lower, upper = close_and_count(dominance | new)
            records.append(
                {
                    "t": t,
                    "n_certified": int(dominance.sum()),
                    "lower": lower.tolist(),
                    "upper": upper.tolist(),
                }
            )
    out = {
        "log_wealth": mixture_log_wealth(log_w),
        "lower": lower,
        "upper": upper,
        "dominance": dominance,
        "looks": len(records),
        "look_records": records,
        "certifier": certifier,
    }
    if exact is not None:
        out["rank_sets"] = exact.rank_sets()
    return out


# ---------------------------------------------------------------------- rankci side
def rankci_replay(
    x: np.ndarray,
    *,
    alpha: float = 0.05,
    look_every: int | str = "1%",
    order_seed: int = 0,
    certifier: str = "auto",
    freeze: bool | str = False,
):
    """``rankci.sequential.replay`` on ``Scores.from_matrix(x)``, plus its final log-wealths
    (:func:`rankci_log_wealth`). Returns ``(run, log_wealth)``.

    ``certifier="auto"`` is resolved as the baseline resolves it (the same algorithm on both
    sides). ``freeze=False`` (default) is rankci's exact mode, which must agree look for look;
    with ``freeze=True`` settled pairs stop being updated and the answers may differ only as
    ``rankci.sequential.freezing`` allows.
    """
    import rankci
    from rankci.sequential import replay

    if certifier == "auto":
        certifier = "exact" if np.asarray(x).shape[1] <= MAX_EXACT else "shortcut"
    run = replay(
        rankci.Scores.from_matrix(np.asarray(x, dtype=float)),
        alpha=alpha,
        look_every=look_every,
        order_seed=order_seed,
        certifier=certifier,
        freeze=freeze,
    )
    return run, rankci_log_wealth(x, order_seed=order_seed)


def rankci_log_wealth(x: np.ndarray, *, order_seed: int = 0) -> np.ndarray:
    """The final log-wealths of ``rankci.sequential.replay(Scores.from_matrix(x))``.

    A ``MonitorRun`` keeps the looks and the final ranking but not the wealths, so they are
    recomputed with ``rankci.sequential.PairWealth`` fed the same items in the same order (the
    monitor's wealth object; its state is bit-for-bit independent of block sizes, and no model
    retires under ``retire="none"``).
    """
    from rankci.sequential import PairWealth

    x = np.asarray(x, dtype=float)
    n, m = x.shape
    wealth = PairWealth(m, sampling="finite", n_items=n)
    wealth.update(x[item_order(n, order_seed)])
    return wealth.log_wealth()


def agreement(run, base: dict, log_wealth: np.ndarray | None = None) -> float:
    """Largest absolute difference between rankci's final log-wealths and the baseline's.

    ``run`` is a ``rankci.sequential.Monitor`` (its ``log_wealth()`` is used), the
    ``(MonitorRun, log_wealth)`` pair of :func:`rankci_replay`, or a ``MonitorRun`` together
    with ``log_wealth``. Also checks that the rank intervals are identical at every look (a
    ``MonitorRun`` or ``Monitor`` records them) and at the end; raises ``ValueError`` naming the
    first look that differs.
    """
    from rankci.sequential import Monitor

    if isinstance(run, tuple):
        run, log_wealth = run
    if isinstance(run, Monitor):
        log_wealth = run.log_wealth()
        ranking = run.ranking()
    else:
        ranking = run.ranking
    if log_wealth is None:
        raise ValueError(
            "a MonitorRun does not keep the wealths: pass log_wealth= or use rankci_replay()"
        )
    looks = [(r["t"], r["lower"], r["upper"]) for r in run.looks]
    ours = [(r["t"], r["lower"], r["upper"]) for r in base["look_records"]]
    if len(looks) != len(ours):
        raise ValueError(f"rankci took {len(looks)} looks, the baseline {len(ours)}")
    for theirs, mine in zip(looks, ours):
        if theirs != mine:
            raise ValueError(f"rank intervals differ at the look after {mine[0]} items")
    if not (
        np.array_equal(ranking.lower, base["lower"])
        and np.array_equal(ranking.upper, base["upper"])
    ):
        raise ValueError("final rank intervals differ")
    a, b = np.asarray(log_wealth, dtype=float), np.asarray(base["log_wealth"], dtype=float)
    return float(np.nanmax(np.abs(a - b)))


# ---------------------------------------------------------------------- timing
def binary_matrix(n_items: int, n_models: int, seed: int) -> np.ndarray:
    """Binary scores from a logistic model: P(correct) = expit(ability_j - difficulty_i)."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, 1.0, n_models)
    difficulty = rng.normal(0.0, 1.5, n_items)
    p = 1.0 / (1.0 + np.exp(-(ability[None, :] - difficulty[:, None])))
    return (rng.random((n_items, n_models)) < p).astype(float)


def _best(fn, repeat):
    best, value = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    import rankci
    from rankci.sequential import replay

    sizes = [(20, 1000)] if args.quick else [(20, 5000), (100, 14000)]
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    print(
        "| models | items | looks | certifier | baseline (s) | baseline (µs/item) "
        "| rankci replay (s) | rankci (µs/item) | ratio | max abs Δ log-wealth "
        "| max abs log-wealth |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m, n in sizes:
        x = binary_matrix(n, m, seed=m)
        scores = rankci.Scores.from_matrix(x)
        t_base, base = _best(lambda x=x: baseline_replay(x), args.repeat)
        t_rankci, run = _best(lambda s=scores: replay(s), args.repeat)
        _, log_wealth = rankci_replay(x)
        delta = agreement(run, base, log_wealth)
        print(
            f"| {m} | {n:,} | {base['looks']} | {base['certifier']} | {t_base:.3f} | "
            f"{1e6 * t_base / n:.1f} | {t_rankci:.3f} | {1e6 * t_rankci / n:.1f} | "
            f"{t_base / t_rankci:.1f}x | {delta:.1e} | {np.nanmax(np.abs(log_wealth)):,.0f} |"
        )


if __name__ == "__main__":
    main()
