"""The history of comparisons: one database of releases, each with its estimates and the
per-example outcomes that let two releases be compared paired on the examples they share.

A history is a file path (an embedded SQLite database, the default) or a database URL
(``postgresql://user@host/db`` for a team, through SQLAlchemy and psycopg; ``sqlite:///path``
too): :mod:`.database` reaches it, :mod:`.schema` holds its tables, :mod:`.release` what a
release is and the rule of its label.

A release is appended in one transaction: a reader sees all of it or none of it, and a run
killed in the middle leaves the history as it was. SQLite writers take the database's write lock
when their transaction begins (``BEGIN IMMEDIATE``) and wait up to
:data:`~.database.WAIT_SECONDS` for each other, so two comparisons that finish at once both land;
PostgreSQL writers creating the schema of a new database take a transaction-scoped advisory lock,
so the first creates it and the others find it. A label already stored is not appended again
(:meth:`History.append` says so).

A release label is 1 to :data:`~.release.LABEL_CHARS` characters with no control character (a
newline, a tab) and no line separator, on every database (:func:`~.release.label_problem`).
Every message about a history shows a database URL with its password hidden
(:func:`~perturblab.core.faults.hide_password`), and a fault of the database (refused, gone away,
read-only) is one :class:`InputError` line, never its SQL.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import InputError, PerturblabWarning
from .database import engine_for, fault_fix, fault_line, history_url, parsed_url, shown, sqlite_file, writable_file
from .release import Release, check_label
from .schema import open_schema, tables, version_of


class History:
    """A history database (see the module docstring), opened with :func:`open_history`;
    ``where`` is how its messages name it (the path or URL as given, a password hidden)."""

    def __init__(self, where: str | Path) -> None:
        self.where = shown(where)
        self.url = history_url(where)
        # hidden wherever a message could show it (a SQLite path has none)
        self._password = None if self.url.startswith("sqlite") else parsed_url(self.url, self.where).password
        self.engine = engine_for(self.url, self.where)
        self.md, self.t = tables()
        open_schema(self.engine, self.md, self.t, self.where, self._password)

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
    def schema(self) -> int:
        """The schema version of the database."""
        with self._talking("reading it"), self.engine.connect() as conn:
            return version_of(conn, self.t)

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


class ReleaseConflictWarning(PerturblabWarning):
    """A release was not appended: its label is stored already with other models, weights, a
    reference or options (:meth:`History.conflict`); the message names the label."""


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

