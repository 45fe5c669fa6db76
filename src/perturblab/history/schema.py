"""The schema of a history database, created in an empty database and migrated when opened.

Its tables:

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

PostgreSQL writers creating the schema of a new database take a transaction-scoped advisory lock
(:data:`SCHEMA_LOCK`), so the first creates it and the others find it.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..errors import InputError
from .database import fault_fix, fault_line
from .release import LABEL_CHARS

#: the schema version this code writes; older databases are migrated by :data:`MIGRATIONS`
SCHEMA = 1
#: the advisory lock PostgreSQL writers take while they create the schema of a new database
SCHEMA_LOCK = 0x7065727475726200  # "perturb\0"


def tables() -> tuple[Any, dict[str, Any]]:
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


def open_schema(engine: Any, md: Any, t: dict[str, Any], where: str, password: str | None) -> None:
    """Create the schema (``md``, its tables ``t``: :func:`tables`) in the empty database of
    ``engine``, migrate an older one, refuse a newer one; ``where`` names the history in messages,
    whose database faults hide ``password``."""
    from sqlalchemy.exc import DBAPIError, IntegrityError, ProgrammingError

    for attempt in range(3):  # a collision the lock does not prevent (another kind of database): look again
        try:
            with engine.begin() as conn:
                _create_or_migrate(conn, md, t, where)
            return
        except (IntegrityError, ProgrammingError) as e:
            if attempt < 2:
                time.sleep(0.2 * (attempt + 1))
                continue
            failed: Exception = e
        except DBAPIError as e:
            failed = e
        reason = fault_line(failed, password)
        raise InputError(f"history {where}: cannot open it ({reason}); {fault_fix(reason)}") from None


def _create_or_migrate(conn: Any, md: Any, t: dict[str, Any], where: str) -> None:
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
                raise InputError(f"history {where}: holds tables that are not a perturblab history; "
                                 "give a new file or an empty database")
            md.create_all(conn)
            conn.execute(t["meta"].insert().values(key="schema", value=str(SCHEMA)))
            return
    version = version_of(conn, t)
    if version < SCHEMA:  # one migrating writer at a time, each reading the version it found
        lock()
        version = version_of(conn, t)
    if version > SCHEMA:
        raise InputError(f"history {where}: written by a newer perturblab (schema {version}; this "
                         f"one reads up to {SCHEMA}); upgrade perturblab")
    while version < SCHEMA:
        step = MIGRATIONS.get(version)
        if step is None:
            raise InputError(f"history {where}: schema {version} cannot be migrated; start a new history")
        step(conn, t)
        version += 1
        conn.execute(t["meta"].update().where(t["meta"].c.key == "schema").values(value=str(version)))


def version_of(conn: Any, t: dict[str, Any]) -> int:
    """The schema version recorded in the database of ``conn`` (0 when none is)."""
    from sqlalchemy import select

    meta = t["meta"]
    return int(conn.execute(select(meta.c.value).where(meta.c.key == "schema")).scalar() or 0)
