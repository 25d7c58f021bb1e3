"""A board of votes: pairwise votes in, the anytime-valid arena's leaderboard out.

A votes board (``kind: "votes"``) holds an :class:`~rankci.votes.sequential.ArenaMonitor` instead
of the score monitor. Votes are posted one at a time or in batches through the same group commit
as scores (:mod:`rankci.service.commits`): a post is answered once the transaction holding its
votes is committed. A vote is stored in the board's rows of the ``scores`` table, as
``model = a * M + b`` (the ordered pair), ``item`` = its sequence number on the board (the order
of commit, from 0) and ``score`` = its outcome code (:data:`rankci.votes.table.OUTCOMES`), so
the durability path, the databases and their schemas are those of scores. ``M`` is the number of
models at creation on a closed board, and :data:`OPEN_PAIR_BASE` on a board made with
``entry="open"``, whose models may join later (:meth:`VoteBoard.add_model`, stored as a ``join``
event at the count of votes committed before it, and replayed there).

Vote fields and the idempotency key. A vote may carry ``key`` (the idempotency key), ``prompt``,
``voter`` and ``timestamp`` (ISO 8601, or Unix seconds stored as ISO 8601 UTC); they are stored as
text in nullable columns of the vote's row (:data:`rankci.service.storage.VOTE_COLUMNS`) and not
used by the e-processes (the leaderboard is the same with or without them). A vote whose ``key``
was accepted before with the same vote (models, winner, fields) is a duplicate: acknowledged
(counted in ``duplicates``), never applied twice, as a score posted again for its (model, item);
with a different vote, the post is refused (409), as a different score for a stored (model, item).

Determinism. The monitor is fed in chunks of exactly ``look_every`` votes, in sequence order, a
look after each chunk; votes after the last look wait in memory. So the state at every look is a
function of the stored votes alone - not of how the posts were batched or when anyone read -
and :meth:`VoteBoard.load` rebuilds it bit for bit by replaying the stored votes, which is what
``ArenaMonitor`` fed the same votes offline in chunks of ``look_every`` gives. The time order is
the order of commit: a client's ``timestamp`` is stored but not used for the order.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime, timezone

import numpy as np

from rankci.ranking import Ranking
from rankci.service.board import Board, saved_bytes
from rankci.service.commits import CommitGroup, Pending, Posted
from rankci.service.published import Published, PublishedState
from rankci.service.spec import BoardSpec, checked_name
from rankci.service.storage import Storage, StorageUnavailable
from rankci.service.validation import MAX_REPORTED, Conflict, Rejected, quota_error
from rankci.votes.sequential import ArenaMonitor
from rankci.votes.table import OUTCOMES, Votes

__all__ = [
    "OPEN_PAIR_BASE",
    "TEXT_FIELDS",
    "KindMismatch",
    "VoteBoard",
    "VotePending",
    "validate_votes",
    "vote_fields",
    "vote_leaderboard",
]

#: A vote's optional text fields, in the order of :data:`rankci.service.storage.VOTE_COLUMNS`.
TEXT_FIELDS = ("key", "prompt", "voter", "timestamp")

#: The ``M`` of the stored pair code ``a * M + b`` on an open votes board (models that join later
#: keep the codes of the earlier ones): at most this many models.
OPEN_PAIR_BASE = 1 << 20

_OUTCOME = {name: code for code, name in enumerate(OUTCOMES)}
TARGET = (
    "new votes like these: in a vote between j and l drawn as the board's votes were, "
    "P(j wins) > P(l wins), ties counted half (the head-to-head preference, not a "
    "Bradley-Terry strength)"
)


class KindMismatch(Conflict):
    """Scores posted to a votes board, or votes to a scores board (409)."""


class VotePending(Pending):
    """A vote post waiting for its group's commit: :class:`~rankci.service.commits.Pending` with
    the votes' text fields (``fields``: None, or one :func:`vote_fields` entry per vote)."""

    __slots__ = ("fields",)

    def __init__(self, model, item, score, fields, notify=None, loop=None, future=None) -> None:
        super().__init__(model, item, score, notify, loop, future)
        self.fields = fields


