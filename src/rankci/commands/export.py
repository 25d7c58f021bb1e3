"""``rankci export SOURCE BOARD -o FILE``: a board's every accepted score (or vote), as Parquet.

``SOURCE`` is either a running server (``http://host:port``; a private board needs
``--token``, its read or write token) or the database a server uses (what ``rankci serve --db``
takes: a SQLite file or a ``postgresql://`` URL), read directly and only read. The file is the
one ``GET /api/boards/{id}/export`` answers (:mod:`rankci.service.export`); ``rankci monitor
FILE`` replays it into the board's looks, bit for bit.
"""

from __future__ import annotations

import argparse
import sys

NAME = "export"
HELP = (
    "export a board of rankci serve (every accepted score or vote, with its spec and events) "
    "as Parquet, from a running server or its database; rankci monitor replays the file"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="URL_OR_DB",
        help="http(s)://host:port of a running rankci serve, or its --db (a SQLite file or "
        "postgresql://user:pass@host/db, read only)",
    )
    parser.add_argument("board", metavar="BOARD", help="the board's id")
    parser.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the Parquet file to write"
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="a private board's read or write token (for a URL; a database needs none)",
    )


def run(args: argparse.Namespace) -> int:
    if args.source.startswith(("http://", "https://")):
        count = _from_server(args)
    else:
        count = _from_database(args)
    print(f"rankci: wrote {args.output} ({count} bytes)", file=sys.stderr)
    return 0


def _from_server(args: argparse.Namespace) -> int:
    import urllib.error
    import urllib.parse
    import urllib.request

    url = f"{args.source.rstrip('/')}/api/boards/{urllib.parse.quote(args.board, safe='')}/export"
    request = urllib.request.Request(url)
    if args.token:
        request.add_header("Authorization", f"Bearer {args.token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return _write(args.output, iter(lambda: response.read(1 << 20), b""))
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", "replace")[:500]
        raise ValueError(f"{url}: the server answered {error.code}: {detail}") from None
    except urllib.error.URLError as error:
        raise ValueError(f"{url}: cannot reach the server ({error.reason})") from None


def _from_database(args: argparse.Namespace) -> int:
    from rankci.service.board import Board
    from rankci.service.export import parquet_chunks
    from rankci.service.spec import BoardSpec
    from rankci.service.storage import open_storage
    from rankci.service.voteboard import VoteBoard

    storage = open_storage(args.source).open()
    try:
        row = storage.get_board(args.board)
        if row is None:
            known = storage.board_ids()
            raise ValueError(
                f"{args.source}: no board {args.board!r}; the boards are "
                + (", ".join(known[:20]) + (" ..." if len(known) > 20 else "") or "none")
            )
        spec = BoardSpec.from_json(row.spec)
        kind = VoteBoard if spec.kind == "votes" else Board
        board = kind.load(spec, row.num, storage)
        return _write(args.output, parquet_chunks(board))
    finally:
        storage.close()


def _write(path: str, chunks) -> int:
    count = 0
    with open(path, "wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
            count += len(chunk)
    return count
