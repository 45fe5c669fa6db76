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

Tables of the studies that do not yet go through :mod:`perturblab.core`
-----------------------------------------------------------------------
lm_examples    one row per (run, model, metric, setting, example): the self-supervised LM
               evaluation's per-example values (text, perturbed text, value, extras as JSON)
similarities   one row per (model a, model b, inputs, pooling, measure, layer a, layer b): a
               representation similarity, keyed on the models' fingerprints and the inputs'
               hash so that a comparison already made is never recomputed (names kept for display)
trainings      one row per trained model (model, data, perturbation, setting, seed): the numbers
               measured with it (JSON), so that a resumed study never trains a model twice

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
from typing import Any, Iterable, Iterator, Sequence

from .core.files import dumps_json
from .errors import InputError

_SQL_CHUNK = 500

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, study TEXT NOT NULL, config TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    run_id TEXT, name TEXT, idx INTEGER, row TEXT, PRIMARY KEY (run_id, name, idx));
CREATE TABLE IF NOT EXISTS lm_examples (
    run_id TEXT, model TEXT, metric TEXT, setting TEXT, example_id INTEGER,
    text TEXT, perturbed TEXT, value REAL, extra TEXT,
    PRIMARY KEY (run_id, model, metric, setting, example_id));
CREATE TABLE IF NOT EXISTS similarities (
    a_fp TEXT, b_fp TEXT, inputs TEXT, pooling TEXT, measure TEXT, layer_a INTEGER, layer_b INTEGER,
    a TEXT, b TEXT, n INTEGER, value REAL,
    PRIMARY KEY (a_fp, b_fp, inputs, pooling, measure, layer_a, layer_b));
CREATE TABLE IF NOT EXISTS trainings (
    model TEXT, data TEXT, perturbation TEXT, setting TEXT, seed INTEGER, result TEXT,
    PRIMARY KEY (model, data, perturbation, setting, seed));
CREATE TABLE IF NOT EXISTS cells (
    study TEXT, key TEXT, result TEXT, PRIMARY KEY (study, key));
"""
SIMILARITY_COLS = ("a_fp", "b_fp", "inputs", "pooling", "measure", "layer_a", "layer_b", "a", "b", "n", "value")

LM_EXAMPLE_COLS = ("run_id", "model", "metric", "setting", "example_id", "text", "perturbed", "value",
                   "extra")


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

    # -- per-example rows of the self-supervised LM evaluation ------------------------------
    def done_examples(self, run_id: str, model: str, metric: str, setting: str) -> set[int]:
        cur = self._con.execute(
            "SELECT example_id FROM lm_examples WHERE run_id=? AND model=? AND metric=? AND setting=?",
            (run_id, model, metric, setting))
        return {r[0] for r in cur}

    def add_examples(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert per-example rows (``extra`` is a dict); existing keys are left as they are."""
        vals = [tuple(json.dumps(r.get(c) or {}) if c == "extra" else r.get(c) for c in LM_EXAMPLE_COLS)
                for r in rows]
        with self._tx() as c:
            before = c.total_changes
            c.executemany(f"INSERT OR IGNORE INTO lm_examples VALUES ({','.join('?' * len(LM_EXAMPLE_COLS))})",
                          vals)
            return c.total_changes - before

    def examples(self, run_id: str, **where: Any) -> list[dict[str, Any]]:
        sql, args = self._where("lm_examples", run_id, where)
        cur = self._con.execute(sql + " ORDER BY model, metric, setting, example_id", args)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row[:-1]), extra=json.loads(row[-1] or "{}")) for row in cur]

    # -- representation similarities -------------------------------------------------------
    def add_similarities(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert similarity rows (keys: :data:`SIMILARITY_COLS`); existing keys are kept."""
        vals = [tuple(r.get(c) for c in SIMILARITY_COLS) for r in rows]
        with self._tx() as c:
            before = c.total_changes
            c.executemany(f"INSERT OR IGNORE INTO similarities VALUES ({','.join('?' * len(SIMILARITY_COLS))})",
                          vals)
            return c.total_changes - before

    def similarities(self, **where: Any) -> list[dict[str, Any]]:
        """Similarity rows matching the given column values (all when none)."""
        sql, args = "SELECT * FROM similarities WHERE 1=1", []
        for k, v in where.items():
            if v is None:
                continue
            if k not in SIMILARITY_COLS:
                raise InputError(f"bad column name {k!r}")
            sql += f" AND {k}=?"
            args.append(v)
        cur = self._con.execute(sql + " ORDER BY measure, layer_a, layer_b", args)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur]

    # -- trained models ------------------------------------------------------------------
    def training(self, model: str, data: str, perturbation: str, setting: str, seed: int) -> dict | None:
        """The stored result of one trained model, or None when it was not trained yet."""
        row = self._con.execute("SELECT result FROM trainings WHERE model=? AND data=? AND perturbation=? AND "
                                "setting=? AND seed=?", (model, data, perturbation, setting, seed)).fetchone()
        return None if row is None else json.loads(row[0])

    def add_training(self, model: str, data: str, perturbation: str, setting: str, seed: int,
                     result: dict[str, Any]) -> None:
        """Record one trained model's result (kept if the key exists)."""
        self.add_trainings([(model, data, perturbation, setting, seed, result)])

    def add_trainings(self, rows: Iterable[tuple[str, str, str, str, int, dict[str, Any]]]) -> None:
        """Record several ``(model, data, perturbation, setting, seed, result)`` in one transaction:
        all are stored or none (keys already stored are kept)."""
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO trainings VALUES (?,?,?,?,?,?)",
                          [(m, d, p, s, seed, json.dumps(r)) for m, d, p, s, seed, r in rows])

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

    # -- finished work cells named by a string -------------------------------------------
    def cell(self, study: str, key: str) -> dict | None:
        """The stored result of one unit of work (``key`` any string naming it), or None."""
        row = self._con.execute("SELECT result FROM cells WHERE study=? AND key=?", (study, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def add_cell(self, study: str, key: str, result: dict[str, Any]) -> None:
        """Record one unit of work's result (the first write of a key wins)."""
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO cells VALUES (?,?,?)", (study, key, json.dumps(result)))

    # -- helpers -----------------------------------------------------------------------
    @staticmethod
    def _where(table: str, run_id: str, where: dict[str, Any]) -> tuple[str, list[Any]]:
        sql = f"SELECT * FROM {table} WHERE run_id=?"
        args: list[Any] = [run_id]
        for k, v in where.items():
            if v is None:
                continue
            if not k.isidentifier():
                raise InputError(f"bad column name {k!r}")
            sql += f" AND {k}=?"
            args.append(v)
        return sql, args
