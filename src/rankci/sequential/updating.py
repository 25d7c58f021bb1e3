"""The arithmetic of consuming items: how :class:`~rankci.sequential.wealth.PairWealth` updates.

:mod:`.wealth` defines the e-processes (offsets, bets, reading, freezing, state); this module holds
the loops that feed them items, as the mixin :class:`WealthUpdates`.

Write ``u_t = 1 + Y_t = (1 + x_tj - x_tl) / (1 + b_t)``. A constant bet's factor is
``1 + lambda Y_t = lambda (u_t + d)`` with ``d = (1 - lambda) / lambda``, so between two *commit
points* each pair keeps the linear-space product ``prod (u_t + d)`` (two array operations per bet
and item) and a commit adds ``n log(lambda) + log(product)`` to the stored log-wealth, n being the
number of items the pair was active for. Commit points are fixed multiples of ``commit_every`` in
the item count (no partial product leaves ``exp(+-600)``), and products are accumulated strictly
in item order (numpy's multiply-reduction along the leading axis goes row after row), so the state
after t items is bit for bit the same whether the items came one at a time or in blocks of any
size.

Three paths, the same arithmetic in the same order (hence the same bits for every pair):

* :meth:`WealthUpdates._one_item` - one item, every model active, a constant bet;
* :meth:`WealthUpdates._segment` - a block for the active models, dense over their pairs, in row
  chunks that stay in cache; only the ``ons`` recursion loops over the items of a block;
* :meth:`WealthUpdates._segment_pairs` - a block over the list of the pairs still updated (some
  pairs frozen): whole rows of models x items copies are gathered per pair (much faster than
  gathering columns), the factors ``((x_j + 1) - x_l) / ((o_j + 1) - o_l)`` are computed
  pairs x items on contiguous arrays and copied items x pairs in cache-sized blocks.

A commit touches only the pairs updated since the previous one once some pairs are frozen or
models retired (the others hold a product of 1 and no items), with the dense commit's bits.

Examples
--------
>>> import numpy as np
>>> from rankci.sequential.wealth import PairWealth
>>> x = np.random.default_rng(0).random((300, 4))
>>> one, block = PairWealth(4, n_items=300), PairWealth(4, n_items=300)
>>> for row in x:
...     one.update(row)
>>> block.update(x)
>>> bool(np.array_equal(one.log_wealth(), block.log_wealth(), equal_nan=True))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["AGRAPA_CAP", "ONS_CAP", "ONS_RATE", "WealthUpdates", "multiply_in_order"]

AGRAPA_CAP = 0.75
ONS_CAP = 0.5
ONS_RATE = 2.0 / (2.0 - np.log(3.0))
_CHUNK_ELEMENTS = 65536  # elements of one (items x rows x models) work array of the dense path
_PAIR_CHUNK = 65536  # elements of one (items x pairs) work array of the pair-list path
_T_BLOCK = 256  # pairs per block of the pair-list path's transposed copy (best of 64-4096)


class WealthUpdates:
    """Consuming items (mixed into :class:`~rankci.sequential.wealth.PairWealth`, which owns the
    arrays: ``_log``, ``_part``, ``_csum``, ``_s1``, ``_s2``, ``_stop``, ``_pair_stop``)."""

    # ------------------------------------------------------------------ entry point
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

    @property
    def items_to_commit(self) -> int:
        """Items until the next commit point (a block of this size is one segment)."""
        return self.commit_every - self.t % self.commit_every

    # ------------------------------------------------------------------ commits
    def _pair_items_since_commit(self) -> np.ndarray:
        last = np.where(self._stop < 0, self.t, self._stop)
        since = np.maximum(last - self._t_commit, 0).astype(float)
        out = np.minimum.outer(since, since)
        if self.n_frozen_pairs:
            frozen = self._pair_stop >= 0
            pair = np.maximum(self._pair_stop - self._t_commit, 0).astype(float)
            out = np.where(frozen, np.minimum(out, pair), out)
        return out

    def _items_since_commit_at(self, flat: np.ndarray) -> np.ndarray:
        """:meth:`_pair_items_since_commit` at the flat M x M indices ``flat`` (same values)."""
        pair = self._pair_stop.ravel().take(flat) if self.n_frozen_pairs else None
        if self._all_active:  # min(last_j, last_l) = t for every pair
            since = max(self.t - self._t_commit, 0)
            if pair is None or not (pair >= 0).any():  # none of them frozen: one count
                return np.full(flat.size, float(since))
            since = np.full(flat.size, since, dtype=np.int64)
        else:
            j, l = np.divmod(flat, self.n_models)
            last = np.where(self._stop < 0, self.t, self._stop)
            since = np.maximum(np.minimum(last[j], last[l]) - self._t_commit, 0)
        if pair is not None:
            frozen = np.minimum(since, np.maximum(pair - self._t_commit, 0))
            since = np.where(pair >= 0, frozen, since)
        return since.astype(float)

    def _commit(self) -> None:
        live = self._live
        if live is None:
            if self.constant:
                self._log += self._pair_items_since_commit()[None] * self._log_lam
            self._log += np.log(self._part)
            self._part.fill(1.0)
        else:  # only the pairs that could be updated since the last commit (the same bits)
            k = self.n_components
            log_flat, part_flat = self._log.reshape(k, -1), self._part.reshape(k, -1)
            values = log_flat.take(live, axis=1)
            if self.constant:
                values += self._items_since_commit_at(live)[None] * self._log_lam[:, :, 0]
            values += np.log(part_flat.take(live, axis=1))
            for j in range(k):  # row by row: about twice as fast as log_flat[:, live]
                log_flat[j][live] = values[j]
                part_flat[j][live] = 1.0
            # the dense path over a subset of models (_segment, once a model is retired or
            # withdrawn) multiplies the diagonal too, which is never read nor in ``live``: reset
            # it here, or its product (1 + shift)^t overflows to inf (with numpy's warning)
            diagonal = np.arange(self.n_models)
            self._part[:, diagonal, diagonal] = 1.0
        self._t_commit = self.t
        self._live = None
        if self.n_frozen_pairs or not self._all_active:
            idx = np.flatnonzero(self._stop < 0)
            # a superset of the pairs updated before the next commit (freezing only removes)
            self._live = self._pair_list(idx)[2] if idx.size >= 2 else np.empty(0, np.intp)

    def _no_clip(self, n_items: int) -> bool:
        """|b| <= (t - 1) / (N - t + 1) for scores in [0, 1]: no clipping while that is small."""
        last = self.t + n_items  # the last item of the block, 1-based
        return last <= (1.0 - self.eps) * (self.n_items - last + 1)

    # ------------------------------------------------------------------ the three paths
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

    def _offsets(self, x: np.ndarray, csum: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """Model F: the offsets ``o_t`` of the block's items (``b^{jl} = o_j - o_l``), the new
        running sums, and whether the clipping of ``1 + b`` can bind."""
        n_items = x.shape[0]
        prefix = np.cumsum(np.concatenate([csum[None, :], x]), axis=0)
        scale = -1.0 / (self.n_items - self.t - np.arange(n_items, dtype=float))
        return prefix[:-1] * scale[:, None], prefix[-1], not self._no_clip(n_items)

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
            offsets, csum, clip = self._offsets(x, self._csum if full else self._csum[idx])
            offsets_p = offsets + 1.0
            if full:
                self._csum = csum.copy()
            else:
                self._csum[idx] = csum
        # ONS steps item by item through whole rows: bigger chunks, fewer Python iterations
        budget = _CHUNK_ELEMENTS if self.bet != "ons" else 64 * _CHUNK_ELEMENTS
        rows = max(1, min(a, budget // (n_items * a)))
        shape = (n_items, rows, a)
        u_buf, d_buf, f_buf = np.empty(shape), np.empty(shape), np.empty(shape)
        shifts = self._shift[:, 0, 0].tolist()
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
                for k, shift in enumerate(shifts):
                    np.add(u, shift, out=f)
                    multiply_in_order(f, rows_part[k])
            else:
                u -= 1.0  # Y
                if self.bet == "agrapa":
                    agrapa_factors(u, f, den, rows_part[0], s1[j0:j1], s2[j0:j1])
                else:
                    ons_factors(u, rows_part[0], s1[j0:j1], s2[j0:j1])
        if not full:
            self._part[:, idx[:, None], idx[None, :]] = part
            if self._s1 is not None:
                self._s1[sub] = s1
                self._s2[sub] = s2
        self.t += n_items

    def _pair_list(self, idx: np.ndarray) -> tuple:
        """Positions (in ``idx``) and flat M x M indices of the ordered pairs still updated."""
        key = idx.tobytes()
        if self._pairs is None or self._pairs[0] != key:
            sub = self._pair_stop[np.ix_(idx, idx)] < 0
            np.fill_diagonal(sub, False)
            ri, ci = np.nonzero(sub)
            self._pairs = (key, ri, ci, idx[ri] * self.n_models + idx[ci])
        return self._pairs[1:]

    def _segment_pairs(self, block: np.ndarray, idx: np.ndarray) -> None:
        """:meth:`_segment` over the list of pairs still updated (some pairs are frozen).

        Each pair's factors are the dense path's (``1 + Z = (x_j + 1) - x_l``, divided by
        ``1 + b = (o_j + 1) - o_l``, clipped to ``[eps, 2]``, plus ``d_k``) multiplied in item
        order, so the bits agree. Per chunk of pairs, the numerators and the denominators are
        gathered as rows of models x items copies (``x + 1`` and ``x``, ``o + 1`` and ``o``),
        subtracted, clipped and divided pairs x items, all on contiguous arrays, and the
        quotients are then copied items x pairs in blocks of :data:`_T_BLOCK` pairs (a strided
        write of the whole chunk at once is about twice as slow).
        """
        x = block[:, idx]
        n_items = x.shape[0]
        ri, ci, flat = self._pair_list(idx)
        finite = self.sampling == "finite"
        clip = False
        if finite:
            offsets, csum, clip = self._offsets(x, self._csum[idx])
            self._csum[idx] = csum
        n_pairs = ri.size
        if n_pairs == 0:
            self.t += n_items
            return
        # models x items copies: gathering whole rows is much faster than gathering columns
        x_plus, x_minus = np.add(x.T, 1.0), np.ascontiguousarray(x.T)
        if finite:
            o_plus, o_minus = np.add(offsets.T, 1.0), np.ascontiguousarray(offsets.T)
        chunk = max(1, min(n_pairs, _PAIR_CHUNK // n_items))
        num_buf, other_buf = np.empty((chunk, n_items)), np.empty((chunk, n_items))
        den_buf = np.empty((chunk, n_items)) if finite else None
        u_buf, f_buf = np.empty(chunk * n_items), np.empty(chunk * n_items)
        k_bets = self.n_components
        part_flat = self._part.reshape(k_bets, -1)
        part_buf = np.empty((k_bets, chunk))
        shifts = self._shift[:, 0, 0].tolist()
        eps = self.eps
        for p0 in range(0, n_pairs, chunk):
            p1 = min(n_pairs, p0 + chunk)
            w = p1 - p0
            rows, cols = ri[p0:p1], ci[p0:p1]
            num, other = num_buf[:w], other_buf[:w]
            x_plus.take(rows, axis=0, out=num, mode="clip")
            x_minus.take(cols, axis=0, out=other, mode="clip")
            np.subtract(num, other, out=num)  # 1 + Z, pairs x items
            if finite:
                den = den_buf[:w]
                o_plus.take(rows, axis=0, out=den, mode="clip")
                o_minus.take(cols, axis=0, out=other, mode="clip")
                np.subtract(den, other, out=den)  # 1 + b
                if clip:  # max(., eps) then min(., 2): selections, the same bits in one pass
                    np.clip(den, eps, 2.0, out=den)
                np.divide(num, den, out=num)
            u = u_buf[: w * n_items].reshape(n_items, w)
            f = f_buf[: w * n_items].reshape(n_items, w)
            for b0 in range(0, w, _T_BLOCK):  # items x pairs, block by block (exact copies)
                np.copyto(u[:, b0 : b0 + _T_BLOCK], num[b0 : b0 + _T_BLOCK].T)
            where = flat[p0:p1]
            part = part_flat.take(where, axis=1, out=part_buf[:, :w], mode="clip")
            if self.constant:
                for k, shift in enumerate(shifts):
                    np.add(u, shift, out=f)
                    row = part[k]
                    f[0] *= row
                    np.multiply.reduce(f, axis=0, out=row)
            else:
                u -= 1.0
                s1, s2 = self._s1.ravel().take(where), self._s2.ravel().take(where)
                if self.bet == "agrapa":
                    agrapa_factors(u, f, np.empty_like(u), part[0], s1, s2)
                else:
                    ons_factors(u, part[0], s1, s2)
                self._s1.flat[where], self._s2.flat[where] = s1, s2
            for k in range(k_bets):  # row by row: about twice as fast as part_flat[:, where]
                part_flat[k][where] = part[k]
        self.t += n_items


# ---------------------------------------------------------------------- kernels
def multiply_in_order(factors: np.ndarray, product: np.ndarray) -> None:
    """``product <- product * f_1 * f_2 * ... * f_B`` (left to right, in place; factors reused).

    numpy's multiply-reduction along the leading axis accumulates row after row, so the result
    is bit-for-bit the item-by-item product.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([2.0]); multiply_in_order(np.array([[3.0], [0.5]]), p); p.tolist()
    [3.0]
    """
    factors[0] *= product
    # a wealth beyond the float range is +inf, as the item-by-item product gives it: every factor
    # is positive, so it stays +inf (log-wealth +inf, a rejection); numpy's overflow warning
    # would only alarm the user (certifier.py treats the log-wealth the same way)
    with np.errstate(over="ignore"):
        np.multiply.reduce(factors, axis=0, out=product)


def agrapa_factors(y, f, work, product, s1, s2) -> None:
    """aGRAPA: plug-in bet ``clip(sum Y / (1 + sum Y^2), 0, 0.75)`` from the sums over the items
    before each one; multiplies the factors ``1 + lambda Y`` into ``product``, updates the sums."""
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
    multiply_in_order(f, product)


def ons_factors(y, product, lam, big_a) -> None:
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
