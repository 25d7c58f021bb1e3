"""Certifiers: from pairwise wealths to certified statements "j is better than l".

At every look t each certifier turns the wealths ``E_t^{jl}`` (from :mod:`.wealth`) into a set of
certified ordered pairs. All of them are valid at every look and under any stopping rule; from
weakest to strongest on the same wealths (Propositions B.7 and B.8 of the source):

* **e-Bonferroni**: ``E_t^{jl} >= M(M-1)/alpha``.
* **shortcut**: ``B_t^{jl} = E_t^{jl} + sum_{m != j,l} min(E_t^{jm}, E_t^{ml}) >= M(M-1)/alpha``
  (every weak order with j not above l has ``E^W >= B^{jl} / (M(M-1))``, so the pair is certified
  by the exact test too).
* **exact** (Algorithm 1): a weak order W is eliminated for good at the first look where
  ``E^W = mean_{(j,l) in T(W)} E^{jl} >= 1/alpha``; the certified pairs are those on which every
  surviving order agrees, and model j's *rank set* is the set of ranks it takes across the
  surviving orders. Enumerates the ordered-Bell-many weak orders, so M <= 8.
* **ilp** (Algorithm 3, :mod:`.ilp`): the exact certified set by integer programming, any M.

``auto`` is exact for M <= 8 and the shortcut above (never the integer program silently).

Wealths are capped at ``M(M-1)/alpha`` before they are added up: a capped term alone reaches
every threshold used here, so the decisions are unchanged and nothing overflows. Certified pairs
are kept for good (the exact certified set only grows, and the others are subsets of it), and the
monitor takes their transitive closure.

References
----------
Rank confidence sequences (the source of :mod:`rankci.sequential`), Section 3, Algorithms 1-3,
Appendix B.3.
Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
Statistics 49(3).
"""

from __future__ import annotations

import numpy as np

from rankci._base import check_alpha, check_choice, check_positive_int
from rankci.sequential.orders import MAX_EXACT_MODELS, order_table

__all__ = [
    "CERTIFIERS",
    "Bonferroni",
    "Certifier",
    "Exact",
    "Shortcut",
    "capped_wealth",
    "make_certifier",
    "resolve_certifier",
    "shortcut_statistic",
]

CERTIFIERS = ("auto", "exact", "shortcut", "ilp", "bonferroni")
_SMALL = 48  # up to this M the shortcut's min-plus sum is one (M, M, M) array operation


def resolve_certifier(name: str, n_models: int) -> str:
    """``auto`` -> ``exact`` for M <= 8, else ``shortcut``; other names are returned unchanged."""
    check_choice("certifier", name, CERTIFIERS)
    if name == "auto":
        return "exact" if n_models <= MAX_EXACT_MODELS else "shortcut"
    if name == "exact" and n_models > MAX_EXACT_MODELS:
        raise ValueError(
            f"certifier='exact' enumerates weak orders and is limited to {MAX_EXACT_MODELS} "
            f"models, got {n_models}; use 'ilp' (same certified set, slower) or 'shortcut'"
        )
    return name


def make_certifier(name: str, n_models: int, alpha: float) -> Certifier:
    """A fresh certifier of the given name (after :func:`resolve_certifier`)."""
    name = resolve_certifier(name, n_models)
    if name == "ilp":
        from rankci.sequential.ilp import IntegerProgram

        return IntegerProgram(n_models, alpha)
    return {"exact": Exact, "shortcut": Shortcut, "bonferroni": Bonferroni}[name](n_models, alpha)


def capped_wealth(log_wealth: np.ndarray, cap: float) -> np.ndarray:
    """``min(E, cap)`` from log-wealths, exactly ``cap`` where ``log E >= log cap``; diagonal 0."""
    log_wealth = np.asarray(log_wealth, dtype=float)
    log_cap = np.log(cap)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(log_wealth >= log_cap, cap, np.exp(np.minimum(log_wealth, log_cap)))
    np.fill_diagonal(out, 0.0)
    return out


