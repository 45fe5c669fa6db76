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
from contextlib import contextmanager

import numpy as np
import pytest
from helpers.faults import closed_port, one_error_line

import perturblab as pl
from perturblab.cli import main
from perturblab.core.executor import RayExecutor
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


@pytest.fixture(scope="module")
def local_ten(tmp_path_factory):
    """The ten targets compared on the local executor (tiny sizes): its folder and result."""
    from helpers.compare import make_costs_tiny

    out = tmp_path_factory.mktemp("local")
    with pytest.MonkeyPatch.context() as mp:
        make_costs_tiny(mp)
        result = pl.compare(targets=TARGETS, out=out, **SMALL)
    result.save(out)
    return out, result


@contextmanager
def three_nodes():
    """A Ray cluster of three nodes on this machine: a head without CPUs and two workers of one
    CPU each (the cells run on the workers; the cluster has this machine's two cores, so the plan
    is the local run's). Yields the cluster and its two worker nodes."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
        cluster.wait_for_nodes()
        yield cluster, workers
    finally:
        cluster.shutdown()


def _on(cluster, out, **kw):
    """The ten targets compared on ``cluster`` into ``out`` (saved); the result and the executor."""
    executor = RayExecutor(address=cluster.address)
    try:
        result = pl.compare(targets=TARGETS, out=out, executor=executor, **SMALL, **kw)
    finally:
        executor.shutdown()
    result.save(out)
    return result, executor


@pytest.mark.slow  # a three-node Ray cluster and a comparison of ten targets: about a minute on 2 cores
def test_ten_targets_on_a_three_node_cluster_write_the_local_bytes_even_when_a_worker_is_killed(
        tmp_path, tiny_costs, local_ten):
    """Ten targets as one comparison on a cluster of three nodes: every verdict, check, study
    file and stored cell is the local run's, although one worker was killed in the middle of a
    cell (Ray ran the cell again; nothing is stored twice), both workers ran cells, and the
    history gets one release holding every target."""
    local, result = local_ten
    killer = _Killer()
    with three_nodes() as (cluster, _):
        killer.start()
        try:
            on_ray, executor = _on(cluster, tmp_path / "ray", history=str(tmp_path / "h.sqlite"), release="r1")
        finally:
            killer.stop.set()
    assert killer.killed is not None, "no worker was caught running a cell"
    assert len(executor.cells_by_node) == 2 and min(executor.cells_by_node.values()) > 0
    assert result.args.target_labels() == [f"t{i}" for i in range(10)]
    assert contents(tmp_path / "ray") == contents(local)
    assert _stores(tmp_path / "ray") == _stores(local)
    assert [v.target for v in on_ray.verdicts] == [v.target for v in result.verdicts]
    with sqlite3.connect(tmp_path / "h.sqlite") as con:
        releases = [r[0] for r in con.execute("SELECT label FROM releases")]
    assert releases == ["r1"]
    saved = json.loads((tmp_path / "ray" / "compare.json").read_text())
    assert sorted({v["target"] for v in saved["verdicts"]}) == sorted(f"t{i}" for i in range(10))


@pytest.mark.slow  # a three-node Ray cluster and a comparison of ten targets: about a minute on 2 cores
def test_a_node_removed_in_the_middle_of_the_run_loses_nothing(tmp_path, tiny_costs, local_ten):
    """One of the two worker nodes is removed once cells ran: its cells run again on the other,
    and the outputs and stores are the local run's."""
    local, _ = local_ten
    with three_nodes() as (cluster, workers):
        executor = RayExecutor(address=cluster.address)
        removed, stop = threading.Event(), threading.Event()

        def remove_one() -> None:
            while not (stop.is_set() or removed.is_set()):
                if sum(executor.cells_by_node.values()) >= 2:
                    cluster.remove_node(workers[1])
                    removed.set()
                time.sleep(0.01)

        remover = threading.Thread(target=remove_one, daemon=True)
        remover.start()
        try:
            result = pl.compare(targets=TARGETS, out=tmp_path / "ray", executor=executor, **SMALL)
        finally:
            stop.set()
            remover.join()
            executor.shutdown()
        result.save(tmp_path / "ray")
        assert removed.is_set(), "the node was not removed during the run"
    assert contents(tmp_path / "ray") == contents(local)
    assert _stores(tmp_path / "ray") == _stores(local)


