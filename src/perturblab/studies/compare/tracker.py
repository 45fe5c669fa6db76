"""A comparison logged as an MLflow run, for teams whose releases are tracked there.

One run per comparison, in the experiment ``perturblab compare`` (created when new): its
parameters are the reference, the targets and the options; each target's estimate is a metric
named ``<target>/<study>/<key>`` with its interval's ends (``…/low``, ``…/high``) and its n
(``…/n``); ``compare.json`` and ``report.html`` are its artifacts (beside the database of a
``sqlite:///`` store, in ``mlartifacts/``). Names keep MLflow's allowed
characters (letters, digits, ``_ - . / :`` and space); others become ``_``.

A store that cannot take the run is refused before any work, in one line that names the store
(its password hidden, :func:`~perturblab.core.faults.hide_password`), the reason and the fix: a
tracking server that does not answer (asked once, for at most :data:`REACH_SECONDS`), a database
that refuses the connection or the write (checked with a write rolled back at once), a SQLite
file or a file store whose folder does not exist or cannot be written (the rule of ``--history``,
:func:`~perturblab.history.database.writable_file`). A run that cannot be logged after the work is
one line too, and marked failed where it was begun.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote, urlparse

from ...core.faults import hide_password
from ...errors import InputError

#: the MLflow experiment of the comparisons
EXPERIMENT = "perturblab compare"
#: MLflow's longest parameter value
MAX_PARAM = 6000
#: before the work: how long the tracking store may take to answer, in seconds (a request to a
#: server, a connection to a database); a request is not retried, so a store that does not answer
#: is refused at once
REACH_SECONDS = 10
#: after the work, while the run is logged: how often a request to a tracking server is retried
#: (MLflow waits about 2, 4 seconds between tries) and how long each may take, in seconds
LOG_RETRIES, LOG_SECONDS = 2, 60
#: MLflow's settings of its HTTP requests: the retries and the timeout of each, in seconds
RETRIES_SETTING, TIMEOUT_SETTING = "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT"
#: the tag of a run naming the process that logs it (``host:pid``): a run still running whose
#: process is gone was cut short, and the next comparison logged from this machine marks it failed
LOGGER_TAG = "perturblab.logger"
#: the URI schemes of MLflow's SQL stores (a driver may follow: ``postgresql+psycopg``)
SQL_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")


def metric_name(*parts: str) -> str:
    """A metric name MLflow accepts: ``minilm-l3/invariances/hard_scope:typo``.

    >>> metric_name("l3 (int8)", "invariances", "hard_scope:typo")
    'l3 _int8_/invariances/hard_scope:typo'
    """
    return "/".join(re.sub(r"[^\w\-. :]", "_", p) for p in parts)


def _client(uri: str) -> Any:
    import logging

    try:
        from mlflow.tracking import MlflowClient
    except ModuleNotFoundError:
        raise InputError(f"--mlflow {hide_password(uri)}: needs MLflow; install perturblab[mlflow] "
                         "(mlflow-skinny)") from None
    for name in ("mlflow", "alembic"):  # their INFO lines on creating a store are not ours to print
        logging.getLogger(name).setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=uri)


@contextmanager
def _requests(retries: int, seconds: int) -> Iterator[None]:
    """Within it, MLflow retries a failed HTTP request ``retries`` times and gives each ``seconds``
    (its settings :data:`RETRIES_SETTING` and :data:`TIMEOUT_SETTING`, set for these calls only
    and restored after; a value the environment gives wins)."""
    before = {RETRIES_SETTING: os.environ.get(RETRIES_SETTING), TIMEOUT_SETTING: os.environ.get(TIMEOUT_SETTING)}
    for name, value in ((RETRIES_SETTING, retries), (TIMEOUT_SETTING, seconds)):
        if before[name] is None:
            os.environ[name] = str(value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)


def _scheme(uri: str) -> str:
    """The kind of store of ``uri`` as MLflow reads it: ``sql`` (a database), ``file`` (a folder:
    ``file:`` or a path), ``http`` (a tracking server) or ``other``."""
    scheme = urlparse(uri).scheme.split("+", 1)[0].lower()
    if scheme in SQL_SCHEMES:
        return "sql"
    if scheme in ("", "file") or re.fullmatch(r"[a-zA-Z]", scheme):  # a path (C:\ on Windows)
        return "file"
    return "http" if scheme in ("http", "https") else "other"


def _password(uri: str) -> str | None:
    """The password of ``uri``, or None: hidden wherever a message could show it."""
    try:
        return unquote(urlparse(uri).password or "") or None
    except ValueError:
        return None


def _reason(e: BaseException, uri: str) -> str:
    """The cause of ``e`` in a few words: the system's reason for a request that failed
    (``Connection refused``), else its first line; no password."""
    from ...history.database import fault_line

    text = str(getattr(e, "orig", None) or e).strip()
    said = re.search(r"\[Errno -?\d+\] ([^'\"()]+)", text)
    if said:
        return fault_line(said.group(1).strip(), _password(uri))
    if re.search(r"(?i)timed? ?out", text) and _scheme(uri) == "http":
        return "no answer in time"
    return fault_line(e, _password(uri))


def _refused(uri: str, doing: str, e: BaseException) -> InputError:
    """The one line that says ``doing`` with the store ``uri`` failed on ``e``: the reason
    (:func:`_reason`) and what to do about it."""
    from ...history.database import fault_fix as database_fix

    reason, kind = _reason(e, uri), _scheme(uri)
    if "MLFLOW_ALLOW_FILE_STORE" in str(e):  # MLflow 3 refuses a file store unless told to open one
        reason, fix = "MLflow no longer opens a file store", ("give a database (sqlite:///mlflow.db) or a tracking "
                                                               "server (http://host:5000), or set "
                                                               "MLFLOW_ALLOW_FILE_STORE=true")
    elif kind == "http":
        fix = "check the URI and that the tracking server runs (mlflow server --host HOST --port PORT)"
    elif kind == "sql":
        fix = database_fix(reason).replace("a history", "a store")
    else:
        fix = "give a tracking URI such as sqlite:///mlflow.db or http://host:5000"
    return InputError(f"--mlflow {hide_password(uri)}: {doing} failed ({reason}); {fix}")


def _as_mlflow(e: InputError, given: str, uri: str, store: str) -> InputError:
    """A refusal of the path checks of ``--history`` (naming ``--history given``) said of
    ``--mlflow uri``, whose ``store`` SQLite writes."""
    text = str(e).replace(f"--history {given}", f"--mlflow {hide_password(uri)}", 1)
    text = text.replace("SQLite writes the history and its journal", f"SQLite writes {store} and its journal")
    return InputError(text.replace("a database file (history.sqlite)", "a database file (sqlite:///mlflow.db)"))


def _local_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` store or the folder of a file store (``file:`` or a path), or
    None (another store, SQLite in memory)."""
    from ...history.database import sqlite_file

    if _scheme(uri) == "file":
        return Path(unquote(urlparse(uri).path) if uri.lower().startswith("file:") else uri).expanduser()
    file = sqlite_file(uri) if uri.startswith("sqlite:///") else None
    return None if file is None or str(file) in ("", ":memory:") else file.expanduser()


