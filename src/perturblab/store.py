"""Results store: one SQLite file per study directory.

Tables
------
runs           run_id, study, config (JSON), created
perturbations  one row per (run, reference, capability, trial, sample): original, perturbed,
               changed words, reference loss L(m(x), m(x')), status, queries
outputs        one row per (run, model, capability, trial, sample, kind) with kind 'x' or
               'xp': the model's probabilities on the base or perturbed input
metrics        one row per (run, reference, target, capability, trial, metric)
lm_examples    one row per (run, model, metric, setting, example): the self-supervised LM
               evaluation's per-example values (text, perturbed text, value, extras as JSON)
similarities   one row per (model a, model b, inputs, pooling, measure, layer a, layer b): a
               representation similarity, keyed on the models' fingerprints and the inputs'
               hash so that a comparison already made is never recomputed (names kept for display)
trainings      one row per trained model (model, data, perturbation, setting, seed): the numbers
               measured with it (JSON), so that a resumed study never trains a model twice
cells          one row per (study, key): the result (JSON) of one finished unit of work of a
               study whose work units are named by a string key (e.g. the robustness study's
               predictions of one model on one perturbed test set)

Writes use ``INSERT OR IGNORE`` on primary keys inside transactions, so a crashed and
resumed study can neither lose nor duplicate rows; a study asks :meth:`done_samples` what
is already finished and skips it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import InputError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, study TEXT NOT NULL, config TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS perturbations (
    run_id TEXT, reference TEXT, capability TEXT, trial INTEGER, sample_id INTEGER,
    original TEXT, perturbed TEXT, changes TEXT, ref_loss REAL, argmax_invariant INTEGER,
    status TEXT, queries INTEGER,
    PRIMARY KEY (run_id, reference, capability, trial, sample_id));
CREATE TABLE IF NOT EXISTS outputs (
    run_id TEXT, model TEXT, capability TEXT, trial INTEGER, sample_id INTEGER, kind TEXT,
    probs TEXT,
    PRIMARY KEY (run_id, model, capability, trial, sample_id, kind));
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT, reference TEXT, target TEXT, capability TEXT, trial INTEGER, metric TEXT,
    value REAL, n INTEGER,
    PRIMARY KEY (run_id, reference, target, capability, trial, metric));
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

PERTURBATION_COLS = ("run_id", "reference", "capability", "trial", "sample_id", "original",
                     "perturbed", "changes", "ref_loss", "argmax_invariant", "status", "queries")
LM_EXAMPLE_COLS = ("run_id", "model", "metric", "setting", "example_id", "text", "perturbed", "value",
                   "extra")
METRIC_COLS = ("run_id", "reference", "target", "capability", "trial", "metric", "value", "n")


class ResultStore:
    """SQLite-backed store of runs, perturbed pairs, model outputs and metric rows."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, timeout=60)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=NORMAL")
        self._con.executescript(SCHEMA)

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
        cfg = json.dumps(config, sort_keys=True)
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

    # -- perturbations -----------------------------------------------------------------
    def done_samples(self, run_id: str, reference: str, capability: str, trial: int) -> set[int]:
        cur = self._con.execute(
            "SELECT sample_id FROM perturbations WHERE run_id=? AND reference=? AND capability=? "
            "AND trial=?", (run_id, reference, capability, trial))
        return {r[0] for r in cur}

    def add_perturbations(self, rows: Iterable[dict[str, Any]]) -> int:
        vals = []
        for r in rows:
            r = dict(r)
            r["changes"] = json.dumps(r.get("changes") or [])
            for k in ("original", "perturbed"):
                if isinstance(r.get(k), (tuple, list)):
                    r[k] = json.dumps(list(r[k]))
            inv = r.get("argmax_invariant")
            r["argmax_invariant"] = None if inv is None else int(inv)
            vals.append(tuple(r.get(c) for c in PERTURBATION_COLS))
        with self._tx() as c:
            before = c.total_changes
            c.executemany(f"INSERT OR IGNORE INTO perturbations VALUES ({','.join('?' * len(PERTURBATION_COLS))})", vals)
            return c.total_changes - before

    def perturbations(self, run_id: str, **where: Any) -> list[dict[str, Any]]:
        sql, args = self._where("perturbations", run_id, where)
        cur = self._con.execute(sql + " ORDER BY reference, capability, trial, sample_id", args)
        cols = [d[0] for d in cur.description]
        out = []
        for row in cur:
            r = dict(zip(cols, row))
            r["changes"] = json.loads(r["changes"]) if r["changes"] else []
            out.append(r)
        return out

    # -- outputs -----------------------------------------------------------------------
    def add_outputs(self, run_id: str, model: str, capability: str, trial: int,
                    sample_ids: Iterable[int], kind: str, probs) -> None:
        vals = [(run_id, model, capability, trial, int(s), kind, json.dumps([float(v) for v in p]))
                for s, p in zip(sample_ids, probs)]
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO outputs VALUES (?,?,?,?,?,?,?)", vals)

    def outputs(self, run_id: str, **where: Any) -> list[dict[str, Any]]:
        sql, args = self._where("outputs", run_id, where)
        cur = self._con.execute(sql + " ORDER BY model, capability, trial, sample_id, kind", args)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row), probs=json.loads(row[-1])) for row in cur]

    # -- metrics -----------------------------------------------------------------------
    def add_metrics(self, rows: Iterable[dict[str, Any]]) -> None:
        vals = [tuple(r.get(c) for c in METRIC_COLS) for r in rows]
        with self._tx() as c:
            c.executemany("INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?,?)", vals)

    def metrics(self, run_id: str, **where: Any) -> list[dict[str, Any]]:
        sql, args = self._where("metrics", run_id, where)
        cur = self._con.execute(sql + " ORDER BY reference, target, capability, trial, metric", args)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur]

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

    # -- finished work cells -----------------------------------------------------------
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

    def export(self, run_id: str, table: str, path: str | Path) -> Path:
        """Write one table of a run to CSV, Parquet or JSON (by the file's extension)."""
        import pandas as pd

        getters = {"perturbations": self.perturbations, "outputs": self.outputs,
                   "metrics": self.metrics, "lm_examples": self.examples}
        if table not in getters:
            raise InputError(f"unknown table {table!r}; use one of {sorted(getters)}")
        rows = getters[table](run_id)
        for r in rows:
            for k, v in r.items():
                if isinstance(v, (list, dict)):
                    r[k] = json.dumps(v)
        df = pd.DataFrame(rows)
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            df.to_csv(path, index=False)
        elif suffix == ".parquet":
            df.to_parquet(path, index=False)
        elif suffix == ".json":
            df.to_json(path, orient="records", indent=1)
        else:
            raise InputError(f"cannot export to {path.name}: use a .csv, .parquet or .json file name")
        return path