@contextmanager
def one_thread():
    """This process's torch and numpy's BLAS computing with one thread, as each Ray cell does (the
    cells of a local run, and the models' speeds its plan measures, then compute as on a worker;
    the layers' similarities, sums of float64 products, move in their last bit with BLAS threads)."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(before)


def _local_and_cluster(tmp_path, **kw):
    """The comparison ``kw`` on the local executor and on a three-node cluster (saved in ``local``
    and ``ray``); the executor that ran the cluster's."""
    pl.compare(out=tmp_path / "local", **kw).save(tmp_path / "local")
    with three_nodes() as (cluster, _):
        executor = RayExecutor(address=cluster.address)
        try:
            pl.compare(out=tmp_path / "ray", executor=executor, **kw).save(tmp_path / "ray")
        finally:
            executor.shutdown()
    return executor


def _probabilities(out) -> dict[str, np.ndarray]:
    """The stored predictions of a comparison's invariances, by key."""
    from perturblab.studies.scope.cells import probabilities

    return {key: probabilities(json.loads(result)) for (study, key), result in _stores(out)["invariances"].items()
            if study == "scope.predict"}


@pytest.mark.slow  # a three-node cluster, each worker loading two transformers: about three minutes on 2 cores
def test_transformers_on_a_three_node_cluster_write_the_local_bytes_to_the_last_bit(tmp_path, tiny_costs):
    """MiniLM-L3 against an int8 MiniLM-L6, whose scores move in their last bits with the batch a
    text is scored in and with the threads that compute it: the searches and every model's
    predictions run on the two workers (one thread each), each cell scoring batches of its own
    inputs, and every output file and stored cell, every probability behind Soft-SCoPE to its last
    bit, is a local run's whose torch computes with one thread too. A local run with all of this
    machine's threads stores the same searches, and probabilities within float32 round-off."""
    kw = dict(reference="minilm-l3", targets="q=minilm-l6-int8", studies="invariances,robustness", budget="10m",
              quiet=True)
    with one_thread():
        executor = _local_and_cluster(tmp_path, **kw)
    assert len(executor.cells_by_node) == 2 and min(executor.cells_by_node.values()) > 0
    stores = _stores(tmp_path / "ray")
    assert {study for study, _ in stores["invariances"]} == {"scope.search", "scope.predict"}
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert stores == _stores(tmp_path / "local")

    pl.compare(out=tmp_path / "threads", **kw)  # this machine's threads (the sizes are the same: 8)
    threaded = _stores(tmp_path / "threads")["invariances"]
    assert threaded.keys() == stores["invariances"].keys()
    for key, value in stores["invariances"].items():
        if key[0] == "scope.search":  # the same perturbations; the reference's loss within round-off
            mine, theirs = json.loads(threaded[key]), json.loads(value)
            assert {k: v for k, v in mine.items() if k != "ref_loss"} == {k: v for k, v in theirs.items()
                                                                          if k != "ref_loss"}
            assert (mine["ref_loss"] is None) == (theirs["ref_loss"] is None)
            assert mine["ref_loss"] is None or abs(mine["ref_loss"] - theirs["ref_loss"]) < 1e-6
    many, single = _probabilities(tmp_path / "threads"), _probabilities(tmp_path / "ray")
    # float32 probabilities <= 1: a sum taken in another order moves them by a few units in the last
    # place (2^-24 ~ 6e-8 below 1); measured up to 2.1e-7
    assert max(float(np.abs(many[k] - single[k]).max()) for k in single) < 1e-6


@pytest.mark.slow  # a three-node cluster and a language-model comparison: about three minutes on 2 cores
def test_a_language_model_comparison_on_a_three_node_cluster_writes_the_local_bytes(tmp_path, tiny_costs):
    """SmolLM2 against its int8 copy: lm-invariances runs its searches, pair scores and token
    counts, and selfcheck its chunks of examples, on the two workers (each loads both language
    models once), layers its one cell (each worker loads them as encoders), and every output file and
    stored cell is a local run's
    (torch computing with one thread in this process, as in each Ray cell)."""
    with one_thread():
        executor = _local_and_cluster(tmp_path, reference="smollm2-135m", targets="q=smollm2-135m-int8",
                                      budget="10m", quiet=True)
    assert len(executor.cells_by_node) == 2 and min(executor.cells_by_node.values()) > 0
    assert sorted(p.name for p in (tmp_path / "ray").iterdir() if p.is_dir()) == ["layers", "lm-invariances",
                                                                                 "selfcheck"]
    stores = _stores(tmp_path / "ray")
    assert {study for study, _ in stores["lm-invariances"]} == {"scope-lm.search", "scope-lm.pair",
                                                                "scope-lm.token-acc"}
    assert {study for study, _ in stores["selfcheck"]} == {"selfcheck.score"}
    assert {study for study, _ in stores["layers"]} == {"similarity.matrix"}
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert stores == _stores(tmp_path / "local")


