"""The faults of a history, each one line naming the input and the fix (exit 2, no traceback),
found before any work where they can be: a read-only file or folder, a URL that does not parse,
a label that breaks the rule of labels, a PostgreSQL server that refuses, is not there or goes
away in the middle of an append (the append is one transaction), passwords never shown, and
twenty first writers of a new PostgreSQL database at once."""

from __future__ import annotations

import threading
import time

import pytest
from helpers.faults import closed_port, one_error_line
from helpers.permissions import permissions_apply
from helpers.pg_server import PASSWORD, USER, new_database
from test_history_store import release

from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.history import store
from perturblab.history.release import LABEL_CHARS, label_problem
from perturblab.history.store import check_labels, open_history


def _compare(out, history, label, *extra):
    return ["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies", "robustness",
            "--budget", "10m", "--out", str(out), "--quiet", "--history", str(history), "--release", label, *extra]


# -- SQLite files that cannot be written -------------------------------------------------------
def test_a_read_only_history_file_is_refused_before_any_work(tmp_path, tiny_costs, capsys):
    history = tmp_path / "history.sqlite"
    with open_history(history) as h:
        h.append(release("v0"))
    history.chmod(0o444)
    try:
        with permissions_apply():
            code = main(_compare(tmp_path / "out", history, "v1"))
            compared = capsys.readouterr().err
            accept = main(["history", "accept", str(history), "v0"])
    finally:
        history.chmod(0o644)
    assert code == 2
    line = one_error_line(compared)
    assert line.startswith(f"error: --history {history}: the file cannot be written (Permission denied)")
    assert f"chmod u+w {history}" in line
    assert not (tmp_path / "out").exists()  # refused before any work
    assert accept == 2  # a command that writes later than it opens: one line too
    line = one_error_line(capsys.readouterr().err)
    assert "accepting release v0 failed (attempt to write a readonly database)" in line
    with open_history(history) as h:  # as it was
        assert [(r.label, r.accepted) for r in h.releases()] == [("v0", None)]


