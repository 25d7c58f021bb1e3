"""``rankci serve --db PATH_OR_URL``: the live leaderboard service (FastAPI on uvicorn).

The database is a SQLite file (created if missing) or a ``postgresql://`` URL. One server process
owns a database (it takes a lock); boards are rebuilt from the stored scores when it starts, so
a restart - or a crash - loses nothing that was acknowledged. The admin token (needed to create
boards unless ``--open-boards``, and to delete boards and rotate tokens) comes from the
environment (``RANKCI_ADMIN_TOKEN``), never from the command line. Slow clients are cut off:
request headers must arrive within ``--header-timeout`` seconds, the body within
``--body-timeout`` seconds.

Once the stored boards are rebuilt at start-up, one reading summary goes to stderr, as every
command prints for the data it reads (:func:`boards_summary`): the boards loaded with their
models, items, clusters and scores, the cells not scored yet, and the boards set aside
(quarantined because they could not be rebuilt, or not loaded).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rankci.service.registry import Service

NAME = "serve"
HELP = (
    "run the live leaderboard service: boards receive scores through a JSON API and show "
    "anytime-valid rankings on a web page"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default="rankci-boards.sqlite",
        metavar="PATH_OR_URL",
        help="SQLite file (default: rankci-boards.sqlite) or postgresql://user:pass@host/db",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--max-body-mb",
        type=float,
        default=16.0,
        metavar="MB",
        help="largest request body accepted, in MiB (default 16)",
    )
    parser.add_argument(
        "--lock-wait",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long to wait for the database's lock at start-up (held by another server, or "
        "for a moment by a PostgreSQL session of a server that was killed); default 15",
    )
    parser.add_argument(
        "--open-boards",
        action="store_true",
        help="let anyone who can reach the server create boards (for local use); by default "
        "creating boards needs the admin token (RANKCI_ADMIN_TOKEN in the environment)",
    )
    parser.add_argument(
        "--max-board-cells",
        type=int,
        default=4_000_000,
        metavar="N",
        help="quota per board: at most N models x items (default 4,000,000)",
    )
    parser.add_argument(
        "--max-boards", type=int, default=1000, metavar="N", help="at most N boards (1000)"
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="close a connection whose request headers are not complete in this time (10)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="answer 408 to a request whose body is not complete in this time (30)",
    )
    parser.add_argument(
        "--auth-failures",
        type=int,
        default=20,
        metavar="N",
        help="failed authentications per client address per minute before 429 (20)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        metavar="N",
        help="at most N open connections (default 1000, lowered to the open-file limit less "
        "100); at the cap the oldest connection still waiting for its headers is closed",
    )
    parser.add_argument(
        "--max-connections-per-address",
        type=int,
        default=256,
        metavar="N",
        help="at most N open connections from one client address (default 256)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="share a PostgreSQL database with other rankci serve --cluster processes: each "
        "board is owned by one process (a lease), requests for another's boards get a 307 to "
        "its --advertise URL (docs/service.md, 'Several processes')",
    )
    parser.add_argument(
        "--advertise",
        metavar="URL",
        help="with --cluster: this process's URL as clients reach it (default "
        "http://HOST:PORT when --host is not a wildcard address)",
    )
    parser.add_argument("--no-access-log", action="store_true", help="do not log every request")
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
    )


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from rankci.service import create_app
    except ImportError as error:
        raise ValueError(
            f"rankci serve needs the service extra: pip install 'rankci[service]' ({error})"
        ) from None
    if not 0 < args.port < 65536:
        raise ValueError(f"--port must be in 1..65535, got {args.port}")
    for name in ("max_body_mb", "header_timeout", "body_timeout"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"--{name.replace('_', '-')} must be a positive number, got {value}")
    if not (math.isfinite(args.lock_wait) and args.lock_wait >= 0):
        raise ValueError(f"--lock-wait must be a number of seconds >= 0, got {args.lock_wait}")
    for name in (
        "max_board_cells",
        "max_boards",
        "auth_failures",
        "max_connections",
        "max_connections_per_address",
    ):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
    advertise = cluster_address(args)
    import logging

    from rankci.service.slowclients import default_caps, guarded_protocol

    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s: %(message)s")
    logging.getLogger("uvicorn.access").addFilter(redact_tokens)
    admin = os.environ.get("RANKCI_ADMIN_TOKEN") or None
    if admin is None and not args.open_boards:
        logging.getLogger("rankci.service").warning(
            "no RANKCI_ADMIN_TOKEN: boards cannot be created (or use --open-boards)"
        )
    app = create_app(
        args.db,
        max_body=int(args.max_body_mb * 1024 * 1024),
        admin_token=admin,
        open_boards=args.open_boards,
        lock_wait=args.lock_wait,
        body_timeout=args.body_timeout,
        max_cells=args.max_board_cells,
        max_boards=args.max_boards,
        auth_failures=args.auth_failures,
        cluster=advertise,
    )
    _summarise_after_warming(app.state.service)
    # connect and take the database now: a bad URL, a refused login or another owner is a clear
    # error of this command, not a traceback of the server's start-up
    storage = app.state.context.storage
    from rankci.service.storage import OwnerLockError

    try:
        storage.open()
        storage.lock_owner(args.lock_wait)
    except (OwnerLockError, RuntimeError) as error:  # another owner; a newer schema
        storage.close()
        raise ValueError(f"--db: {error}") from None
    except BaseException:
        storage.close()
        raise
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=not args.no_access_log,
        workers=1,  # the boards' state lives in this one process
        http=guarded_protocol(
            args.header_timeout,
            caps=default_caps(args.max_connections, args.max_connections_per_address),
        ),
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,  # request line and headers
    )
    return 0


def cluster_address(args: argparse.Namespace) -> str | None:
    """The URL a ``--cluster`` member advertises, or None without ``--cluster``.

    Examples
    --------
    >>> ns = argparse.Namespace(cluster=True, advertise=None, host="10.0.0.2", port=8001)
    >>> cluster_address(ns)
    'http://10.0.0.2:8001'
    >>> cluster_address(argparse.Namespace(cluster=False, advertise=None, host="", port=1))
    """
    if not args.cluster:
        if args.advertise is not None:
            raise ValueError("--advertise is for cluster members: add --cluster")
        return None
    if args.advertise is not None:
        return args.advertise
    if args.host in ("0.0.0.0", "::", ""):  # noqa: S104 - a check, not a bind
        raise ValueError(
            f"--cluster with --host {args.host or repr('')} needs --advertise URL (the address "
            "other processes redirect clients to)"
        )
    return f"http://{args.host}:{args.port}"


_TOKEN_IN_QUERY = re.compile(r"((?:^|[?&;])[^=&;]*token=)[^&;\s\"]*", re.IGNORECASE)


def redact_tokens(record) -> bool:
    """A logging filter: ``?token=...`` (and ``write_token=``, ``read_token=``...) values in an
    access log line's path are replaced by ``[redacted]`` (tokens never reach the log).

    Examples
    --------
    >>> import logging
    >>> record = logging.LogRecord("uvicorn.access", 20, "", 0, '%s - "%s %s HTTP/%s" %d',
    ...     ("127.0.0.1:5", "GET", "/boards/b?token=rkci_secret&x=1", "1.1", 200), None)
    >>> redact_tokens(record), record.getMessage()
    (True, '127.0.0.1:5 - "GET /boards/b?token=[redacted]&x=1 HTTP/1.1" 200')
    """
    if isinstance(record.args, tuple):
        record.args = tuple(
            _TOKEN_IN_QUERY.sub(r"\1[redacted]", a)
            if isinstance(a, str) and "token" in a.lower()
            else a
            for a in record.args
        )
    elif isinstance(record.msg, str) and "token" in record.msg.lower():
        record.msg = _TOKEN_IN_QUERY.sub(r"\1[redacted]", record.msg)
    return True


def _summarise_after_warming(service: Service) -> None:
    """Print :func:`boards_summary` once the start-up rebuild of the boards has finished."""
    warm = service.warm  # run by the application's lifespan in a background thread

    def warm_then_summarise() -> None:
        try:
            warm()
        finally:
            print(f"rankci: {boards_summary(service)}", file=sys.stderr, flush=True)

    service.warm = warm_then_summarise


def boards_summary(service: Service, shown: int = 4) -> str:
    """One line: the boards a server rebuilt from its database at start-up, and those set aside.

    For each loaded board (the first ``shown``): models, items, clusters, scores received and the
    cells not scored yet; in all: boards, models, items and scores; then the boards set aside
    (quarantined, with the reason, or not loaded). Posts are validated when they arrive (a bad
    score is refused with 422, never stored), so no stored row is ever excluded.
    """
    try:
        ids = service.storage.board_ids()
    except Exception as error:  # the database went away: say so, never fail the server
        return f"serve: the boards could not be listed ({type(error).__name__}: {error})"
    loaded = set(service.loaded())
    parts, scores, cells, models, items = [], 0, 0, 0, 0
    for board_id in ids:
        if board_id not in loaded:
            continue
        board = service.board(board_id)
        spec = board.spec
        m, n = len(spec.models), len(spec.items)
        clusters = "" if spec.clusters is None else f", {len(set(spec.clusters))} clusters"
        parts.append(f"{board_id} ({m} models, {n} items{clusters}, {board.received} scores)")
        scores, cells, models, items = scores + board.received, cells + m * n, models + m, items + n
    head = f"serve {service.storage.describe()}: {len(parts)} boards loaded"
    if parts:
        head += (
            f" ({models} models, {items} items, {scores} scores in all): "
            + "; ".join(parts[:shown])
            + ("; ..." if len(parts) > shown else "")
        )
    head += "; rows excluded: none (posts are validated when they arrive)"
    if cells - scores:
        head += f"; {cells - scores} cells not scored yet"
    aside = {b: service.quarantined[b] for b in ids if b in service.quarantined}
    missing = [b for b in ids if b not in loaded and b not in aside]
    if aside:
        listed = [f"{b} ({reason})" for b, reason in aside.items()]
        head += f"; boards set aside (quarantined): {len(aside)}: " + ", ".join(listed[:shown])
        head += ", ..." if len(listed) > shown else ""
    if missing:
        head += f"; boards not loaded: {len(missing)}: " + ", ".join(missing[:shown])
        head += ", ..." if len(missing) > shown else ""
    return head
