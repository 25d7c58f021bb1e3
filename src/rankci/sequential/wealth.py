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
* ``agrapa``: plug-in ``lambda_t = clip(sum_{s<t} Y_s / (1 + sum_{s<t} Y_s^2), 0, 0.75)``;
* ``ons``: online Newton step, ``lambda_1 = 0``, ``A_0 = 1``; after each item
  ``g = -Y / (1 + lambda Y)``, ``A += g^2``,
  ``lambda <- clip(lambda - 2/(2 - ln 3) g / A, 0, 0.5)``;
* ``fixed``: a constant ``lambda``.

Implementation
--------------
Write ``u_t = 1 + Y_t = (1 + x_tj - x_tl) / (1 + b_t)``. A constant bet's factor is
``1 + lambda Y_t = lambda (u_t + d)`` with ``d = (1 - lambda) / lambda``, so between two *commit
points* each pair keeps the linear-space product ``prod (u_t + d)`` (two array operations per bet
and item) and a commit adds ``n log(lambda) + log(product)`` to the stored log-wealth, n being the
number of items the pair was active for. ``commit_every`` is chosen so that no partial product
can leave ``exp(+-600)``. Commit points are fixed multiples of ``commit_every`` in the item count
and products are accumulated strictly in item order, so the state after t items is bit-for-bit the
same whether the items came one at a time or in blocks of any size. A block of items is processed
with cumulative sums along the item axis and vectorised over the pairs, in row chunks that stay
in cache; only the ``ons`` recursion loops over the items of a block.