def _field_text(field: str, value) -> str:
    """The stored text of one of a vote's fields, or ValueError naming the problem: a name
    (:func:`~rankci.service.spec.checked_name`: valid Unicode, 1-200 characters); a timestamp
    is also ISO 8601 (stored as given) or finite Unix seconds (stored as ISO 8601 UTC)."""
    if field == "timestamp" and type(value) in (int, float):
        if not math.isfinite(value):
            raise ValueError("timestamp must be finite Unix seconds or an ISO 8601 string")
        try:
            return datetime.fromtimestamp(value, timezone.utc).isoformat()
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"timestamp {value!r} is out of range (Unix seconds)") from None
    text = checked_name(value, field)
    if field == "timestamp":
        try:
            datetime.fromisoformat(text)
        except ValueError:
            shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
            raise ValueError(
                f"timestamp {shown} is not ISO 8601 (for example 2026-12-03T08:00:00Z)"
            ) from None
    return text


def vote_fields(vote: dict) -> tuple | None:
    """A valid vote's text fields as stored (:data:`TEXT_FIELDS` order, None where absent), or
    None if it has none (call after :func:`validate_votes`).

    Examples
    --------
    >>> vote_fields({"model_a": "x", "model_b": "y", "winner": "tie", "key": "k1", "prompt": 7})
    ('k1', '7', None, None)
    >>> vote_fields({"model_a": "x", "model_b": "y", "winner": "tie", "timestamp": 0})
    (None, None, None, '1970-01-01T00:00:00+00:00')
    >>> vote_fields({"model_a": "x", "model_b": "y", "winner": "tie"}) is None
    True
    """
    values = [vote.get(field) for field in TEXT_FIELDS]
    if all(v is None for v in values):
        return None
    return tuple(
        None if v is None else _field_text(field, v) for field, v in zip(TEXT_FIELDS, values)
    )


