"""Pairwise wealths: one betting e-process for every ordered pair of models.

For the ordered pair (j, l) and item t, with scores in [0, 1],

* ``Z_t = x_tj - x_tl`` in [-1, 1];
* offset ``b_t = 0`` under sampling model (S) (i.i.d. items), and under model (F) (a fixed
  benchmark of N items revealed in one uniformly random order shared by all models)
  ``b_t = clip(-S_{t-1} / (N - t + 1), -1 + eps, 1)`` with ``S_{t-1} = sum_{s<t} Z_s``;
* ``Y_t = (Z_t - b_t) / (1 + b_t) >= -1``;
* wealth ``E_t = prod_{s<=t} (1 + lambda_s Y_s)`` with a predictable bet ``lambda_s`` in [0, 1).

Under ``H_jl: theta_j <= theta_l`` (theta = mean over the benchmark under (F), expected score under
(S)) ``E[Z_t | past] <= b_t``, so ``E_t`` is a nonnegative supermartingale with ``E_0 = 1`` whatever
the dependence between models (Waudby-Smith and Ramdas 2024; Lemma B.1 of the source), and by
Ville's inequality ``P(exists t: E_t >= 1/alpha) <= alpha``.

Bets (Appendix B.1 of the source):

* ``mixture`` (default): the average of the wealths of the constant bets
  ``grid = (0.03, 0.06, 0.12, 0.25, 0.5)``;
* ``agrapa``: plug-in ``lambda_t = clip(sum_{s<t} Y_s / (1 + sum_{s<t} Y_s^2), 0, 0.75)``.
  Appendix B.1 of the source writes the plug-in as the ratio of running means
  ``hat E[Y] / hat E[Y^2]``; the code uses the ratio of sums with 1 added to the denominator.
  Both are valid: each is predictable and clipped to [0, 0.75], and any predictable bet in
  [0, 1) keeps ``E_t`` a nonnegative supermartingale, so the guarantee does not depend on the
  form; they differ only in how boldly the first items are bet on. The code uses the ``1 +``
  form because it defines the first bet (0, where ``hat E[Y] / hat E[Y^2]`` is 0/0) and shrinks
  the bets while few items are seen (a few lucky items cannot push the bet to the cap), and
  because every recorded monitor output was made with it;
* ``ons``: online Newton step, ``lambda_1 = 0``, ``A_0 = 1``; after each item
  ``g = -Y / (1 + lambda Y)``, ``A += g^2``,
  ``lambda <- clip(lambda - 2/(2 - ln 3) g / A, 0, 0.5)``;
* ``fixed``: a constant ``lambda``.

Implementation
--------------
The arithmetic of consuming items (linear-space products between fixed commit points, bit for bit
the same for any block sizes; the dense and the pair-list paths) is in :mod:`.updating`.

Freezing: after :meth:`PairWealth.retire` a model's pairs keep their wealth for good, which keeps
every wealth an e-process (Proposition 4.5 of the source). :meth:`PairWealth.freeze_pairs` does the
same for single ordered pairs (the monitor's ``freeze`` option, :mod:`.freezing`): a wealth stopped
at a stopping time is a stopped supermartingale, hence still an e-process. Once some pairs are
frozen, a block is processed over the list of the pairs still updated (the same arithmetic in the
same order as the dense path, so every unfrozen pair keeps the same bits).

References
----------
Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
JRSS-B 86(1), 1-27.
Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
:mod:`rankci.sequential`; docs/references.md),
Section 3 and Appendix B.1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from rankci._base import check_choice, check_positive_int
from rankci.sequential.spec import BETS, DEFAULT_GRID, SAMPLINGS, check_bet, check_eps
from rankci.sequential.updating import AGRAPA_CAP, ONS_CAP, ONS_RATE, WealthUpdates

__all__ = ["AGRAPA_CAP", "BETS", "DEFAULT_GRID", "ONS_CAP", "ONS_RATE", "SAMPLINGS", "PairWealth"]

_LOG_BUDGET = 600.0  # |log| of a partial product stays below this (float64 overflows at ~709)


class PairWealth(WealthUpdates):
    """Log-wealths of the e-processes of all M(M-1) ordered pairs, fed item by item or by block.

    Parameters
    ----------
    n_models : int
        M >= 2.
    sampling : {"finite", "iid"}
        Model (F), a fixed benchmark of ``n_items`` items in uniformly random order, or (S).
    n_items : int, optional
        N, required for ``sampling="finite"`` (a stream may stop before N items: the offset still
        uses the full N).
    bet : {"mixture", "agrapa", "ons", "fixed"}
    lam : float, default 0.25
        The constant bet of ``bet="fixed"``, in (0, 0.9].
    grid : sequence of float
        The constant bets averaged by ``bet="mixture"``, each in (0, 0.9].
    eps : float, default 0.01
        The offset under (F) is clipped to ``[-1 + eps, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> w = PairWealth(2, sampling="iid", bet="fixed", lam=0.25)
    >>> w.update(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> round(float(w.log_wealth()[0, 1]), 6)  # 2 log 1.25 + log 0.75
    0.158605
    """

    def __init__(
        self,
        n_models: int,
        *,
        sampling: str = "finite",
        n_items: int | None = None,
        bet: str = "mixture",
        lam: float = 0.25,
        grid: Sequence[float] = DEFAULT_GRID,
        eps: float = 0.01,
    ) -> None:
        self.n_models = check_positive_int(n_models, "n_models", minimum=2)
        self.sampling = check_choice("sampling", sampling, SAMPLINGS)
        self.bet = check_choice("bet", bet, BETS)
        if sampling == "finite" and n_items is None:
            raise ValueError(
                "sampling='finite' needs n_items, the number N of items in the benchmark; "
                "use sampling='iid' for an open-ended stream"
            )
        self.n_items = None if n_items is None else check_positive_int(n_items, "n_items")
        self.eps = check_eps(eps)
        self.lam = check_bet(lam, "lam")
        self.grid_option = tuple(check_bet(g, "grid value") for g in grid)
        if not self.grid_option:
            raise ValueError("grid must hold at least one bet")
        if bet == "fixed":
            self.grid = (self.lam,)
        elif bet == "mixture":
            self.grid = self.grid_option
        else:
            self.grid = (AGRAPA_CAP if bet == "agrapa" else ONS_CAP,)
        m, k = self.n_models, len(self.grid)
        self.constant = bet in ("mixture", "fixed")
        self.t = 0
        self._t_commit = 0
        self._stop = np.full(m, -1, dtype=np.int64)  # item count at retirement, -1 = active
        self._pair_stop = np.full((m, m), -1, dtype=np.int64)  # item count at freezing, -1 = on
        self.n_frozen_pairs = 0  # ordered pairs frozen by freeze_pairs (not by retirement)
        self._pairs: tuple | None = None  # cached list of the pairs still updated
        self._live: np.ndarray | None = None  # flat pairs a commit must touch (None: all)
        self._log = np.zeros((k, m, m))
        self._part = np.ones((k, m, m))
        self._csum = np.zeros(m)
        # aGRAPA: running sums of Y and Y^2; ONS: current bet and A
        self._s1 = np.zeros((m, m)) if bet in ("agrapa", "ons") else None
        self._s2 = None if self._s1 is None else np.full((m, m), 0.0 if bet == "agrapa" else 1.0)
        lams = np.asarray(self.grid)
        self._shift = ((1.0 - lams) / lams)[:, None, None]  # d_k
        self._log_lam = np.log(lams)[:, None, None]
        self.commit_every = _commit_every(self.grid, self.eps, sampling == "finite", self.constant)
        self._buffers: tuple | None = None
        self._all_active = True
        self.n_active = m

    # ------------------------------------------------------------------ reading
    @property
    def n_components(self) -> int:
        return len(self.grid)

    @property
    def active(self) -> np.ndarray:
        """Boolean mask of the models whose pairs are still updated."""
        return self._stop < 0

    @property
    def frozen_pairs(self) -> np.ndarray:
        """M x M boolean: ordered pairs frozen by :meth:`freeze_pairs` (retirement not included)."""
        return self._pair_stop >= 0

    def component_log_wealth(self) -> np.ndarray:
        """``log E`` of each constant bet of the grid (K x M x M; K = 1 for other bets)."""
        out = self._log + np.log(self._part)
        if self.constant:
            out += self._pair_items_since_commit()[None] * self._log_lam
        return out

    def log_wealth(self, pairs: np.ndarray | None = None) -> np.ndarray:
        """``log E_t^{jl}`` (M x M, row j = "j better than l", NaN on the diagonal).

        For the mixture, ``log(mean_k exp(log E_k))``, computed stably. With ``pairs`` (M x M
        boolean) only those entries are computed, with the same bits; the others are NaN.
        """
        m = self.n_models
        off = ~np.eye(m, dtype=bool)
        # the entries one by one (flat indices) are the dense arithmetic's, and faster than the
        # dense (K, M, M) computation at any share of the pairs
        return self._some_log_wealth(off if pairs is None else np.asarray(pairs, dtype=bool) & off)

    def _some_log_wealth(self, pairs: np.ndarray) -> np.ndarray:
        out = np.full(self.n_models**2, np.nan)
        flat = np.flatnonzero(pairs)
        out[flat] = self.log_wealth_at(flat)
        return out.reshape(self.n_models, self.n_models)

    def log_wealth_at(self, flat: np.ndarray) -> np.ndarray:
        """``log E_t^{jl}`` at the flat indices ``flat = j * M + l`` (off-diagonal), 1-D.

        The entries of :meth:`log_wealth`, bit for bit (it calls this method): the stored
        log-wealth plus the log of the partial product (and the items since the last commit
        times ``log lambda``), per constant bet; for the mixture
        ``top + log(sum_k exp(c_k - top)) - log K`` with ``top = max_k c_k``.

        Parameters
        ----------
        flat : numpy.ndarray
            Integer flat indices into the M x M matrix, off the diagonal.

        Returns
        -------
        numpy.ndarray
            ``log E`` at those pairs, in the order of ``flat``.

        Examples
        --------
        >>> import numpy as np
        >>> w = PairWealth(3, sampling="iid", bet="fixed", lam=0.25)
        >>> w.update(np.array([[1.0, 0.0, 0.5]]))
        >>> bool(np.array_equal(w.log_wealth_at(np.array([1, 5])), w.log_wealth().ravel()[[1, 5]]))
        True
        """
        k = self.n_components
        flat = np.asarray(flat, dtype=np.intp)
        comp = np.take(self._log.reshape(k, -1), flat, axis=1)
        work = np.take(self._part.reshape(k, -1), flat, axis=1)
        comp += np.log(work, out=work)
        if self.constant:
            comp += self._items_since_commit_at(flat)[None] * self._log_lam[:, :, 0]
        if k == 1:
            return comp[0]
        # top + log(sum_k exp(comp_k - top)) - log(k), in place (the same operations)
        top = comp.max(axis=0)
        comp -= top
        total = np.exp(comp, out=comp).sum(axis=0)
        np.log(total, out=total)
        np.add(top, total, out=total)
        total -= np.log(k)
        return total

    # ------------------------------------------------------------------ freezing
    def retire(self, models: Iterable[int]) -> None:
        """Freeze every pair involving these models (permanent)."""
        for j in models:
            j = int(j)
            if not 0 <= j < self.n_models:
                raise ValueError(f"model index {j} is not in 0..{self.n_models - 1}")
            if self._stop[j] < 0:
                self._stop[j] = self.t
                self._all_active = False
                self.n_active -= 1

    def freeze_pairs(self, pairs: np.ndarray) -> int:
        """Stop updating these ordered pairs (M x M boolean mask), for good; returns how many
        pairs were newly frozen. Their wealth keeps its value at the current item count."""
        pairs = np.asarray(pairs, dtype=bool)
        if pairs.shape != (self.n_models, self.n_models):
            raise ValueError(f"pairs must be a {self.n_models} x {self.n_models} boolean mask")
        new = pairs & (self._pair_stop < 0)
        np.fill_diagonal(new, False)
        return self._freeze_new(np.flatnonzero(new))

    def freeze_flat(self, flat: np.ndarray) -> int:
        """:meth:`freeze_pairs` for the pairs at the flat indices ``j * M + l`` (off-diagonal);
        pairs frozen already (and repeats) are skipped. Returns how many pairs were newly frozen.

        Examples
        --------
        >>> import numpy as np
        >>> w = PairWealth(3, sampling="iid")
        >>> w.freeze_flat(np.array([1, 5, 5])), w.freeze_flat(np.array([1])), w.n_frozen_pairs
        (2, 0, 2)
        """
        flat = np.asarray(flat, dtype=np.intp)
        if flat.size and (flat.min() < 0 or flat.max() >= self.n_models**2):
            raise ValueError(f"flat pair indices must lie in 0..{self.n_models**2 - 1}")
        if np.any(flat % (self.n_models + 1) == 0):
            raise ValueError("flat pair indices must be off the diagonal")
        if flat.size > 1 and not (np.diff(flat) > 0).all():
            flat = np.unique(flat)
        return self._freeze_new(flat[self._pair_stop.ravel().take(flat) < 0])

    def _freeze_new(self, flat: np.ndarray) -> int:
        """Freeze the (distinct, off-diagonal, not yet frozen) pairs at these flat indices."""
        count = int(flat.size)
        if count:
            self._pair_stop.flat[flat] = self.t
            self.n_frozen_pairs += count
            if self._pairs is not None:  # the cached list minus the new pairs (order kept)
                key, ri, ci, live = self._pairs
                keep = self._pair_stop.ravel().take(live) < 0
                self._pairs = (key, ri[keep], ci[keep], live[keep])
        return count

    # ------------------------------------------------------------------ state
    def state(self) -> dict:
        """Everything needed to continue exactly: a JSON-safe ``config`` and ``arrays``."""
        config = {
            "n_models": self.n_models,
            "sampling": self.sampling,
            "n_items": self.n_items,
            "bet": self.bet,
            "lam": self.lam,
            "grid": list(self.grid_option),
            "eps": self.eps,
        }
        arrays = {
            "counters": np.array([self.t, self._t_commit], dtype=np.int64),
            "stop": self._stop,
            "pair_stop": self._pair_stop,
            "log": self._log,
            "part": self._part,
            "csum": self._csum,
        }
        if self._s1 is not None:
            arrays["s1"], arrays["s2"] = self._s1, self._s2
        return {"config": config, "arrays": {k: np.array(v) for k, v in arrays.items()}}

    @classmethod
    def from_state(cls, state: dict) -> PairWealth:
        """The inverse of :meth:`state`."""
        wealth = cls(**state["config"])
        arrays = state["arrays"]
        wealth.t, wealth._t_commit = (int(v) for v in arrays["counters"])
        for name in ("stop", "pair_stop", "log", "part", "csum", "s1", "s2"):
            current = getattr(wealth, "_" + name)
            if current is None or (name == "pair_stop" and name not in arrays):
                continue  # pair_stop: absent from files written before pairs could freeze
            saved = np.asarray(arrays[name])
            if saved.shape != current.shape:
                raise ValueError(f"saved wealth array {name!r} has shape {saved.shape}")
            setattr(wealth, "_" + name, saved.astype(current.dtype, copy=True))
        wealth.n_active = int((wealth._stop < 0).sum())
        wealth.n_frozen_pairs = int((wealth._pair_stop >= 0).sum())
        wealth._all_active = wealth.n_active == wealth.n_models
        return wealth


# ---------------------------------------------------------------------- helpers
def _commit_every(grid: Sequence[float], eps: float, finite: bool, constant: bool) -> int:
    """Items per commit such that no partial product leaves exp(+-600)."""
    u_max = 2.0 / eps if finite else 2.0
    worst = 0.0
    for lam in grid:
        if constant:  # factors u + d, u in [0, u_max]
            d = (1.0 - lam) / lam
            worst = max(worst, abs(np.log(d)), np.log(u_max + d))
        else:  # factors 1 + lam (u - 1)
            worst = max(worst, -np.log1p(-lam), np.log1p(lam * (u_max - 1.0)))
    return int(max(1, min(256, _LOG_BUDGET // worst)))
