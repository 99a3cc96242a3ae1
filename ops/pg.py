"""A throwaway PostgreSQL server on loopback, for tests, benchmarks and CI.

It runs the machine's own server binaries (Debian's postgresql-15 package puts them in
/usr/lib/postgresql/15/bin; any initdb/pg_ctl on PATH also works) in a temporary folder, on a free
private port of 127.0.0.1, with a database and a user of its own (`strata`, a random password) and
nothing listening elsewhere. PostgreSQL refuses to run as root: when this runs as root, the folder
is handed to an unprivileged user (`nobody` unless STRATA_PG_OS_USER names another) and the server
binaries run as that user. Stopping removes the folder.

From Python (tests, benchmarks):

    with throwaway() as server:
        settings = load_settings(environ={}, data_dir=..., **server.settings())
        env = {**os.environ, **server.env()}       # for `strata` subprocesses

From a shell:

    eval "$(python -m ops.pg start --dir /tmp/strata-pg)"   # prints `export STRATA_...=...` lines
    python -m ops.pg stop --dir /tmp/strata-pg              # stops the server and removes the folder

`durable=False` (`--fast`) turns fsync off: fine for tests, wrong for figures.

Outages (ops/fault_pg.py, tests/e2e/test_postgres_outages.py): `crash(server)` kills the postmaster
with SIGKILL, as a crash or a power cut to it would, and `restart(server)` starts it again on the same
port (PostgreSQL replays its WAL first).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

STATE_FILE = "strata-pg.json"
NEEDED = ("initdb", "pg_ctl", "postgres")


class PgUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (tests skip on it, or fail in CI)."""


class PgFailed(RuntimeError):
    """The binaries exist but the server could not be set up or started."""


def find_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: the newest /usr/lib/postgresql/<v>/bin, else PATH.
    STRATA_PG_BIN names the folder instead (and only that one)."""
    explicit = os.environ.get("STRATA_PG_BIN")
    if explicit is not None:
        candidates = [Path(explicit)]
    else:
        candidates = sorted(
            Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: _version(p.parent.name), reverse=True
        )
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(Path(on_path).resolve().parent)
    for folder in candidates:
        if all((folder / name).is_file() and os.access(folder / name, os.X_OK) for name in NEEDED):
            return folder
    return None


def _version(name: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in name.split("."))
    except ValueError:
        return (0,)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running throwaway server and how to reach it."""

    dir: Path
    port: int
    password: str
    bin_dir: Path
    os_user: str | None = None
    options: str = ""
    """The server's -c settings as pg_ctl passed them (a restart passes them again)."""
    host: str = "127.0.0.1"
    dbname: str = "strata"
    user: str = "strata"

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def settings(self) -> dict[str, object]:
        """Keyword overrides for interface.settings.load_settings."""
        return {
            "event_store": "postgres",
            "postgres_host": self.host,
            "postgres_port": self.port,
            "postgres_dbname": self.dbname,
            "postgres_user": self.user,
            "postgres_password": self.password,
        }

    def env(self) -> dict[str, str]:
        """STRATA_* variables that point a `strata` process at this server."""
        return {f"STRATA_{key.upper()}": str(value) for key, value in self.settings().items()}

    def conninfo(self, admin: bool = False) -> dict[str, object]:
        """psycopg.connect keywords: the application user over TCP, or the superuser over the socket."""
        if admin:
            return {"host": str(self.dir), "port": self.port, "dbname": "postgres", "user": "postgres"}
        return {
            "host": self.host,
            "port": self.port,
            "dbname": self.dbname,
            "user": self.user,
            "password": self.password,
        }

    def __repr__(self) -> str:  # never the password
        return f"PgServer(dir={str(self.dir)!r}, host={self.host!r}, port={self.port}, dbname={self.dbname!r})"

    def reset(self) -> None:
        """Drop every table of the application database (a clean log between tests)."""
        import psycopg

        with psycopg.connect(**self.conninfo(), autocommit=True) as conn:  # type: ignore[arg-type]
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")

    def stop(self) -> None:
        stop(self.dir)