def check_store(uri: str) -> None:
    """Before any work: :class:`InputError` (one line) unless a run can be logged at ``uri``. A
    SQLite file follows the rule of ``--history`` (its folder exists; the file, when there, and
    its folder can be written); a file store's folder, or the folder it is made in, exists and
    can be written; a database is connected to (for at most :data:`REACH_SECONDS`) and, once it
    holds MLflow's tables, a write is tried and rolled back at once. A tracking server is asked
    by :func:`experiment_id`."""
    from ...history.database import history_url, writable_file

    path = _local_path(uri)
    if path is not None and _scheme(uri) == "sql":
        try:
            history_url(str(path))  # not a folder; its folder exists
            writable_file(path, str(path))
        except InputError as e:
            raise _as_mlflow(e, str(path), uri, "the database") from None
    elif path is not None:
        if path.exists() and not path.is_dir():
            raise InputError(f"--mlflow {hide_password(uri)}: {path} is a file, not the folder of a file store; give a "
                             "folder or a database (sqlite:///mlflow.db)")
        folder = path if path.is_dir() else path.parent
        if not folder.exists():
            raise InputError(f"--mlflow {hide_password(uri)}: the folder {folder} does not exist; create it or give "
                             "another path")
        try:
            writable_file(folder / ".perturblab-store", str(folder))
        except InputError as e:
            why = getattr(e.__context__, "strerror", None) or "not writable"
            raise InputError(f"--mlflow {hide_password(uri)}: the folder {folder} cannot be written ({why}), and "
                             "MLflow writes the store's runs there; give a folder you may write") from None
    if _scheme(uri) == "sql":
        _check_database(uri)


