"""A throwaway PostgreSQL server for the history and tracking tests: ``initdb`` into a temporary
folder, a server on a free loopback port with trust authentication (and, in
:func:`password_server`, a user who logs in with a password), stopped and removed afterwards.

The binaries come from PATH or Debian's ``/usr/lib/postgresql/<version>/bin`` (``./setup.sh
--postgres`` installs them). PostgreSQL refuses to run as root, so under root the server runs as
the ``postgres`` user (``runuser``). Without binaries the fixtures (``pg_url``, ``pg``) skip, and fails instead under
``PERTURBLAB_REQUIRE_POSTGRES=1`` (which ``.ci/run`` sets)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest


def pg_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``, or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(d) / "initdb").is_file() and (Path(d) / "pg_ctl").is_file():
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


def _unavailable(why: str) -> None:
    if os.environ.get("PERTURBLAB_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PERTURBLAB_REQUIRE_POSTGRES=1 but {why}; run ./setup.sh --postgres")
    pytest.skip(f"{why} (install it with ./setup.sh --postgres)")


def postgres_server() -> Iterator[str]:
    """Start a server; yield its SQLAlchemy-ready URL (``postgresql://postgres@127.0.0.1:PORT/postgres``)."""
    bindir = pg_bin()
    if bindir is None:
        _unavailable("no PostgreSQL server binaries (initdb, pg_ctl) were found")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        _unavailable("running as root without runuser to start PostgreSQL as another user")
    root = Path(tempfile.mkdtemp(prefix="perturblab-pg-"))
    data, port = root / "data", _free_port()
    if os.geteuid() == 0:
        try:
            shutil.chown(root, "postgres")
        except (LookupError, PermissionError):
            shutil.rmtree(root, ignore_errors=True)
            _unavailable("no 'postgres' user to run the server as")
    init = subprocess.run(_as_owner([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                                     "--no-sync", "-E", "UTF8"]), capture_output=True, text=True)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"initdb failed: {init.stderr.strip()[-300:]}")
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
    start = subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"),
                                      "-w", "-t", "60", "start"]), capture_output=True, text=True)
    if start.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"the server did not start: {(start.stderr + log).strip()[-300:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def new_database(url: str, name: str) -> str:
    """Create database ``name`` on the server of ``url``; its URL."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return url.rsplit("/", 1)[0] + "/" + name


#: the password of the PostgreSQL user :func:`password_server` makes: a test checks that it appears
#: in no output and no file
PASSWORD = "q7ZrHist0ryPw"
USER = "writer"


def password_server() -> Iterator:
    """Start a server whose user :data:`USER` logs in with :data:`PASSWORD` over TCP (the
    superuser ``postgres`` keeps trust, to make databases); yield a function: database name -> the
    URL of a new database there, as :data:`USER` with its password (its ``admin``: the
    superuser's URL; its ``port``: the server's port)."""
    from sqlalchemy import create_engine, text

    for admin in postgres_server():
        engine = create_engine(admin.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f"CREATE ROLE {USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'"))
            hba = Path(conn.execute(text("SHOW hba_file")).scalar())
            hba.write_text("local all all trust\nhost all postgres 127.0.0.1/32 trust\n"
                           "host all all 127.0.0.1/32 scram-sha-256\n")
            conn.execute(text("SELECT pg_reload_conf()"))
        engine.dispose()
        port = admin.rsplit(":", 1)[1].split("/")[0]

        def database(name: str) -> str:
            new_database(admin, name)
            return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/{name}"

        database.admin = admin
        database.port = port
        yield database
