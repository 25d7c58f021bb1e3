"""``rankci serve --db PATH_OR_URL``: the live leaderboard service (FastAPI on uvicorn).

The database is a SQLite file (created if missing) or a ``postgresql://`` URL. One server process
owns a database (it takes a lock); boards are rebuilt from the stored scores when it starts, so
a restart - or a crash - loses nothing that was acknowledged. The creation token, when wanted,
comes from the environment (``RANKCI_CREATE_TOKEN``), never from the command line.
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
    import logging

    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s: %(message)s")
    app = create_app(
        args.db,
        max_body=int(args.max_body_mb * 1024 * 1024),
        create_token=os.environ.get("RANKCI_CREATE_TOKEN") or None,
        lock_wait=args.lock_wait,
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=not args.no_access_log,
        workers=1,  # the boards' state lives in this one process
    )
    return 0
