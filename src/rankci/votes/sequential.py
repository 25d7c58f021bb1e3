"""An anytime-valid arena: per-pair betting e-processes on head-to-head votes.

The estimand
------------
For the ordered pair (j, l), a vote between j and l is the observation ``X = 1`` (j won),
``X = 0`` (l won) or ``X = 1/2`` (a tie, either tie outcome: the half convention). The target is
the head-to-head preference under the vote-generating process, conditional on j and l being
compared,

    theta_jl = P(j wins) + P(tie) / 2,   i.e.  theta_jl > 1/2  <=>  P(j wins) > P(l wins),

and the null of the ordered pair is ``H_jl: theta_jl <= 1/2`` at every vote between j and l,
given the past. "j beats l" is certified when H_jl is rejected. This is *not* the Bradley-Terry
(BT) strength order: the two agree when BT holds (``theta_jl > 1/2 <=> beta_j > beta_l``), but
when BT is misspecified the fitted BT order can disagree with a head-to-head preference, and
head-to-head preference need not be transitive (j beats l, l beats k, k beats j is possible).

The e-process
-------------
With ``Y = 2 (X - 1/2)`` in {-1, 0, 1} (the score monitor's ``Z = x_j - x_l`` of a vote in which
j scored 1 and l scored 0; a bet ``lambda`` on ``Y`` is the bet ``2 lambda`` on ``X - 1/2``), the
wealth of (j, l) after the votes ``t = 1, 2, ...`` of the whole arena is

    E_t^{jl} = prod_{s <= t : vote s is between j and l} (1 + lambda_s Y_s^{jl}),

with the score monitor's bets (:mod:`rankci.sequential.wealth`): ``mixture`` (the mean of the
wealths of the constant bets of ``grid``), ``fixed`` (one constant bet) or ``agrapa``
(``lambda_s = clip(S1 / (1 + S2), 0, 0.75)``, S1 and S2 the sums of Y and Y^2 over the pair's
earlier votes). A tie has ``Y = 0`` and leaves every wealth unchanged, so the half convention and
"ties dropped" give the same e-process.

Why it is valid under continuous monitoring. Let F_{s-1} hold everything up to vote s - 1 *and*
which pair vote s is between (the pair may be chosen from the whole past - adaptive sampling,
a lopsided budget, models added later - and by any randomness, as long as the choice does not
look at vote s's outcome: it is predictable). The bet ``lambda_s`` is F_{s-1}-measurable. Under
H_jl, ``E[Y_s | F_{s-1}] <= 0`` when vote s is between j and l, and the factor is 1 otherwise, so
``E[1 + lambda_s Y_s 1{s is a (j, l) vote} | F_{s-1}] <= 1``: ``E^{jl}`` is a nonnegative
supermartingale with ``E_0 = 1`` whichever pairs are sampled when. Ville's inequality gives
``P(exists t: E_t^{jl} >= 1/a) <= a``, at every vote, hence at any look, at any data-dependent
stopping time.

Family-wise guarantee. "j beats l" is certified once ``E^{jl} >= M (M - 1) / alpha``
(e-Bonferroni over all M(M-1) ordered pairs, the score monitor's ``bonferroni`` certifier): with
probability >= 1 - alpha, no false head-to-head dominance is ever certified, at any look, with
no assumption of transitivity. The score monitor's closure certifiers (``shortcut``, ``exact``)
pool the wealths through the transitivity of an order of means and are not used here.

Rank intervals. The certified relation is closed transitively and counted
(:func:`rankci.ranking.ranking_from_dominance`). The rank intervals cover the ranks of the
head-to-head order simultaneously when that order is transitive (weak stochastic transitivity:
``theta_jk > 1/2`` and ``theta_kl > 1/2`` imply ``theta_jl > 1/2``; BT, Thurstone and any
strong-stochastic-transitivity model satisfy it). If certified pairs form a cycle, transitivity
is refuted with the stated confidence: :meth:`ArenaMonitor.ranking` says so and names the cycle,
and :meth:`ArenaMonitor.certified` still holds with the family-wise guarantee.

Implementation: a chunk of votes is put in time order (its ``timestamp`` column when present,
else the row order), each vote becomes its two ordered pairs, and a stable sort by pair keeps the
time order within each pair; the constant bets need only the pair's win and loss counts
(``log E_k = W log(1 + lambda_k) + L log(1 - lambda_k)``), aGRAPA a per-pair cumulative scan of
S1 and S2 within the chunk (from the carried sums) and one weighted ``bincount``. No Python loop
over votes or pairs.

References
----------
Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
JRSS-B 86(1), 1-27.
Ramdas, A., Grünwald, P., Vovk, V. and Shafer, G. (2023). Game-theoretic statistics and safe
anytime-valid inference. Statistical Science 38(4), 576-601.
Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
Statistics 49(3), 1736-1754.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankci.sequential.spec import MonitorSpec
from rankci.sequential.updating import AGRAPA_CAP
from rankci.votes.table import A_WINS, B_WINS, Votes

__all__ = ["ArenaMonitor", "ARENA_BETS", "arena_guarantee", "replay_votes", "vote_increments"]

#: The bets an arena monitor supports (ONS is sequential in its own bet and is not offered).
ARENA_BETS = ("mixture", "agrapa", "fixed")


def arena_guarantee(alpha: float, n_models: int, entry: str = "closed") -> str:
    """The sentence of the arena monitor's guarantee (``entry="open"``: over every model that
    has joined or will join, by the weights fixed at entry)."""
    family = (
        "weighted e-Bonferroni over every ordered pair of every model that has joined or will "
        "join the arena (levels fixed at entry, summing to alpha)"
        if entry == "open"
        else f"e-Bonferroni over all {n_models * (n_models - 1)} ordered pairs"
    )
    return (
        f"With probability at least {1 - alpha:g}, at every look simultaneously (however often "
        f"the board is looked at, and however the pairs were chosen from the past), no certified "
        f"head-to-head dominance is false: each says P(j wins) > P(l wins) in a vote between "
        f"the two (ties counted half), {family}. The rank intervals read the certified pairs as "
        "an order: they cover the head-to-head ranks when head-to-head preference is transitive "
        "(as under Bradley-Terry)."
    )


def vote_increments(votes: Votes, codes: np.ndarray, n_models: int) -> tuple:
    """The ordered pairs of a chunk, in time order: flat keys ``j * M + l`` and ``Y`` in {-1, 0, 1}.

    Each vote gives two entries, (a, b) with ``Y`` and (b, a) with ``-Y``; ``codes`` maps the
    chunk's model codes to the monitor's. Returns ``(key, y)`` sorted stably by key, so the
    entries of each pair are in time order (the ``timestamp`` column, else the row order).
    """
    order = None
    if "timestamp" in votes.columns:
        order = np.argsort(np.asarray(votes.columns["timestamp"]), kind="stable")
    a, b, out = votes.a, votes.b, votes.outcome
    if order is not None:
        a, b, out = a[order], b[order], out[order]
    a, b = codes[a], codes[b]
    y = (out == A_WINS).astype(np.int8) - (out == B_WINS).astype(np.int8)
    n = a.shape[0]
    # interleave (a, b) and (b, a) per vote: time order is kept by the stable sort below
    key = np.empty(2 * n, dtype=np.intp)
    key[0::2] = a * n_models + b
    key[1::2] = b * n_models + a
    yy = np.empty(2 * n, dtype=np.float64)
    yy[0::2] = y
    yy[1::2] = -y
    sort = np.argsort(key, kind="stable")
    return key[sort], yy[sort]


class ArenaMonitor:
    """Anytime-valid head-to-head dominances and rank intervals from a stream of votes.

    Parameters
    ----------
    models : sequence of str
        The arena's models (a vote naming another model is an error).
    spec : MonitorSpec, optional
        ``alpha``, ``bet`` (``mixture``, ``agrapa`` or ``fixed``), ``lam`` and ``grid`` are used;
        ``sampling`` must be ``"iid"`` (an arena is an open stream), ``certifier`` ``"auto"`` or
        ``"bonferroni"`` and ``retire`` ``"none"``. Default ``MonitorSpec(sampling="iid")``.

    Notes
    -----
    ``E^{jl} = prod (1 + lambda_s Y_s)`` over the votes between j and l, ``Y = 2 (X - 1/2)``;
    "j beats l" is certified once ``E^{jl} >= M (M - 1) / alpha``. The estimand, the proof and
    the conditions of the rank intervals are in the module docstring and docs/arena-monitor.md.

    References
    ----------
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by
    betting. JRSS-B 86(1), 1-27.

    Examples
    --------
    >>> from rankci.votes.table import Votes
    >>> mon = ArenaMonitor(["x", "y"], MonitorSpec(sampling="iid", bet="fixed", lam=0.5))
    >>> mon.update(Votes.from_arrays([0] * 12, [1] * 12, [0] * 12, models=["x", "y"]))
    >>> round(float(mon.log_wealth()[0, 1]), 6)  # 12 log 1.5
    4.865581
    >>> mon.look()["n_certified"], mon.ranking().lower.tolist()  # 1.5^12 = 129.7 >= 2 / 0.05
    (1, [1, 2])
    """

    def __init__(self, models: Sequence[str], spec: MonitorSpec | None = None) -> None:
        from rankci.sequential.certify import make_certifier

        self.models = tuple(str(m) for m in models)
        if len(set(self.models)) != len(self.models):
            raise ValueError("models must be distinct names")
        if len(self.models) < 2:
            raise ValueError("an arena needs at least 2 models")
        spec = MonitorSpec(sampling="iid") if spec is None else spec
        if spec.sampling != "iid":
            raise ValueError(
                "an arena is an open stream of votes: use MonitorSpec(sampling='iid') "
                f"(got sampling={spec.sampling!r})"
            )
        if spec.bet not in ARENA_BETS:
            raise ValueError(
                f"bet={spec.bet!r} is not offered for votes; choose one of " + ", ".join(ARENA_BETS)
            )
        if spec.certifier not in ("auto", "bonferroni"):
            raise ValueError(
                f"certifier={spec.certifier!r} pools wealths through the transitivity of an order "
                "of means, which head-to-head preference need not have; votes use "
                "certifier='bonferroni' (or 'auto')"
            )
        if spec.retire != "none":
            raise ValueError("retire rules are not offered for votes; use retire='none'")
        self.spec = spec
        self.alpha = spec.alpha
        m = len(self.models)
        self.n_models = m
        self._index = {name: i for i, name in enumerate(self.models)}
        if spec.bet == "mixture":
            self.grid = np.asarray(spec.grid, dtype=float)
        elif spec.bet == "fixed":
            self.grid = np.asarray([spec.lam], dtype=float)
        else:
            self.grid = None
        self.wins = np.zeros((m, m), dtype=np.int64)  # wins[j, l]: votes j won against l
        self.ties = np.zeros((m, m), dtype=np.int64)  # symmetric
        self._log = np.zeros((m, m))  # aGRAPA log-wealth
        self._s1 = np.zeros((m, m))
        self._s2 = np.zeros((m, m))
        self.n_votes = 0
        self.certifier = make_certifier("bonferroni", m, self.alpha)
        self._certified = np.zeros((m, m), dtype=bool)
        self._looks: list[dict] = []
        #: ``entry="open"``: every model in entry order, with the vote count and look count at
        #: which it joined and the level of the pairs it opened (the score side's weight rule,
        #: :func:`rankci.sequential.entry.pair_level`); empty on a closed arena.
        self.entrants: list[dict] = []
        self.n_initial = m
        self._level = np.zeros(0)
        if spec.entry == "open":
            for name in self.models:
                self._enter(name)

    def _enter(self, name: str) -> None:
        from rankci.sequential.entry import pair_level

        j = len(self.entrants) + 1  # entrant number, 1-based
        level = pair_level(self.alpha, self.n_initial, max(j, 2))
        self.entrants.append(
            {
                "model": name,
                "entrant": j,
                "t": int(self.n_votes),
                "look": len(self._looks),
                "level": float(level),
                "threshold": 1.0 / float(level),
            }
        )
        self._level = np.append(self._level, float(level))

    def add_model(self, name: str) -> None:
        """Add a model to an arena made with ``MonitorSpec(entry="open")``.

        Its pairs start with no votes (wealth 1): their e-processes begin at its first vote, and
        their level is :func:`rankci.sequential.entry.pair_level` of its entrant number, fixed
        now (``alpha / (2 m (m - 1)^2)`` for the m-th entrant, ``m > M0``). Vote-level
        validity is the arena's (a model's pair gets a factor only from votes between the two,
        and which pair is voted on may depend on the past), and the levels of all pairs that
        can ever exist sum to alpha (docs/monitor.md, "Models that join later").

        Examples
        --------
        >>> mon = ArenaMonitor(["x", "y"], MonitorSpec(sampling="iid", entry="open"))
        >>> mon.add_model("z")
        >>> [(e["model"], e["entrant"], round(e["threshold"])) for e in mon.entrants]
        [('x', 1, 80), ('y', 2, 80), ('z', 3, 480)]
        """
        if self.spec.entry != "open":
            raise ValueError(
                f"cannot add model {name!r}: the arena was made with entry='closed' (its models "
                "are fixed); use MonitorSpec(entry='open')"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"a model name is a non-empty string, got {name!r}")
        if name in self._index:
            raise ValueError(f"model {name!r} is in the arena already")
        m = self.n_models
        self.models = (*self.models, name)
        self._index[name] = m
        self.n_models = m + 1

        def grow(a: np.ndarray) -> np.ndarray:
            out = np.zeros((m + 1, m + 1), dtype=a.dtype)
            out[:m, :m] = a
            return out

        self.wins, self.ties, self._certified = (
            grow(self.wins),
            grow(self.ties),
            grow(self._certified),
        )
        self._log, self._s1, self._s2 = grow(self._log), grow(self._s1), grow(self._s2)
        self._enter(name)

    def log_thresholds(self) -> np.ndarray:
        """M x M ``log`` of the certification threshold of each ordered pair (NaN diagonal):
        ``log(M (M - 1) / alpha)`` on a closed arena, ``log(1 / alpha_jl)`` of the later entrant
        on an open one."""
        if self.spec.entry == "open":
            from rankci.sequential.entry import entrant_log_thresholds

            return entrant_log_thresholds(self._level)
        out = np.full((self.n_models, self.n_models), np.log(self.certifier.threshold))
        np.fill_diagonal(out, np.nan)
        return out

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Write the whole state to one ``.npz`` file (atomically; format
        :data:`~rankci.sequential.persistence.ARENA_FORMAT`): the spec, the models (with the
        entrants in entry order on an open arena), the win and tie counts, the bets' running sums,
        the certified pairs and the looks. :meth:`restore` followed by the same votes (and
        additions) gives exactly what an uninterrupted monitor gives, bit for bit.

        Examples
        --------
        >>> import os, tempfile
        >>> from rankci.votes.table import Votes
        >>> mon = ArenaMonitor(["x", "y"], MonitorSpec(sampling="iid", entry="open"))
        >>> mon.update(Votes.from_arrays([0] * 30, [1] * 30, [0] * 30, models=["x", "y"]))
        >>> _ = mon.look()
        >>> mon.add_model("z")
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     mon.save(os.path.join(folder, "arena.npz"))
        ...     again = ArenaMonitor.restore(os.path.join(folder, "arena.npz"))
        >>> again.models, again.looks() == mon.looks(), again.entrants == mon.entrants
        (('x', 'y', 'z'), True, True)
        """
        from rankci.sequential.persistence import ARENA_FORMAT, write_state

        config = {
            "format": ARENA_FORMAT,
            "models": list(self.models),
            "n_initial": int(self.n_initial),
            "spec": self.spec.to_dict(),
        }
        meta = {
            "config": config,
            "n_votes": int(self.n_votes),
            "looks": self._looks,
            "entrants": self.entrants,
            "certifier_looks": int(self.certifier.n_looks),
        }
        arrays = {
            "wins": self.wins,
            "ties": self.ties,
            "log": self._log,
            "s1": self._s1,
            "s2": self._s2,
            "certified": self._certified,
            "level": self._level,
        }
        write_state(path, meta, arrays)

    @classmethod
    def restore(cls, path) -> ArenaMonitor:
        """An arena monitor in exactly the state written by :meth:`save`.

        Raises
        ------
        ValueError
            Naming the file: not a saved arena monitor (a score monitor is restored by
            ``Monitor.restore`` or ``OpenMonitor.restore``), of a format this version does not
            read, or damaged (:func:`~rankci.sequential.persistence.read_state`).
        """
        import os

        from rankci.sequential.persistence import ARENA_FORMAT, read_state

        name = os.fspath(path)
        _, meta, arrays = read_state(name, ARENA_FORMAT)
        try:
            return cls._restored(name, meta, arrays)
        except (KeyError, TypeError) as error:
            raise ValueError(
                f"{name!r}: the saved arena monitor is incomplete ({error!r}): damaged"
            ) from None

    @classmethod
    def _restored(cls, name: str, meta: dict, arrays: dict) -> ArenaMonitor:
        from rankci.sequential.persistence import loaded, spec_of

        config = meta["config"]
        spec = spec_of(name, config["spec"])
        models, n_initial = [str(m) for m in config["models"]], int(config["n_initial"])
        if not 2 <= n_initial <= len(models) or (spec.entry != "open" and n_initial < len(models)):
            raise ValueError(f"{name!r}: the saved arena's models are not consistent: damaged")
        monitor = cls(models[:n_initial], spec)
        for model in models[n_initial:]:
            monitor.add_model(model)
        for attr, what in (
            ("wins", "win counts"),
            ("ties", "tie counts"),
            ("_log", "log-wealths"),
            ("_s1", "bet sums"),
            ("_s2", "bet sums"),
            ("_certified", "certified pairs"),
            ("_level", "levels"),
        ):
            setattr(
                monitor, attr, loaded(name, arrays[attr.lstrip("_")], getattr(monitor, attr), what)
            )
        monitor.n_votes = int(meta["n_votes"])
        monitor._looks = [dict(look) for look in meta["looks"]]
        monitor.entrants = [dict(e) for e in meta["entrants"]]
        monitor.certifier.n_looks = int(meta["certifier_looks"])
        return monitor

    # ------------------------------------------------------------------ feeding
    def update(self, votes: Votes) -> None:
        """Consume a chunk of votes (a :class:`~rankci.votes.table.Votes`), in time order."""
        if not isinstance(votes, Votes):
            raise TypeError("votes must be a rankci.votes.Votes (see rankci.votes.read_votes)")
        unknown = [name for name in votes.models if name not in self._index]
        if unknown:
            raise ValueError(
                f"the votes name model {unknown[0]!r}, which is not one of the monitor's models"
            )
        if votes.n_votes == 0:
            return
        m = self.n_models
        codes = np.array([self._index[name] for name in votes.models], dtype=np.intp)
        key, y = vote_increments(votes, codes, m)
        size = m * m
        self.wins += np.bincount(key, weights=y > 0, minlength=size).reshape(m, m).astype(np.int64)
        self.ties += np.bincount(key, weights=y == 0, minlength=size).reshape(m, m).astype(np.int64)
        if self.grid is None:
            self._agrapa(key, y)
        self.n_votes += votes.n_votes

    def _agrapa(self, key: np.ndarray, y: np.ndarray) -> None:
        """The per-pair cumulative scan of S1, S2 (key sorted, time order within a key)."""
        m2 = self.n_models**2
        start = np.r_[True, key[1:] != key[:-1]]
        first = np.flatnonzero(start)
        group = np.cumsum(start) - 1
        c1 = np.cumsum(y)
        c2 = np.cumsum(y * y)
        before1 = (c1 - y)[first][group]  # cumulative sum just before the pair's first entry
        before2 = (c2 - y * y)[first][group]
        s1 = self._s1.ravel()[key] + (c1 - y - before1)
        s2 = self._s2.ravel()[key] + (c2 - y * y - before2)
        lam = np.clip(s1 / (1.0 + s2), 0.0, AGRAPA_CAP)
        self._log += np.bincount(key, weights=np.log1p(lam * y), minlength=m2).reshape(
            self._log.shape
        )
        self._s1 += np.bincount(key, weights=y, minlength=m2).reshape(self._s1.shape)
        self._s2 += np.bincount(key, weights=y * y, minlength=m2).reshape(self._s2.shape)

    # ------------------------------------------------------------------ reading
    def log_wealth(self) -> np.ndarray:
        """``log E^{jl}`` (M x M, row j = "j beats l"; NaN on the diagonal)."""
        if self.grid is None:
            out = self._log.copy()
        else:
            lam = self.grid[:, None, None]
            comp = self.wins[None] * np.log1p(lam) + self.wins.T[None] * np.log1p(-lam)
            top = comp.max(axis=0)
            out = top + np.log(np.exp(comp - top).mean(axis=0))
        np.fill_diagonal(out, np.nan)
        return out

    def look(self) -> dict:
        """Certify at this look (certified pairs stay certified) and record it."""
        if self.spec.entry == "open":
            with np.errstate(invalid="ignore"):
                reached = self.log_wealth() >= self.log_thresholds()
            np.fill_diagonal(reached, False)
            self._certified = self._certified | reached
        else:
            self._certified = self.certifier.look(self.log_wealth(), self._certified)
        entry = {"t": int(self.n_votes), "n_certified": int(self._certified.sum())}
        self._looks.append(entry)
        return entry

    def looks(self) -> list[dict]:
        """Every look so far: votes seen (``t``) and certified ordered pairs."""
        return list(self._looks)

    def certified(self) -> np.ndarray:
        """M x M bool: "j beats l" certified at some look (family-wise over all looks)."""
        return self._certified.copy()

    def win_share(self) -> np.ndarray:
        """Each model's observed share ``(wins + ties / 2) / votes`` (NaN for a model without
        votes)."""
        votes = self.wins.sum(1) + self.wins.sum(0) + self.ties.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.wins.sum(1) + self.ties.sum(1) / 2) / np.where(votes > 0, votes, np.nan)

    def ranking(self):
        """The :class:`rankci.Ranking` of the certified pairs (looks taken so far).

        ``score`` is the observed win share (a model without votes gets 0.5 and is listed in
        ``details["no_votes"]``). Raises ValueError naming the cycle when the certified pairs
        form one (head-to-head preference is then not transitive, at the stated confidence).
        """
        from rankci.ranking import DominanceCycleError, ranking_from_dominance

        share = self.win_share()
        missing = [self.models[i] for i in np.flatnonzero(np.isnan(share))]
        score = np.where(np.isnan(share), 0.5, share)
        try:
            return ranking_from_dominance(
                self.models,
                score,
                self._certified,
                alpha=self.alpha,
                coverage="anytime",
                procedure={
                    "evidence": "betting e-processes on head-to-head votes",
                    "unit": "vote",
                    "sampling": "iid",
                    "bet": self.spec.bet,
                    "certifier": "bonferroni",
                    "ties": "half",
                },
                n_units=int(self.n_votes),
                excluded={},
                guarantee=arena_guarantee(self.alpha, self.n_models, self.spec.entry),
                details={"looks": len(self._looks), "no_votes": missing}
                | ({"entrants": [dict(e) for e in self.entrants]} if self.entrants else {}),
                spec=self.spec,
            )
        except DominanceCycleError as error:
            raise ValueError(
                f"the certified head-to-head dominances form a cycle ({error}): head-to-head "
                "preference is not transitive here, at the stated confidence, so there are no "
                "ranks to bound; the certified pairs (ArenaMonitor.certified) still hold"
            ) from None


