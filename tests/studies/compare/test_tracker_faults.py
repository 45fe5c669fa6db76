"""The faults of an MLflow tracking store, each one line naming ``--mlflow``, the reason and the
fix (exit 2, no traceback), found in seconds before any work: a server that does not answer
(asked once, not seven times over minutes), a wrong PostgreSQL password (never shown), a
read-only PostgreSQL user, a SQLite file whose folder is missing or read-only (the rule and the
words of ``--history``), a read-only file store; and a run that cannot be logged after the work."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

import pytest
from helpers.faults import closed_port, one_error_line
from helpers.permissions import permissions_apply
from helpers.pg_server import PASSWORD, USER

from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.studies.compare import tracker

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed (./setup.sh installs it)")


def _compare(out, *extra):
    return ["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies", "robustness",
            "--budget", "10m", "--out", str(out), "--quiet", *extra]


def _within(seconds: float, call):
    """``call()``'s value, or a failure when it takes longer than ``seconds`` (it is left to
    finish in the background: a slow refusal fails here instead of holding the tests up)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as e:  # noqa: BLE001 - handed back below
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    t0 = time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still waiting after {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"], time.monotonic() - t0


# -- a tracking server that does not answer ---------------------------------------------------------
#: MLflow's settings of the retries of an HTTP request and its timeout
SETTINGS = ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")


def test_an_unreachable_server_is_refused_in_one_line_in_seconds(tmp_path, tiny_costs, capsys, monkeypatch):
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    uri = f"http://127.0.0.1:{closed_port()}"
    code, took = _within(60, lambda: main(_compare(tmp_path / "out", "--mlflow", uri)))
    assert code == 2 and took < 20, took  # MLflow's own settings: seven retries over about 279 s
    line = one_error_line(capsys.readouterr().err)
    assert line == (f"error: --mlflow {uri}: opening the tracking store failed (Connection refused); check the URI "
                    "and that the tracking server runs (mlflow server --host HOST --port PORT)")
    assert not (tmp_path / "out").exists()
    # MLflow's settings were ours for those calls only
    assert not any(name in os.environ for name in SETTINGS)


def test_a_server_that_accepts_and_never_answers_is_asked_once(tmp_path, monkeypatch):
    """A server that takes the connection and says nothing: one request, cut after the timeout."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracker, "REACH_SECONDS", 1, raising=False)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []

    def take() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])  # held open, never answered
            except OSError:
                continue

    stop = threading.Event()
    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    uri = f"http://127.0.0.1:{server.getsockname()[1]}"
    try:
        with pytest.raises(InputError) as e:
            _within(30, lambda: tracker.experiment_id(uri))
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()
    assert len(accepted) == 1  # no retry
    assert str(e.value) == (f"--mlflow {uri}: opening the tracking store failed (no answer in time); check the URI "
                            "and that the tracking server runs (mlflow server --host HOST --port PORT)")


def test_a_value_the_environment_gives_wins_and_is_kept(monkeypatch):
    retries, timeout = SETTINGS
    assert (tracker.RETRIES_SETTING, tracker.TIMEOUT_SETTING) == SETTINGS
    monkeypatch.setenv(retries, "3")
    monkeypatch.delenv(timeout, raising=False)
    with tracker._requests(0, 7):
        assert os.environ[retries] == "3" and os.environ[timeout] == "7"
    assert os.environ[retries] == "3" and timeout not in os.environ


# -- SQLite files and file stores: the rule of --history ---------------------------------------------
def test_a_sqlite_store_in_a_missing_folder_is_refused_as_history_refuses_it(tmp_path, tiny_costs, capsys):
    folder = tmp_path / "missing" / "dir"
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    assert main(_compare(tmp_path / "out", "--mlflow", uri)) == 2
    line = one_error_line(capsys.readouterr().err)
    assert main(_compare(tmp_path / "out", "--history", str(folder / "mlflow.db"), "--release", "v1")) == 2
    history = one_error_line(capsys.readouterr().err)
    reason = f": the folder {folder} does not exist; create it or give another path"
    assert line == f"error: --mlflow {uri}{reason}" and history == f"error: --history {folder / 'mlflow.db'}{reason}"
    assert not (tmp_path / "missing").exists() and not (tmp_path / "out").exists()  # nothing made
    assert main(_compare(tmp_path / "out", "--mlflow", f"sqlite:///{tmp_path}")) == 2
    assert one_error_line(capsys.readouterr().err) == (f"error: --mlflow sqlite:///{tmp_path}: is a directory; give "
                                                        "a database file (sqlite:///mlflow.db) or a URL")


def test_a_sqlite_store_that_cannot_be_written_is_refused_before_any_work(tmp_path, tiny_costs, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    store = tmp_path / "mlflow.db"
    tracker.experiment_id(f"sqlite:///{store}")  # a store with its experiment: reading it works
    ro.chmod(0o555)
    store.chmod(0o444)
    try:
        with permissions_apply():
            new = main(_compare(tmp_path / "out", "--mlflow", f"sqlite:///{ro / 'mlflow.db'}"))
            new_err = capsys.readouterr().err
            old = main(_compare(tmp_path / "out", "--mlflow", f"sqlite:///{store}"))
            old_err = capsys.readouterr().err
    finally:
        ro.chmod(0o755)
        store.chmod(0o644)
    assert new == 2 and one_error_line(new_err) == (
        f"error: --mlflow sqlite:///{ro / 'mlflow.db'}: its folder {ro} cannot be written (Permission denied), and "
        "SQLite writes the database and its journal there; give a file in a folder you may write")
    assert old == 2 and one_error_line(old_err) == (
        f"error: --mlflow sqlite:///{store}: the file cannot be written (Permission denied); make it writable "
        f"(chmod u+w {store}) or give another file")
    assert not (tmp_path / "out").exists() and list(ro.iterdir()) == []


def test_a_read_only_file_store_names_the_real_reason(tmp_path, tiny_costs, capsys, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    store = tmp_path / "mlruns"
    store.mkdir()
    store.chmod(0o555)
    try:
        with permissions_apply():
            code = main(_compare(tmp_path / "out", "--mlflow", f"file://{store}"))
    finally:
        store.chmod(0o755)
    assert code == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"error: --mlflow file://{store}: the folder {store} cannot be written (Permission denied), and MLflow "
        "writes the store's runs there; give a folder you may write")
    # a writable one: this MLflow opens no file store, and the line says so and what to give instead
    assert main(_compare(tmp_path / "out", "--mlflow", str(store))) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: --mlflow {store}: opening the tracking store failed (MLflow no longer opens a "
                           "file store); give a database (sqlite:///mlflow.db)"), line
    assert "maintenance mode" not in line and not (tmp_path / "out").exists()


# -- PostgreSQL -----------------------------------------------------------------------------------
def test_a_wrong_postgresql_password_is_one_line_in_seconds_and_never_shown(pg, tmp_path, tiny_costs, capsys,
                                                                            caplog):
    url = pg("tracked").replace(PASSWORD, "Wr0ngPassw0rd")
    code, took = _within(60, lambda: main(_compare(tmp_path / "out", "--mlflow", url)))
    err = capsys.readouterr().err
    assert code == 2 and took < 20, took  # MLflow alone: ten tries over about 100 s, 37 lines
    line = one_error_line(err)
    assert line.startswith(f"error: --mlflow postgresql://{USER}:***@127.0.0.1:{pg.port}/tracked: opening the "
                           "tracking store failed (")
    assert "password authentication failed" in line and line.endswith("; check the user and password of the URL")
    assert "Wr0ngPassw0rd" not in err + caplog.text and PASSWORD not in err + caplog.text
    assert not (tmp_path / "out").exists()


def test_a_read_only_postgresql_user_is_refused_before_any_work(pg, tmp_path, tiny_costs, capsys):
    from sqlalchemy import create_engine, text

    url = pg("readonly")
    tracker.experiment_id(url)  # the store made, with its experiment, by a user who may write
    engine = create_engine(pg.admin.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"CREATE ROLE reader LOGIN SUPERUSER PASSWORD '{PASSWORD}'"))
        conn.execute(text("ALTER ROLE reader SET default_transaction_read_only = on"))
    engine.dispose()
    reader = url.replace(f"{USER}:", "reader:")
    code, took = _within(60, lambda: main(_compare(tmp_path / "out", "--mlflow", reader)))
    err = capsys.readouterr().err
    assert code == 2 and took < 20, took
    line = one_error_line(err)
    assert line == (f"error: --mlflow postgresql://reader:***@127.0.0.1:{pg.port}/readonly: opening the tracking "
                    "store failed (cannot execute UPDATE in a read-only transaction); give a store this user may "
                    "write, or make it writable")
    assert PASSWORD not in err and not (tmp_path / "out").exists()


# -- after the work ---------------------------------------------------------------------------------
def test_a_store_that_fails_while_the_run_is_logged_is_one_line_and_the_run_is_marked_failed(tmp_path, tiny_costs,
                                                                                            capsys, monkeypatch):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"

    def refuse(self, run_id, local_path, artifact_path=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(MlflowClient, "log_artifact", refuse)
    assert main(_compare(tmp_path / "out", "--mlflow", uri)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (f"error: --mlflow {uri}: logging the run failed (No space left on device); check "
                                    "the path or URL and that the database server runs")
    assert (tmp_path / "out" / "compare.json").is_file()  # the comparison is saved
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name(tracker.EXPERIMENT).experiment_id])
    assert run.info.status == "FAILED"


def test_the_line_naming_the_logged_run_hides_the_password(monkeypatch, caplog):
    from types import SimpleNamespace

    from perturblab.studies.compare import function, tracker
    from perturblab.studies.compare.config import CompareArgs

    uri = "postgresql://writer:s3cret-pw@127.0.0.1:5432/mlflow"
    monkeypatch.setattr(tracker, "log_compare", lambda *a, **k: "run42")
    args = CompareArgs(reference="tfidf-lr", targets="t=tfidf-lr", out="/tmp/unused", mlflow=uri)
    result = SimpleNamespace(args=args, out=None, plan=SimpleNamespace(kind="classifier"))
    caplog.set_level(logging.INFO, logger="perturblab")
    function.record(result, saved=False)
    err = "\n".join(caplog.messages)  # what the command prints, one line each
    assert "mlflow: run run42 at postgresql://writer:***@127.0.0.1:5432/mlflow" in err and "s3cret-pw" not in err
