"""A board's export as Parquet (every accepted score, with what a replay needs), and its replay.

The file (``GET /api/boards/{id}/export``, ``rankci export``) has one row per accepted score, in
the order the board accepted them:

``seq`` (int64)
    0, 1, 2, ... in the order of the rows.
``arrival`` (int64, null where unknown)
    The score's place in the order in which the board accepted its scores (0, 1, 2, ...: the
    order of the group commits, then of the posts in a commit, then of the entries in a post),
    as stored (:data:`rankci.service.storage.ARRIVAL_COLUMN`). The rows are in this order.
    Scores stored before the column existed (a database of an earlier version) have none
    (null): they come first, in the shared item order then the model's column, as every row
    came before, and the metadata counts them (``arrival_unknown``).
``position`` (int64)
    The item's place in the board's shared order (the replay contract of ``rankci monitor``).
``model``, ``item`` (string), ``score`` (float64, bit for bit as stored)
``cluster`` (string, only on boards with clusters)

and, as the Parquet key-value metadata ``rankci.board_export``, a JSON record:
``{"format": "rankci board export", "version": 1, "board": <the spec at creation, as stored>,
"events": [{"seq", "t", "kind", "detail"}...], "n_scores": n, "arrival_unknown": k}``. The
events are the model
additions (``join``), retirements (``retire``), withdrawals (``withdraw``) and voided items
(``void``) with the item count ``t`` at which they were applied, then, on a board created with
``item_entry: "open"``, the items that joined later (``items``: detail ``{"items": [names],
"first": index}``, one record per commit, in commit order; their ``position`` is their index).

**A votes board** exports every committed vote, in commit order (the order the monitor was fed):
``seq`` (int64, the vote's number from 0), ``arrival`` (int64, the same number: a vote's place
in the arrival order), ``model_a``, ``model_b``, ``winner`` (string: one of
:data:`rankci.votes.table.OUTCOMES`), and the vote's stored text fields ``key``, ``prompt``,
``voter``, ``timestamp`` (string or null; ``timestamp`` as stored, ISO 8601). The metadata is the
same record; its events are the model additions (``join``) with the vote count ``t`` at which
each was applied. Votes committed and not yet fed to the monitor (fewer than ``look_every`` since
the last look) are exported too: a replay holds them as the board does, waiting for the next full
chunk.

A board's looks do not depend on the arrival order: the monitor consumes row ``t`` of the
shared order once every active model has a score on it, so its looks are a function of the set
of scores and of the events alone (:mod:`rankci.service.board`), and :func:`replay_export`
rebuilds them bit for bit from the rows in any order. The arrival order is for whoever replays
the evaluation as it happened (feeding a :class:`~rankci.service.board.Board` the rows in
``arrival`` order gives the same looks, reached at the same rows). A scores board's export reads
the rows from the database (the board holds no arrival order in memory), so it needs the
database: while it cannot be read the export raises
:class:`~rankci.service.storage.StorageUnavailable` (the service's 503), before any byte.

Examples
--------
>>> import io
>>> from rankci.service.board import Board
>>> from rankci.service.spec import make_spec
>>> spec = make_spec(benchmark="b", run="r", models=["a", "b"],
...                  items=[str(i) for i in range(40)], look_every=10, order_seed=1)
>>> board = Board(spec, 0, MemoryStorage([], [], [], []))
>>> _ = board.post([(m, str(i), float((i + (m == "a")) % 2)) for m in "ab" for i in range(40)])
>>> data = b"".join(parquet_chunks(board))
>>> again = replay_export(io.BytesIO(data))
>>> again.monitor.looks == board.monitor.looks
True
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import numpy as np

__all__ = [
    "EXPORT_KEY",
    "EXPORT_MEDIA_TYPE",
    "MemoryStorage",
    "creation_spec",
    "is_board_export",
    "parquet_chunks",
    "read_board_export",
    "replay_export",
]

EXPORT_KEY = b"rankci.board_export"
EXPORT_FORMAT = "rankci board export"
EXPORT_VERSION = 1
EXPORT_MEDIA_TYPE = "application/vnd.apache.parquet"
ROW_GROUP = 100_000  # rows per Parquet row group: what one chunk of the answer holds
#: The columns of row numbers (0, 1, 2, ... in a row group: ``seq``, and ``arrival`` in arrival
#: order) are written delta-encoded: a run of consecutive numbers then takes almost nothing,
#: where the default encoding keeps much of their 8 bytes under zstd (BENCHMARKS.md, "Storage
#: growth of a live board", the export's bytes per score before and after).
DELTA_COLUMNS = ("seq", "arrival")


def _writer(sink, schema):
    """A zstd Parquet writer, :data:`DELTA_COLUMNS` delta-encoded and the others dictionary
    encoded (pyarrow's default)."""
    import pyarrow.parquet as pq

    return pq.ParquetWriter(
        sink,
        schema,
        compression="zstd",
        use_dictionary=[name for name in schema.names if name not in DELTA_COLUMNS],
        column_encoding={name: "DELTA_BINARY_PACKED" for name in DELTA_COLUMNS},
    )


class _Sink:
    """A write-only file for pyarrow that hands out what was written since the last call."""

    closed = False

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data) -> int:
        data = bytes(data)
        self._parts.append(data)
        self._size += len(data)
        return len(data)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        out, self._parts = b"".join(self._parts), []
        return out