#: a comparison run by a driver of its own (tiny sizes), to be killed
DRIVER = """
import sys
import pytest
from helpers.compare import make_costs_tiny
from perturblab.cli import main
make_costs_tiny(pytest.MonkeyPatch())
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # a three-node Ray cluster, a killed driver and its resumption: about a minute on 2 cores
def test_a_driver_killed_in_the_middle_of_the_run_resumes_from_the_stores(tmp_path, tiny_costs, local_ten):
    """The driver (``perturblab compare`` itself) is killed once cells were stored; the same
    comparison run again reads them back (each stored cell as it was) and writes the local run's
    outputs and stores."""
    import subprocess
    import sys
    from pathlib import Path

    local, _ = local_ten
    out = tmp_path / "ray"
    tests = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    with three_nodes() as (cluster, _):
        argv = ["compare", "--reference", "tfidf-lr", "--targets", TARGETS, "--studies", "invariances,robustness",
                "--budget", "10m", "--executor", "ray", "--address", cluster.address, "--out", str(out), "--quiet"]
        driver = subprocess.Popen([sys.executable, "-c", DRIVER, *argv], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        stored: dict = {}
        try:
            deadline = time.time() + 240
            while driver.poll() is None and time.time() < deadline:
                try:
                    stored = _stores(out)
                except sqlite3.Error:  # a store being created
                    stored = {}
                if sum(len(cells) for cells in stored.values()) >= 5:
                    break
                time.sleep(0.05)
        finally:
            driver.kill()
            driver.wait()
        stored = _stores(out)
        assert sum(len(cells) for cells in stored.values()) >= 5 and not (out / "compare.json").exists()
        _on(cluster, out)
    after = _stores(out)
    assert all(after[study][key] == value for study, cells in stored.items() for key, value in cells.items())
    assert contents(out) == contents(local)
    assert after == _stores(local)


@pytest.mark.slow  # a local Ray instance, three comparisons: about a minute on 2 cores
def test_the_command_on_a_local_ray_instance_says_where_cells_run_and_writes_the_local_bytes(tmp_path, tiny_costs,
                                                                                            capsys):
    """The command and a config on a local Ray instance: the line that says where cells run, the
    cells per node, and the bytes of a local run (torch computing with one thread in this process,
    as in each Ray cell: the MiniLM target's probabilities move in their last bits with threads)."""
    with one_thread():
        _command_on_a_local_ray_instance(tmp_path, capsys)


def _command_on_a_local_ray_instance(tmp_path, capsys):
    argv = ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3,twin=tfidf-lr", "--budget", "10m"]
    assert main([*argv, "--out", str(tmp_path / "local"), "--quiet"]) == 0
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "ray"), "--executor", "ray", "--num-cpus", "2"]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("on Ray (")]
    assert line == "on Ray (1 node, 2 CPUs): the cells of invariances and robustness run there", line
    for study in ("invariances", "robustness"):  # how many cells each node ran, after each study
        (ran,) = [x for x in err.splitlines() if x.startswith(f"{study}: ") and " cells on 1 Ray node: " in x]
        count, node = int(ran.split()[1]), ran.rsplit(": ", 1)[1].split()
        assert count > 0 and len(node[0]) == 8 and int(node[1]) == count, ran
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert _stores(tmp_path / "ray") == _stores(tmp_path / "local")
    # a study config's executor gives its compare entry the same
    (tmp_path / "c.yaml").write_text("executor: {kind: ray, num_cpus: 2}\nstudies:\n  - name: cmp\n    kind: compare\n"
                                     "    reference: tfidf-lr\n    targets: [minilm-l3, twin=tfidf-lr]\n"
                                     "    budget: 10m\n")
    assert main(["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "cfg")]) == 0
    assert "on Ray (1 node, 2 CPUs): the cells of invariances and robustness run there" in capsys.readouterr().err
    assert contents(tmp_path / "cfg" / "cmp") == contents(tmp_path / "local")


def test_the_line_names_the_studies_whose_cells_run_on_the_executor():
    """Which studies of a plan run their cells on the executor: those whose options take one (every
    built-in part: invariances, robustness, layers, lm-invariances, selfcheck); the line lists three
    or more names with commas, and names those that run here."""
    from types import SimpleNamespace

    from helpers.compare import args_of

    from perturblab.studies.compare.cluster import executor_line, on_executor
    from perturblab.studies.compare.plan import make_plan

    class Cluster:
        name = "ray"

        def resources(self):
            return "Ray (4 nodes, 32 CPUs)"

    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3"))
    assert [p.name for p in plan.studies] == ["invariances", "robustness", "layers"]
    assert [on_executor(p.kind) for p in plan.studies] == [True, True, True]
    assert executor_line(Cluster(), plan) == ("on Ray (4 nodes, 32 CPUs): the cells of invariances, robustness and "
                                              "layers run there")
    lm = make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8"))
    assert [(p.name, on_executor(p.kind)) for p in lm.studies] == [("lm-invariances", True), ("selfcheck", True),
                                                                   ("layers", True)]
    assert executor_line(Cluster(), lm) == ("on Ray (4 nodes, 32 CPUs): the cells of lm-invariances, selfcheck and "
                                            "layers run there")
    here = SimpleNamespace(studies=[*plan.studies[:2], SimpleNamespace(name="own", kind="generation")])
    assert executor_line(Cluster(), here) == ("on Ray (4 nodes, 32 CPUs): the cells of invariances and robustness "
                                              "run there; own here")
    three = SimpleNamespace(studies=[*plan.studies[:2], SimpleNamespace(name="lm-invariances", kind="scope-lm")])
    assert executor_line(Cluster(), three) == ("on Ray (4 nodes, 32 CPUs): the cells of invariances, robustness and "
                                               "lm-invariances run there")


def test_a_cluster_with_more_cores_than_this_machine_sizes_its_studies_for_them(monkeypatch):
    """Joined to a cluster of 32 CPUs from a machine of 2 cores, the studies whose cells run there
    get 16 times the seconds per sample (a larger n for the same budget, the same seconds per
    sample over 16), the others none, and the plan says so; a cluster of this machine's cores
    leaves the plan as it is."""
    import os

    from helpers.compare import args_of

    from perturblab.studies.compare.plan import make_plan

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    args = args_of(reference="minilm-l6", targets="minilm-l3", budget="10m")
    here = {p.name: p for p in make_plan(args).studies}
    big = make_plan(args, cluster=("Ray (4 nodes, 32 CPUs)", 32.0))
    there = {p.name: p for p in big.studies}
    for name in ("invariances", "robustness"):
        assert there[name].per_sample == pytest.approx(here[name].per_sample / 16, rel=1e-12)
        assert there[name].count >= here[name].count
    assert there["invariances"].count > here["invariances"].count  # the budget buys more there
    assert there["layers"].per_sample == pytest.approx(here["layers"].per_sample, rel=1e-12)
    assert ("on Ray (4 nodes, 32 CPUs): invariances and robustness sized for 16 times this machine's 2 cores "
            "(their cells run there at once)") in big.notes
    same = make_plan(args, cluster=("Ray (2 nodes, 2 CPUs)", 2.0))
    assert same.table() == make_plan(args).table()


@pytest.mark.slow
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA: each cell reserves a GPU")
def test_on_cuda_each_cell_reserves_a_gpu_and_writes_the_local_bytes(tmp_path, tiny_costs):
    """With ``--device cuda`` every Ray cell reserves one GPU, and the comparison's files are those
    of the local executor on the same device."""
    argv = ["compare", "--reference", "minilm-l3", "--targets", "minilm-l6", "--studies", "robustness",
            "--budget", "10m", "--device", "cuda", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    executor = RayExecutor()
    try:
        pl.compare("minilm-l3", "minilm-l6", studies="robustness", budget="10m", device="cuda", quiet=True,
                   executor=executor, out=tmp_path / "ray").save(tmp_path / "ray")
        import ray

        assert ray.cluster_resources().get("GPU", 0) >= 1
    finally:
        executor.shutdown()
    assert sum(executor.cells_by_node.values()) > 0
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