def _subset(votes: Votes, rows: np.ndarray | slice) -> Votes:
    """The votes at ``rows`` (a slice or indices), with their per-vote columns."""
    return Votes(
        votes.a[rows],
        votes.b[rows],
        votes.outcome[rows],
        votes.models,
        {k: v[rows] for k, v in votes.columns.items()},
        dict(votes.excluded),
        dict(votes.source),
    )


def replay_votes(
    votes: Votes,
    spec: MonitorSpec | None = None,
    *,
    look_every: int | str = "1%",
    monitor: ArenaMonitor | None = None,
) -> ArenaMonitor:
    """Feed a finished vote table through an :class:`ArenaMonitor` in time order, with a look
    every ``look_every`` votes (a count, or ``"P%"`` of the votes) and at the last vote.

    The time order is the ``timestamp`` column (stable) when present, else the row order.
    ``monitor`` continues a monitor (one restored by :meth:`ArenaMonitor.restore`) instead of
    starting one: the votes are fed after those it consumed, with its settings (a ``spec`` that
    differs is refused); a model of the votes not on it joins it first (``entry="open"``).

    Examples
    --------
    >>> v = Votes.from_arrays([0] * 40, [1] * 40, [0] * 30 + [1] * 10, models=["x", "y"])
    >>> mon = replay_votes(v, look_every=10)
    >>> [look["t"] for look in mon.looks()]
    [10, 20, 30, 40]
    >>> [look["t"] for look in replay_votes(v, look_every=25, monitor=mon).looks()]
    [10, 20, 30, 40, 65, 80]
    """
    from rankci.sequential.spec import parse_look_every

    if monitor is None:
        mon = ArenaMonitor(votes.models, spec)
    else:
        if spec is not None and spec != monitor.spec:
            raise ValueError(
                "replay_votes(spec, monitor=) continues the monitor with its own settings; "
                f"the spec given differs from the monitor's ({monitor.spec!r})"
            )
        mon = monitor
        new = [name for name in votes.models if name not in mon.models]
        if new and mon.spec.entry != "open":
            raise ValueError(
                f"the votes name model {new[0]!r}, which is not on the arena being continued "
                "(its models are fixed: entry='closed'): " + ", ".join(mon.models)
            )
        for name in new:
            mon.add_model(name)
    n = votes.n_votes
    if n == 0:
        raise ValueError("the vote table holds no votes")
    if "timestamp" in votes.columns:
        votes = _subset(votes, np.argsort(np.asarray(votes.columns["timestamp"]), kind="stable"))
    every = parse_look_every(look_every, n)
    for start in range(0, n, every):  # one iteration per look, not per vote
        mon.update(_subset(votes, slice(start, min(start + every, n))))
        mon.look()
    return mon
