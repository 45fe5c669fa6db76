"""Results store: one SQLite file per study directory, with a schema version.

Generic tables
--------------
meta           key, value: ``schema_version`` (:data:`SCHEMA_VERSION`)
runs           run_id, study, config (JSON), created: one row per run; the run id is the content
               key of everything the run depends on (options, model fingerprints, examples)
cells          one row per (namespace, key): the result (JSON) of one finished unit of work, keyed
               by the content it depends on (:mod:`perturblab.core.keys`), so a re-run computes
               exactly the units whose inputs changed
rows           one row per (run, name, index): the finished result rows of a run (JSON)

Stores written before every study went through the core may also hold the tables
``lm_examples``, ``similarities`` and ``trainings``; nothing reads them any more, and they are
left as they are.

Writes use ``INSERT OR IGNORE`` on primary keys inside transactions, so a crashed and
resumed study can neither lose nor duplicate rows. A file that is not a readable store, or one
written by a newer perturblab, is refused with one error naming the file and what to do.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from .files import dumps_json
from ..errors import InputError

_SQL_CHUNK = 500

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, study TEXT NOT NULL, config TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    run_id TEXT, name TEXT, idx INTEGER, row TEXT, PRIMARY KEY (run_id, name, idx));
CREATE TABLE IF NOT EXISTS cells (
    study TEXT, key TEXT, result TEXT, PRIMARY KEY (study, key));
"""

class ResultStore:
    """SQLite-backed store of runs, content-keyed cells and result rows (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(self.path, timeout=60)
        except (OSError, sqlite3.Error) as e:
            raise InputError(f"cannot open the results store {self.path}: {e}; choose a writable output "
                             "directory (--out)") from None
        try:
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=NORMAL")
            self._check_version()
            self._con.executescript(SCHEMA)
            with self._con:
                self._con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as e:
            self._con.close()
            if "locked" in str(e) or "readonly" in str(e):
                raise InputError(f"cannot write the results store {self.path}: {e}; choose a writable output "
                                 "directory (--out)") from None
            raise InputError(f"{self.path} is not a readable results store ({e}); move it away (or delete it) "
                             "and run again to recompute its results") from None

    def _check_version(self) -> None:
        has_meta = self._con.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return  # a new file, or one written before schema versions (tables are added)
        row = self._con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else None
        if version is not None and version > SCHEMA_VERSION:
            self._con.close()
            raise InputError(f"{self.path} was written by a newer perturblab (store schema {version}; this one "
                             f"reads up to {SCHEMA_VERSION}); upgrade perturblab, or choose another --out")

    @property
    def schema_version(self) -> int:
        row = self._con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0])

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._con:  # commits on success, rolls back on error
            yield self._con

    # -- runs --------------------------------------------------------------------------
    def start_run(self, run_id: str, study: str, config: dict[str, Any]) -> bool:
        """Register a run; returns True if it is new. A run id reused with a different
        configuration is refused (results would mix)."""
        cfg = dumps_json(config, indent=None, sort_keys=True)
        row = self._con.execute("SELECT config FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is not None:
            if row[0] != cfg:
                raise InputError(
                    f"run {run_id!r} in {self.path} was started with another configuration; "
                    "use a new output directory or the same options to resume")
            return False
        with self._tx() as c:
            c.execute("INSERT INTO runs VALUES (?,?,?,?)", (run_id, study, cfg, time.time()))
        return True

    def runs(self) -> list[dict[str, Any]]:
        cur = self._con.execute("SELECT run_id, study, config, created FROM runs ORDER BY created")
        return [{"run_id": r[0], "study": r[1], "config": json.loads(r[2]), "created": r[3]}
                for r in cur]

    # -- content-keyed cells ------------------------------------------------------------
    def cell_keys(self, study: str, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the namespace ``study`` holds."""
        found: set[str] = set()
        keys = list(keys)
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start:start + _SQL_CHUNK]
            cur = self._con.execute(f"SELECT key FROM cells WHERE study=? AND key IN ({','.join('?' * len(chunk))})",
                                    [study, *chunk])
            found.update(r[0] for r in cur)
        return found

    def cells_of(self, study: str, keys: Sequence[str]) -> dict[str, Any]:
        """``key -> result`` for the ``keys`` the namespace ``study`` holds."""
        found: dict[str, Any] = {}
        keys = list(keys)
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start:start + _SQL_CHUNK]
            cur = self._con.execute(
                f"SELECT key, result FROM cells WHERE study=? AND key IN ({','.join('?' * len(chunk))})",
                [study, *chunk])
            found.update((k, json.loads(v)) for k, v in cur)
        return found

    def add_cells(self, study: str, results: dict[str, Any]) -> None:
        """Record several results in one transaction (all or none; a key already held is kept)."""
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO cells VALUES (?,?,?)",
                          [(study, k, dumps_json(v, indent=None)) for k, v in results.items()])

    # -- result rows of a run ------------------------------------------------------------
    def set_rows(self, run_id: str, name: str, rows: Sequence[dict[str, Any]]) -> None:
        """Replace the rows ``name`` of a run (one transaction)."""
        with self._tx() as c:
            c.execute("DELETE FROM rows WHERE run_id=? AND name=?", (run_id, name))
            c.executemany("INSERT INTO rows VALUES (?,?,?,?)",
                          [(run_id, name, i, dumps_json(r, indent=None)) for i, r in enumerate(rows)])

    def rows(self, run_id: str, name: str = "rows") -> list[dict[str, Any]]:
        """The rows ``name`` of a run, in order."""
        cur = self._con.execute("SELECT row FROM rows WHERE run_id=? AND name=? ORDER BY idx", (run_id, name))
        return [json.loads(r[0]) for r in cur]