def shortcut_statistic(capped: np.ndarray, pairs: np.ndarray | None = None) -> np.ndarray:
    """``B^{jl} = E^{jl} + sum_{m != j,l} min(E^{jm}, E^{ml})`` (the pooled statistic).

    ``capped`` has a zero diagonal, which makes the terms m = j and m = l vanish. With ``pairs``
    (boolean M x M) only those entries are computed (the others are NaN): the min-plus sum is
    an O(M^3) reduction done row by row for large M.
    """
    e = np.asarray(capped, dtype=float)
    m = e.shape[0]
    if pairs is None and m <= _SMALL:
        return e + np.minimum(e[:, :, None], e[None, :, :]).sum(axis=1)
    if pairs is None:
        pairs = np.ones((m, m), dtype=bool)
        np.fill_diagonal(pairs, False)
    out = np.full((m, m), np.nan)
    rows = np.flatnonzero(pairs.any(axis=1))
    if m <= _SMALL and rows.size:
        full = np.minimum(e[rows][:, :, None], e[None, :, :]).sum(axis=1)
        out[rows] = np.where(pairs[rows], e[rows] + full, np.nan)
        return out
    for j in rows:  # a loop over models; each step is vectorised over m and l
        cols = np.flatnonzero(pairs[j])
        out[j, cols] = e[j, cols] + np.minimum(e[j][:, None], e[:, cols]).sum(axis=0)
    return out


