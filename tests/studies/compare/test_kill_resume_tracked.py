"""A comparison with ``--history`` and ``--mlflow`` killed (SIGKILL) in the middle and run again
with the same command: its outputs end byte for byte those of a run never killed, the history
holds the release once, and MLflow holds no half run (one killed while it logged is marked
failed by the next comparison). Each run is a process of its own, with the sizes made tiny."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TESTS

from perturblab.history.store import open_history

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed (./setup.sh installs it)")

pytestmark = pytest.mark.slow  # five to six comparisons, each a process of its own

#: a comparison as a process: the least sizes made tiny (the ``tiny_costs`` fixture), and, when
#: the environment says ``KILL_AT=NAME:K``, the process killed by SIGKILL at the K-th call of
#: NAME: ``add_cells`` after a study's results are stored, ``log_artifact`` before an MLflow
#: artifact is logged
DRIVER = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import pytest
from helpers.compare import make_costs_tiny
from perturblab.cli import main
patch = pytest.MonkeyPatch()
make_costs_tiny(patch)
where, _, k = os.environ.get("KILL_AT", "").partition(":")
calls = [0]
def cut(owner, name, after):
    original = getattr(owner, name)
    def call(*a, **kw):
        calls[0] += 1
        if not after and calls[0] == int(k):
            os.kill(os.getpid(), signal.SIGKILL)
        out = original(*a, **kw)
        if after and calls[0] == int(k):
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    patch.setattr(owner, name, call)
if where == "add_cells":
    from perturblab.core.store import ResultStore
    cut(ResultStore, "add_cells", True)
elif where == "log_artifact":
    from mlflow.tracking import MlflowClient
    cut(MlflowClient, "log_artifact", False)
sys.exit(main(sys.argv[2:]))
"""


def _compare(root: Path, history: str, store: str, kill: str = "") -> subprocess.CompletedProcess:
    argv = ["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies",
            "invariances,robustness", "--synonyms", "wordnet", "--budget", "10m", "--out", str(root / "out"),
            "--quiet", "--history", str(root / history), "--release", "r1", "--mlflow", f"sqlite:///{root / store}"]
    env = {**os.environ, "KILL_AT": kill}
    return subprocess.run([sys.executable, "-c", DRIVER, str(TESTS), *argv], env=env,
                          capture_output=True, text=True, timeout=600)


#: what differs between two runs of one comparison: the seconds each study took (the plan's
#: ``"seconds"`` in compare.json) and when the report was made
_WALL_CLOCK = (re.compile(rb'"seconds": [0-9.]+'), re.compile(rb"Generated [0-9: -]+ UTC"))


def _outputs(out: Path) -> dict[str, bytes]:
    """Every output file of a comparison by its path: the results, tables, figures, compare.json
    and the report (wall-clock times blanked); not the locks and the resumable stores of the
    studies' cells (``*.sqlite``), which record when each cell was computed."""
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file() and not p.name.endswith(".lock") and ".sqlite" not in p.name:
            data = p.read_bytes()
            if p.suffix in (".json", ".html"):
                for pattern in _WALL_CLOCK:
                    data = pattern.sub(b"<wall clock>", data)
            files[str(p.relative_to(out))] = data
    return files


def _runs(store: Path) -> list:
    client = mlflow.tracking.MlflowClient(f"sqlite:///{store}")
    exp = client.get_experiment_by_name("perturblab compare")
    return [] if exp is None else sorted(client.search_runs([exp.experiment_id]), key=lambda r: r.info.start_time)


def _estimates(history: Path) -> list[tuple]:
    with open_history(history) as h:
        return [(r.label, [(e["target"], e["study"], e["key"], e["value"], e["low"], e["high"], e["n"])
                           for e in r.estimates]) for r in h.releases(estimates=True)]


@pytest.fixture
def uninterrupted(tmp_path):
    """A run never killed, its outputs moved to ``ref/`` (the runs under test write ``out/``, so
    that the paths the report names are the same)."""
    done = _compare(tmp_path, "base.sqlite", "base.db")
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.move(tmp_path / "out", tmp_path / "ref")
    return tmp_path


def _same_outputs(root: Path) -> None:
    ref, got = _outputs(root / "ref"), _outputs(root / "out")
    assert {"compare.json", "report.html", "invariances/results.json", "robustness/results.json"} <= set(ref)
    assert sorted(got) == sorted(ref)
    for name in ref:
        assert got[name] == ref[name], name
    plan = json.loads((root / "out" / "compare.json").read_text())["plan"]
    assert [p["name"] for p in plan] == ["invariances", "robustness"]


def test_a_compare_killed_in_a_study_and_run_again_ends_as_if_never_killed(uninterrupted):
    root = uninterrupted
    killed = _compare(root, "history.sqlite", "mlflow.db", kill="add_cells:5")  # invariances done, robustness begun
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert (root / "out" / "invariances" / "results.json").is_file()
    assert not (root / "out" / "compare.json").exists() and not (root / "out" / "robustness" / "results.json").exists()
    assert not (root / "history.sqlite").exists() and _runs(root / "mlflow.db") == []  # nothing recorded yet
    again = _compare(root, "history.sqlite", "mlflow.db")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "history: release r1 appended to" in again.stderr
    _same_outputs(root)
    assert _estimates(root / "history.sqlite") == _estimates(root / "base.sqlite")  # one release, the same
    (run,), (ref,) = _runs(root / "mlflow.db"), _runs(root / "base.db")
    assert run.info.status == "FINISHED" and run.info.run_name == "r1"
    assert run.data.metrics == ref.data.metrics and len(run.data.metrics) >= 16
    assert run.data.params == ref.data.params


def test_a_compare_killed_while_it_logs_leaves_a_run_marked_failed_and_one_finished(uninterrupted):
    root = uninterrupted
    killed = _compare(root, "history.sqlite", "mlflow.db", kill="log_artifact:1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert "history: release r1 appended to" in killed.stderr  # the history is written before MLflow
    (half,) = _runs(root / "mlflow.db")
    assert half.info.status == "RUNNING"  # begun, never ended
    again = _compare(root, "history.sqlite", "mlflow.db")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "history: release r1 stored already in" in again.stderr and "warning" not in again.stderr
    _same_outputs(root)
    assert _estimates(root / "history.sqlite") == _estimates(root / "base.sqlite")  # the release once
    first, second = _runs(root / "mlflow.db")
    assert first.info.run_id == half.info.run_id and first.info.status == "FAILED"
    assert second.info.status == "FINISHED" and second.data.metrics == _runs(root / "base.db")[0].data.metrics
    client = mlflow.tracking.MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    assert sorted(a.path for a in client.list_artifacts(second.info.run_id)) == ["compare.json", "report.html"]