def _check_database(uri: str) -> None:
    """:class:`InputError` unless the database of ``uri`` answers within :data:`REACH_SECONDS`
    and, once it holds MLflow's ``experiments``, takes a write (the row of :data:`EXPERIMENT`
    rewritten as it is, in a transaction rolled back at once)."""
    from sqlalchemy import create_engine, inspect, text
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    shown = hide_password(uri)
    try:
        postgres = uri.lower().startswith("postgres")
        engine = create_engine(uri, **({"connect_args": {"connect_timeout": REACH_SECONDS}}
                                       if postgres and "connect_timeout" not in uri else {}))
    except (ArgumentError, NoSuchModuleError, ValueError) as e:
        raise InputError(f"--mlflow {shown}: not a database URL ({_reason(e, uri)}); give sqlite:///mlflow.db, "
                         "postgresql://user@host/db or http://host:5000") from None
    except ModuleNotFoundError as e:
        raise InputError(f"--mlflow {shown}: needs the Python package {e.name!r} for this database; install it or "
                         "give sqlite:///mlflow.db") from None
    try:
        with engine.connect() as conn:
            if inspect(conn).has_table("experiments"):  # in the transaction the look began
                conn.execute(text("UPDATE experiments SET name = name WHERE name = :name"), {"name": EXPERIMENT})
            conn.rollback()
    except DBAPIError as e:
        raise _refused(uri, "opening the tracking store", e) from None
    finally:
        engine.dispose()


