"""A comparison logged as an MLflow run, for teams whose releases are tracked there.

One run per comparison, in the experiment ``perturblab compare`` (created when new): its
parameters are the reference, the targets and the options; each target's estimate is a metric
named ``<target>/<study>/<key>`` with its interval's ends (``…/low``, ``…/high``) and its n
(``…/n``); ``compare.json`` and ``report.html`` are its artifacts (beside the database of a
``sqlite:///`` store, in ``mlartifacts/``). Names keep MLflow's allowed
characters (letters, digits, ``_ - . / :`` and space); others become ``_``.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from ...errors import InputError

#: the MLflow experiment of the comparisons
EXPERIMENT = "perturblab compare"
#: MLflow's longest parameter value
MAX_PARAM = 6000


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
        raise InputError(f"--mlflow {uri}: needs MLflow; install perturblab[mlflow] (mlflow-skinny)") from None
    for name in ("mlflow", "alembic"):  # their INFO lines on creating a store are not ours to print
        logging.getLogger(name).setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=uri)


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
    """The id of the experiment :data:`EXPERIMENT` at tracking ``uri`` (created when new);
    :class:`InputError` when the store cannot be opened. A comparison calls it before any work."""
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
        raise InputError(f"--mlflow {uri}: cannot open the tracking store ({str(e).splitlines()[0]}); give a "
                         "tracking URI such as sqlite:///mlflow.db or http://host:5000") from None


def log_compare(uri: str, result: Any, out: Path | None, *,
                fingerprints: dict[str, list[str]] | None = None) -> str:
    """Log ``result`` (a :class:`~.function.CompareResult`) as one MLflow run at tracking
    ``uri``, with ``out/compare.json`` and ``out/report.html`` as artifacts (saved into a
    temporary directory when ``out`` is None); returns the run's id."""
    from mlflow.entities import Metric, Param, RunTag

    client, exp_id = _experiment(uri)
    args = result.args
    run = client.create_run(exp_id, run_name=args.release or f"{', '.join(args.target_labels())} vs "
                                                             f"{args.reference_name()}",
                            tags={"perturblab.reference": args.reference_name(),
                                  "perturblab.targets": ",".join(args.target_labels()),
                                  "perturblab.passed": str(result.passed)})
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
        client.set_terminated(run_id, status=status)
    return run_id
