"""The layers of several targets on an executor elsewhere (a cluster): each target's run is one
work cell, so the comparison runs them at once, each study waiting on its own cell, and writes
what a local run writes, in the plan's order; on a cluster larger than this machine, the plan
sizes layers for the cells it has at once (one per target), not for every CPU."""

from __future__ import annotations

import threading

import pytest
from helpers.compare import args_of
from helpers.tiny_bert import save_bert, write_csv

import perturblab as pl
from perturblab.core.executor import LocalExecutor
from perturblab.testing import contents


class Elsewhere(LocalExecutor):
    """Cells run in the calling thread, as a cluster's would be waited on; each layers cell
    waits (up to 60 s) until ``width`` of them are in flight at once, so a comparison that ran its
    layers one after the other fails here."""

    name = "elsewhere"

    def __init__(self, width: int) -> None:
        super().__init__(1)
        self.barrier, self.seen = threading.Barrier(width, timeout=60), []

    def run(self, cells):
        for cell in cells:
            if cell.key.startswith("similarity"):
                self.seen.append(threading.current_thread().name)
                self.barrier.wait()  # raises BrokenBarrierError when the others never come
            yield cell, cell.fn()


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs", "home")
def test_the_layers_of_several_targets_run_at_once_and_write_the_local_bytes(tmp_path):
    """Both cells start together (the executor's barrier) and compute the reference's states at
    once, each writing the same chunks of the state cache: the outputs are a local run's."""
    from perturblab.models import resolve
    from perturblab.models.states import clear_states_cache
    ref, a, b = (str(save_bert(tmp_path / f"m{seed}", seed)) for seed in (0, 1, 2))
    kw = dict(reference=ref, targets=f"a={a},b={b}", studies="layers", budget="10m", quiet=True,
              data=write_csv(tmp_path / "data.csv", 40))
    local = pl.compare(out=tmp_path / "local", **kw)
    local.save(tmp_path / "local")
    clear_states_cache()  # the cells compute the states again (in this test's own home)
    executor, loads = Elsewhere(2), []

    def counted(ms, role, *rest, load=resolve._load):
        loads.append((ms.source, role))
        return load(ms, role, *rest)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(resolve, "_load", counted)
        there = pl.compare(out=tmp_path / "there", executor=executor, **kw)
    # the reference is shared by both studies at once: loaded once, as each target
    assert sorted(loads) == sorted({(m, "encoder") for m in (ref, a, b)}), loads
    there.save(tmp_path / "there")
    assert len(executor.seen) == 2 and len(set(executor.seen)) == 2  # each study in a thread of its own
    assert all(name.startswith("perturblab-study") for name in executor.seen)
    assert list(there.results) == list(local.results) == ["layers-a", "layers-b"]
    assert list(there.seconds) == ["layers-a", "layers-b"]
    assert contents(tmp_path / "there") == contents(tmp_path / "local")


def test_a_study_that_fails_among_those_at_once_fails_the_comparison_after_the_others_stop():
    """The other studies of the group finish (and keep what they stored) before the failure is
    raised; the results stay in the plan's order."""
    from types import SimpleNamespace as S

    from perturblab.studies.compare import function

    finished = []

    def run_planned(result, p, options, planned=None, nodes=True):
        assert nodes is False  # the group says where its cells ran
        if p.name == "layers-a":
            raise RuntimeError("the first study failed")
        threading.Event().wait(0.2)
        finished.append(p.name)
        result.results[p.name], result.seconds[p.name] = p.name, 0.2

    result = S(results={}, seconds={}, executor=S(name="elsewhere"), args=S(quiet=True))
    group = [S(name="layers-a"), S(name="layers-b"), S(name="layers-c")]
    mp = pytest.MonkeyPatch()
    mp.setattr(function, "run_planned", run_planned)
    try:
        with pytest.raises(RuntimeError, match="the first study failed"):
            function.run_together(result, group, {p.name: None for p in group})
    finally:
        mp.undo()
    assert sorted(finished) == ["layers-b", "layers-c"]


def test_a_cluster_sizes_layers_for_the_cells_it_runs_at_once(monkeypatch):
    """From a machine of 2 cores, joined to 32 CPUs: invariances and robustness gain 16 times (their
    cells are many), layers as many times as it has runs at once over 2 (one cell per target):
    none with one target, 5 with ten; a cluster smaller than the targets caps it."""
    import os

    from perturblab.studies.compare.plan import make_plan

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    one = args_of(reference="minilm-l6", targets="minilm-l3", budget="10m")
    ten = args_of(reference="minilm-l6", targets=",".join(f"t{i}=minilm-l3" for i in range(10)), budget="60m")
    for args, cpus, factor in ((one, 32.0, 1.0), (ten, 32.0, 5.0), (ten, 8.0, 4.0), (ten, 2.0, 1.0)):
        here = {p.name: p for p in make_plan(args).studies}
        plan = make_plan(args, cluster=(f"Ray ({cpus:g} CPUs)", cpus))
        there = {p.name: p for p in plan.studies}
        layers = [name for name in here if name.startswith("layers")]
        assert layers and all(there[n].per_sample == pytest.approx(here[n].per_sample / factor, rel=1e-12)
                              for n in layers), (cpus, factor)
        many = max(1.0, cpus / 2)
        assert there["invariances"].per_sample == pytest.approx(here["invariances"].per_sample / many, rel=1e-12)
        said = [n for n in plan.notes if n.startswith(f"on Ray ({cpus:g} CPUs): layers")]
        if factor > 1:
            assert said == [f"on Ray ({cpus:g} CPUs): layers sized for {factor:g} times this machine's 2 cores "
                            "(its 10 runs go there at once, 1 cell each)"]
        else:
            assert not said


def test_the_line_names_a_part_run_per_target_once():
    """Before the first study the command says which studies' cells run on the cluster: the layers
    of three targets are one part, named once."""
    from types import SimpleNamespace as S

    from perturblab.studies.compare.cluster import executor_line
    from perturblab.studies.compare.plan import make_plan

    plan = make_plan(args_of(reference="minilm-l6", targets="a=minilm-l3,b=minilm-l3,c=minilm-l3"))
    assert [p.name for p in plan.studies] == ["invariances", "robustness", "layers-a", "layers-b", "layers-c"]
    assert executor_line(S(name="ray", resources=lambda: "Ray (2 nodes, 8 CPUs)"), plan) == (
        "on Ray (2 nodes, 8 CPUs): the cells of invariances, robustness and layers run there")


def test_an_interrupted_comparison_does_not_wait_for_the_studies_it_runs_at_once():
    """Ctrl-C (a KeyboardInterrupt in the main thread) while studies run at once: the comparison
    raises within a moment, not when their cells finish; their threads end with the process."""
    import _thread
    import time
    from types import SimpleNamespace as S

    from perturblab.studies.compare import function

    release, started = threading.Event(), threading.Barrier(3, timeout=30)

    def run_planned(result, p, options, planned=None, nodes=True):
        started.wait()
        release.wait(60)  # a cell that takes long on the cluster

    result = S(results={}, seconds={}, executor=S(name="elsewhere"), args=S(quiet=True))
    group = [S(name="layers-a"), S(name="layers-b")]

    def interrupt():
        started.wait()
        time.sleep(0.2)
        _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    mp = pytest.MonkeyPatch()
    mp.setattr(function, "run_planned", run_planned)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            function.run_together(result, group, {p.name: None for p in group})
        assert time.monotonic() - t0 < 10  # not the minute the studies still take
    finally:
        release.set()
        mp.undo()
