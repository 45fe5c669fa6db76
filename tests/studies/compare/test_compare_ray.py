"""``compare --executor ray``: the cells of its studies run as Ray tasks, on a local Ray instance
or a cluster of several nodes (Ray's own cluster utilities start each node's raylet as a process
of its own on this machine), and the comparison writes the bytes a local run writes; a worker
killed in the middle of a cell is retried with nothing lost or stored twice, and a cluster that
cannot be reached is refused before any work."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time

import pytest
from helpers.faults import closed_port, one_error_line

import perturblab as pl
from perturblab.cli import main
from perturblab.testing import contents

#: ten targets, each the bag of words under a name of its own, against the bag of words: one job
TARGETS = ",".join(f"t{i}=tfidf-lr" for i in range(10))
SMALL = dict(reference="tfidf-lr", studies="invariances,robustness", budget="10m", quiet=True)


def test_an_unreachable_cluster_is_refused_in_one_line_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--executor", "ray", "--address",
            f"127.0.0.1:{closed_port()}", "--out", str(out), "--quiet"]
    t0 = time.time()
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "could not reach the Ray cluster" in line and time.time() - t0 < 30
    assert not out.exists()  # refused before any model was timed or any directory made


def _stores(out) -> dict[str, dict[tuple[str, str], str]]:
    """Each study's stored cells: folder -> (namespace, key) -> result."""
    found = {}
    for db in sorted(out.glob("*/results.sqlite")):
        con = sqlite3.connect(db)
        try:
            found[db.parent.name] = {(s, k): r for s, k, r in con.execute("SELECT study, key, result FROM cells")}
        finally:
            con.close()
    return found


class _Killer(threading.Thread):
    """Kills, once, the first Ray worker process it finds running a cell (``ray::_run_cell``)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.killed: int | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.is_set() and self.killed is None:
            for proc in psutil.process_iter(["pid", "name", "cmdline"]):
                title = " ".join([proc.info["name"] or "", *(proc.info["cmdline"] or [])])
                if "ray::_run_cell" in title:
                    try:
                        os.kill(proc.info["pid"], signal.SIGKILL)
                        self.killed = proc.info["pid"]
                    except ProcessLookupError:
                        continue
                    break
            time.sleep(0.005)


@pytest.mark.slow  # a three-node Ray cluster, two comparisons of ten targets: about two minutes on 2 cores
def test_ten_targets_on_a_three_node_cluster_write_the_local_bytes_even_when_a_worker_is_killed(
        tmp_path, tiny_costs):
    """Ten targets as one comparison on a cluster of three nodes (a head and two workers, one CPU
    each): every verdict, check, study file and stored cell is the local run's, although one
    worker was killed in the middle of a cell (Ray ran the cell again; nothing is stored twice),
    and the history gets one release holding every target."""
    from ray.cluster_utils import Cluster

    local = pl.compare(targets=TARGETS, out=tmp_path / "local", **SMALL)
    local.save(tmp_path / "local")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    killer = _Killer()
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        killer.start()
        on_ray = pl.compare(targets=TARGETS, out=tmp_path / "ray", executor="ray", address=cluster.address,
                            history=str(tmp_path / "h.sqlite"), release="r1", **SMALL)
        on_ray.save(tmp_path / "ray")
    finally:
        killer.stop.set()
        cluster.shutdown()
    assert killer.killed is not None, "no worker was caught running a cell"
    assert local.args.target_labels() == [f"t{i}" for i in range(10)]
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert _stores(tmp_path / "ray") == _stores(tmp_path / "local")
    assert [v.target for v in on_ray.verdicts] == [v.target for v in local.verdicts]
    with sqlite3.connect(tmp_path / "h.sqlite") as con:
        releases = [r[0] for r in con.execute("SELECT label FROM releases")]
    assert releases == ["r1"]
    saved = json.loads((tmp_path / "ray" / "compare.json").read_text())
    assert sorted({v["target"] for v in saved["verdicts"]}) == sorted(f"t{i}" for i in range(10))


@pytest.mark.slow  # a local Ray instance: about a minute on 2 cores
def test_the_command_on_a_local_ray_instance_says_where_cells_run_and_writes_the_local_bytes(tmp_path, tiny_costs,
                                                                                            capsys):
    argv = ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3,twin=tfidf-lr", "--budget", "10m"]
    assert main([*argv, "--out", str(tmp_path / "local"), "--quiet"]) == 0
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "ray"), "--executor", "ray", "--num-cpus", "2"]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("on Ray (")]
    assert line == "on Ray (1 node, 2 CPUs): the cells of invariances and robustness run there", line
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert _stores(tmp_path / "ray") == _stores(tmp_path / "local")


def test_the_line_names_the_studies_whose_cells_run_on_the_executor():
    """Which studies of a plan run their cells on the executor: those whose options take one
    (invariances, robustness); layers runs here."""
    from helpers.compare import args_of

    from perturblab.studies.compare.function import executor_line, on_executor
    from perturblab.studies.compare.plan import make_plan

    class Cluster:
        name = "ray"

        def resources(self):
            return "Ray (4 nodes, 32 CPUs)"

    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3"))
    assert [p.name for p in plan.studies] == ["invariances", "robustness", "layers"]
    assert [on_executor(p.kind) for p in plan.studies] == [True, True, False]
    assert executor_line(Cluster(), plan) == ("on Ray (4 nodes, 32 CPUs): the cells of invariances and robustness "
                                              "run there; layers here")