def creation_spec(board):
    """The board's spec as it was created (the models that joined later, and the items added
    later on a board with item_entry "open", removed)."""
    joined = sum(e["kind"] == "join" for e in board.events)
    models = board.spec.models[: len(board.spec.models) - joined]
    n = getattr(board, "n_created", len(board.spec.items))
    spec = dataclasses.replace(board.spec, models=models, items=board.spec.items[:n])
    object.__setattr__(spec, "_order", None)  # the creation order, recomputed from the items
    return spec


def _record(board) -> dict:
    """The export's metadata record (see the module), without its counts."""
    events = [
        {
            "seq": seq,
            "t": e["t"],
            "kind": e["kind"],
            "detail": json.dumps({k: v for k, v in e.items() if k not in ("t", "kind")}),
        }
        for seq, e in enumerate(board.events)
    ]
    for added in getattr(board, "item_events", ()):  # items that joined later, in order
        detail = {"items": added["items"], "first": added["first"]}
        events.append(
            {"seq": len(events), "t": added["t"], "kind": "items", "detail": json.dumps(detail)}
        )
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "board": json.loads(creation_spec(board).to_json()),
        "events": events,
    }


def _metadata(board, n_scores: int) -> bytes:
    record = {**_record(board), "n_scores": n_scores}
    return json.dumps(record, separators=(",", ":")).encode()


def parquet_chunks(board, row_group: int = ROW_GROUP) -> Iterator[bytes]:
    """The board's export as Parquet bytes, one row group at a time (see the module).

    The board's spec, events and arrival count are read under its lock, then its scores from
    its store, at once, before the first chunk (a store that cannot be read raises
    :class:`~rankci.service.storage.StorageUnavailable` here, before any byte is sent): the
    rows whose arrival is below that count, so a commit that falls between the two reads is not
    in the file. Each chunk then holds at most ``row_group`` rows' worth of encoded bytes. A
    votes board's votes are read from its store under the board's lock
    (:func:`vote_parquet_chunks`).
    """
    if board.spec.kind == "votes":
        return vote_parquet_chunks(board, row_group)
    with board.lock:
        spec, below = board.spec, board.next_arrival
        position = board.position[: spec.n_items].copy()
        order = board.order[: spec.n_items].copy()
        record = _record(board)
    model, item, score, arrival = board.storage.export_scores(board.num, below)
    pos = position[item]
    rows = np.lexsort((model, pos, arrival))  # unknown arrivals (-1) first, in the shared order
    record.update(n_scores=int(score.size), arrival_unknown=int((arrival < 0).sum()))
    meta = json.dumps(record, separators=(",", ":")).encode()
    columns = (pos[rows], model[rows], score[rows], arrival[rows])
    return _score_chunks(spec, order, columns, meta, row_group)


def _score_chunks(spec, order, columns, meta: bytes, row_group: int) -> Iterator[bytes]:
    import pyarrow as pa

    pos, model, score, arrival = columns
    fields = [
        pa.field("seq", pa.int64()),
        pa.field("arrival", pa.int64()),
        pa.field("position", pa.int64()),
        pa.field("model", pa.string()),
        pa.field("item", pa.string()),
        pa.field("score", pa.float64()),
    ]
    if spec.clusters:
        fields.append(pa.field("cluster", pa.string()))
    schema = pa.schema(fields, metadata={EXPORT_KEY: meta})
    models = np.asarray(spec.models, dtype=object)
    items = np.asarray(spec.items, dtype=object)
    clusters = np.asarray(spec.clusters, dtype=object) if spec.clusters else None
    sink = _Sink()
    with _writer(sink, schema) as writer:
        for start in range(0, max(int(score.size), 1), row_group):
            part = slice(start, start + row_group)
            index = order[pos[part]]
            columns = [
                pa.array(np.arange(start, start + len(index), dtype=np.int64)),
                pa.array(arrival[part], mask=arrival[part] < 0, type=pa.int64()),
                pa.array(pos[part].astype(np.int64)),
                pa.array(models[model[part]], type=pa.string()),
                pa.array(items[index], type=pa.string()),
                pa.array(score[part].astype(np.float64)),
            ]
            if clusters is not None:
                columns.append(pa.array(clusters[index], type=pa.string()))
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))
            yield sink.take()
    yield sink.take()


