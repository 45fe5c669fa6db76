"""The history of comparisons: one database of releases, each with its estimates and the
per-example outcomes that let two releases be compared paired on the examples they share.

A history is a file path (an embedded SQLite database, the default) or a database URL
(``postgresql://user@host/db`` for a team, through SQLAlchemy and psycopg; ``sqlite:///path``
too). Its tables:

* ``perturblab_history``: ``schema`` (the schema version, :data:`SCHEMA`; a database of an
  older version is migrated when opened, one of a newer one is refused);
* ``releases``: one row per release: its ``label`` (unique), when it was stored, its kind
  (``compare``, ``checkpoints``), the reference, the ``setup`` (what makes two releases
  comparable: the reference's spec and fingerprint, the data and the studies' options) and its
  digest ``identity``, the models (label -> spec and fingerprint), the path of its report and
  when it was accepted as a baseline;
* ``estimates``: each estimate of a target (study, key, its position in the release, value,
  95 % interval, n, what the interval is over, which direction is better, the level of its
  finding, flags), read back in the order stored;
* ``outcomes``: per target, study and key, each example's term (the 0/1 or [0, 1] term whose
  mean is the estimate), by a stable example id.

A release is appended in one transaction: a reader sees all of it or none of it, and a run
killed in the middle leaves the history as it was. SQLite writers take the database's write lock
when their transaction begins (``BEGIN IMMEDIATE``) and wait up to :data:`WAIT_SECONDS` for
each other, so two comparisons that finish at once both land; PostgreSQL writers creating the
schema of a new database take a transaction-scoped advisory lock, so the first creates it and the
others find it. A label already stored is not appended again (:meth:`History.append` says so).

A release label is 1 to :data:`LABEL_CHARS` characters with no control character (a newline, a
tab) and no line separator, on every database (:func:`label_problem`). Every message about a
history shows a database URL with its password hidden (:func:`~perturblab.core.faults.hide_password`),
and a fault of the database (refused, gone away, read-only) is one :class:`InputError` line, never
its SQL.
"""

from __future__ import annotations

import json
import math
import os
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..core.faults import hide_password
from ..core.keys import content_key
from ..errors import InputError

#: the schema version this code writes; older databases are migrated by :data:`MIGRATIONS`
SCHEMA = 1
#: how long a SQLite writer waits for another one's transaction, in seconds
WAIT_SECONDS = 120.0
#: the longest release label, in characters (the ``releases.label`` column is VARCHAR(200))
LABEL_CHARS = 200
#: how long a connection to a PostgreSQL server may take, in seconds (a URL's ``connect_timeout`` wins)
CONNECT_SECONDS = 15
#: the advisory lock PostgreSQL writers take while they create the schema of a new database
SCHEMA_LOCK = 0x7065727475726200  # "perturb\0"
#: the Unicode categories a label may not hold: control characters (newline, tab), line and
#: paragraph separators, and lone surrogates (bytes that are not text)
_NOT_IN_LABELS = ("Cc", "Cs", "Zl", "Zp")


@dataclass
class Release:
    """One release of a history: ``label``; ``created`` (Unix time); ``kind``; ``reference``
    (its name); ``setup`` (what must match for two releases to be compared); ``models`` (label
    -> ``{"spec", "fingerprint"}``); ``report`` (its report's path, or None); ``estimates``
    (dicts: target, study, key, measure, value, low, high, n, interval, better, level, flags);
    ``outcomes`` ((target, study, key) -> example id -> term); ``accepted`` (Unix time it was
    accepted as a baseline, or None); ``id`` (its row, once stored)."""

    label: str
    reference: str
    setup: dict[str, Any]
    models: dict[str, dict[str, Any]]
    estimates: list[dict[str, Any]]
    outcomes: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    kind: str = "compare"
    created: float = field(default_factory=time.time)
    report: str | None = None
    accepted: float | None = None
    id: int | None = None

    @property
    def identity(self) -> str:
        """The digest of :attr:`setup`: two releases of one identity are comparable."""
        return content_key(self.setup)[:16]

    def targets(self) -> list[str]:
        """The targets of its estimates, in order of first appearance."""
        return list(dict.fromkeys(e["target"] for e in self.estimates))

    def models_of(self) -> dict[str, str]:
        """Target label -> its spec."""
        return {k: str(v.get("spec", "")) for k, v in self.models.items()}


