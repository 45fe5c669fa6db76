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
each other, so two comparisons that finish at once both land. A label already stored is not
appended again (:meth:`History.append` says so).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.keys import content_key
from ..errors import InputError

#: the schema version this code writes; older databases are migrated by :data:`MIGRATIONS`
SCHEMA = 1
#: how long a SQLite writer waits for another one's transaction, in seconds
WAIT_SECONDS = 120.0


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
        Column("label", String(200), nullable=False, unique=True),
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


def history_url(where: str | Path) -> str:
    """The SQLAlchemy URL of ``where``: a URL as given, a path as ``sqlite:///<absolute path>``;
    :class:`InputError` for a directory or a file in a folder that does not exist (nothing is
    opened or created)."""
    text = str(where)
    if "://" in text:
        if text.startswith("postgres://"):  # the scheme some hosts hand out; SQLAlchemy reads postgresql
            text = "postgresql://" + text[len("postgres://"):]
        if text.startswith("postgresql://"):
            text = "postgresql+psycopg://" + text[len("postgresql://"):]
        return text
    path = Path(text).expanduser()
    if path.is_dir():
        raise InputError(f"--history {text}: is a directory; give a database file (history.sqlite) or a URL")
    if not path.parent.exists():
        raise InputError(f"--history {text}: the folder {path.parent} does not exist; create it or give another path")
    return f"sqlite:///{path.resolve()}"


def _engine(url: str) -> Any:
    """A SQLAlchemy engine for ``url``; SQLite's transactions begin with ``BEGIN IMMEDIATE``
    (the write lock at once, so two writers queue instead of deadlocking) and wait
    :data:`WAIT_SECONDS` for it."""
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
        if url.startswith("postgresql"):  # an unreachable server is an error in seconds, not a hang
            return create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 15})
        return create_engine(url, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError) as e:
        raise InputError(f"--history {url}: not a database URL SQLAlchemy can open ({e}); give a file path "
                         "(SQLite) or postgresql://user@host/db") from None
    except ModuleNotFoundError as e:
        raise InputError(f"--history {url}: needs the Python package {e.name!r}; install perturblab[postgres] "
                         "for PostgreSQL") from None


class History:
    """A history database (see the module docstring), opened with :func:`open_history`."""

    def __init__(self, where: str | Path) -> None:
        self.where = str(where)
        self.url = history_url(where)
        self.engine = _engine(self.url)
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

    # -- schema ---------------------------------------------------------------------------
    def _ready(self) -> None:
        """Create the schema in an empty database, migrate an older one, refuse a newer one."""
        from sqlalchemy import inspect
        from sqlalchemy.exc import DBAPIError, IntegrityError, ProgrammingError

        for attempt in range(3):  # two processes may create the schema at once: one wins, the other re-reads
            try:
                with self.engine.begin() as conn:
                    if not inspect(conn).has_table("perturblab_history"):
                        if inspect(conn).get_table_names():
                            raise InputError(f"history {self.where}: holds tables that are not a perturblab history; "
                                             "give a new file or an empty database")
                        self.md.create_all(conn)
                        conn.execute(self.t["meta"].insert().values(key="schema", value=str(SCHEMA)))
                        return
                    version = self._version(conn)
                    if version > SCHEMA:
                        raise InputError(f"history {self.where}: written by a newer perturblab (schema {version}; this "
                                         f"one reads up to {SCHEMA}); upgrade perturblab")
                    while version < SCHEMA:
                        step = MIGRATIONS.get(version)
                        if step is None:
                            raise InputError(f"history {self.where}: schema {version} cannot be migrated; "
                                             "start a new history")
                        step(conn, self.t)
                        version += 1
                        conn.execute(self.t["meta"].update().where(self.t["meta"].c.key == "schema")
                                     .values(value=str(version)))
                    return
            except (IntegrityError, ProgrammingError):
                if attempt == 2:
                    raise
                time.sleep(0.2 * (attempt + 1))
            except DBAPIError as e:
                raise InputError(f"history {self.where}: cannot open it ({str(e.orig).strip().splitlines()[0]}); "
                                 "check the path or URL and that the database server runs") from None

    def schema(self) -> int:
        """The schema version of the database."""
        with self.engine.connect() as conn:
            return self._version(conn)

    def _version(self, conn: Any) -> int:
        from sqlalchemy import select

        meta = self.t["meta"]
        return int(conn.execute(select(meta.c.value).where(meta.c.key == "schema")).scalar() or 0)

    # -- writing --------------------------------------------------------------------------
    def stored(self, label: str) -> Release | None:
        """The release ``label`` as stored (without its outcomes), or None."""
        found = self.releases(label=label)
        return found[0] if found else None

    def check_append(self, label: str, models: Mapping[str, str]) -> str:
        """Before any work: whether ``label`` with target specs ``models`` can be appended.
        Returns ``""`` (new), or a note that it is stored already with the same models (a re-run
        adds nothing); raises :class:`InputError` when it is stored with other models."""
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
        stored already."""
        from sqlalchemy.exc import IntegrityError

        t = self.t
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
        except IntegrityError:
            if self.stored(release.label) is not None:  # another writer stored the same label first
                return False
            raise
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
        with self.engine.begin() as conn:
            done = conn.execute(self.t["releases"].update().where(self.t["releases"].c.label == label)
                                .values(accepted=time.time())).rowcount
        if not done:
            raise InputError(self.unknown(label))
        return self.stored(label)  # type: ignore[return-value]

    def unknown(self, label: str) -> str:
        """The message for a release label the history does not hold."""
        labels = [r.label for r in self.releases()]
        shown = ", ".join(labels[-8:]) if labels else "none yet"
        return f"release {label!r} is not in the history {self.where} (its releases: {shown})"

    # -- reading --------------------------------------------------------------------------
    def releases(self, *, estimates: bool = False, label: str | None = None) -> list[Release]:
        """Every release in the order stored (only the one labelled ``label``, when given), with
        its estimates when ``estimates`` (never its outcomes: :meth:`outcomes` reads them)."""
        from sqlalchemy import select

        t = self.t
        query = select(t["releases"]).order_by(t["releases"].c.id)
        if label is not None:
            query = query.where(t["releases"].c.label == label)
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:
            rows = conn.execute(select(o.c.example, o.c.value).where(
                (o.c.release_id == release.id) & (o.c.target == target) & (o.c.study == study)
                & (o.c.key == key))).all()
        return {ex: float(v) for ex, v in rows}

    def counts(self) -> dict[str, int]:
        """Rows per table (releases, estimates, outcomes)."""
        from sqlalchemy import func, select

        with self.engine.connect() as conn:
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


def check_labels(where: str | Path, labels: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Before any work: :meth:`History.check_append` of each label (-> its target specs) in the
    history at ``where``, which is opened only when it exists (a new file is made by the first
    append, after the work); returns the notes of labels stored already with the same models."""
    url = history_url(where)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        return []
    with open_history(where) as h:
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

