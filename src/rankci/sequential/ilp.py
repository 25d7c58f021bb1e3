"""The exact certifier by integer programming (Algorithm 3 of the source), for any number of models.

A weak order is a binary vector ``x`` over the ordered pairs, ``x_ab = 1`` meaning "a is not above
b" (so ``x`` is the indicator of ``T(W)``), subject to

* totality ``x_ab + x_ba >= 1`` (every pair is ordered one way, or tied), and
* transitivity ``x_ab + x_bc - x_ac <= 1`` ("not above" is transitive).

With ``w_s^{ab} = alpha min(E_s^{ab}, cap) - 1`` at look s, the order survives every look up to t
iff ``sum_ab x_ab w_s^{ab} < 0`` for all s <= t, and the pair (j, l) is *uncertified* iff some
surviving order has ``x_jl = 1``. For each pair not settled otherwise, this is one feasibility
integer program, solved with HiGHS through :func:`scipy.optimize.milp`:

* pairs certified before stay certified (the exact certified set only grows), and pairs the
  shortcut certifies at this look are certified (the shortcut is a subset of the exact set);
* a pool of *witnesses* (orders known to survive every look so far) is checked first: a pair
  with ``x_jl = 1`` in a surviving witness is uncertified without any solve;
* look constraints are added lazily: a solve starts from the current look and the looks that were
  binding for this pair before; a solution is checked against every past look, and the most
  violated look is added until the solution survives them all (a new witness) or the program is
  infeasible (the pair is certified). Each pair needs at most t solves (Proposition A.1).

Deciding membership is coNP-hard in the worst case (Proposition A.2 of the source); in practice
M = 20 takes a fraction of a second per look, and a warning is raised above 30 models.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
from scipy import sparse

from rankci._base import LazyModule, RankciWarning
from rankci.sequential.certifier import Certifier, capped_wealth, certify_shortcut

optimize = LazyModule("scipy.optimize")  # imported on the first solve (most need none)

__all__ = ["IntegerProgram"]

WARN_ABOVE = 30
POOL_SIZE = 256
_MARGIN = 1e-9  # strict "< 0" as "<= -margin" (HiGHS works to about 1e-7 anyway)


@lru_cache(maxsize=4)
def _structure(m: int) -> tuple[np.ndarray, np.ndarray, sparse.csr_matrix, np.ndarray, np.ndarray]:
    """Ordered-pair indexing and the static constraints (totality, transitivity) for m models."""
    rows, cols = np.nonzero(~np.eye(m, dtype=bool))
    pos = np.full((m, m), -1, dtype=np.intp)
    pos[rows, cols] = np.arange(rows.size)
    a, b = np.triu_indices(m, 1)
    n_tot = a.size
    # transitivity over all ordered triples of distinct models
    ta, tb, tc = (g.ravel() for g in np.meshgrid(*(np.arange(m),) * 3, indexing="ij"))
    distinct = (ta != tb) & (tb != tc) & (ta != tc)
    ta, tb, tc = ta[distinct], tb[distinct], tc[distinct]
    n_tr = ta.size
    r = np.concatenate([np.repeat(np.arange(n_tot), 2), n_tot + np.repeat(np.arange(n_tr), 3)])
    c = np.concatenate(
        [
            np.column_stack([pos[a, b], pos[b, a]]).ravel(),
            np.column_stack([pos[ta, tb], pos[tb, tc], pos[ta, tc]]).ravel(),
        ]
    )
    v = np.concatenate([np.ones(2 * n_tot), np.tile([1.0, 1.0, -1.0], n_tr)])
    matrix = sparse.csr_matrix((v, (r, c)), shape=(n_tot + n_tr, rows.size))
    lower = np.concatenate([np.ones(n_tot), np.full(n_tr, -np.inf)])
    upper = np.concatenate([np.full(n_tot, np.inf), np.ones(n_tr)])
    return rows, cols, matrix, lower, upper


class IntegerProgram(Certifier):
    """Exact certification by integer programs with lazily added looks and a witness pool.

    Gives the same certified pairs as :class:`~rankci.sequential.certify.Exact` (tested for
    M = 3..6), without rank sets. Before a pair's integer program, small changes of a few
    plausible orders (the ranking by net wealth, all tied, recent witnesses) are tried as
    witnesses and checked exactly against every look (``heuristics=False`` skips this). Attributes
    ``n_solves`` and ``pool`` describe the work done.
    """

    name = "ilp"

    def __init__(self, n_models: int, alpha: float, *, heuristics: bool = True) -> None:
        super().__init__(n_models, alpha)
        self.heuristics = bool(heuristics)
        if self.n_models > WARN_ABOVE:
            warnings.warn(
                f"the integer-program certifier with {self.n_models} models may take seconds or "
                "more per look (the problem is coNP-hard); the shortcut is polynomial",
                RankciWarning,
                stacklevel=3,
            )
        self._rows, self._cols, self._matrix, self._lower, self._upper = _structure(self.n_models)
        n = self._rows.size
        self._history = np.empty((16, n))
        self._n_looks_stored = 0
        self.pool = np.zeros((0, n), dtype=bool)
        self.binding: dict[int, list[int]] = {}
        self.n_solves = 0
        self._certified = np.zeros((self.n_models, self.n_models), dtype=bool)

    def _look(self, log_wealth, known, candidates=None):
        w = self.alpha * capped_wealth(log_wealth, self.threshold)[self._rows, self._cols] - 1.0
        self._append(w)
        if self.pool.shape[0]:
            self.pool = self.pool[self.pool @ w < 0.0]
        certified = (
            self._certified
            | known
            | certify_shortcut(log_wealth, self.threshold, self._certified | known, candidates)
        )
        flat = certified[self._rows, self._cols]
        covered = self.pool.any(axis=0)
        if candidates is not None:  # pairs that may not be added are not solved for
            covered = covered | ~candidates[self._rows, self._cols]
        bases = self._bases(log_wealth) if self.heuristics else None
        for p in np.flatnonzero(~flat & ~covered):
            if covered[p]:
                continue
            witness = None if bases is None else self._nearby_witness(int(p), bases)
            if witness is None:
                witness = self._witness(int(p))
            if witness is None:
                flat[p] = True
            else:
                self.pool = np.vstack([self.pool, witness])[-POOL_SIZE:]
                covered |= witness
        self._certified = np.zeros_like(self._certified)
        self._certified[self._rows, self._cols] = flat
        return self._certified.copy()

    @property
    def history(self) -> np.ndarray:
        """``w_s`` of every look so far (looks x ordered pairs)."""
        return self._history[: self._n_looks_stored]

    def _append(self, w: np.ndarray) -> None:
        if self._n_looks_stored == self._history.shape[0]:
            grown = np.empty((2 * self._history.shape[0], self._history.shape[1]))
            grown[: self._n_looks_stored] = self.history
            self._history = grown
        self._history[self._n_looks_stored] = w
        self._n_looks_stored += 1

    def _bases(self, log_wealth: np.ndarray) -> np.ndarray:
        """Levels of a few plausible orders: the ranking by net capped log-wealth, everyone tied,
        and the most recent witnesses (levels = 1 + number of models strictly above)."""
        m = self.n_models
        cap = np.log(self.threshold)  # frozen pairs read +-inf (.freezing)
        lw = np.minimum(np.nan_to_num(log_wealth, nan=0.0, posinf=cap, neginf=-cap), cap)
        net = lw.sum(axis=1) - lw.sum(axis=0)
        consensus = np.empty(m, dtype=np.int64)
        consensus[np.argsort(-net, kind="stable")] = np.arange(m)
        bases = [consensus[None, :], np.zeros((1, m), dtype=np.int64)]
        if self.pool.shape[0]:
            x = np.zeros((min(32, self.pool.shape[0]), m, m), dtype=bool)
            x[:, self._rows, self._cols] = self.pool[-32:]
            bases.append((x & ~x.transpose(0, 2, 1)).sum(axis=2))
        return np.vstack(bases)

    def _nearby_witness(self, p: int, bases: np.ndarray) -> np.ndarray | None:
        """A surviving order among small changes of the bases that put j not above l: j joins
        l's level, l joins j's level, or the two swap levels. Checked exactly against every
        look, so a hit is a genuine witness (the integer program is only needed otherwise)."""
        j, l = int(self._rows[p]), int(self._cols[p])
        joins_l, joins_j, swapped = bases.copy(), bases.copy(), bases.copy()
        joins_l[:, j] = bases[:, l]
        joins_j[:, l] = bases[:, j]
        swapped[:, j], swapped[:, l] = bases[:, l], bases[:, j]
        levels = np.vstack([bases, joins_l, joins_j, swapped])
        x = levels[:, self._rows] >= levels[:, self._cols]
        x = x[x[:, p]]
        survive = np.flatnonzero((self.history @ x.T.astype(float) < 0.0).all(axis=0))
        return x[survive[0]] if survive.size else None

    def _witness(self, p: int) -> np.ndarray | None:
        """A weak order with x_p = 1 surviving every look so far, or None if there is none."""
        last = self.history.shape[0] - 1
        looks = sorted({s for s in self.binding.get(p, []) if s < last} | {last})
        cuts: list[np.ndarray] = []
        n = self._rows.size
        while True:
            x = self._solve(p, looks, cuts)
            self.n_solves += 1
            if x is None:
                self.binding[p] = looks
                return None
            sums = self.history @ x
            bad = np.flatnonzero(sums >= 0.0)
            if bad.size == 0:
                self.binding[p] = looks
                return x
            new = np.setdiff1d(bad, looks)
            if new.size:
                looks = sorted([*looks, int(new[np.argmax(sums[new])])])
            else:  # feasible only within the solver's tolerance: exclude this exact vector
                cuts.append(x)
            if len(cuts) > n:
                raise RuntimeError("integer program: tolerance loop did not settle")

    def _solve(self, p: int, looks: list[int], cuts: list[np.ndarray]) -> np.ndarray | None:
        n = self._rows.size
        lower = np.zeros(n)
        lower[p] = 1.0
        constraints = [
            optimize.LinearConstraint(self._matrix, self._lower, self._upper),
            optimize.LinearConstraint(self.history[looks], -np.inf, -_MARGIN),
        ]
        if cuts:  # no-good cuts: differ from each excluded vector in at least one coordinate
            cut = np.array(cuts, dtype=float)
            constraints.append(
                optimize.LinearConstraint(1.0 - 2.0 * cut, 1.0 - cut.sum(axis=1), np.inf)
            )
        result = optimize.milp(
            np.zeros(n),
            integrality=np.ones(n),
            bounds=optimize.Bounds(lower, np.ones(n)),
            constraints=constraints,
        )
        if result.status == 2:  # infeasible
            return None
        if result.x is None:
            raise RuntimeError(f"integer program failed: {result.message}")
        return result.x > 0.5

    def details(self) -> dict:
        return {"n_solves": self.n_solves, "n_witnesses": int(self.pool.shape[0])}

    def state(self) -> dict:
        pairs = [(p, s) for p, looks in sorted(self.binding.items()) for s in looks]
        return {
            **super().state(),
            "history": self.history,
            "pool": self.pool,
            "binding": np.array(pairs, dtype=np.int64).reshape(-1, 2),
            "certified": self._certified,
            "n_solves": np.array([self.n_solves]),
        }

    def load_state(self, arrays: dict) -> None:
        super().load_state(arrays)
        self._history = np.array(arrays["history"], dtype=float).reshape(-1, self._rows.size)
        self._n_looks_stored = self._history.shape[0]
        if self._n_looks_stored == 0:
            self._history = np.empty((16, self._rows.size))
        self.pool = np.array(arrays["pool"], dtype=bool).reshape(-1, self._rows.size)
        self.binding = {}
        for p, s in np.asarray(arrays["binding"]).reshape(-1, 2):
            self.binding.setdefault(int(p), []).append(int(s))
        self._certified = np.array(arrays["certified"], dtype=bool)
        self.n_solves = int(np.asarray(arrays["n_solves"])[0])
