"""Board changes after creation: items that arrive, models withdrawn by their owners, items voided.

Mixed into :class:`~rankci.sequential.Monitor` (and so :class:`~rankci.sequential.OpenMonitor`).

Items that arrive. A monitor consumes items in the order they reach it: that order *is* the
board's shared order, and a new item simply takes the next position (:meth:`update_item` names it
and records its position in :attr:`item_positions`). Under ``sampling="iid"`` (model S) the
number of items is open; under ``sampling="finite"`` (model F) the benchmark is the fixed set of
``n_items`` items in one uniformly random order, so an item beyond ``n_items``, or one already
consumed, is refused (it would be outside the population whose means are ranked).

Withdrawal (:meth:`withdraw_model`). The owner takes a model off the board: it is retired (every
pair with it is frozen at the current item count, so it receives no evidence any more) and the
withdrawal is recorded with the look at which it left. Its certified statements stay. A
withdrawal decided from anything seen so far, scores included, is a stopping time for those pairs,
like a retirement (Proposition 4.5 of the source), so the guarantee is unchanged:
:data:`WITHDRAW_GUARANTEE`. An automatic retirement (:mod:`.retirement`) is the board's decision
that a model's scores are no longer needed; a withdrawal is its owner's, and a withdrawn model can
no longer be scored at all.

Voiding (:meth:`void_item`). An item found broken stops contributing from a given look on: its
observations consumed after that look are skipped (counted in ``excluded``). Evidence already
accumulated is never removed: a betting e-process cannot un-bet, and subtracting a past factor
would make the wealth something other than a nonnegative supermartingale, so a void that would
remove an observation consumed before its look is refused. What this does to the guarantee is
:data:`VOID_GUARANTEE`.

References
----------
Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
:mod:`rankci.sequential`; docs/references.md), Proposition 4.5 (stopping a pair at a stopping
time keeps the guarantee).
Ramdas, A., Grunwald, P., Vovk, V. and Shafer, G. (2023). Game-theoretic statistics and safe
anytime-valid inference. Statistical Science 38(4), 576-601 (a predictable choice not to bet
leaves a test supermartingale one).

Examples
--------
>>> import numpy as np
>>> from rankci.sequential import Monitor
>>> mon = Monitor(["a", "b", "c"], sampling="iid", certifier="exact", look_every=100)
>>> rng = np.random.default_rng(0)
>>> for i, row in enumerate(rng.random((300, 3)) < [0.8, 0.5, 0.2]):
...     _ = mon.update_item(f"q{i % 250}", row.astype(float))
>>> mon.withdraw_model("c")
{'model': 'c', 't': 300, 'look': 3, 'reason': 'withdrawn by its owner'}
>>> mon.void_item("q7")["from_look"]
3
>>> mon.update_item("q7", [1.0, 0.0, np.nan])
False
>>> mon.ranking().details["withdrawn"]["c"]["look"]
3
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral

import numpy as np

__all__ = ["VOID_GUARANTEE", "WITHDRAW_GUARANTEE", "BoardChanges"]

#: What a withdrawal does to the guarantee (shown in every ranking that has one).
WITHDRAW_GUARANTEE = (
    "A withdrawn model receives no evidence after the look at which it left; its pairs are "
    "frozen there, as at a retirement, so its statements certified up to that look stay and keep "
    "the guarantee, whatever (data included) decided the withdrawal."
)

#: What voiding an item does to the guarantee (shown in every ranking that has a void).
VOID_GUARANTEE = (
    "A voided item's observations after its void look are skipped; evidence accumulated before "
    "is kept (an e-process cannot un-bet). Statements at looks before the void are unchanged. "
    "Statements at later looks are about the abilities on the items not voided when each "
    "observation was made, and keep the 1 - alpha guarantee only if the voiding rule does not "
    "depend on the scores (for example an item found broken by reading its text or key); "
    "voiding items according to their scores voids the guarantee of every later look."
)


class BoardChanges:
    """The changes a live board accepts after creation (a mixin of the monitors)."""

    def _init_changes(self) -> None:
        #: Models withdrawn by their owners: name -> item count, look count, the pairs with it
        #: certified when it left.
        self.withdrawn: dict[str, dict] = {}
        #: Voided items: name -> the look from which their observations are skipped.
        self.voided: dict[str, dict] = {}
        #: Named items in the board's shared order: name -> the positions (1-based item counts)
        #: of their observations.
        self.item_positions: dict[str, list[int]] = {}
        self._skipped_voided = 0

    # ------------------------------------------------------------------ items
    def update_item(
        self, item: str, scores: Mapping[str, float] | Sequence[float] | np.ndarray
    ) -> bool:
        """Consume one named item at the next position of the shared order.

        Returns False (and counts it in ``excluded["items_voided"]``) when the item is voided at
        the current look, True when it was consumed or excluded as :meth:`update` does.

        Raises
        ------
        ValueError
            An empty name; under ``sampling="finite"``, an item consumed already (each item of
            the fixed benchmark is consumed once) or beyond ``n_items``.
        """
        if not isinstance(item, str) or not item:
            raise ValueError(f"an item name is a non-empty string, got {item!r}")
        void = self.voided.get(item)
        if void is not None and len(self.looks) >= void["from_look"]:
            self._skipped_voided += 1
            self._ranking = None
            return False
        seen = self.item_positions.get(item)
        if seen and self.sampling == "finite":
            raise ValueError(
                f"item {item!r} was consumed already (at item {seen[0]}): under "
                "sampling='finite' each item of the benchmark is consumed once"
            )
        before = self.t
        self.update(scores)
        if self.t > before:
            self.item_positions.setdefault(item, []).append(int(self.t))
        return True

    def void_item(self, item: str, from_look: int | None = None) -> dict:
        """Stop an item's contributions from look ``from_look`` on (default: the looks to come).

        ``from_look = L``: every observation of the item given to :meth:`update_item` once ``L``
        looks have been taken is skipped (the default ``L`` is the number of looks taken so far,
        so from now on). A later ``L`` schedules the void, fixed now. Nothing consumed is
        removed: an earlier ``L`` is accepted only when no observation of the item was consumed
        after look ``L``, and observations consumed since the last look (already in the wealths)
        are kept and counted in the record's ``kept`` (:data:`VOID_GUARANTEE`).

        Raises
        ------
        ValueError
            An item never consumed (unknown), one voided already, ``sampling="finite"`` (voiding
            changes the fixed benchmark whose means are ranked), or an ``L`` that would remove
            consumed evidence.
        """
        if self.sampling == "finite":
            raise ValueError(
                f"cannot void item {item!r}: under sampling='finite' the abilities are the means "
                "over the fixed benchmark of n_items items; voiding changes that benchmark "
                "(use sampling='iid')"
            )
        positions = self.item_positions.get(item)
        if positions is None:
            raise ValueError(f"unknown item {item!r}: no observation of it was consumed")
        if item in self.voided:
            raise ValueError(
                f"item {item!r} is voided already (from look {self.voided[item]['from_look']})"
            )
        n_looks = len(self.looks)
        if from_look is None:
            from_look = n_looks
        if isinstance(from_look, bool) or not isinstance(from_look, Integral) or from_look < 0:
            raise ValueError(f"from_look must be an integer >= 0, got {from_look!r}")
        from_look = int(from_look)
        self._flush()
        since = self.looks[from_look - 1]["t"] if 0 < from_look <= n_looks else 0
        later = [p for p in positions if p > since] if from_look <= n_looks else []
        if later and from_look < n_looks:
            raise ValueError(
                f"cannot void item {item!r} from look {from_look}: {len(later)} of its "
                f"observations (the first at item {later[0]}) were consumed after that look, "
                "and an e-process cannot un-bet; void it from the looks to come "
                f"(from_look >= {n_looks})"
            )
        record = {"item": item, "from_look": from_look, "t": int(self.t)}
        if later:  # consumed since the last look: in the wealths already, so they are kept
            record["kept"] = len(later)
        self.voided[item] = record
        self._ranking = None
        return dict(record)

    # ------------------------------------------------------------------ models
    def withdraw_model(self, model: str | int, reason: str = "withdrawn by its owner") -> dict:
        """Take a model off the board at its owner's request: it receives no evidence from now on.

        Its pairs are frozen at the current item count (as a retirement freezes them) and its
        statements certified so far stay, recorded with the look at which it left
        (:data:`WITHDRAW_GUARANTEE`). A model retired before may be withdrawn (it leaves at its
        retirement's item count); a model withdrawn already may not.

        Raises
        ------
        ValueError
            An unknown model, or one withdrawn already.
        """
        j = self._model_index(model)
        name = self.models[j]
        if name in self.withdrawn:
            raise ValueError(
                f"model {name!r} was withdrawn already (at look {self.withdrawn[name]['look']})"
            )
        self._flush()
        was_active = bool(self.active[j])
        if was_active:
            self.retire(j, reason="withdrawn")
        t = int(self.t) if was_active else int(self.retired[name]["t"])
        record = {"model": name, "t": t, "look": len(self.looks), "reason": str(reason)}
        self.withdrawn[name] = record
        self._ranking = None
        return dict(record)

    # ------------------------------------------------------------------ reporting
    def change_details(self) -> dict:
        """The changes to report in a ranking's details (empty when there were none)."""
        out: dict = {}
        if self.withdrawn:
            dominance = self._dominance
            out["withdrawn"] = {}
            for name, record in self.withdrawn.items():
                j = self._index[name]
                better = [self.models[i] for i in np.flatnonzero(dominance[j]) if i != j]
                worse = [self.models[i] for i in np.flatnonzero(dominance[:, j]) if i != j]
                out["withdrawn"][name] = {**record, "better_than": better, "worse_than": worse}
            out["withdraw_guarantee"] = WITHDRAW_GUARANTEE
        if self.voided:
            out["voided"] = {name: dict(record) for name, record in self.voided.items()}
            out["void_guarantee"] = VOID_GUARANTEE
        return out

    def change_guarantee(self) -> str:
        """The guarantee sentences of the changes made (appended to a ranking's guarantee)."""
        out = ""
        if self.withdrawn:
            out += " " + WITHDRAW_GUARANTEE
        if self.voided:
            out += " " + VOID_GUARANTEE
        return out

    def change_excluded(self) -> dict:
        """The skipped observations of voided items, for ``excluded``."""
        if not self._skipped_voided:
            return {}
        return {"items_voided": int(self._skipped_voided)}
