"""Where a history lives and how it is reached: a file path (an embedded SQLite database, the
default) or a database URL (``postgresql://user@host/db`` for a team, through SQLAlchemy and
psycopg; ``sqlite:///path`` too), the engine that opens it, and the one line a fault of the
database becomes.

SQLite writers take the database's write lock when their transaction begins (``BEGIN
IMMEDIATE``) and wait up to :data:`WAIT_SECONDS` for each other; a PostgreSQL server that does not
answer is an error after :data:`CONNECT_SECONDS`. Every message about a history shows a database
URL with its password hidden (:func:`~perturblab.core.faults.hide_password`), and a fault of the
database (refused, gone away, read-only) is one :class:`InputError` line (:func:`fault_line`,
:func:`fault_fix`), never its SQL.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core.faults import hide_password
from ..errors import InputError

#: how long a SQLite writer waits for another one's transaction, in seconds
WAIT_SECONDS = 120.0
#: how long a connection to a PostgreSQL server may take, in seconds (a URL's ``connect_timeout`` wins)
CONNECT_SECONDS = 15


def shown(where: Any) -> str:
    """``where`` (a path, a URL, or a message naming one) as messages show it: a URL's password
    hidden (:func:`~perturblab.core.faults.hide_password`)."""
    return hide_password(str(where))


def history_url(where: str | Path) -> str:
    """The SQLAlchemy URL of ``where``: a URL as given (``postgresql://`` read as psycopg's), a
    path as ``sqlite:///<absolute path>``; :class:`InputError` for a URL that does not parse (a
    port that is not a number), a directory or a file in a folder that does not exist (nothing is
    opened or created)."""
    text = str(where)
    if "://" in text:
        if text.startswith("postgres://"):  # the scheme some hosts hand out; SQLAlchemy reads postgresql
            text = "postgresql://" + text[len("postgres://"):]
        if text.startswith("postgresql://"):
            text = "postgresql+psycopg://" + text[len("postgresql://"):]
        parsed_url(text, where)
        return text
    path = Path(text).expanduser()
    if path.is_dir():
        raise InputError(f"--history {text}: is a directory; give a database file (history.sqlite) or a URL")
    if not path.parent.exists():
        raise InputError(f"--history {text}: the folder {path.parent} does not exist; create it or give another path")
    return f"sqlite:///{path.resolve()}"


def parsed_url(url: str, where: Any) -> Any:
    """The SQLAlchemy URL object of ``url``; :class:`InputError` naming ``where`` (its password
    hidden) when it does not parse."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url)
    except ValueError:  # SQLAlchemy reads the port as a number
        port = url.rsplit("@", 1)[-1].split("/", 1)[0].rpartition(":")[2]
        raise InputError(f"--history {shown(where)}: the port {port!r} is not a number; give "
                         "postgresql://user@host:5432/db (or leave the port out for 5432)") from None
    except ArgumentError as e:
        raise InputError(f"--history {shown(where)}: not a database URL ({shown(e)}); give a file path (SQLite) "
                         "or postgresql://user@host/db") from None


def sqlite_file(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL, or None (another database, or SQLite in memory)."""
    if not url.startswith("sqlite:///") or len(url) == len("sqlite:///"):
        return None
    return Path(url[len("sqlite:///"):].split("?", 1)[0])


def engine_for(url: str, where: str) -> Any:
    """A SQLAlchemy engine for ``url`` (``where`` names it in messages); SQLite's transactions
    begin with ``BEGIN IMMEDIATE`` (the write lock at once, so two writers queue instead of
    deadlocking) and wait :data:`WAIT_SECONDS` for it; a PostgreSQL server that does not answer is
    an error after :data:`CONNECT_SECONDS` (or the URL's ``connect_timeout``), not a hang."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": WAIT_SECONDS, "isolation_level": None})

            @event.listens_for(engine, "connect")
            def _connect(dbapi_conn: Any, _: Any) -> None:
                dbapi_conn.execute("PRAGMA foreign_keys=ON")

            @event.listens_for(engine, "begin")
            def _begin(conn: Any) -> None:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

            return engine
        if url.startswith("postgresql"):
            given = "connect_timeout" in parsed_url(url, where).query
            return create_engine(url, pool_pre_ping=True,
                                 connect_args={} if given else {"connect_timeout": CONNECT_SECONDS})
        return create_engine(url, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError) as e:
        raise InputError(f"--history {where}: not a database URL SQLAlchemy can open ({shown(e)}); give a file "
                         "path (SQLite) or postgresql://user@host/db") from None
    except ModuleNotFoundError as e:
        raise InputError(f"--history {where}: needs the Python package {e.name!r}; install perturblab[postgres] "
                         "for PostgreSQL") from None


def fault_line(e: Exception | str, password: str | None) -> str:
    """The first line of a database's error ``e`` (a :class:`sqlalchemy.exc.DBAPIError`: the
    driver's message, without the SQL and its parameters SQLAlchemy adds; or a message), any
    password hidden: what a history or tracking-store message says of a fault."""
    text = str(getattr(e, "orig", None) or e).strip()
    line = text.splitlines()[0].strip() if text else type(e).__name__
    line = shown(line)
    return line.replace(password, "***") if password and len(password) >= 4 else line  # as redact() does


def fault_fix(reason: str) -> str:
    """What to do about a database fault whose first line is ``reason``."""
    low = reason.lower()
    if "password" in low or "authentication" in low:
        return "check the user and password of the URL"
    if "database" in low and "does not exist" in low:
        return "create the database (createdb NAME) or give one that exists"
    if "readonly" in low or "read-only" in low or "permission denied" in low:
        return "give a history this user may write, or make it writable"
    return "check the path or URL and that the database server runs"


def writable_file(path: Path, where: str) -> None:
    """:class:`InputError` naming ``where`` unless SQLite can write the history file ``path``:
    the file itself when it exists, and its folder, where SQLite makes a new file and writes its
    journal beside an existing one (a probe file made and removed; nothing else is touched)."""
    import tempfile

    if path.exists():
        try:
            with open(path, "r+b"):
                pass
        except OSError as e:
            raise InputError(f"--history {where}: the file cannot be written ({e.strerror}); make it writable "
                             f"(chmod u+w {path}) or give another file") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".perturblab-probe-", dir=path.parent)
    except OSError as e:
        raise InputError(f"--history {where}: its folder {path.parent} cannot be written ({e.strerror}), and SQLite "
                         "writes the history and its journal there; give a file in a folder you may write") from None
    os.close(fd)
    os.unlink(probe)
