"""``rankci serve --db PATH_OR_URL``: the live leaderboard service (FastAPI on uvicorn).

The database is a SQLite file (created if missing) or a ``postgresql://`` URL. One server process
owns a database (it takes a lock); boards are rebuilt from the stored scores when it starts, so
a restart - or a crash - loses nothing that was acknowledged. The admin token (needed to create
boards unless ``--open-boards``, and to delete boards and rotate tokens) comes from the
environment (``RANKCI_ADMIN_TOKEN``; ``RANKCI_CREATE_TOKEN`` is its old name), never from the
command line. Slow clients are cut off: request headers must arrive within ``--header-timeout``
seconds, the body within ``--body-timeout`` seconds.
"""

from __future__ import annotations

import argparse
import os

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
    if not args.max_body_mb > 0:
        raise ValueError(f"--max-body-mb must be positive, got {args.max_body_mb}")
    for name in ("header_timeout", "body_timeout"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive")
    for name in ("max_board_cells", "max_boards", "auth_failures"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
    import logging

    from rankci.service.slowclients import guarded_protocol

    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s: %(message)s")
    admin = os.environ.get("RANKCI_ADMIN_TOKEN") or os.environ.get("RANKCI_CREATE_TOKEN") or None
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
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=not args.no_access_log,
        workers=1,  # the boards' state lives in this one process
        http=guarded_protocol(args.header_timeout),
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,  # request line and headers
    )
    return 0