def _run_as(os_user: str | None) -> dict[str, object]:
    if os_user is None:
        return {}
    entry = pwd.getpwnam(os_user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _os_user() -> str | None:
    if os.geteuid() != 0:
        return None
    return os.environ.get("STRATA_PG_OS_USER", "nobody")


def _call(cmd: list[str], *, os_user: str | None, cwd: Path, timeout: float = 120) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LC_ALL": "C", "LANG": "C"}
    result = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False, **_run_as(os_user)
    )  # type: ignore[arg-type]
    if result.returncode != 0:
        raise PgFailed(
            f"{Path(cmd[0]).name} failed ({result.returncode}): {(result.stderr or result.stdout).strip()[-2000:]}"
        )


def _chown_tree(path: Path, os_user: str | None) -> None:
    if os_user is None:
        return
    entry = pwd.getpwnam(os_user)
    for root, dirs, files in os.walk(path):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def start(folder: Path | None = None, *, durable: bool = True, max_connections: int = 200) -> PgServer:
    """initdb a cluster in `folder` (created; must be empty) or a new temporary folder, start it on a
    free loopback port and create the `strata` database and user. Raises PgUnavailable without
    binaries, PgFailed when setting up fails (nothing is left behind then)."""
    bin_dir = find_binaries()
    if bin_dir is None:
        raise PgUnavailable(
            "no PostgreSQL server binaries (initdb, pg_ctl, postgres) under /usr/lib/postgresql/*/bin "
            "or on PATH; install the postgresql-15 package (apt-get install postgresql-15)"
        )
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="strata-pg-"))
    else:
        folder = folder.resolve()
        if folder.exists() and any(folder.iterdir()):
            raise PgFailed(f"{folder} is not empty")
        folder.mkdir(parents=True, exist_ok=True)
    os_user = _os_user()
    try:
        return _start(folder, bin_dir, os_user, durable, max_connections)
    except BaseException:
        with contextlib.suppress(Exception):
            stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _start(folder: Path, bin_dir: Path, os_user: str | None, durable: bool, max_connections: int) -> PgServer:
    folder.chmod(0o700)
    _chown_tree(folder, os_user)
    data = folder / "data"
    _call(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-locale",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--no-sync",
            "--no-instructions",
        ],
        os_user=os_user,
        cwd=folder,
    )
    options = {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": str(folder),
        "max_connections": str(max_connections),
        "logging_collector": "off",
        # after a crash, sync the data folder's filesystem once rather than fsync every file (seconds)
        "recovery_init_sync_method": "syncfs",
    }
    if not durable:
        options.update({"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
    server = None
    for attempt in range(5):  # another process may take the free port between probing and binding it
        port = free_port()
        settings = " ".join(f"-c {k}={shlex.quote(v)}" for k, v in {**options, "port": str(port)}.items())
        try:
            _call(
                [
                    str(bin_dir / "pg_ctl"),
                    "start",
                    "-D",
                    str(data),
                    "-w",
                    "-t",
                    "60",
                    "-s",
                    "-l",
                    str(folder / "server.log"),
                    "-o",
                    settings,
                ],
                os_user=os_user,
                cwd=folder,
            )
        except PgFailed:
            if attempt == 4:
                raise PgFailed(f"the server did not start; its log says: {_tail(folder / 'server.log')}") from None
            continue
        server = PgServer(
            dir=folder,
            port=port,
            password=secrets.token_urlsafe(18),
            bin_dir=bin_dir,
            os_user=os_user,
            options=settings,
        )
        break
    assert server is not None
    _create_database(server)
    state = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(server).items()}
    (folder / STATE_FILE).write_text(json.dumps(state))
    (folder / STATE_FILE).chmod(0o600)
    return server


def postmaster_pid(server: PgServer) -> int | None:
    """The running postmaster's process id (None when it is not running)."""
    try:
        pid = int((server.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def crash(server: PgServer, timeout: float = 60) -> None:
    """Kill the postmaster with SIGKILL (nothing is flushed or shut down) and wait until it and its
    server processes are gone (each backend exits when it notices its postmaster died)."""
    pid = postmaster_pid(server)
    if pid is None:
        raise PgFailed("the server is not running")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while _server_processes(server) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _zombie(pid):  # dead, but not reaped yet (its parent is whoever adopts orphans): its lock files are stale
        for stale in (server.data / "postmaster.pid", server.dir / f".s.PGSQL.{server.port}.lock"):
            with contextlib.suppress(OSError):
                stale.unlink()


def _zombie(pid: int) -> bool:
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _server_processes(server: PgServer) -> list[int]:
    """Processes of this cluster still running: PostgreSQL's server processes work in its data folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(entry / "cwd") == str(server.data):
                    found.append(int(entry.name))
    return found


def restart(server: PgServer, timeout: float = 60) -> None:
    """Start a crashed (or stopped) server again on its own port, with its own settings; it replays its
    WAL before it accepts connections. Retried while what the killed one left behind is still going."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _call(
                [
                    str(server.bin_dir / "pg_ctl"),
                    "start",
                    "-D",
                    str(server.data),
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "-s",
                    "-l",
                    str(server.dir / "server.log"),
                    "-o",
                    server.options or f"-c port={server.port}",
                ],
                os_user=server.os_user,
                cwd=server.dir,
                timeout=timeout + 30,
            )
            return
        except PgFailed:
            if time.monotonic() > deadline:
                raise PgFailed(
                    f"the server did not start again; its log says: {_tail(server.dir / 'server.log')}"
                ) from None
            time.sleep(0.1)


def _create_database(server: PgServer) -> None:
    import psycopg
    from psycopg import sql

    deadline = time.monotonic() + 30
    while True:
        try:
            conn = psycopg.connect(**server.conninfo(admin=True), autocommit=True)  # type: ignore[arg-type]
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(server.user), sql.Literal(server.password)
            )
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(server.dbname), sql.Identifier(server.user))
        )


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:].strip()
    except OSError:
        return "(no log)"


