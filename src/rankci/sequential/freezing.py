"""Incremental certification, incremental closure and frozen pairs (the monitor's ``freeze``).

The certified set D only grows (it is the union over looks, closed transitively), so a pair in D
is never examined again, and the closure of ``D | new`` is computed from the closed D by composing
only with the pairs added since (:func:`close_incremental`).

With ``freeze=True`` (:class:`~rankci.sequential.Monitor`; ``"auto"`` means M > 8) every pair
*certified* at a look, ``(j, l)`` in D, stops being updated, and from then on the certifier reads
``+inf`` (the cap) for it instead of its wealth. Its reverse ``(l, j)`` is *not* frozen: it is
still updated, read with its own wealth and a candidate, like every pair not in D (issue 25:
freezing the reverses too, as issue 18 did, hid the <= alpha event, see below). Nothing the
certifier reads depends on a certified pair's wealth, so those updates are skipped
(:meth:`~rankci.sequential.wealth.PairWealth.freeze_pairs`, which keeps every other pair's wealth
bit for bit).

The monitor computes that view from the pairs not certified alone: their log-wealths
(:meth:`~rankci.sequential.wealth.PairWealth.log_wealth_at`), then
:meth:`~rankci.sequential.certifier.Certifier.look_frozen` (the shortcut and e-Bonferroni work on
that list, :func:`~rankci.sequential.certifier.certify_shortcut_open`; the others read
:func:`~rankci.sequential.certifier.frozen_log_wealth`, the array of :func:`frozen_view`), and
freezes the newly certified pairs by index; the answers are those of the dense view, bit for bit.

Why this stays valid
--------------------
Let X be the exact closed test (every weak order, Algorithm 1 of the source) run on the *unfrozen*
wealths at the same looks, and D^X its certified set; X is valid at every look and under any
stopping rule (Theorem 4.2 of the source). Claim: at every look s the frozen run's certified set
``D_s`` is a subset of ``D^X_s``, whatever its certifier (shortcut, e-Bonferroni, exact, integer
program). So every statement of the frozen run is a statement of a valid procedure, and the
``1 - alpha`` guarantee carries over (with retirement, X runs on the retirement-frozen wealths,
which are e-processes by Proposition 4.5).

Proof, by induction over looks (``D_0 = D^X_0 = {}``). Assume ``D_{s-1}`` is inside
``D^X_{s-1}``. Take any weak order W that X has not eliminated before look s. W agrees with every
pair of ``D^X_{s-1}``, hence with every pair of ``D_{s-1}``: no certified orientation ``(j, l)``
lies in ``T(W)`` (``j`` is above ``l`` in W). So every term of ``E^W = mean_{T(W)} E^{ab}`` that
the frozen run reads is an unfrozen wealth (a pair never certified was never frozen, and keeps
its bits), never the cap, and ``E^W_frozen = E^W``. Every certifier is monotone in the wealths
and certifies (j, l) at look s only if every W with ``(j, l)`` in ``T(W)`` has
``E^W_frozen >= 1/alpha`` at some look up to s (for the shortcut this is Proposition B.7:
``E^W >= B^{jl} / (M(M-1))``); such a W then has ``E^W >= 1/alpha`` too, and X eliminates it.
So X certifies (j, l) by look s, and since ``D^X`` is transitively closed, the closure of
``D_{s-1}`` and the new pairs stays inside ``D^X_s``. The restriction to candidates only removes
pairs. []

(Equivalently: a frozen wealth is a stopped supermartingale, still an e-process; the cap is only
ever read for pairs that are already true on the event where no statement is false.)

The same run with ``freeze=False``, and the <= alpha event
----------------------------------------------------------
Let U be the unfrozen run with the same certifier, the same looks and no retirement rule (or one
that retires the same models: it does whenever the certified sets agree). Every term the frozen
view reads is at least U's capped term - the cap for a certified pair against
``min(E, cap)``, the same bits for every other pair - and it reads U's terms exactly for every
order that U's exact test has not eliminated (the proof above). Hence, look by look:

* **exact enumeration / integer program**: the surviving orders are U's, so the certified pairs
  are U's, **identical** (and the exact certifier's rank sets and counts of surviving orders;
  the integer program may find other witnesses, so its ``n_solves`` may differ).
* **e-Bonferroni**: a pair not certified has U's wealth, so the certified pairs are U's,
  **identical**.
* **shortcut**: ``B^{jl} = E^{jl} + sum_m min(E^{jm}, E^{ml})`` is monotone in the terms, so by
  induction over looks the frozen run's certified set **contains** U's: a pair may be certified
  a look earlier (a third model's term reads the cap), never later; and never beyond X.
* **the <= alpha event** (a cycle among the certified pairs, or every order eliminated): U's
  certified set is contained in the frozen run's, so when U meets the event at a look, the
  frozen run has met it at that look or before, and from then on both report nothing. With the
  exact, integer-program and e-Bonferroni certifiers it is the same look. The frozen shortcut
  can meet it earlier (or in a run where U never does) only through a cycle in its certified
  set, which lies inside ``D^X``, so X has then eliminated every order, the true one included:
  the event has happened.
* :meth:`Monitor.log_wealth` shows a certified pair's wealth at the look where it was frozen.

How often the shortcut's statements differ is measured in ``validation/monitor_freeze.py``
(docs/monitor.md). ``freeze=False`` is the exact mode: every wealth is updated at every item,
and the answers are those of the plain per-item algorithm (``benchmarks/monitor_baseline.py``)
look by look. A state saved before issue 25 may hold frozen reverses: they keep reading their
wealth at the look where they were frozen (a stopped e-process, so the proof holds with X on
those wealths), and such a reverse cannot show the event.
"""