def artifact_location(uri: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside the database of a ``sqlite:///`` store
    (``mlartifacts/`` in its folder, not the working directory's ``mlruns/``, MLflow's default);
    None (the server's choice) for any other store.

    >>> artifact_location("sqlite:////srv/ml/mlflow.db")
    'file:///srv/ml/mlartifacts'
    """
    if uri.startswith("sqlite:///"):
        return (Path(uri[len("sqlite:///"):]).expanduser().resolve().parent / "mlartifacts").as_uri()
    return None


def experiment_id(uri: str) -> str:
    """The id of the experiment :data:`EXPERIMENT` at tracking ``uri`` (created when new), after
    :func:`check_store`; :class:`InputError` (one line, in seconds: a request is not retried and
    waits at most :data:`REACH_SECONDS`) when the store cannot be opened. A comparison calls it
    before any work."""
    check_store(uri)
    with _requests(0, REACH_SECONDS):
        return _experiment(uri)[1]


def _experiment(uri: str) -> tuple[Any, str]:
    """A client of tracking ``uri`` and the id of :data:`EXPERIMENT` there (:func:`experiment_id`)."""
    try:
        client = _client(uri)
        exp = client.get_experiment_by_name(EXPERIMENT)
        return client, exp.experiment_id if exp is not None else client.create_experiment(
            EXPERIMENT, artifact_location=artifact_location(uri))
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - MLflow raises its own errors and the drivers' for a bad URI
        raise _refused(uri, "opening the tracking store", e) from None


def _logger() -> str:
    """This process, as the tag :data:`LOGGER_TAG` names it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this machine (never said on Windows, where the probe
    would end the process)."""
    if os.name == "nt":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # there, but another user's
        return False
    return False


def _fail_abandoned(client: Any, exp_id: str) -> list[str]:
    """Mark failed the runs of the experiment ``exp_id`` still running whose logging process,
    on this machine, is gone (a comparison killed while it logged: its run can never finish);
    their ids. Runs logged from another machine are left as they are."""
    host = socket.gethostname()
    failed = []
    for run in client.search_runs([exp_id], filter_string="attributes.status = 'RUNNING'", max_results=1000):
        where, _, pid = run.data.tags.get(LOGGER_TAG, "").rpartition(":")
        if where == host and pid.isdigit() and int(pid) != os.getpid() and _gone(int(pid)):
            client.set_terminated(run.info.run_id, status="FAILED")
            failed.append(run.info.run_id)
    return failed


def log_compare(uri: str, result: Any, out: Path | None, *,
                fingerprints: dict[str, list[str]] | None = None) -> str:
    """Log ``result`` (a :class:`~.function.CompareResult`) as one MLflow run at tracking
    ``uri``, with ``out/compare.json`` and ``out/report.html`` as artifacts (saved into a
    temporary directory when ``out`` is None); returns the run's id. A request to a server is
    retried :data:`LOG_RETRIES` times; a store that still fails is one :class:`InputError` line,
    and a run begun is marked failed."""
    with _requests(LOG_RETRIES, LOG_SECONDS):
        client, exp_id = _experiment(uri)
        try:
            return _log(client, exp_id, result, out, fingerprints)
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - MLflow's errors and the drivers'
            raise _refused(uri, "logging the run", e) from None


def _log(client: Any, exp_id: str, result: Any, out: Path | None,
         fingerprints: dict[str, list[str]] | None) -> str:
    """The run of :func:`log_compare`, logged with ``client`` in the experiment ``exp_id``."""
    from mlflow.entities import Metric, Param, RunTag

    args = result.args
    _fail_abandoned(client, exp_id)
    run = client.create_run(exp_id, run_name=args.release or f"{', '.join(args.target_labels())} vs "
                                                             f"{args.reference_name()}",
                            tags={"perturblab.reference": args.reference_name(),
                                  "perturblab.targets": ",".join(args.target_labels()),
                                  "perturblab.passed": str(result.passed), LOGGER_TAG: _logger()})
    run_id = run.info.run_id
    status = "FAILED"
    try:
        params = {"reference": args.reference or "", "targets": ",".join(args.target_names()),
                  "release": args.release or "", "kind": result.plan.kind,
                  **{f"option.{k}": json.dumps(v, default=str) if not isinstance(v, str) else v
                     for k, v in args.study_options().items() if k not in ("reference", "targets")},
                  **{f"fingerprint.{k}": ",".join(v) for k, v in (fingerprints or {}).items() if v}}
        stamp = int(run.info.start_time)
        metrics = []
        for row in result.rows:
            name = metric_name(str(row["target"]), str(row["study"]), str(row["key"]))
            for suffix, v in (("", row.get("value")), ("/low", row.get("low")), ("/high", row.get("high")),
                              ("/n", row.get("n"))):
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
                    metrics.append(Metric(name + suffix, float(v), stamp, 0))
        client.log_batch(run_id, metrics=metrics,
                         params=[Param(metric_name(k), str(v)[:MAX_PARAM]) for k, v in params.items()],
                         tags=[RunTag("perturblab.findings", json.dumps(result.to_json().get("findings"),
                                                                        default=str)[:MAX_PARAM])])
        with tempfile.TemporaryDirectory() as tmp:
            where = out if out is not None else Path(tmp)
            if out is None:
                result.save(where)
            for name in ("compare.json", "report.html"):
                if (where / name).is_file():
                    client.log_artifact(run_id, str(where / name))
        status = "FINISHED"
    finally:
        try:
            client.set_terminated(run_id, status=status)
        except Exception:  # noqa: BLE001 - the store's fault: said by the error that ended the run
            if status == "FINISHED":
                raise
    return run_id