#: The export's names of the stored vote fields (:data:`rankci.service.storage.VOTE_COLUMNS`).
VOTE_FIELDS = ("key", "prompt", "voter", "timestamp")


def vote_parquet_chunks(board, row_group: int = ROW_GROUP) -> Iterator[bytes]:
    """A votes board's export as Parquet bytes (see the module): every committed vote in commit
    order, with its stored fields, read from the store now, under the board's lock (no commit
    can fall between the votes and the events read; a store that cannot be read raises here,
    before any byte is sent)."""
    with board.lock:
        pair, seq, outcome = board.storage.load_scores(board.num)
        stored = board.storage.load_vote_fields(board.num)
        meta = _metadata(board, int(seq.size))
        models = np.asarray(board.spec.models, dtype=object)
        base = board.pair_base
    order = np.argsort(seq, kind="stable")
    return _vote_chunks(pair[order], outcome[order].astype(np.int64), stored, meta, models, base,
                        row_group)  # fmt: skip


def _vote_chunks(pair, outcome, stored, meta, models, base, row_group) -> Iterator[bytes]:
    import pyarrow as pa

    from rankci.votes.table import OUTCOMES

    n = int(pair.size)
    fields = [np.full(n, None, dtype=object) for _ in VOTE_FIELDS]
    for s, *values in stored:
        for column, value in zip(fields, values):
            column[s] = value
    schema = pa.schema(
        [pa.field("seq", pa.int64()), pa.field("arrival", pa.int64())]
        + [pa.field(name, pa.string()) for name in ("model_a", "model_b", "winner")]
        + [pa.field(name, pa.string()) for name in VOTE_FIELDS],
        metadata={EXPORT_KEY: meta},
    )
    winners = np.asarray(OUTCOMES, dtype=object)
    sink = _Sink()
    with _writer(sink, schema) as writer:
        for start in range(0, max(n, 1), row_group):
            part = slice(start, start + row_group)
            number = pa.array(np.arange(start, min(start + row_group, n), dtype=np.int64))
            columns = [
                number,
                number,  # a vote's arrival is its number (the commit order)
                pa.array(models[pair[part] // base], type=pa.string()),
                pa.array(models[pair[part] % base], type=pa.string()),
                pa.array(winners[outcome[part]], type=pa.string()),
                *(pa.array(column[part], type=pa.string()) for column in fields),
            ]
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))
            yield sink.take()
    yield sink.take()


def is_board_export(path) -> bool:
    """Whether ``path`` is a Parquet file written by :func:`parquet_chunks`."""
    try:
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
    except Exception:
        return False
    return EXPORT_KEY in meta


def read_board_export(path):
    """``(spec, events, model, item, score, arrival)`` of an export: the spec at creation, the
    events as stored ``(seq, t, kind, detail)``, and the model and item indices, scores and
    arrival numbers of every row (-1 where unknown: a null, or an export written before the
    column existed). For a votes board: ``(spec, events, pair, seq, outcome, fields)``, the votes
    as the board stores them (its pair codes, numbers and outcome codes) and their stored text
    fields.

    Raises ValueError naming the file when it is not a board export, or a newer one.
    """
    import pyarrow.parquet as pq

    from rankci.service.spec import BoardSpec

    table = pq.read_table(path)
    meta = (table.schema.metadata or {}).get(EXPORT_KEY)
    name = getattr(path, "name", path)
    if meta is None:
        raise ValueError(f"{name}: not a rankci board export (no {EXPORT_KEY.decode()} metadata)")
    record = json.loads(meta)
    if record.get("format") != EXPORT_FORMAT or record.get("version", 0) > EXPORT_VERSION:
        raise ValueError(
            f"{name}: a board export of version {record.get('version')!r}; this rankci reads "
            f"version {EXPORT_VERSION}"
        )
    spec = BoardSpec.from_json(json.dumps(record["board"]))
    events = [(e["seq"], e["t"], e["kind"], e["detail"]) for e in record["events"]]
    if table.num_rows != record["n_scores"]:
        raise ValueError(
            f"{name}: {table.num_rows} rows, but the export records {record['n_scores']} scores"
        )
    models = list(spec.models) + [
        json.loads(d)["model"] for _s, _t, kind, d in events if kind == "join"
    ]
    model_index = {m: j for j, m in enumerate(models)}
    if spec.kind == "votes":
        return (spec, events, *_vote_columns(table, spec, model_index, name))
    items = list(spec.items) + [
        name for _s, _t, kind, d in events if kind == "items" for name in json.loads(d)["items"]
    ]
    item_index = {item: i for i, item in enumerate(items)}
    try:
        model = np.array([model_index[m] for m in table.column("model").to_pylist()], np.int64)
        item = np.array([item_index[i] for i in table.column("item").to_pylist()], np.int64)
    except KeyError as error:
        raise ValueError(f"{name}: a row names {error.args[0]!r}, not on the board") from None
    score = table.column("score").to_numpy().astype(np.float64)
    arrival = np.full(table.num_rows, -1, dtype=np.int64)
    if "arrival" in table.column_names:
        column = table.column("arrival").to_numpy(zero_copy_only=False)
        arrival = np.where(np.isnan(column.astype(float)), -1, column).astype(np.int64)
    return spec, events, model, item, score, arrival


