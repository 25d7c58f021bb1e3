"""A board's export as Parquet (every accepted score, with what a replay needs), and its replay.

The file (``GET /api/boards/{id}/export``, ``rankci export``) has one row per accepted score:

``seq`` (int64)
    0, 1, 2, ... in the order of the rows: the board's shared item order (``position``), then the
    model's column (the order models were given or joined).
``position`` (int64)
    The item's place in the board's shared order (the replay contract of ``rankci monitor``).
``model``, ``item`` (string), ``score`` (float64, bit for bit as stored)
``cluster`` (string, only on boards with clusters)

and, as the Parquet key-value metadata ``rankci.board_export``, a JSON record:
``{"format": "rankci board export", "version": 1, "board": <the spec at creation, as stored>,
"events": [{"seq", "t", "kind", "detail"}...], "n_scores": n}``. The events are the model
additions (``join``), retirements (``retire``), withdrawals (``withdraw``) and voided items
(``void``) with the item count ``t`` at which they were applied.

Why the rows are not in arrival order: the store keeps each (model, item) score once, not the
moment it came, because a board's state does not depend on it. The monitor consumes row ``t`` of
the shared order once every active model has a score on it, so its looks are a function of the
set of scores and of the events alone (:mod:`rankci.service.board`); the export holds exactly
those, and :func:`replay_export` rebuilds the board's looks from them bit for bit.

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
    """The board's spec as it was created (the models that joined later removed)."""
    joined = sum(e["kind"] == "join" for e in board.events)
    models = board.spec.models[: len(board.spec.models) - joined]
    return dataclasses.replace(board.spec, models=models)


def _metadata(board, n_scores: int) -> bytes:
    events = [
        {
            "seq": seq,
            "t": e["t"],
            "kind": e["kind"],
            "detail": json.dumps({k: v for k, v in e.items() if k not in ("t", "kind")}),
        }
        for seq, e in enumerate(board.events)
    ]
    record = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "board": json.loads(creation_spec(board).to_json()),
        "events": events,
        "n_scores": n_scores,
    }
    return json.dumps(record, separators=(",", ":")).encode()


def parquet_chunks(board, row_group: int = ROW_GROUP) -> Iterator[bytes]:
    """The board's export as Parquet bytes, one row group at a time (see the module).

    The scores are copied once under the board's lock (the board holds them in memory anyway);
    each chunk then holds at most ``row_group`` rows' worth of encoded bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    with board.lock:
        pos, model, score = board.export()
        spec = board.spec
        meta = _metadata(board, int(score.size))
    fields = [
        pa.field("seq", pa.int64()),
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
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for start in range(0, max(int(score.size), 1), row_group):
            part = slice(start, start + row_group)
            index = board.order[pos[part]]
            columns = [
                pa.array(np.arange(start, start + len(index), dtype=np.int64)),
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


def is_board_export(path) -> bool:
    """Whether ``path`` is a Parquet file written by :func:`parquet_chunks`."""
    try:
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
    except Exception:
        return False
    return EXPORT_KEY in meta


def read_board_export(path):
    """``(spec, events, model, item, score)`` of an export: the spec at creation, the events as
    stored ``(seq, t, kind, detail)``, and the model and item indices and scores of every row.

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
    item_index = {item: i for i, item in enumerate(spec.items)}
    try:
        model = np.array([model_index[m] for m in table.column("model").to_pylist()], np.int64)
        item = np.array([item_index[i] for i in table.column("item").to_pylist()], np.int64)
    except KeyError as error:
        raise ValueError(f"{name}: a row names {error.args[0]!r}, not on the board") from None
    score = table.column("score").to_numpy().astype(np.float64)
    return spec, events, model, item, score


class MemoryStorage:
    """Just what :meth:`Board.load` reads and a board writes, held in memory (a replay)."""

    def __init__(self, model, item, score, events) -> None:
        self._scores = (np.asarray(model), np.asarray(item), np.asarray(score))
        self._events = list(events)

    def load_scores(self, num: int):
        return self._scores

    def load_events(self, num: int):
        return list(self._events)

    def insert_scores(self, nums, model, item, score) -> None:
        pass

    def add_event(self, num: int, t: int, kind: str, detail: str) -> None:
        self._events.append((len(self._events), t, kind, detail))


def replay_export(path):
    """The board an export describes, rebuilt as the server rebuilds it after a restart
    (:meth:`rankci.service.board.Board.load`): the same looks, bit for bit."""
    from rankci.service.board import Board

    spec, events, model, item, score = read_board_export(path)
    return Board.load(spec, 0, MemoryStorage(model, item, score, events))
