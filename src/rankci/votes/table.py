"""The validated vote table and its aggregation into pair counts.

A :class:`Votes` holds one row per vote: two models (``a``, ``b``, integer codes into
``models``) and an outcome code (:data:`OUTCOMES`), with optional per-vote columns (prompt,
voter, category, language, turn, timestamp, position and numeric covariates). It is validated
once, at construction, with errors that name the offending row or model; every vote left out
(a model playing itself, an unknown winner, ...) is counted in ``Votes.excluded``.

:meth:`Votes.pair_counts` aggregates the votes into the sufficient statistics of a
Bradley-Terry fit without covariates: for each unordered pair that met, the wins of either side
and the ties.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Votes", "PairCounts", "OUTCOMES", "A_WINS", "B_WINS", "TIE", "TIE_BOTHBAD"]

#: Outcome codes of a vote, from the point of view of its first model ``a``.
A_WINS, B_WINS, TIE, TIE_BOTHBAD = 0, 1, 2, 3
#: The outcome names, indexed by code (LMArena's ``winner`` spellings).
OUTCOMES = ("model_a", "model_b", "tie", "tie (bothbad)")

#: The optional per-vote columns a vote table may carry (besides numeric covariates).
OPTIONAL_COLUMNS = ("prompt", "voter", "category", "language", "turn", "timestamp", "position")


@dataclass(frozen=True, eq=False)
class PairCounts:
    """Votes aggregated by unordered pair: the sufficient statistics of a plain Bradley-Terry fit.

    Attributes
    ----------
    i, j : ndarray of int, shape (n_pairs,)
        The pair's models as codes into ``models``, ``i < j``.
    wins_i, wins_j, ties : ndarray of float, shape (n_pairs,)
        Wins of ``i``, wins of ``j`` and ties (both tie outcomes) in the pair's votes.
    models : tuple of str
    """

    i: np.ndarray
    j: np.ndarray
    wins_i: np.ndarray
    wins_j: np.ndarray
    ties: np.ndarray
    models: tuple[str, ...]

    @property
    def n_votes(self) -> np.ndarray:
        """Votes per pair."""
        return self.wins_i + self.wins_j + self.ties


@dataclass(frozen=True, eq=False)
class Votes:
    """A validated table of pairwise votes.

    Parameters
    ----------
    a, b : array_like of int, shape (n_votes,)
        The two models of each vote, as codes into ``models``; ``a`` is the model listed first
        (LMArena's ``model_a``, shown first there). Where a layout records who was shown first
        in each vote, the ``position`` column says it: 1 for ``a``, 2 for ``b`` (Arena-Hard's
        swapped games keep the baseline as ``a`` and have position 2); without that column,
        ``a`` is the model shown first.
    outcome : array_like of int, shape (n_votes,)
        :data:`A_WINS`, :data:`B_WINS`, :data:`TIE` or :data:`TIE_BOTHBAD`.
    models : sequence of str
        Model names, exactly as written in the input.
    columns : dict of str to ndarray, optional
        Optional per-vote columns (:data:`OPTIONAL_COLUMNS`, or numeric covariates), each of
        length ``n_votes``.
    excluded : dict, optional
        What the door left out and why (JSON-safe counts), for example
        ``{"self_battles": 3, "unknown_winner": 1}``.
    source : dict, optional
        Where the votes came from (file, layout), for the reading summary.

    Examples
    --------
    >>> v = Votes.from_arrays([0, 0, 1], [1, 2, 2], [0, 2, 1], models=["x", "y", "z"])
    >>> v.n_votes, v.n_models
    (3, 3)
    >>> pc = v.pair_counts()
    >>> pc.i.tolist(), pc.j.tolist(), pc.wins_i.tolist(), pc.ties.tolist()
    ([0, 0, 1], [1, 2, 2], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    """

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    models: tuple[str, ...]
    columns: dict = field(default_factory=dict)
    excluded: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)

    @classmethod
    def from_arrays(
        cls,
        a,
        b,
        outcome,
        *,
        models,
        columns: dict | None = None,
        excluded: dict | None = None,
        source: dict | None = None,
    ) -> Votes:
        """Build and validate a vote table from code arrays (see the class docstring)."""
        models = tuple(str(m) for m in models)
        a = np.asarray(a)
        b = np.asarray(b)
        outcome = np.asarray(outcome)
        n = a.shape[0] if a.ndim == 1 else -1
        for name, arr in (("a", a), ("b", b), ("outcome", outcome)):
            if arr.ndim != 1 or arr.shape[0] != n:
                raise ValueError(f"{name} must be one-dimensional with one entry per vote")
            if arr.size and not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"{name} must hold integer codes; got dtype {arr.dtype}")
        if len(set(models)) != len(models):
            raise ValueError("models must be distinct names")
        for name, arr in (("a", a), ("b", b)):
            bad = np.flatnonzero((arr < 0) | (arr >= len(models)))
            if bad.size:
                raise ValueError(
                    f"{name}[{bad[0]}] = {arr[bad[0]]} is not a model code (0..{len(models) - 1})"
                )
        bad = np.flatnonzero((outcome < 0) | (outcome >= len(OUTCOMES)))
        if bad.size:
            raise ValueError(f"outcome[{bad[0]}] = {outcome[bad[0]]} is not an outcome code 0..3")
        self_battle = np.flatnonzero(a == b)
        if self_battle.size:
            raise ValueError(
                f"vote {self_battle[0]} has model {models[a[self_battle[0]]]!r} playing itself; "
                "a reader excludes such votes and counts them in excluded['self_battles']"
            )
        columns = {str(k): np.asarray(v) for k, v in (columns or {}).items()}
        for key, arr in columns.items():
            if arr.shape[:1] != (n,):
                raise ValueError(f"column {key!r} has {arr.shape[0]} entries for {n} votes")
        return cls(
            a.astype(np.intp),
            b.astype(np.intp),
            outcome.astype(np.int8),
            models,
            columns,
            dict(excluded or {}),
            dict(source or {}),
        )

    @property
    def n_votes(self) -> int:
        """Number of votes."""
        return int(self.a.shape[0])

    @property
    def n_models(self) -> int:
        """Number of models."""
        return len(self.models)

    def pair_counts(self) -> PairCounts:
        """Aggregate the votes by unordered pair (vectorised; pairs that never met are absent)."""
        lo = np.minimum(self.a, self.b)
        hi = np.maximum(self.a, self.b)
        first_won = ((self.outcome == A_WINS) & (self.a == lo)) | (
            (self.outcome == B_WINS) & (self.b == lo)
        )
        second_won = ((self.outcome == A_WINS) & (self.a == hi)) | (
            (self.outcome == B_WINS) & (self.b == hi)
        )
        tie = self.outcome >= TIE
        m = self.n_models
        key = lo * m + hi
        uniq, inverse = np.unique(key, return_inverse=True)
        k = uniq.size

        def count(mask: np.ndarray) -> np.ndarray:
            return np.bincount(inverse, weights=mask.astype(float), minlength=k)

        return PairCounts(
            uniq // m, uniq % m, count(first_won), count(second_won), count(tie), self.models
        )