def _tables() -> tuple[Any, dict[str, Any]]:
    """The schema's SQLAlchemy metadata and tables (built when first needed: importing this
    module does not import SQLAlchemy)."""
    from sqlalchemy import (Column, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text,
                            UniqueConstraint)

    md = MetaData()
    meta = Table("perturblab_history", md, Column("key", String(64), primary_key=True),
                 Column("value", Text, nullable=False))
    releases = Table(
        "releases", md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("label", String(LABEL_CHARS), nullable=False, unique=True),
        Column("created", Float, nullable=False),
        Column("kind", String(32), nullable=False),
        Column("reference", Text, nullable=False),
        Column("identity", String(32), nullable=False),
        Column("setup", Text, nullable=False),
        Column("models", Text, nullable=False),
        Column("report", Text),
        Column("accepted", Float))

    def of_a_target() -> list[Any]:  # what names one estimate of a release: its target, study and key
        return [Column("release_id", Integer, ForeignKey("releases.id", ondelete="CASCADE"), nullable=False),
                Column("target", Text, nullable=False), Column("study", String(200), nullable=False),
                Column("key", String(200), nullable=False)]

    estimates = Table(
        "estimates", md, *of_a_target(),
        Column("position", Integer, nullable=False),  # its place in the release: read back in that order
        Column("measure", Text, nullable=False),
        Column("value", Float), Column("low", Float), Column("high", Float), Column("n", Integer),
        Column("interval", Text, nullable=False),
        Column("better", String(16), nullable=False),
        Column("level", String(32)),
        Column("flags", Text, nullable=False),
        UniqueConstraint("release_id", "target", "study", "key", name="one_estimate"))
    outcomes = Table(
        "outcomes", md, *of_a_target(),
        Column("example", String(200), nullable=False),
        Column("value", Float, nullable=False),
        Index("outcomes_of", "release_id", "target", "study", "key"))
    return md, {"meta": meta, "releases": releases, "estimates": estimates, "outcomes": outcomes}


#: schema version -> the step that brings a database of that version to the next one (none yet:
#: version 1 is the first); each step runs in the transaction that records the new version
MIGRATIONS: dict[int, Callable[[Any, dict[str, Any]], None]] = {}


def label_problem(label: Any) -> str | None:
    """What is wrong with ``label`` as a release label, or None: a label is 1 to
    :data:`LABEL_CHARS` characters, none of them a control character (a newline, a tab), a line
    or paragraph separator or a lone surrogate. One rule for SQLite and PostgreSQL, so a label one
    history takes, another takes too, and ``history list`` shows one release a line.

    >>> label_problem("v1.2 (2025-06-01)") is None
    True
    >>> label_problem("v" * 201)
    'has 201 characters; give a label of at most 200'
    """
    if not isinstance(label, str) or not label:
        return "is empty; give a label (a version, a date, a commit)"
    if len(label) > LABEL_CHARS:
        return f"has {len(label):,} characters; give a label of at most {LABEL_CHARS}"
    bad = next((c for c in label if unicodedata.category(c) in _NOT_IN_LABELS), None)
    if bad is not None:
        return (f"holds the control character {bad!r}; give a label of one line with no control characters"
                if unicodedata.category(bad) == "Cc" else
                f"holds the character {ascii(bad)}; give a label of one line of text with no separators")
    return None


def check_label(label: Any, option: str = "--release") -> None:
    """:class:`InputError` naming ``option`` when ``label`` breaks the rule of :func:`label_problem`."""
    problem = label_problem(label)
    if problem is not None:
        text = str(label)
        shown = ascii(text if len(text) <= 60 else text[:40] + "...")
        raise InputError(f"{option} {shown}: {problem}")


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
        _parsed(text, where)
        return text
    path = Path(text).expanduser()
    if path.is_dir():
        raise InputError(f"--history {text}: is a directory; give a database file (history.sqlite) or a URL")
    if not path.parent.exists():
        raise InputError(f"--history {text}: the folder {path.parent} does not exist; create it or give another path")
    return f"sqlite:///{path.resolve()}"


def _parsed(url: str, where: Any) -> Any:
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


def _engine(url: str, where: str) -> Any:
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
            given = "connect_timeout" in _parsed(url, where).query
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