def _vote_columns(table, spec, model_index: dict, name) -> tuple:
    """``(pair, seq, outcome, fields)`` of a votes export's rows, as a votes board stores them
    (:mod:`rankci.service.voteboard`): the pair code ``a * M + b``, the vote's number, its outcome
    code, and the (seq, key, prompt, voter, timestamp) rows of the votes that have a field."""
    from rankci.service.voteboard import OPEN_PAIR_BASE
    from rankci.votes.table import OUTCOMES

    outcome_code = {w: k for k, w in enumerate(OUTCOMES)}
    seq = table.column("seq").to_numpy().astype(np.int64)
    if not np.array_equal(seq, np.arange(seq.size)):
        raise ValueError(f"{name}: the votes are not numbered 0..n-1 in order (column 'seq')")
    try:
        a = np.array([model_index[m] for m in table.column("model_a").to_pylist()], np.int64)
        b = np.array([model_index[m] for m in table.column("model_b").to_pylist()], np.int64)
    except KeyError as error:
        raise ValueError(f"{name}: a vote names {error.args[0]!r}, not on the board") from None
    try:
        outcome = np.array(
            [outcome_code[w] for w in table.column("winner").to_pylist()], dtype=float
        )
    except KeyError as error:
        raise ValueError(
            f"{name}: winner {error.args[0]!r} is not one of {', '.join(OUTCOMES)}"
        ) from None
    base = OPEN_PAIR_BASE if spec.monitor.entry == "open" else spec.n_models
    columns = [table.column(f).to_pylist() for f in VOTE_FIELDS]
    fields = [(s, *v) for s, v in enumerate(zip(*columns)) if any(x is not None for x in v)]
    return a * base + b, seq, outcome, fields


class MemoryStorage:
    """Just what :meth:`Board.load` (and :meth:`VoteBoard.load`) reads, the export reads and a
    board writes, held in memory (a replay). ``arrival``: each score's arrival number, -1 where
    unknown (None: all unknown)."""

    def __init__(self, model, item, score, events, vote_fields=(), arrival=None) -> None:
        self._scores = (
            np.asarray(model, dtype=np.int64),
            np.asarray(item, dtype=np.int64),
            np.asarray(score, dtype=float),
        )
        n = self._scores[2].size
        self._arrival = np.full(n, -1, np.int64) if arrival is None else np.asarray(arrival)
        self._events = list(events)
        self._vote_fields = list(vote_fields)

    def load_scores(self, num: int):
        return self._scores

    def next_arrival(self, num: int) -> int:
        return int(self._arrival.max(initial=-1)) + 1

    def export_scores(self, num: int, below: int):
        keep = self._arrival < below
        model, item, score = (np.asarray(column)[keep] for column in self._scores)
        return model.astype(np.int64), item.astype(np.int64), score, self._arrival[keep]

    def load_events(self, num: int):
        return list(self._events)

    def load_vote_fields(self, num: int):
        return list(self._vote_fields)

    def insert_scores(self, nums, model, item, score, arrival=None, fields=None, events=()):
        """Keep the scores (a board replayed from an export can be exported again)."""
        new = (model, item, score)
        self._scores = tuple(
            np.concatenate([old, np.asarray(c, dtype=old.dtype)])
            for old, c in zip(self._scores, new)
        )
        given = np.full(len(score), -1, np.int64) if arrival is None else np.asarray(arrival)
        self._arrival = np.concatenate([self._arrival, given])
        for _num, t, kind, detail in events:
            self.add_event(0, t, kind, detail)

    def add_event(self, num: int, t: int, kind: str, detail: str) -> None:
        self._events.append((len(self._events), t, kind, detail))


def replay_export(path):
    """The board an export describes, rebuilt as the server rebuilds it after a restart
    (:meth:`rankci.service.board.Board.load`): the same looks, bit for bit."""
    from rankci.service.board import Board
    from rankci.service.voteboard import VoteBoard

    spec, events, *columns = read_board_export(path)
    if spec.kind == "votes":
        pair, seq, outcome, fields = columns
        return VoteBoard.load(spec, 0, MemoryStorage(pair, seq, outcome, events, fields))
    model, item, score, arrival = columns
    return Board.load(spec, 0, MemoryStorage(model, item, score, events, arrival=arrival))