Freezing: after :meth:`PairWealth.retire` a model's pairs keep their wealth for good, which keeps
every wealth an e-process (Proposition 4.5 of the source). :meth:`PairWealth.freeze_pairs` does the
same for single ordered pairs (the monitor's ``freeze`` option, :mod:`.freezing`): a wealth stopped
at a stopping time is a stopped supermartingale, hence still an e-process. Once some pairs are
frozen, a block is processed over the list of the pairs still updated (gathered columns, the same
arithmetic in the same order as the dense path, so every unfrozen pair keeps the same bits).

References
----------
Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
JRSS-B 86(1), 1-27.
Rank confidence sequences: anytime-valid leaderboards (the source of :mod:`rankci.sequential`),
Section 3 and Appendix B.1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from numbers import Real

import numpy as np

from rankci._base import check_choice, check_positive_int

__all__ = ["BETS", "DEFAULT_GRID", "SAMPLINGS", "PairWealth"]

SAMPLINGS = ("finite", "iid")
BETS = ("mixture", "agrapa", "ons", "fixed")
DEFAULT_GRID = (0.03, 0.06, 0.12, 0.25, 0.5)
AGRAPA_CAP = 0.75
ONS_CAP = 0.5
ONS_RATE = 2.0 / (2.0 - np.log(3.0))
_LOG_BUDGET = 600.0  # |log| of a partial product stays below this (float64 overflows at ~709)
_CHUNK_ELEMENTS = 16384  # elements of one (items x rows x models) work array: stays in cache


class PairWealth:
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
        if isinstance(eps, bool) or not isinstance(eps, Real) or not 0.0 < float(eps) < 1.0:
            raise ValueError(f"eps must be a number strictly between 0 and 1, got {eps!r}")
        self.eps = float(eps)
        self.lam = _check_bet(lam, "lam")
        self.grid_option = tuple(_check_bet(g, "grid value") for g in grid)
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

    def _pair_items_since_commit(self) -> np.ndarray:
        last = np.where(self._stop < 0, self.t, self._stop)
        since = np.maximum(last - self._t_commit, 0).astype(float)
        out = np.minimum.outer(since, since)
        if self.n_frozen_pairs:
            frozen = self._pair_stop >= 0
            pair = np.maximum(self._pair_stop - self._t_commit, 0).astype(float)
            out = np.where(frozen, np.minimum(out, pair), out)
        return out

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
        if pairs is not None:
            return self._some_log_wealth(np.asarray(pairs, dtype=bool))
        comp = self.component_log_wealth()
        if comp.shape[0] == 1:
            out = comp[0]
        else:
            top = comp.max(axis=0)
            out = top + np.log(np.exp(comp - top).sum(axis=0)) - np.log(comp.shape[0])
        np.fill_diagonal(out, np.nan)
        return out

    def _some_log_wealth(self, pairs: np.ndarray) -> np.ndarray:
        m, k = self.n_models, self.n_components
        pairs = pairs & ~np.eye(m, dtype=bool)
        if np.count_nonzero(pairs) * 4 > m * m:  # most pairs: the full computation is faster
            out = self.log_wealth()
            out[~pairs] = np.nan
            return out
        out = np.full(m * m, np.nan)
        flat = np.flatnonzero(pairs)
        comp = np.take(self._log.reshape(k, -1), flat, axis=1)
        comp += np.log(np.take(self._part.reshape(k, -1), flat, axis=1))
        if self.constant:
            comp += np.take(self._pair_items_since_commit(), flat)[None] * self._log_lam[:, :, 0]
        if k == 1:
            out[flat] = comp[0]
        else:
            top = comp.max(axis=0)
            out[flat] = top + np.log(np.exp(comp - top).sum(axis=0)) - np.log(k)
        return out.reshape(m, m)

    # ------------------------------------------------------------------ updating
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
        count = int(np.count_nonzero(new))
        if count:
            self._pair_stop[new] = self.t
            self.n_frozen_pairs += count
            self._pairs = None
        return count

    def _pair_list(self, idx: np.ndarray) -> tuple:
        """Positions (in ``idx``) and flat M x M indices of the ordered pairs still updated."""
        key = idx.tobytes()
        if self._pairs is None or self._pairs[0] != key:
            sub = self._pair_stop[np.ix_(idx, idx)] < 0
            np.fill_diagonal(sub, False)
            ri, ci = np.nonzero(sub)
            self._pairs = (key, ri, ci, idx[ri] * self.n_models + idx[ci])
        return self._pairs[1:]

    def update(self, block: np.ndarray) -> None:
        """Consume items: ``block`` is (B, M) or (M,) scores in [0, 1], in model order.

        Only the columns of active models are read, so retired models' columns may hold anything,
        NaN included. The caller guarantees that active models' scores are finite and in [0, 1]
        (:class:`~rankci.sequential.Monitor` checks).
        """
        block = np.asarray(block, dtype=float)
        if block.ndim == 1:
            block = block[None, :]
        if block.ndim != 2 or block.shape[1] != self.n_models:
            raise ValueError(
                f"expected items x {self.n_models} models scores, got shape {block.shape}"
            )
        n = block.shape[0]
        if self.n_items is not None and self.sampling == "finite" and self.t + n > self.n_items:
            raise ValueError(
                f"sampling='finite' with n_items={self.n_items}: {self.t} items were consumed "
                f"and {n} more would exceed the benchmark"
            )
        if n == 1 and self.constant and self._all_active and not self.n_frozen_pairs:
            self._one_item(block[0])
            if self.t % self.commit_every == 0:
                self._commit()
            return
        idx = np.flatnonzero(self._stop < 0)
        start = 0
        while start < n:
            stop = min(n, start + self.commit_every - self.t % self.commit_every)
            if idx.size >= 2 and self.n_frozen_pairs:
                self._segment_pairs(block[start:stop], idx)
            elif idx.size >= 2:
                self._segment(block[start:stop], idx)
            else:
                self.t += stop - start
            if self.t % self.commit_every == 0:
                self._commit()
            start = stop

    def _commit(self) -> None:
        if self.constant:
            self._log += self._pair_items_since_commit()[None] * self._log_lam
        self._log += np.log(self._part)
        self._part.fill(1.0)
        self._t_commit = self.t

    def _no_clip(self, n_items: int) -> bool:
        """|b| <= (t - 1) / (N - t + 1) for scores in [0, 1]: no clipping while that is small."""
        last = self.t + n_items  # the last item of the block, 1-based
        return last <= (1.0 - self.eps) * (self.n_items - last + 1)

    def _one_item(self, x: np.ndarray) -> None:
        """One item, every model active, a constant bet: the arithmetic of :meth:`_segment`
        (hence the same bits) in a handful of small array operations."""
        if self._buffers is None:
            m, k = self.n_models, self.n_components
            self._buffers = (np.empty((m, m)), np.empty((m, m)), np.empty((k, m, m)))
        u, den, f = self._buffers
        np.subtract((x + 1.0)[:, None], x[None, :], out=u)
        if self.sampling == "finite":
            offsets = self._csum * (-1.0 / (self.n_items - self.t))
            np.subtract((offsets + 1.0)[:, None], offsets[None, :], out=den)
            if not self._no_clip(1):
                np.maximum(den, self.eps, out=den)
                np.minimum(den, 2.0, out=den)
            u /= den
            self._csum += x
        np.add(u, self._shift, out=f)
        self._part *= f
        self.t += 1

    def _segment(self, block: np.ndarray, idx: np.ndarray) -> None:
        """Items between two commit points, for the active models ``idx`` (>= 2 of them)."""
        full = idx.size == self.n_models
        x = block if full else block[:, idx]
        n_items, a = x.shape
        if full:
            part, s1, s2 = self._part, self._s1, self._s2
        else:
            sub = np.ix_(idx, idx)
            part = self._part[:, idx[:, None], idx[None, :]]
            s1 = None if self._s1 is None else self._s1[sub]
            s2 = None if self._s2 is None else self._s2[sub]
        xp = x + 1.0
        offsets = offsets_p = None
        clip = False
        if self.sampling == "finite":
            csum = self._csum if full else self._csum[idx]
            prefix = np.cumsum(np.concatenate([csum[None, :], x]), axis=0)
            scale = -1.0 / (self.n_items - self.t - np.arange(n_items, dtype=float))
            offsets = prefix[:-1] * scale[:, None]  # b_t^{jl} = offsets_j - offsets_l
            offsets_p = offsets + 1.0
            clip = not self._no_clip(n_items)
            if full:
                self._csum = prefix[-1].copy()
            else:
                self._csum[idx] = prefix[-1]
        # ONS steps item by item through whole rows: bigger chunks, fewer Python iterations
        budget = _CHUNK_ELEMENTS if self.bet != "ons" else 256 * _CHUNK_ELEMENTS
        rows = max(1, min(a, budget // (n_items * a)))
        shape = (n_items, rows, a)
        u_buf, d_buf, f_buf = np.empty(shape), np.empty(shape), np.empty(shape)
        for j0 in range(0, a, rows):
            j1 = min(a, j0 + rows)
            u, den, f = u_buf[:, : j1 - j0], d_buf[:, : j1 - j0], f_buf[:, : j1 - j0]
            np.subtract(xp[:, j0:j1, None], x[:, None, :], out=u)  # 1 + Z
            if offsets is not None:
                np.subtract(offsets_p[:, j0:j1, None], offsets[:, None, :], out=den)  # 1 + b
                if clip:
                    np.maximum(den, self.eps, out=den)
                    np.minimum(den, 2.0, out=den)
                u /= den
            rows_part = part[:, j0:j1]
            if self.constant:
                for k in range(self.n_components):
                    np.add(u, self._shift[k], out=f)
                    _multiply_in_order(f, rows_part[k])
            else:
                u -= 1.0  # Y
                if self.bet == "agrapa":
                    _agrapa(u, f, den, rows_part[0], s1[j0:j1], s2[j0:j1])
                else:
                    _ons(u, rows_part[0], s1[j0:j1], s2[j0:j1])
        if not full:
            self._part[:, idx[:, None], idx[None, :]] = part
            if self._s1 is not None:
                self._s1[sub] = s1
                self._s2[sub] = s2
        self.t += n_items

    def _segment_pairs(self, block: np.ndarray, idx: np.ndarray) -> None:
        """:meth:`_segment` over the list of pairs still updated (some pairs are frozen).

        Each pair's factors are the dense path's (``1 + Z = (x_j + 1) - x_l``, divided by
        ``1 + b = (o_j + 1) - o_l``, plus ``d_k``) multiplied in item order, so the bits agree.
        """
        x = block[:, idx]
        n_items = x.shape[0]
        ri, ci, flat = self._pair_list(idx)
        part_flat = self._part.reshape(self.n_components, -1)
        xp = x + 1.0
        offsets = offsets_p = None
        clip = False
        if self.sampling == "finite":
            prefix = np.cumsum(np.concatenate([self._csum[idx][None, :], x]), axis=0)
            scale = -1.0 / (self.n_items - self.t - np.arange(n_items, dtype=float))
            offsets = prefix[:-1] * scale[:, None]
            offsets_p = offsets + 1.0
            clip = not self._no_clip(n_items)
            self._csum[idx] = prefix[-1]
        n_pairs = ri.size
        if n_pairs:
            # models x items copies: gathering whole rows is much faster than gathering columns
            xp_t, x_t = np.ascontiguousarray(xp.T), np.ascontiguousarray(x.T)
            if offsets is not None:
                op_t, o_t = np.ascontiguousarray(offsets_p.T), np.ascontiguousarray(offsets.T)
            width = max(1, min(n_pairs, _CHUNK_ELEMENTS // n_items))
            u_buf, d_buf, f_buf = (np.empty((n_items, width)) for _ in range(3))
            t_buf, s_buf = np.empty((width, n_items)), np.empty((width, n_items))
            for p0 in range(0, n_pairs, width):
                p1 = min(n_pairs, p0 + width)
                w = p1 - p0
                u, den, f = u_buf[:, :w], d_buf[:, :w], f_buf[:, :w]
                r, c = ri[p0:p1], ci[p0:p1]
                ut, dt = t_buf[:w], s_buf[:w]
                np.subtract(np.take(xp_t, r, axis=0), np.take(x_t, c, axis=0), out=ut)
                if offsets is not None:
                    np.subtract(np.take(op_t, r, axis=0), np.take(o_t, c, axis=0), out=dt)
                    if clip:
                        np.maximum(dt, self.eps, out=dt)
                        np.minimum(dt, 2.0, out=dt)
                    ut /= dt
                np.copyto(u, ut.T)
                where = flat[p0:p1]
                part = np.take(part_flat, where, axis=1)
                if self.constant:
                    for k in range(self.n_components):
                        np.add(u, self._shift[k], out=f)
                        _multiply_in_order(f, part[k])
                else:
                    u -= 1.0
                    s1, s2 = np.take(self._s1, where), np.take(self._s2, where)
                    if self.bet == "agrapa":
                        _agrapa(u, f, den, part[0], s1, s2)
                    else:
                        _ons(u, part[0], s1, s2)
                    self._s1.flat[where], self._s2.flat[where] = s1, s2
                part_flat[:, where] = part
        self.t += n_items

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


# ---------------------------------------------------------------------- kernels
def _multiply_in_order(factors: np.ndarray, product: np.ndarray) -> None:
    """``product <- product * f_1 * f_2 * ... * f_B`` (left to right, in place; factors reused).

    numpy's multiply-reduction along the leading axis accumulates row after row, so the result
    is bit-for-bit the item-by-item product.
    """
    factors[0] *= product
    np.multiply.reduce(factors, axis=0, out=product)


def _agrapa(y, f, work, product, s1, s2) -> None:
    """Plug-in bet from the sums over the items before each one; updates the sums in place."""
    n = y.shape[0]
    c1 = np.cumsum(np.concatenate([s1[None], y]), axis=0)
    np.multiply(y, y, out=work)
    c2 = np.cumsum(np.concatenate([s2[None], work]), axis=0)
    s1[...] = c1[n]
    s2[...] = c2[n]
    lam = c2[:n]
    lam += 1.0
    np.divide(c1[:n], lam, out=lam)
    np.clip(lam, 0.0, AGRAPA_CAP, out=lam)
    np.multiply(lam, y, out=f)
    f += 1.0
    _multiply_in_order(f, product)


def _ons(y, product, lam, big_a) -> None:
    """Online Newton step, item by item (the recursion cannot be vectorised over items)."""
    for t in range(y.shape[0]):
        yt = y[t]
        factor = lam * yt
        factor += 1.0
        product *= factor
        g = -yt / factor
        big_a += g * g
        lam -= ONS_RATE * g / big_a
        np.clip(lam, 0.0, ONS_CAP, out=lam)


# ---------------------------------------------------------------------- helpers
def _check_bet(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) <= 0.9:
        raise ValueError(f"{name} must be a bet in (0, 0.9], got {value!r}")
    return float(value)


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