def load(folder: Path) -> PgServer:
    """The server started in `folder` (by another process, e.g. `python -m ops.pg start`)."""
    state = json.loads((folder.resolve() / STATE_FILE).read_text())
    state["dir"], state["bin_dir"] = Path(state["dir"]), Path(state["bin_dir"])
    return PgServer(**state)


def stop(folder: Path, *, remove: bool = True) -> None:
    """Stop the server of `folder` (fast shutdown, then immediate if it hangs) and remove the folder."""
    folder = folder.resolve()
    data = folder / "data"
    try:
        if (data / "postmaster.pid").exists():
            bin_dir = find_binaries()
            os_user = None
            with contextlib.suppress(KeyError):
                os_user = _os_user()
            if bin_dir is not None:
                try:
                    _call(
                        [str(bin_dir / "pg_ctl"), "stop", "-D", str(data), "-m", "fast", "-w", "-t", "30", "-s"],
                        os_user=os_user,
                        cwd=folder,
                        timeout=60,
                    )
                except (PgFailed, subprocess.TimeoutExpired):
                    with contextlib.suppress(PgFailed, subprocess.TimeoutExpired):
                        _call(
                            [str(bin_dir / "pg_ctl"), "stop", "-D", str(data), "-m", "immediate", "-w", "-s"],
                            os_user=os_user,
                            cwd=folder,
                            timeout=60,
                        )
    finally:
        if remove:
            shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def throwaway(folder: Path | None = None, *, durable: bool = True) -> Iterator[PgServer]:
    """A running server for the duration of the block; stopped and removed afterwards."""
    server = start(folder, durable=durable)
    try:
        yield server
    finally:
        stop(server.dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.pg", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start_cmd = sub.add_parser("start", help="start a server in DIR and print its connection env as `export` lines")
    start_cmd.add_argument("--dir", type=Path, required=True)
    start_cmd.add_argument("--fast", action="store_true", help="fsync off (tests only)")
    stop_cmd = sub.add_parser("stop", help="stop the server in DIR and remove DIR")
    stop_cmd.add_argument("--dir", type=Path, required=True)
    env_cmd = sub.add_parser("env", help="print the connection env of the server in DIR again")
    env_cmd.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "stop":
            stop(args.dir)
            return 0
        server = start(args.dir, durable=not args.fast) if args.command == "start" else load(args.dir)
    except (PgUnavailable, PgFailed, OSError) as exc:
        print(f"ops.pg: {exc}", file=sys.stderr)
        return 1
    for key, value in server.env().items():
        print(f"export {key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