class Certifier:
    """Base class: ``look(log_wealth, known)`` returns the pairs certified at this look."""

    name = "base"

    def __init__(self, n_models: int, alpha: float) -> None:
        self.n_models = check_positive_int(n_models, "n_models", minimum=2)
        self.alpha = check_alpha(alpha)
        self.threshold = n_models * (n_models - 1) / self.alpha
        self.n_looks = 0

    def look(self, log_wealth: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
        """Certified pairs (M x M bool) at this look; ``known`` are pairs certified before."""
        self.n_looks += 1
        return self._look(np.asarray(log_wealth, dtype=float), _known(known, self.n_models))

    def _look(self, log_wealth: np.ndarray, known: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def details(self) -> dict:
        """Certifier-specific facts for ``Ranking.details`` (JSON-safe)."""
        return {}

    def state(self) -> dict:
        return {"n_looks": np.array([self.n_looks])}

    def load_state(self, arrays: dict) -> None:
        self.n_looks = int(np.asarray(arrays["n_looks"])[0])


class Bonferroni(Certifier):
    """e-Bonferroni: certify (j, l) once ``E^{jl} >= M(M-1)/alpha``."""

    name = "bonferroni"

    def _look(self, log_wealth, known):
        with np.errstate(invalid="ignore"):
            out = log_wealth >= np.log(self.threshold)
        np.fill_diagonal(out, False)
        return out | known


class Shortcut(Certifier):
    """The pooled statistic ``B^{jl} >= M(M-1)/alpha`` (Algorithm 2, O(M^3) per look).

    Only pairs that are not yet certified and whose upper bound
    ``E^{jl} + min(sum_m E^{jm}, sum_m E^{ml})`` reaches the threshold are evaluated.
    """

    name = "shortcut"

    def _look(self, log_wealth, known):
        return certify_shortcut(log_wealth, self.threshold, known)


def certify_shortcut(log_wealth: np.ndarray, threshold: float, known: np.ndarray) -> np.ndarray:
    """Pairs certified by the shortcut (or e-Bonferroni, or known) at one look."""
    capped = capped_wealth(log_wealth, threshold)
    with np.errstate(invalid="ignore"):
        out = log_wealth >= np.log(threshold)
    np.fill_diagonal(out, False)
    out |= known
    bound = capped + np.minimum(capped.sum(axis=1)[:, None], capped.sum(axis=0)[None, :])
    todo = ~out & (bound >= threshold * (1.0 - 1e-12))
    np.fill_diagonal(todo, False)
    if todo.any():
        stat = shortcut_statistic(capped, todo)
        out |= todo & (stat >= threshold)
    return out


class Exact(Certifier):
    """The exact test by enumeration of the weak orders (Algorithm 1), M <= 8.

    The surviving orders are kept as indices into :func:`~rankci.sequential.orders.order_table`
    with running counts of the pair states and ranks among them, so a look costs one pass of
    table look-ups over the survivors and bookkeeping proportional to the orders it eliminates.
    """

    name = "exact"

    def __init__(self, n_models: int, alpha: float) -> None:
        super().__init__(n_models, alpha)
        self.table = order_table(self.n_models)
        self._reset(np.arange(self.table.n_orders, dtype=np.intp))

    def _reset(self, alive: np.ndarray) -> None:
        table = self.table
        self.alive = alive
        self._n_groups = table.codes.shape[0]
        packed = table.packed  # codes and rank codes in one array: one take per compaction
        if alive.size == table.n_orders:
            self._packed = packed
            self._state_counts = table.state_counts.copy()
            self._rank_counts = table.rank_counts.copy()
        else:
            self._packed = np.take(packed, alive, axis=1)
            self._state_counts, self._rank_counts = self._summarize(self._packed)

    def _summarize(self, packed: np.ndarray) -> tuple:
        return self.table.summarize(packed[: self._n_groups], packed[self._n_groups :])

    @property
    def n_surviving(self) -> int:
        return int(self.alive.size)

    def _look(self, log_wealth, known):
        if self.alive.size:
            w = capped_wealth(log_wealth, self.threshold) - 1.0 / self.alpha
            sums = self.table.t_sums(w, codes=self._packed[: self._n_groups])
            eliminated = sums >= 0.0
            n_gone = int(np.count_nonzero(eliminated))
            if n_gone:
                few = 2 * n_gone <= self.alive.size  # update the counts from the fewer rows
                if few:
                    gone = np.flatnonzero(eliminated)
                    states, ranks = self._summarize(np.take(self._packed, gone, axis=1))
                    self._state_counts -= states
                    self._rank_counts -= ranks
                keep = np.flatnonzero(~eliminated)
                self.alive = self.alive[keep]
                self._packed = np.take(self._packed, keep, axis=1)
                if not few:
                    self._state_counts, self._rank_counts = self._summarize(self._packed)
        return self.certified() | known

    def certified(self) -> np.ndarray:
        """Pairs on which every surviving order agrees (all pairs if none survives)."""
        m = self.n_models
        out = np.zeros((m, m), dtype=bool)
        if self.alive.size == 0:
            out[:] = True
        else:
            a, b = self.table.pair_a, self.table.pair_b
            counts = self._state_counts
            out[a, b] = (counts[:, 1] == 0) & (counts[:, 2] == 0)
            out[b, a] = (counts[:, 0] == 0) & (counts[:, 1] == 0)
        np.fill_diagonal(out, False)
        return out

    def rank_sets(self) -> list[list[int]]:
        """For each model, the ranks it takes across the surviving orders (sorted)."""
        return [np.flatnonzero(row > 0).tolist() for row in self._rank_counts]

    def details(self) -> dict:
        return {"n_surviving_orders": self.n_surviving, "n_orders": self.table.n_orders}

    def state(self) -> dict:
        return {**super().state(), "alive": self.alive}

    def load_state(self, arrays: dict) -> None:
        super().load_state(arrays)
        alive = np.asarray(arrays["alive"], dtype=np.intp)
        if alive.size and (alive.min() < 0 or alive.max() >= self.table.n_orders):
            raise ValueError("saved surviving orders do not fit the order table")
        self._reset(alive)


def _known(known: np.ndarray | None, m: int) -> np.ndarray:
    if known is None:
        return np.zeros((m, m), dtype=bool)
    known = np.asarray(known, dtype=bool)
    if known.shape != (m, m):
        raise ValueError(f"known must be a {m} x {m} boolean matrix, got shape {known.shape}")
    return known