from __future__ import annotations

import numpy as np

from rankci.sequential.certifier import packed_bits

__all__ = ["FREEZE_ABOVE", "close_incremental", "frozen_view", "resolve_freeze"]

FREEZE_ABOVE = 8  # freeze="auto" freezes settled pairs for more models than this


def resolve_freeze(freeze: bool | str, n_models: int) -> bool:
    """``"auto"`` -> freeze for more than :data:`FREEZE_ABOVE` models; True / False as given.

    Examples
    --------
    >>> resolve_freeze("auto", 8), resolve_freeze("auto", 9), resolve_freeze(False, 400)
    (False, True, False)
    """
    if isinstance(freeze, (bool, np.bool_)):
        return bool(freeze)
    if freeze == "auto":
        return n_models > FREEZE_ABOVE
    raise ValueError(f"freeze must be True, False or 'auto', got {freeze!r}")


def frozen_view(log_wealth: np.ndarray, dominance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the certifier reads under ``freeze``: ``(log-wealths, candidates)``.

    Certified orientations read ``+inf`` (the cap); every other pair, the reverses of certified
    pairs included, reads its wealth, and the candidates are the pairs not certified (see the
    module docstring for why this is valid, and why the reverses stay).

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[False, True, False], [False, False, False], [False, False, False]])
    >>> lw, todo = frozen_view(np.zeros((3, 3)), d)
    >>> lw.tolist()[:2], todo.tolist()[:2]
    ([[0.0, inf, 0.0], [0.0, 0.0, 0.0]], [[False, False, True], [True, False, True]])
    """
    out = np.where(dominance, np.inf, np.asarray(log_wealth, dtype=float))
    candidates = np.logical_not(dominance)
    np.fill_diagonal(candidates, False)
    return out, candidates


def close_incremental(closed: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The transitive closure of ``closed | new``, ``closed`` being transitively closed already.

    Semi-naive evaluation of the least fixed point of ``X = X | X o X``: starting from
    ``X = closed | new`` and ``delta`` = the added pairs, each round adds
    ``(X o delta | delta o X) & ~X`` and makes that the next ``delta``, until nothing is added.
    Every pair of the closure is reached: a composition of two pairs that were both in X before
    the last round was formed in an earlier round, or lies in ``closed`` (closed already). Each
    round costs O(M^2 / 64) to pack X's rows and columns into 64-bit words plus O(|delta| M / 64)
    to OR the rows (columns) of X that the pairs of ``delta`` reach (leave). A cycle shows up as
    a True diagonal entry (the caller checks).

    Examples
    --------
    >>> import numpy as np
    >>> closed = np.zeros((4, 4), dtype=bool); closed[0, 1] = True
    >>> new = np.zeros((4, 4), dtype=bool); new[1, 2] = new[2, 3] = True
    >>> close_incremental(closed, new).astype(int).tolist()
    [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]]
    """
    added = new & ~closed
    if not added.any():
        return closed
    m = closed.shape[0]
    out = closed | added
    words = max(1, -(-m // 64))
    a, b = np.divmod(np.flatnonzero(added), m)  # delta: the pairs (a, b) added last round
    while True:
        rows = packed_bits(out, words)  # rows[i]: out[i, :] as bits
        cols = packed_bits(out.T, words)  # cols[j]: out[:, j] as bits
        # delta o X: (a, j) for out[b, j]; X o delta: (i, b) for out[i, a]; new ones only
        heads, reach = _or_grouped(rows, b, a)
        reach &= ~rows.take(heads, axis=0)
        tails, come = _or_grouped(cols, a, b)
        come &= ~cols.take(tails, axis=0)
        grown_r, grown_c = np.flatnonzero(reach.any(axis=1)), np.flatnonzero(come.any(axis=1))
        if grown_r.size == 0 and grown_c.size == 0:
            return out
        i1, j1 = np.nonzero(_unpacked(reach[grown_r], m))
        i2, j2 = np.nonzero(_unpacked(come[grown_c], m))
        flat = np.concatenate([heads[grown_r].take(i1) * m + j1, j2 * m + tails[grown_c].take(i2)])
        flat = np.unique(flat)
        out.ravel()[flat] = True
        a, b = np.divmod(flat, m)


def _or_grouped(packed: np.ndarray, source: np.ndarray, key: np.ndarray) -> tuple:
    """The distinct keys (increasing) and, for each, the OR of ``packed[source]`` over its
    entries: ``packed`` holds rows of bits in 64-bit words."""
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key.take(order), return_index=True)
    rows = packed.take(source.take(order), axis=0)
    return keys, np.bitwise_or.reduceat(rows, starts, axis=0)


def _unpacked(words: np.ndarray, m: int) -> np.ndarray:
    """The inverse of :func:`~rankci.sequential.certifier.packed_bits`: rows of ``m`` booleans."""
    return np.unpackbits(words.view(np.uint8), axis=1, count=m).view(bool)