def validate_votes(entries, model_index: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index arrays (a, b, outcome) of a post's votes, or :class:`Rejected` naming the problems.

    ``entries`` are dicts ``{"model_a", "model_b", "winner"}`` with optional ``key``,
    ``prompt``, ``voter`` (names: valid Unicode, 1-200 characters) and ``timestamp`` (ISO 8601,
    or Unix seconds).

    Examples
    --------
    >>> validate_votes([{"model_a": "x", "model_b": "y", "winner": "tie"}], {"x": 0, "y": 1})
    (array([0]), array([1]), array([2]))
    >>> try:
    ...     validate_votes([{"model_a": "x", "model_b": "x", "winner": "tie"}], {"x": 0})
    ... except Rejected as error:
    ...     error.problems[0]["problem"]
    'a model voted against itself'
    """
    if not entries:
        raise Rejected("no votes in the post")
    n = len(entries)
    a = np.fromiter((model_index.get(v["model_a"], -1) for v in entries), np.int64, n)
    b = np.fromiter((model_index.get(v["model_b"], -1) for v in entries), np.int64, n)
    out = np.fromiter((_OUTCOME.get(v["winner"], -1) for v in entries), np.int64, n)
    texted = [
        row
        for row, v in enumerate(entries)
        if any(v.get(field) is not None for field in TEXT_FIELDS)
    ]
    bad = (a < 0) | (b < 0) | (a == b) | (out < 0)
    if not bad.any() and not texted:
        return a, b, out
    found: list[dict] = []
    self_vote = False
    for row in sorted(set(np.flatnonzero(bad).tolist()) | set(texted)):  # the problems only
        vote = entries[row]
        problem = None
        if a[row] < 0:
            problem = ("model_a", f"unknown model {vote['model_a']!r}")
        elif b[row] < 0:
            problem = ("model_b", f"unknown model {vote['model_b']!r}")
        elif a[row] == b[row]:
            problem, self_vote = ("model_b", "a model voted against itself"), True
        elif out[row] < 0:
            problem = ("winner", "winner must be one of " + ", ".join(OUTCOMES))
        else:
            for field in TEXT_FIELDS:
                value = vote.get(field)
                if value is None:
                    continue
                try:
                    _field_text(field, value)
                except ValueError as error:
                    problem = (field, str(error))
                    break
        if problem is not None:
            found.append({"vote": row, "field": problem[0], "problem": problem[1]})
            if len(found) >= MAX_REPORTED:
                break
    if found:
        first = found[0]
        message = f"vote {first['vote']}: {first['field']}: {first['problem']}"
        if self_vote and len(found) == 1:
            message += " (a self-vote carries no evidence and is refused)"
        raise Rejected(message, found)
    return a, b, out


def vote_leaderboard(spec: BoardSpec, monitor: ArenaMonitor, ranking: Ranking, look: int) -> dict:
    """The leaderboard JSON of a votes board at look number ``look`` (the scores board's shape:
    ``models[]`` with ``score`` = win share, ``rank_lower``/``rank_upper``, certified pairs)."""
    n_votes = monitor.wins.sum(1) + monitor.wins.sum(0) + monitor.ties.sum(1)
    rows = []
    for j in ranking.order():
        rows.append(
            {
                "model": spec.models[j],
                "score": float(ranking.score[j]),
                "n_votes": int(n_votes[j]),
                "rank": int(ranking.rank[j]),
                "rank_lower": int(ranking.lower[j]),
                "rank_upper": int(ranking.upper[j]),
                "tier": int(ranking.tier[j]),
                "status": "active",
            }
        )
    tiers: dict[int, list[str]] = {}
    for j in ranking.order():
        tiers.setdefault(int(ranking.tier[j]), []).append(spec.models[j])
    return {
        "board": spec.id,
        "benchmark": spec.benchmark,
        "run": spec.run,
        "kind": "votes",
        "look": {"number": int(look), "t": int(ranking.n_units)},
        "alpha": spec.alpha,
        "settings": spec.settings(),
        "models": rows,
        "certified_pairs": [list(pair) for pair in ranking.dominance_pairs()],
        "tiers": [tiers[t] for t in sorted(tiers)],
        "target": TARGET,
        "score_is": "the observed win share (wins + ties / 2) / votes at the look",
        "guarantee": ranking.guarantee,
    }


class _VotePublished(Published):
    """What readers of a votes board see: :class:`~rankci.service.published.Published` with the
    arena's leaderboard (:func:`vote_leaderboard`)."""

    def __init__(self, board: VoteBoard) -> None:
        self.board = board
        self.state: PublishedState | None = None

    def _version(self) -> tuple:
        return (len(self.board.monitor.looks()), self.board.error, 0)

    def _body(self) -> dict:
        board = self.board
        return vote_leaderboard(board.spec, board.monitor, board.ranking, board.ranking_look)


class VoteBoard(Board):
    """A board of votes (``spec.kind == "votes"``): see the module's text."""

    def __init__(self, spec: BoardSpec, num: int, storage: Storage) -> None:
        import threading

        self.spec = spec
        self.num = num
        self.storage = storage
        self.lock = threading.RLock()
        self._waiting: list[Pending] = []
        self._waiting_lock = threading.Lock()
        self.model_index = {name: j for j, name in enumerate(spec.models)}
        self.received = 0
        self.quota: int | None = None  # at most this many votes (rankci serve --max-board-cells)
        self.keys: dict[str, tuple] = {}  # idempotency key -> (a, b, outcome, prompt, voter, at)
        self._unfed: list[tuple] = []  # (a, b, outcome) chunks committed, not yet fed
        self._n_unfed = 0
        self.monitor = ArenaMonitor(spec.models, spec.monitor)
        self.ranking = self.monitor.ranking()
        self.ranking_look = 0
        self.error: str | None = None
        self.events: list[dict] = []
        self.render_lock = threading.Lock()
        self.page_cache: dict = {}
        self.stale = False
        self.page_viewed_at = -1e9
        self.on_look = None
        self.published = _VotePublished(self)
        self._publish()

    @classmethod
    def load(cls, spec: BoardSpec, num: int, storage: Storage) -> VoteBoard:
        """Rebuild the board by replaying its stored votes in sequence order (bit for bit)."""
        board = cls(spec, num, storage)
        pair, seq, outcome = storage.load_scores(num)
        order = np.argsort(seq, kind="stable")
        if seq.size and not np.array_equal(seq[order], np.arange(seq.size)):
            raise RuntimeError(f"board {spec.id}: the stored votes are not numbered 0..n-1")
        m = board.pair_base
        pair = pair[order]
        a, b, out = pair // m, pair % m, outcome[order].astype(np.int64)
        done = 0
        for _seq, t, kind, detail in storage.load_events(num):
            if kind != "join":  # pragma: no cover - no other kind is written on a votes board
                raise RuntimeError(f"board {spec.id}: unknown event {kind!r} on a votes board")
            board.received = t
            board._feed(a[done:t], b[done:t], out[done:t])
            done = t
            board._join(json.loads(detail)["model"])
        board.received = int(seq.size)
        board._feed(a[done:], b[done:], out[done:])
        for s, key, *rest in storage.load_vote_fields(num):
            if key is not None:  # the votes are numbered 0..n-1 (checked above)
                board.keys[key] = (int(a[s]), int(b[s]), int(out[s]), *rest)
        board._publish()
        return board

    @property
    def pair_base(self) -> int:
        """The ``M`` of the stored pair code ``a * M + b`` (see the module's text)."""
        return OPEN_PAIR_BASE if self.spec.monitor.entry == "open" else self.spec.n_models

    def add_model(self, model: str) -> dict:
        """Add a model to a votes board made with ``entry="open"``: stored as a ``join`` event at
        the count of committed votes; its pairs start with no votes, at the level of its entrant
        number (:func:`rankci.sequential.entry.pair_level`). Votes naming it are accepted from
        the answer on.

        Posts queued for the next group commit were validated against the earlier models, so
        they cannot name it: the join is ordered before them without changing what they mean.
        """
        with self.lock:
            if self.spec.monitor.entry != "open":
                raise Conflict(
                    f"cannot add model {model!r}: the board was created with entry 'closed' "
                    '(its models are fixed); create it with "entry": "open"'
                )
            try:
                model = checked_name(model, "model")
            except ValueError as error:
                raise Rejected(str(error)) from None
            if model in self.model_index:
                raise Conflict(f"model {model!r} is on the board already")
            if self.error is not None:
                raise Conflict(f"the board is {self.state}; no model can be added")
            if self.stale:
                raise StorageUnavailable("the board is being reloaded after a database fault")
            if len(self.model_index) >= OPEN_PAIR_BASE:
                raise Conflict(f"a votes board holds at most {OPEN_PAIR_BASE} models")
            t = int(self.received)
            try:
                self.storage.add_event(self.num, t, "join", json.dumps({"model": model}))
            except StorageUnavailable as error:
                if error.ambiguous:
                    self.stale = True
                raise
            self._join(model)
            self._publish()
            entrant = dict(self.monitor.entrants[-1])
            # t: the votes committed before the join; the monitor's count at entry (the votes
            # fed, in full chunks of look_every) is where its evidence may start
            return {**entrant, "model": model, "t": t, "monitor_t": entrant["t"]}

    def _join(self, model: str) -> None:
        self.monitor.add_model(model)
        self.model_index[model] = len(self.model_index)
        self.spec = dataclasses.replace(self.spec, models=(*self.spec.models, model))
        self.events.append({"t": int(self.received), "kind": "join", "model": model})

    # ------------------------------------------------------------------ facts
    @property
    def done(self) -> bool:
        return self.error is not None

    @property
    def state(self) -> str:
        return "error" if self.error is not None else "open"

    def progress(self) -> dict:
        every = self.spec.look_every
        fed = self.monitor.n_votes
        return {
            "state": self.state,
            "error": self.error,
            "kind": "votes",
            "t": int(fed),
            "votes_received": int(self.received),
            "votes_waiting_for_look": int(self._n_unfed),
            "looks": len(self.monitor.looks()),
            "next_look_at": int(fed + every),
        }

    # ------------------------------------------------------------------ writing
    def submit(self, entries, notify=None, loop=None, future=None) -> Pending:
        raise KindMismatch(
            f"board {self.spec.id!r} is a votes board: post votes "
            f"{{model_a, model_b, winner}} to /api/boards/{self.spec.id}/votes, not scores"
        )

    def submit_votes(self, entries, notify=None, loop=None, future=None) -> Pending:
        """Validate a vote post and queue it for the next group commit."""
        a, b, outcome = validate_votes(entries, self.model_index)
        fields = [vote_fields(v) for v in entries]
        if all(f is None for f in fields):
            fields = None
        pending = VotePending(a, b, outcome, fields, notify, loop, future)
        with self._waiting_lock:
            self._waiting.append(pending)
        return pending

    def commit(self, group: CommitGroup) -> list[Pending]:
        with self._waiting_lock:
            posts, self._waiting = self._waiting, []
        if not posts:
            return posts
        if self.stale:
            error = StorageUnavailable("the board is being reloaded after a database fault")
            for pending in posts:
                pending.error = error
            return posts
        kept, new_keys = self._deduplicate(posts)
        if not kept:
            return posts
        a = np.concatenate([p.model[new] for p, new in kept])
        b = np.concatenate([p.item[new] for p, new in kept])
        outcome = np.concatenate([p.score[new] for p, new in kept])
        fields = None
        if any(p.fields is not None for p, _ in kept):
            fields = [
                f
                for p, new in kept
                for f in (
                    [None] * int(new.sum())
                    if p.fields is None
                    else [p.fields[i] for i in np.flatnonzero(new)]
                )
            ]

        def answer(error):
            if error is None:
                live, text = self.published.progress, self.published.progress_json
                for pending, new in kept:
                    accepted = int(new.sum())
                    pending.result = Posted(accepted, int(new.size - accepted), live, text)
                return
            for pending, _ in kept:
                pending.error = error

        if a.size == 0:  # every vote a duplicate: acknowledged, nothing to store
            answer(None)
            return posts
        seq = np.arange(self.received, self.received + a.size, dtype=np.int64)
        rows = (a * self.pair_base + b, seq, outcome.astype(float), seq)  # arrival: the number
        if fields is not None:
            rows = (*rows, fields)

        def then(error):
            if error is None:
                self.received += int(a.size)
                self.keys.update(new_keys)
                self._feed(a, b, outcome)
                self._publish()
            elif isinstance(error, StorageUnavailable) and error.ambiguous:
                self.stale = True
            answer(error)

        group.add(self.num, rows, then)
        return posts

    def _deduplicate(self, posts: list[VotePending]) -> tuple[list, dict]:
        """Each post checked, in order, against the keys committed and those of the earlier
        posts of the group: (post, mask of its new votes) for the posts kept, and the new keys.
        A post with a key accepted before for a different vote is refused alone (409), and so
        is one whose new votes would take the board past its quota (413)."""
        kept: list[tuple[VotePending, np.ndarray]] = []
        group_keys: dict[str, tuple] = {}
        counted = [self.received]  # the votes stored and those of the posts kept (the quota's)
        for pending in posts:
            new = np.ones(pending.model.size, dtype=bool)
            if pending.fields is None:
                self._keep_within_quota(kept, pending, new, counted)
                continue
            mine: dict[str, tuple] = {}
            conflict = None
            for i, f in enumerate(pending.fields):
                if f is None or f[0] is None:
                    continue
                vote = (int(pending.model[i]), int(pending.item[i]), int(pending.score[i]), *f[1:])
                seen = mine.get(f[0]) or group_keys.get(f[0]) or self.keys.get(f[0])
                if seen is None:
                    mine[f[0]] = vote
                elif seen == vote:
                    new[i] = False
                else:
                    conflict = (i, f[0], seen)
                    break
            if conflict is not None:
                i, key, seen = conflict
                names = self.spec.models
                before = f"{names[seen[0]]} vs {names[seen[1]]}: {OUTCOMES[seen[2]]}"
                problem = (
                    f"key {key!r} was accepted before for a different vote ({before}, "
                    f"prompt {seen[3]!r}, voter {seen[4]!r}, timestamp {seen[5]!r})"
                )
                pending.error = Conflict(
                    f"vote {i}: key: {problem}; nothing of this post was stored",
                    [{"vote": i, "field": "key", "problem": problem}],
                )
                continue
            if self._keep_within_quota(kept, pending, new, counted):
                group_keys.update(mine)
        return kept, group_keys

    def _keep_within_quota(
        self, kept: list, pending: VotePending, new: np.ndarray, counted: list[int]
    ) -> bool:
        """Keep a post (append it to ``kept``; ``counted[0]``, the votes stored and kept before
        it, grows by its new votes), or refuse it (413) if they would take the board past its
        quota (:attr:`quota`: the server's ``--max-board-cells``, counted in votes)."""
        if self.quota is not None:
            now, brought = counted[0], int(new.sum())
            what = f"{brought:,} new vote(s)"
            pending.error = quota_error(what, now, now + brought, self.quota, unit="votes")
            if pending.error is not None:
                return False
            counted[0] += brought
        kept.append((pending, new))
        return True

    def _feed(self, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> None:
        """Queue committed votes; feed the monitor every full chunk of ``look_every``, then look."""
        if a.size:
            self._unfed.append((a, b, outcome))
            self._n_unfed += int(a.size)
        every = self.spec.look_every
        if self._n_unfed < every or self.error is not None:
            return
        a, b, outcome = (np.concatenate([c[i] for c in self._unfed]) for i in range(3))
        full = (a.size // every) * every
        models = self.monitor.models
        for start in range(0, full, every):  # one iteration per look, not per vote
            part = slice(start, start + every)
            self.monitor.update(Votes.from_arrays(a[part], b[part], outcome[part], models=models))
            self.monitor.look()
            try:
                self.ranking = self.monitor.ranking()
                self.ranking_look = len(self.monitor.looks())
            except ValueError as error:  # a certified cycle (probability <= alpha)
                self.error = f"{type(error).__name__}: {error}"
                break
        self._unfed = [(a[full:], b[full:], outcome[full:])] if full < a.size else []
        self._n_unfed = int(a.size - full)

    # ------------------------------------------------------------------ not for votes
    def retire(self, model: str) -> dict:
        raise KindMismatch("a votes board has no retirements (retire rules are for scores)")

    def needs(self, limit: int = 1000, model: str | None = None, horizon: str = "all") -> dict:
        raise KindMismatch("a votes board has no shared item order: nothing is 'needed next'")

    def history(self) -> dict:
        with self.lock:
            looks = self.monitor.looks()
            events = [dict(e) for e in self.events]
        return {"models": list(self.spec.models), "looks": looks, "events": events}

    def look_state(self):
        body, ranking, number = self.published.look()
        return body, ranking, self.monitor.looks()[:number]

    def export(self):
        raise KindMismatch(
            "a votes board has no scores: its votes are exported as Parquet "
            "(GET /api/boards/{id}/export)"
        )

    def monitor_state(self) -> bytes:
        """The arena monitor's state as the ``.npz`` of
        :meth:`rankci.votes.sequential.ArenaMonitor.save`: the votes fed so far (every full
        chunk of ``look_every``); votes committed but not yet fed are not in it."""
        with self.lock:
            return saved_bytes(self.monitor)