class History:
    """A history database (see the module docstring), opened with :func:`open_history`;
    ``where`` is how its messages name it (the path or URL as given, a password hidden)."""

    def __init__(self, where: str | Path) -> None:
        self.where = shown(where)
        self.url = history_url(where)
        # hidden wherever a message could show it (a SQLite path has none)
        self._password = None if self.url.startswith("sqlite") else _parsed(self.url, self.where).password
        self.engine = _engine(self.url, self.where)
        self.md, self.t = _tables()
        self._ready()

    def __repr__(self) -> str:
        return f"History({self.where!r})"

    def close(self) -> None:
        """Release the database's connections."""
        self.engine.dispose()

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _failed(self, doing: str, e: Exception, held: str = "") -> InputError:
        """The one line that says ``doing`` failed on the database's error ``e``: its first
        line, ``held`` (what the history holds now) and what to do; never the SQL, its parameters
        or a password."""
        reason = fault_line(e, self._password)
        return InputError(f"history {self.where}: {doing} failed ({reason}); {held + '; ' if held else ''}"
                          f"{fault_fix(reason)}")

    @contextmanager
    def _talking(self, doing: str) -> Iterator[None]:
        """Within it, a fault of the database (a server gone away, a connection refused) is one
        :class:`InputError` line (:meth:`_failed`)."""
        from sqlalchemy.exc import DBAPIError

        try:
            yield
        except DBAPIError as e:
            raise self._failed(doing, e) from None

    # -- schema ---------------------------------------------------------------------------
    def _ready(self) -> None:
        """Create the schema in an empty database, migrate an older one, refuse a newer one."""
        from sqlalchemy.exc import DBAPIError, IntegrityError, ProgrammingError

        for attempt in range(3):  # a collision the lock does not prevent (another kind of database): look again
            try:
                with self.engine.begin() as conn:
                    self._schema(conn)
                return
            except (IntegrityError, ProgrammingError) as e:
                if attempt < 2:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                failed: Exception = e
            except DBAPIError as e:
                failed = e
            reason = fault_line(failed, self._password)
            raise InputError(f"history {self.where}: cannot open it ({reason}); {fault_fix(reason)}") from None

    def _schema(self, conn: Any) -> None:
        """In the transaction of ``conn``: the schema created, migrated or refused. Writers of a
        new PostgreSQL database take the advisory lock :data:`SCHEMA_LOCK` (held to the end of the
        transaction) before they look again: the first creates the schema, the others wait and
        find it. SQLite's transaction holds the write lock from its start already."""
        from sqlalchemy import inspect, text

        def lock() -> None:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})

        if not inspect(conn).has_table("perturblab_history"):
            lock()
            names = inspect(conn).get_table_names()  # anew: after the lock, what another writer made
            if "perturblab_history" not in names:
                if names:
                    raise InputError(f"history {self.where}: holds tables that are not a perturblab history; "
                                     "give a new file or an empty database")
                self.md.create_all(conn)
                conn.execute(self.t["meta"].insert().values(key="schema", value=str(SCHEMA)))
                return
        version = self._version(conn)
        if version < SCHEMA:  # one migrating writer at a time, each reading the version it found
            lock()
            version = self._version(conn)
        if version > SCHEMA:
            raise InputError(f"history {self.where}: written by a newer perturblab (schema {version}; this "
                             f"one reads up to {SCHEMA}); upgrade perturblab")
        while version < SCHEMA:
            step = MIGRATIONS.get(version)
            if step is None:
                raise InputError(f"history {self.where}: schema {version} cannot be migrated; start a new history")
            step(conn, self.t)
            version += 1
            conn.execute(self.t["meta"].update().where(self.t["meta"].c.key == "schema").values(value=str(version)))

    def schema(self) -> int:
        """The schema version of the database."""
        with self._talking("reading it"), self.engine.connect() as conn:
            return self._version(conn)

    def _version(self, conn: Any) -> int:
        from sqlalchemy import select

        meta = self.t["meta"]
        return int(conn.execute(select(meta.c.value).where(meta.c.key == "schema")).scalar() or 0)

    # -- writing --------------------------------------------------------------------------
    def check_writable(self) -> None:
        """Before any work: :class:`InputError` unless a release can be written here. A SQLite
        file and its folder (where SQLite writes its journal) are checked first; then a write is
        tried in a transaction that is rolled back at once (the schema's row rewritten as it is),
        which fails as an append would: a read-only file, a user without the right to write, a
        read-only server."""
        from sqlalchemy.exc import DBAPIError

        file = sqlite_file(self.url)
        if file is not None:
            writable_file(file, self.where)
        meta = self.t["meta"]
        try:
            with self.engine.connect() as conn:
                trans = conn.begin()
                conn.execute(meta.update().where(meta.c.key == "schema").values(value=meta.c.value))
                trans.rollback()
        except DBAPIError as e:
            reason = fault_line(e, self._password)
            raise InputError(f"--history {self.where}: cannot be written ({reason}); {fault_fix(reason)}") from None

    def stored(self, label: str) -> Release | None:
        """The release ``label`` as stored (without its outcomes), or None."""
        found = self.releases(label=label)
        return found[0] if found else None

    def check_append(self, label: str, models: Mapping[str, str]) -> str:
        """Before any work: whether ``label`` with target specs ``models`` can be appended.
        Returns ``""`` (new), or a note that it is stored already with the same models (a re-run
        adds nothing); raises :class:`InputError` when it breaks the rule of labels
        (:func:`label_problem`) or is stored with other models."""
        check_label(label)
        old = self.stored(label)
        if old is None:
            return ""
        if old.models_of() != dict(models):
            theirs = ", ".join(spec if spec == k or spec.startswith(f"{k}=") else f"{k}={spec}"
                               for k, spec in old.models_of().items())  # a spec NAME=SOURCE names itself
            raise InputError(f"--release {label}: is stored already in {self.where} with other models or options "
                             f"({theirs}); give the new run a label of its own")
        return f"release {label} is stored already in {self.where}; this run adds nothing to the history"

    def conflict(self, release: Release) -> str:
        """Why ``release`` is not what its label holds in the history (other models, weights or
        setup), or ``""`` when it is the same (or not stored): a re-run under a stored label adds
        nothing, and says so when its numbers would differ."""
        old = self.stored(release.label)
        if old is None:
            return ""
        if old.models != release.models:
            return (f"release {release.label} is stored already with other models or weights; this run was not "
                    "added: give it a label of its own")
        if old.identity != release.identity:
            return (f"release {release.label} is stored already with another reference or other options; this run "
                    "was not added: give it a label of its own")
        return ""

    def append(self, release: Release) -> bool:
        """Append ``release`` in one transaction; False (and nothing written) when its label is
        stored already. A label that breaks the rule of :func:`label_problem` is refused before
        anything is written; a fault of the database (a server gone away) is one
        :class:`InputError` line saying what the history holds: none of the release, or (a
        connection lost as it committed) all of it or none."""
        from sqlalchemy.exc import DBAPIError, IntegrityError

        check_label(release.label)
        t = self.t
        committing = False
        try:
            with self.engine.begin() as conn:
                if self._has(conn, release.label):
                    return False
                rid = conn.execute(t["releases"].insert().values(
                    label=release.label, created=float(release.created), kind=release.kind,
                    reference=release.reference, identity=release.identity,
                    setup=json.dumps(release.setup, sort_keys=True, default=str),
                    models=json.dumps(release.models, sort_keys=True, default=str),
                    report=release.report, accepted=release.accepted)).inserted_primary_key[0]
                rows = [{"release_id": rid, "target": e["target"], "study": e["study"], "key": e["key"], "position": i,
                         "measure": str(e.get("measure") or e["key"]), "value": _num(e.get("value")),
                         "low": _num(e.get("low")), "high": _num(e.get("high")),
                         "n": None if e.get("n") is None else int(e["n"]), "interval": str(e.get("interval") or ""),
                         "better": str(e.get("better") or ""), "level": e.get("level"),
                         "flags": json.dumps(list(e.get("flags") or []))} for i, e in enumerate(release.estimates)]
                if rows:
                    conn.execute(t["estimates"].insert(), rows)
                self._insert_outcomes(conn, rid, release.outcomes)
                committing = True  # leaving the block commits
        except DBAPIError as e:
            if isinstance(e, IntegrityError) and self.stored(release.label) is not None:
                return False  # another writer stored the same label first
            held = ("the connection was lost as it committed: the history holds all of the release or none of it "
                    "(`perturblab history list` shows which)" if committing else
                    "an append is one transaction: the history holds none of the release")
            raise self._failed(f"appending release {release.label}", e, held) from None
        release.id = rid
        return True

    def _has(self, conn: Any, label: str) -> bool:
        from sqlalchemy import select

        return conn.execute(select(self.t["releases"].c.id).where(self.t["releases"].c.label == label)).first() \
            is not None

    def _insert_outcomes(self, conn: Any, rid: int, outcomes: Mapping[tuple[str, str, str], Mapping[str, float]]
                         ) -> None:
        rows = [{"release_id": rid, "target": target, "study": study, "key": key, "example": str(ex),
                 "value": float(v)}
                for (target, study, key), terms in outcomes.items() for ex, v in terms.items() if _num(v) is not None]
        for i in range(0, len(rows), 5000):
            conn.execute(self.t["outcomes"].insert(), rows[i:i + 5000])

    def accept(self, label: str) -> Release:
        """Mark release ``label`` as an accepted baseline (now); returns it."""
        with self._talking(f"accepting release {label}"), self.engine.begin() as conn:
            done = conn.execute(self.t["releases"].update().where(self.t["releases"].c.label == label)
                                .values(accepted=time.time())).rowcount
        if not done:
            raise InputError(self.unknown(label))
        return self.stored(label)  # type: ignore[return-value]

    def unknown(self, label: str) -> str:
        """The message for a release label the history does not hold."""
        labels = [r.label for r in self.releases()]
        shown_labels = ", ".join(labels[-8:]) if labels else "none yet"
        return f"release {label!r} is not in the history {self.where} (its releases: {shown_labels})"

    # -- reading --------------------------------------------------------------------------
    def releases(self, *, estimates: bool = False, label: str | None = None) -> list[Release]:
        """Every release in the order stored (only the one labelled ``label``, when given), with
        its estimates when ``estimates`` (never its outcomes: :meth:`outcomes` reads them)."""
        from sqlalchemy import select

        t = self.t
        query = select(t["releases"]).order_by(t["releases"].c.id)
        if label is not None:
            query = query.where(t["releases"].c.label == label)
        with self._talking("reading it"), self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
            found = {r["id"]: Release(
                label=r["label"], reference=r["reference"], setup=json.loads(r["setup"]),
                models=json.loads(r["models"]), estimates=[], kind=r["kind"], created=r["created"],
                report=r["report"], accepted=r["accepted"], id=r["id"]) for r in rows}
            if estimates and found:
                est = t["estimates"]
                query = select(est).order_by(est.c.release_id, est.c.position)
                if label is not None:
                    query = query.where(est.c.release_id.in_(list(found)))
                for e in conn.execute(query).mappings():
                    if e["release_id"] in found:
                        found[e["release_id"]].estimates.append(
                            {k: e[k] for k in ("target", "study", "key", "measure", "value", "low", "high", "n",
                                               "interval", "better", "level")} | {"flags": json.loads(e["flags"])})
        return list(found.values())

    def release(self, label: str) -> Release:
        """Release ``label`` with its estimates; :class:`InputError` when it is not stored."""
        found = self.releases(estimates=True, label=label)
        if not found:
            raise InputError(self.unknown(label))
        return found[0]

    def outcomes(self, release: Release, target: str, study: str, key: str) -> dict[str, float]:
        """Example id -> term of one estimate of a stored release ({} when none were stored)."""
        from sqlalchemy import select

        o = self.t["outcomes"]
        with self._talking("reading it"), self.engine.connect() as conn:
            rows = conn.execute(select(o.c.example, o.c.value).where(
                (o.c.release_id == release.id) & (o.c.target == target) & (o.c.study == study)
                & (o.c.key == key))).all()
        return {ex: float(v) for ex, v in rows}

    def counts(self) -> dict[str, int]:
        """Rows per table (releases, estimates, outcomes)."""
        from sqlalchemy import func, select

        with self._talking("reading it"), self.engine.connect() as conn:
            return {name: int(conn.execute(select(func.count()).select_from(self.t[name])).scalar())
                    for name in ("releases", "estimates", "outcomes")}


