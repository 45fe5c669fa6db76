"""Five releases of a packaged model appended by five ``compare`` runs, two of them at once, to a
SQLite history and an MLflow store; the same five appended to PostgreSQL (their results read
back from the runs' stores); ``history check`` of each release against the accepted first one;
the trend page (slow: about 12 minutes on 2 cores)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.pg_server import new_database

pytestmark = pytest.mark.slow

#: release -> the candidate's model: the reference itself, its int8 copy, MiniLM-L3, then the
#: int8 copy and the reference again, those two at once
RELEASES = {"v1": "minilm-l6", "v2": "minilm-l6-int8", "v3": "minilm-l3", "v4": "minilm-l6-int8", "v5": "minilm-l6"}


def _compare(out: Path, release: str, history: str, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "perturblab.cli", "compare", "--reference", "minilm-l6", "--targets",
            f"candidate={RELEASES[release]}", "--studies", "invariances,robustness", "--budget", "2m",
            "--out", str(out / release), "--quiet", "--history", history, "--release", release, *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _done(*procs: subprocess.Popen) -> None:
    for p in procs:
        o, e = p.communicate(timeout=1800)
        assert p.returncode == 0, (o + e)[-3000:]


def _all(out: Path, history: str, *extra: str, order: list[str] | None = None) -> None:
    """The five comparisons, v4 and v5 at once; or one at a time in ``order``."""
    from perturblab.cli import main

    for release in order or ("v1", "v2", "v3"):
        _done(_compare(out, release, history, *extra))
        if release == "v1":
            assert main(["history", "accept", history, "v1"]) == 0
    if order is None:
        _done(_compare(out, "v4", history, *extra), _compare(out, "v5", history, *extra))  # at once


def test_five_releases_checked_reported_and_logged(tmp_path, pg_url):
    from perturblab.cli import main
    from perturblab.history.store import open_history

    sqlite, uri = str(tmp_path / "history.sqlite"), f"sqlite:///{tmp_path / 'mlflow.db'}"
    _all(tmp_path, sqlite, "--mlflow", uri)
    postgres = new_database(pg_url, "releases")
    with open_history(sqlite) as h:  # the order the two at once were stored in, which the drift test reads
        stored = [r.label for r in h.releases()]
    # the same runs again, in that order: their results read back from the runs' stores, appended to PostgreSQL
    _all(tmp_path, postgres, order=stored)
    checks = {}
    for name, where in (("sqlite", sqlite), ("postgres", postgres)):
        codes, js = {}, {}
        for release in ("v2", "v3", "v4", "v5"):
            path = tmp_path / f"{name}-{release}.json"
            codes[release] = main(["history", "check", where, "--release", release, "--fail-on-regression",
                                   "--json", str(path)])
            js[release] = json.loads(path.read_text())
        assert codes == {"v2": 0, "v3": 1, "v4": 0, "v5": 0}, js
        checks[name] = js
        with open_history(where) as h:
            assert [r.label for r in h.releases()][:3] == ["v1", "v2", "v3"]
            assert sorted(r.label for r in h.releases()) == ["v1", "v2", "v3", "v4", "v5"]
    assert checks["sqlite"] == checks["postgres"]
    regressed = {c["key"] for c in checks["sqlite"]["v3"]["changes"] if c["verdict"] == "regressed"}
    assert "agreement" in regressed
    # the trend page and one MLflow run per release
    page = tmp_path / "trend.html"
    assert main(["history", "report", sqlite, "--out", str(page)]) == 0
    html = page.read_text()
    assert "regressed in v3" in html and html.count("<svg") >= 10
    import mlflow

    client = mlflow.tracking.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("perturblab compare").experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["v1", "v2", "v3", "v4", "v5"]
    assert all(r.info.status == "FINISHED" for r in runs)
