"""The history store on a real SQLite file and a real PostgreSQL server: appending, re-running a
label, accepting, schema versions, two writers at once, and a writer killed in the middle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.pg_server import new_database

from perturblab.errors import InputError
from perturblab.history.check import check_release
from perturblab.history.release import Release
from perturblab.history.schema import SCHEMA
from perturblab.history.store import open_history


def release(label: str, lost: int = 0, n: int = 40, target: str = "candidate", spec: str = "minilm-l3",
            setup: dict | None = None) -> Release:
    """A release whose agreement terms are 1 but for the first ``lost`` examples."""
    terms = {f"0:{i}": 0.0 if i < lost else 1.0 for i in range(n)}
    value = sum(terms.values()) / n
    return Release(label=label, reference="minilm-l6", setup=setup or {"options": {"data": "rotten_tomatoes"}},
                   models={target: {"spec": spec, "fingerprint": "fp-" + spec}},
                   estimates=[{"target": target, "study": "invariances", "key": "agreement",
                               "measure": "Agreement with the reference", "value": value, "low": value - 0.05,
                               "high": min(1.0, value + 0.05), "n": n, "interval": "95 % Wilson", "better": "higher",
                               "level": "none", "flags": []}],
                   outcomes={(target, "invariances", "agreement"): terms})


def test_append_read_back_and_rerun_adds_nothing(tmp_path):
    with open_history(tmp_path / "h.sqlite") as h:
        assert h.schema() == SCHEMA
        assert h.append(release("v1")) is True
        assert h.append(release("v1", lost=5)) is False  # the label is stored: nothing added
        assert h.counts() == {"releases": 1, "estimates": 1, "outcomes": 40}
        r = h.release("v1")
        assert r.estimates[0]["value"] == 1.0 and r.models_of() == {"candidate": "minilm-l3"}
        assert h.outcomes(r, "candidate", "invariances", "agreement") == {f"0:{i}": 1.0 for i in range(40)}
        assert h.check_append("v1", {"candidate": "minilm-l3"}).startswith("release v1 is stored already")
        with pytest.raises(InputError, match="stored already .* with other models"):
            h.check_append("v1", {"candidate": "minilm-l6-int8"})
        assert h.accept("v1").accepted is not None
        with pytest.raises(InputError, match="'v9' is not in the history"):
            h.accept("v9")


def test_schema_newer_refused_older_migrated(tmp_path, monkeypatch):
    from sqlalchemy import create_engine, text

    path = tmp_path / "h.sqlite"
    open_history(path).close()
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(text("UPDATE perturblab_history SET value = :v WHERE key = 'schema'"), {"v": str(SCHEMA + 1)})
    with pytest.raises(InputError, match="newer perturblab"):
        open_history(path)
    with engine.begin() as conn:  # an older schema runs the migration steps, each recorded
        conn.execute(text("UPDATE perturblab_history SET value = '0' WHERE key = 'schema'"))
    engine.dispose()
    ran = []
    monkeypatch.setitem(__import__("perturblab.history.schema", fromlist=["MIGRATIONS"]).MIGRATIONS, 0,
                        lambda conn, t: ran.append(0))
    with open_history(path) as h:
        assert ran == [0] and h.schema() == SCHEMA


def test_a_database_of_other_tables_is_refused(tmp_path):
    import sqlite3

    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError, match="not a perturblab history"):
        open_history(path)
    with pytest.raises(InputError, match="does not exist"):
        open_history(tmp_path / "no" / "h.sqlite")


#: where a writer process finds this module and the shared test helpers
PATHS = [str(Path(__file__).parent), str(Path(__file__).parents[1])]
WRITER = textwrap.dedent("""
    import sys, time
    sys.path[:0] = {paths!r}
    from test_history_store import release
    from perturblab.history.store import open_history
    h = open_history(sys.argv[1])
    while time.time() < float(sys.argv[3]):  # start together
        time.sleep(0.005)
    for k in range(int(sys.argv[4])):
        h.append(release(f"{{sys.argv[2]}}-{{k}}", lost=k % 7, n=400))
    print("ok")
""")


def _writers(where: str, names: list[str], each: int) -> None:
    start = time.time() + 3.0
    script = WRITER.format(paths=PATHS)
    procs = [subprocess.Popen([sys.executable, "-c", script, where, name, str(start), str(each)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in names]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err[-2000:]


def test_two_writers_at_once_lose_nothing_sqlite(tmp_path):
    where = str(tmp_path / "h.sqlite")
    open_history(where).close()
    _writers(where, ["a", "b"], 6)
    with open_history(where) as h:
        assert h.counts() == {"releases": 12, "estimates": 12, "outcomes": 12 * 400}
        assert sorted(r.label for r in h.releases()) == sorted(f"{x}-{k}" for x in "ab" for k in range(6))


def test_two_writers_creating_the_schema_at_once_postgres(pg_url):
    where = new_database(pg_url, "writers")
    _writers(where, ["a", "b"], 6)  # neither created the schema before: both try at once
    with open_history(where) as h:
        assert h.counts() == {"releases": 12, "estimates": 12, "outcomes": 12 * 400}


KILLED = textwrap.dedent("""
    import sys, time
    sys.path[:0] = {paths!r}
    from test_history_store import release
    from perturblab.history import store
    h = store.open_history(sys.argv[1])
    h.append(release("whole", lost=3))
    insert = store.History._insert_outcomes
    def stalled(self, conn, rid, outcomes):
        insert(self, conn, rid, outcomes)  # the rows are written, the transaction not committed
        open(sys.argv[2], "w").write("inside")
        time.sleep(600)
    store.History._insert_outcomes = stalled
    h.append(release("killed", lost=9))
""")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_writer_killed_mid_append_leaves_the_history_whole(tmp_path, backend, request):
    where = str(tmp_path / "h.sqlite") if backend == "sqlite" else new_database(request.getfixturevalue("pg_url"),
                                                                               "killed")
    flag = tmp_path / "inside"
    p = subprocess.Popen([sys.executable, "-c", KILLED.format(paths=PATHS), where, str(flag)],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not flag.exists():
        assert p.poll() is None, p.stderr.read()[-2000:]
        assert time.time() < deadline
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    with open_history(where) as h:  # readable, and complete up to the last whole release
        assert [r.label for r in h.releases()] == ["whole"]
        assert h.counts() == {"releases": 1, "estimates": 1, "outcomes": 40}
        assert h.append(release("after")) is True  # and writable: no lock left behind


def test_sqlite_and_postgresql_give_the_same_results(tmp_path, pg_url):
    results = []
    for where in (str(tmp_path / "h.sqlite"), new_database(pg_url, "same")):
        with open_history(where) as h:
            for label, lost in (("v1", 0), ("v2", 1), ("v3", 12), ("v4", 1)):
                h.append(release(label, lost=lost))
            h.accept("v1")
            checks = [check_release(h, v, "accepted", equivalent=[("agreement", 0.1)]).to_json()
                      for v in ("v2", "v3", "v4")]
            results.append((json.dumps(checks, sort_keys=True), [(r.label, r.estimates) for r in
                                                                 h.releases(estimates=True)]))
    assert results[0] == results[1]
    v3 = json.loads(results[0][0])[1]
    assert v3["regressions"] == 1 and v3["changes"][0]["verdict"] == "regressed"
