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

The base class :class:`Certifier`, the capped wealths and the shortcut statistic are in
:mod:`.certifier` (shared with :mod:`.ilp`) and re-exported here.

``auto`` is exact for M <= 8, the integer program for 9 <= M <= :data:`AUTO_ILP_MAX` (16) and the
shortcut above. The integer program certifies the exact set (more than the shortcut: at M = 10 on
MMLU-Pro, mean rank-interval width 1.54 against 1.62); its time per look grows quickly with M.
Measured (``benchmarks/bench_monitor.py --case auto``: 3,000 items, a look every 30, 2 heavily
shared cores, two runs): mean per look 3-5 ms at M = 10, 4-11 ms at M = 12, 20-35 ms at M = 16
(max 0.2-0.4 s), 51-110 ms at M = 20 (max 0.9-1.6 s), 0.5-1 s at M = 30 (max 4-8 s); the
shortcut stays under 1 ms. The rule keeps ``auto`` under about 50 ms per look on average.

Wealths are capped at ``M(M-1)/alpha`` before they are added up: a capped term alone reaches
every threshold used here, so the decisions are unchanged and nothing overflows. Certified pairs
are kept for good (the exact certified set only grows, and the others are subsets of it), and the
monitor takes their transitive closure.

References
----------
Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
:mod:`rankci.sequential`; docs/references.md), Section 3, Algorithms 1-3,
Appendix B.3.
Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
Statistics 49(3).
"""

from __future__ import annotations

import numpy as np

from rankci._base import check_choice
from rankci.sequential.certifier import (
    Certifier,
    capped_wealth,
    certify_shortcut,
    certify_shortcut_open,
    pair_mask,
    shortcut_statistic,
)
from rankci.sequential.ilp import IntegerProgram
from rankci.sequential.orders import MAX_EXACT_MODELS, order_table
from rankci.sequential.spec import CERTIFIERS

__all__ = [
    "AUTO_ILP_MAX",
    "CERTIFIERS",
    "Bonferroni",
    "Certifier",
    "Exact",
    "Shortcut",
    "capped_wealth",
    "certify_shortcut",
    "make_certifier",
    "resolve_certifier",
    "shortcut_statistic",
]

AUTO_ILP_MAX = 16  # auto: the integer program up to this M (see the module docstring)


def resolve_certifier(name: str, n_models: int) -> str:
    """``auto`` -> ``exact`` for M <= 8, ``ilp`` for M <= 16, else ``shortcut``; other names are
    returned unchanged.

    Parameters
    ----------
    name : str
        One of :data:`CERTIFIERS` (``"auto"``, ``"exact"``, ``"shortcut"``, ``"ilp"``,
        ``"bonferroni"``).
    n_models : int
        Number of models M.

    Returns
    -------
    str
        The certifier that will run.

    Raises
    ------
    ValueError
        For an unknown name, or ``"exact"`` with more than 8 models.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Section 3, Algorithms 1-3.

    Examples
    --------
    >>> resolve_certifier("auto", 5), resolve_certifier("auto", 9), resolve_certifier("auto", 17)
    ('exact', 'ilp', 'shortcut')
    """
    check_choice("certifier", name, CERTIFIERS)
    if name == "auto":
        if n_models <= MAX_EXACT_MODELS:
            return "exact"
        return "ilp" if n_models <= AUTO_ILP_MAX else "shortcut"
    if name == "exact" and n_models > MAX_EXACT_MODELS:
        raise ValueError(
            f"certifier='exact' enumerates weak orders and is limited to {MAX_EXACT_MODELS} "
            f"models, got {n_models}; use 'ilp' (same certified set, slower) or 'shortcut'"
        )
    return name


def make_certifier(name: str, n_models: int, alpha: float) -> Certifier:
    """A fresh certifier of the given name (after :func:`resolve_certifier`).

    Parameters
    ----------
    name : str
        Certifier name (``"auto"`` chooses by M).
    n_models : int
        Number of models M.
    alpha : float
        Level; the certifier's threshold is ``M(M-1)/alpha``.

    Returns
    -------
    Certifier
        :class:`Exact`, :class:`Shortcut`, :class:`Bonferroni` or :class:`IntegerProgram`.

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Section 3, Algorithms 1-3.
    Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
    Statistics 49(3).

    Examples
    --------
    >>> certifier = make_certifier("auto", 3, 0.05)
    >>> type(certifier).__name__, certifier.threshold, 3 * 2 / 0.05
    ('Exact', 120.0, 120.0)
    """
    name = resolve_certifier(name, n_models)
    if name == "ilp":
        return IntegerProgram(n_models, alpha)
    return {"exact": Exact, "shortcut": Shortcut, "bonferroni": Bonferroni}[name](n_models, alpha)


class Bonferroni(Certifier):
    """e-Bonferroni: certify (j, l) once ``E^{jl} >= M(M-1)/alpha``."""

    name = "bonferroni"

    def _look(self, log_wealth, known, candidates=None):
        with np.errstate(invalid="ignore"):
            out = log_wealth >= np.log(self.threshold)
        np.fill_diagonal(out, False)
        if candidates is not None:
            out &= candidates
        return out | known

    def look_frozen(self, values, open_pairs, known):
        """The open pairs with ``log E >= log(M(M-1)/alpha)``, added to ``known``."""
        self.n_looks += 1
        out = pair_mask(known, self.n_models).copy()
        with np.errstate(invalid="ignore"):
            out.ravel()[open_pairs[values >= np.log(self.threshold)]] = True
        return out


class Shortcut(Certifier):
    """The pooled statistic ``B^{jl} >= M(M-1)/alpha`` (Algorithm 2).

    Certified pairs are never examined again; of the others, only those that the bounds of
    :func:`~rankci.sequential.certifier.may_reach` cannot rule out are evaluated, at O(M) each
    (a boolean matrix product and a few M x M operations filter the rest).
    """

    name = "shortcut"

    def _look(self, log_wealth, known, candidates=None):
        return certify_shortcut(log_wealth, self.threshold, known, candidates)

    def look_frozen(self, values, open_pairs, known):
        """:func:`~rankci.sequential.certifier.certify_shortcut_open` (the open pairs only)."""
        self.n_looks += 1
        known = pair_mask(known, self.n_models)
        return certify_shortcut_open(values, open_pairs, self.threshold, known)


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

    def _look(self, log_wealth, known, candidates=None):
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