def _num(v: Any) -> float | None:
    """``v`` as a finite float (numpy numbers too), or None."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


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


def check_labels(where: str | Path, labels: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Before any work: each of ``labels`` follows the rule of :func:`label_problem`, the history
    at ``where`` can be written (:meth:`History.check_writable`; a new SQLite file: its folder)
    and :meth:`History.check_append` of each label (-> its target specs) holds. The history is
    opened only when it exists (a new file is made by the first append, after the work); returns
    the notes of labels stored already with the same models."""
    for label in labels:
        check_label(label)
    url = history_url(where)
    file = sqlite_file(url)
    if file is not None and not file.is_file():
        writable_file(file, shown(where))
        return []
    with open_history(where) as h:
        h.check_writable()
        return [note for note in (h.check_append(label, models) for label, models in labels.items()) if note]


def append_releases(where: str | Path, releases: list[Release]) -> tuple[list[bool], list[str]]:
    """Append each of ``releases`` (one transaction each) to the history at ``where``: whether
    each was added, and a warning for each not added whose stored namesake differs
    (:meth:`History.conflict`)."""
    with open_history(where) as h:
        added = [h.append(r) for r in releases]
        return added, [c for c in (h.conflict(r) for r, a in zip(releases, added) if not a) if c]


def open_history(where: str | Path) -> History:
    """The history at ``where`` (a file path or a database URL), created when new.

    >>> import tempfile, os
    >>> with open_history(os.path.join(tempfile.mkdtemp(), "history.sqlite")) as h:
    ...     h.schema(), h.counts()
    (1, {'releases': 0, 'estimates': 0, 'outcomes': 0})
    """
    return History(where)

