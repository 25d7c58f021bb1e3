"""The real `rankci serve` in a subprocess on a loopback port, a small HTTP client, and PostgreSQL.

PostgreSQL tests use the server named by ``RANKCI_TEST_POSTGRES_URL`` (``.ci/run`` installs
Debian's PostgreSQL, starts it and sets the variable). Each test gets a schema of its own. In CI
(CI=true) a missing PostgreSQL is a failure, not a skip; elsewhere those tests are skipped.
"""

from __future__ import annotations

import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from limits import HANG_GUARD, WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit

POSTGRES_ENV = "RANKCI_TEST_POSTGRES_URL"
ADMIN = "test-admin-token-" + uuid.uuid4().hex  # RANKCI_ADMIN_TOKEN of every test server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """JSON over HTTP/1.1 to one server, one keep-alive connection.

    uvicorn closes a keep-alive connection after 5 idle seconds; a request after a longer pause
    (a browser test in between, say) opens a new connection first, instead of writing into the
    one the server closed.
    """

    IDLE = 3.0  # seconds; under uvicorn's keep-alive timeout of 5 s

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_GUARD)
        self.last_used = time.monotonic()

    def request(self, method: str, path: str, body=None, token: str | None = None, raw=None):
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        if time.monotonic() - self.last_used > self.IDLE:
            self.conn.close()  # http.client reconnects on the next request
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            payload = response.read()
            self.last_used = time.monotonic()
        except http.client.IncompleteRead as error:
            # the server died between the headers and the end of the body (a kill mid-answer):
            # to the caller, as to any HTTP client, the connection broke (an OSError)
            self.conn.close()
            raise ConnectionError(f"{method} {path}: the answer was cut off ({error!r})") from error
        except (http.client.HTTPException, OSError):
            self.conn.close()
            raise
        kind = response.getheader("Content-Type", "")
        if kind.startswith("application/json") and payload:
            return response.status, json.loads(payload)
        return response.status, payload

    def get(self, path: str, token: str | None = None):
        return self.request("GET", path, token=token)

    def post(self, path: str, body, token: str | None = None):
        return self.request("POST", path, body, token=token)

    def delete(self, path: str, token: str | None = None):
        return self.request("DELETE", path, token=token)

    def headers(self, path: str) -> tuple[int, dict]:
        """GET, returning the status and the response headers (lower-case names)."""
        self.conn.close()
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        response.read()
        self.last_used = time.monotonic()
        return response.status, {k.lower(): v for k, v in response.getheaders()}

    def close(self) -> None:
        self.conn.close()


class Server:
    """``rankci serve`` on a free loopback port, with the admin token :data:`ADMIN`; boards are
    open to create (``--open-boards``) unless ``open_boards=False``."""

    def __init__(
        self,
        db: str,
        log: Path,
        env: dict | None = None,
        args=(),
        open_boards: bool = True,
        preexec=None,
    ) -> None:
        self.db = db
        self.log = log
        self.preexec = preexec  # run in the server's process before it starts (e.g. rlimits)
        args = (*args, "--open-boards") if open_boards else tuple(args)
        for attempt in range(3):  # another process may take the free port before we bind it
            self.port = free_port()
            try:
                self._start(env, args)
                return
            except RuntimeError as error:
                if "address already in use" not in str(error).lower() or attempt == 2:
                    raise

    def _start(self, env, args) -> None:
        start = self.log.stat().st_size if self.log.exists() else 0
        self._log_start = start
        command = [
            sys.executable,
            "-m",
            "rankci",
            "serve",
            "--db",
            self.db,
            "--port",
            str(self.port),
            *(() if "--log-level" in args else ("--no-access-log", "--log-level", "warning")),
            *args,
        ]
        environment = {
            **os.environ,
            "RANKCI_PROGRESS": "0",
            "RANKCI_ADMIN_TOKEN": ADMIN,
            **(env or {}),
        }
        with open(self.log, "ab") as handle:
            self.process = subprocess.Popen(
                command,
                stdout=handle,
                stderr=subprocess.STDOUT,
                env=environment,
                preexec_fn=self.preexec,
            )
        self._wait()

    def _wait(self, timeout: float = WAIT_GUARD) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_bytes()[self._log_start :].decode(errors="replace")
                raise RuntimeError(f"the server exited:\n{tail[-3000:]}")
            try:
                status, health = self.client().get("/api/health")
                if status == 200 and health.get("pid") == self.process.pid:  # ours, not another
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the server did not start:\n{self.log.read_text()[-3000:]}")

    def client(self) -> Client:
        return Client(self.port)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def running(
    db: str, log: Path, env: dict | None = None, args=(), open_boards: bool = True, preexec=None
):
    server = Server(db, log, env, args, open_boards, preexec)
    try:
        yield server
    finally:
        server.stop()


def serve_once(*args: str) -> tuple[int, str]:
    """``rankci serve ARGS`` run to its end (a refusal): its exit code and standard error."""
    done = subprocess.run(
        [sys.executable, "-m", "rankci", "serve", *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    return done.returncode, done.stderr


def require_postgres() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        message = (
            f"PostgreSQL not configured: set {POSTGRES_ENV}=postgresql://user:pass@host/db "
            "(.ci/run starts Debian's PostgreSQL and sets it)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return url


@contextmanager
def postgres_schema():
    """A fresh schema in the test database; yields a URL whose search_path points at it."""
    import psycopg

    url = require_postgres()
    schema = f"rankci_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    query.append(("options", f"-csearch_path={schema}"))
    scoped = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    try:
        yield scoped
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _postgres_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if os.geteuid() != 0 or not found or shutil.which("su") is None:
        pytest.skip("needs root and PostgreSQL's server programs to run a private cluster")
    return os.path.dirname(found[-1])


def _su_postgres(command: str, timeout: float = WAIT_GUARD) -> None:
    done = subprocess.run(
        ["su", "postgres", "-s", "/bin/sh", "-c", command], capture_output=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:] + done.stdout.decode()[-2000:]


@contextmanager
def private_postgres():
    """A PostgreSQL cluster of the test's own on a free loopback port; yields ``(URL, control)``,
    ``control(action)`` running ``pg_ctl start|stop|restart`` on it. Stopped and removed at the
    end. A test that stops or restarts PostgreSQL uses this, never the shared cluster: under
    ``pytest -n 2`` the other worker's PostgreSQL tests would meet the outage."""
    bindir = _postgres_bin()
    folder = tempfile.mkdtemp(prefix="rankci-pg-")  # tmp_path's parents are root's only
    shutil.chown(folder, "postgres")
    data, port = os.path.join(folder, "data"), free_port()
    ctl = (
        f'{bindir}/pg_ctl -D {data} -l {folder}/log -w -t 60 -o "-p {port} -k {folder} '
        f'-c listen_addresses=127.0.0.1 -c max_connections=20 -c shared_buffers=16MB"'
    )
    started = False
    try:
        _su_postgres(f"{bindir}/initdb -D {data} -A trust -U postgres --no-sync >/dev/null")
        _su_postgres(f"{ctl} start >/dev/null")
        started = True
        psql = f"{bindir}/psql -q -h {folder} -p {port} -U postgres -d postgres -c"
        _su_postgres(f"{psql} \"CREATE ROLE rankci LOGIN PASSWORD 'rankci'\"")
        _su_postgres(f'{psql} "CREATE DATABASE rankci_private OWNER rankci"')

        def control(action: str) -> None:
            _su_postgres(f"{ctl} -m fast {action} >/dev/null")

        yield f"postgresql://rankci:rankci@127.0.0.1:{port}/rankci_private", control
    finally:
        if started:
            subprocess.run(
                ["su", "postgres", "-s", "/bin/sh", "-c", f"{ctl} -m immediate stop"],
                capture_output=True,
                timeout=WAIT_GUARD,
            )
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def database(kind: str, tmp_path: Path):
    """A SQLite file or a PostgreSQL schema, as the --db argument."""
    if kind == "sqlite":
        yield str(tmp_path / "boards.sqlite")
    else:
        with postgres_schema() as url:
            yield url