def test_a_new_history_in_a_read_only_folder_is_refused_before_any_work(tmp_path, tiny_costs, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with permissions_apply():
            code = main(_compare(tmp_path / "out", folder / "history.sqlite", "v1"))
    finally:
        folder.chmod(0o755)
    assert code == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"its folder {folder} cannot be written (Permission denied)" in line
    assert not (tmp_path / "out").exists() and list(folder.iterdir()) == []  # no history, no probe left


def test_a_writable_history_passes_the_check_and_is_left_as_it_was(tmp_path):
    history = tmp_path / "history.sqlite"
    assert check_labels(history, {"v1": {"candidate": "minilm-l3"}}) == [] and not history.exists()
    with open_history(history) as h:
        h.append(release("v1"))
    before = history.read_bytes()
    with permissions_apply():
        notes = check_labels(history, {"v1": {"candidate": "minilm-l3"}, "v2": {"candidate": "minilm-l3"}})
    assert notes == [f"release v1 is stored already in {history}; this run adds nothing to the history"]
    assert history.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["history.sqlite"]


# -- a URL that does not parse ----------------------------------------------------------------
def test_a_port_that_is_not_a_number_is_one_line_naming_history(tmp_path, capsys):
    url = "postgresql://user:pw@host:notaport/db"
    assert main(["history", "list", url]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == ("error: --history postgresql://user:***@host:notaport/db: the port 'notaport' is not a number; "
                    "give postgresql://user@host:5432/db (or leave the port out for 5432)")
    assert main(_compare(tmp_path / "out", url, "v1")) == 2  # refused before any work
    assert one_error_line(capsys.readouterr().err) == line and not (tmp_path / "out").exists()


# -- the rule of labels -----------------------------------------------------------------------
def test_the_rule_of_labels():
    for good in ("v1", "2025-06-01 nightly", "run1/checkpoint-800", "é✓ 版本", "x" * LABEL_CHARS):
        assert label_problem(good) is None, good
    assert label_problem("x" * (LABEL_CHARS + 1)) == "has 201 characters; give a label of at most 200"
    assert label_problem("x" * 5000) == "has 5,000 characters; give a label of at most 200"
    assert label_problem("").startswith("is empty")
    for bad, char in (("v1\nv2", "'\\n'"), ("v1\tx", "'\\t'"), ("v1\r", "'\\r'"), ("v\x00", "'\\x00'"),
                      ("v\x7f", "'\\x7f'"), ("v\x85", "'\\x85'")):
        assert label_problem(bad) == (f"holds the control character {char}; give a label of one line with "
                                            "no control characters"), bad
    assert label_problem("a\u2028b") == ("holds the character '\\u2028'; give a label of one line of text "
                                               "with no separators")


def test_a_label_that_breaks_the_rule_is_refused_before_any_work(tmp_path, tiny_costs, capsys):
    history = tmp_path / "history.sqlite"
    for label, said in (("v" * 5000, "has 5,000 characters"), ("v1\nv2", "holds the control character '\\n'")):
        assert main(_compare(tmp_path / "out", history, label)) == 2
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith("error: --release: ") and said in line
        assert not (tmp_path / "out").exists() and not history.exists()
    with open_history(history) as h:  # the store holds the rule too (the Python API, checkpoints)
        with pytest.raises(InputError, match="has 201 characters"):
            h.append(release("v" * 201))
        h.append(release("v1"))
        assert h.counts() == {"releases": 1, "estimates": 1, "outcomes": 40}
    with pytest.raises(InputError, match=r"--release 'v1\\nv2': holds the control character"):
        check_labels(history, {"v1\nv2": {}})


def test_history_commands_check_their_labels_before_opening_the_history(tmp_path, capsys):
    history = tmp_path / "history.sqlite"
    with open_history(history) as h:
        h.append(release("v1"))
    long = "v" * 300
    for argv, start in ((["accept", str(history), long], "error: label 'vvvvv"),
                        (["check", str(history), "--release", "v1\nv2"], "error: --release 'v1\\nv2': holds"),
                        (["check", str(history), "--release", "v1", "--baseline", long], "error: --baseline 'vvv")):
        assert main(["history", *argv]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith(start), line
        assert ("has 300 characters" in line) == (long in argv)
    assert main(["history", "list", str(history)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("v1\t1 estimates\t")


# -- PostgreSQL with a password ---------------------------------------------------------------
def test_passwords_are_never_shown_or_written(pg, tmp_path, tiny_costs, capsys, caplog):
    url = pg("shown")
    said = []

    def run(argv, want):
        code = main(argv)
        out, err = capsys.readouterr()
        said.append(out + err)
        assert code == want, out + err
        return out, err

    out_dir = tmp_path / "out"
    _, err = run(_compare(out_dir / "v1", url, "v1"), 0)  # a passing run
    assert f"history: release v1 appended to postgresql://{USER}:***@127.0.0.1:{pg.port}/shown" in err
    run(["history", "list", url], 0)
    run(["history", "accept", url, "v1"], 0)
    run(["history", "check", url, "--release", "v1", "--json", str(out_dir / "check.json")], 0)
    run(["history", "report", url, "--out", str(out_dir / "trend.html")], 0)
    _, err = run(_compare(out_dir / "v1", url, "v1"), 0)  # a re-run: stored already
    assert f"stored already in postgresql://{USER}:***@" in err
    failing = _compare(out_dir / "other", url, "v1")
    failing[failing.index("candidate=tfidf-lr")] = "candidate=minilm-l3"
    _, err = run(failing, 2)  # stored with other models: refused, naming the history
    assert f"is stored already in postgresql://{USER}:***@127.0.0.1:{pg.port}/shown" in one_error_line(err)
    wrong = url.replace(PASSWORD, PASSWORD[::-1])
    _, err = run(_compare(out_dir / "wrong", wrong, "v2"), 2)
    line = one_error_line(err)
    assert "password authentication failed" in line and "check the user and password of the URL" in line
    assert f"{USER}:***@" in line and PASSWORD[::-1] not in line
    _, err = run(["history", "list", url.rsplit("/", 1)[0] + "/nowhere"], 2)
    line = one_error_line(err)
    assert 'database "nowhere" does not exist' in line and "createdb" in line
    t0 = time.time()
    _, err = run(["history", "list", f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{closed_port()}/h"
                                     "?connect_timeout=2"], 2)
    assert time.time() - t0 < 15
    line = one_error_line(err)
    assert "cannot open it (" in line and "that the database server runs" in line
    everything = "\n".join(said) + caplog.text
    assert PASSWORD not in everything and PASSWORD[::-1] not in everything
    files = [p for p in out_dir.rglob("*") if p.is_file()]
    assert len(files) >= 5 and {"compare.json", "report.html", "check.json", "trend.html"} <= {p.name for p in files}
    for p in files:
        assert PASSWORD.encode() not in p.read_bytes(), p
    with open_history(url) as h:  # nor does the history itself hold it
        (r,) = h.releases(estimates=True)
        assert PASSWORD not in repr(r.__dict__) and PASSWORD not in repr(h)


# -- a server that goes away in the middle of an append ---------------------------------------
def _terminate(admin: str, pid: int) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
    engine.dispose()


def test_a_server_gone_in_the_middle_of_an_append_is_one_line_and_writes_nothing(pg, monkeypatch):
    from sqlalchemy import event, text

    url = pg("gone")
    with open_history(url) as h:
        h.append(release("v1"))
    insert = store.History._insert_outcomes

    def cut(self, conn, rid, outcomes):  # the release's row and estimates are written, not committed
        _terminate(pg.admin, conn.execute(text("SELECT pg_backend_pid()")).scalar())
        insert(self, conn, rid, outcomes)

    monkeypatch.setattr(store.History, "_insert_outcomes", cut)
    with open_history(url) as h, pytest.raises(InputError) as e:
        h.append(release("v2", lost=3))
    message = str(e.value)
    assert "\n" not in message and PASSWORD not in message
    assert message.startswith(f"history postgresql://{USER}:***@127.0.0.1:{pg.port}/gone: appending release v2 "
                              "failed (")
    assert "an append is one transaction: the history holds none of the release" in message
    assert "INSERT" not in message and "parameters" not in message and "%(" not in message
    monkeypatch.setattr(store.History, "_insert_outcomes", insert)
    with open_history(url) as h:  # nothing of v2; the history is writable
        assert [r.label for r in h.releases()] == ["v1"]
        assert h.counts() == {"releases": 1, "estimates": 1, "outcomes": 40}
        # lost as it commits: the message says the history holds all of it or none
        seen = {}

        @event.listens_for(h.engine, "commit")
        def _commit(conn):
            if "cut" not in seen:
                seen["cut"] = True
                _terminate(pg.admin, conn.exec_driver_sql("SELECT pg_backend_pid()").scalar())

        with pytest.raises(InputError, match="lost as it committed: the history holds all of the release or none"):
            h.append(release("v3"))
        assert seen == {"cut": True}
    with open_history(url) as h:
        assert h.counts() in ({"releases": 1, "estimates": 1, "outcomes": 40},
                              {"releases": 2, "estimates": 2, "outcomes": 80})
        assert h.append(release("v4")) is True


# -- first writers of a new database at once ---------------------------------------------------
def test_twenty_first_writers_of_a_new_postgresql_database_all_land(pg):
    """Twenty threads, each with a fresh History (its own engine and connections), open a new
    database at once and append, on eight new databases: many chances for one writer to look for
    the schema while another creates it."""
    for round_ in range(8):
        url = new_database(pg.admin, f"first{round_}")
        start, failures = threading.Barrier(20), []

        def writer(i: int) -> None:
            try:
                start.wait(timeout=60)
                with open_history(url) as h:
                    assert h.append(release(f"w{i:02d}", lost=i % 5)) is True
            except BaseException as e:  # noqa: BLE001 - reported below, one per writer
                failures.append(f"w{i:02d}: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert failures == [], f"database {round_}"
        with open_history(url) as h:
            assert sorted(r.label for r in h.releases()) == [f"w{i:02d}" for i in range(20)]
            assert h.counts() == {"releases": 20, "estimates": 20, "outcomes": 20 * 40}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_one_rule_of_labels_on_both_databases(backend, tmp_path, request):
    where = str(tmp_path / "h.sqlite") if backend == "sqlite" else request.getfixturevalue("pg")("labels")
    longest = "é" * LABEL_CHARS  # characters, not bytes: 400 bytes in UTF-8
    with open_history(where) as h:
        assert h.append(release(longest)) is True
        for label, said in (("v" * 5000, "has 5,000 characters"), ("v1\nv2", "holds the control character '\\n'"),
                            ("v1\tv2", "holds the control character '\\t'")):
            with pytest.raises(InputError) as e:
                h.append(release(label))
            assert str(e.value).startswith("--release ") and said in str(e.value) and "\n" not in str(e.value)
        assert [r.label for r in h.releases()] == [longest]
        assert h.counts() == {"releases": 1, "estimates": 1, "outcomes": 40}
