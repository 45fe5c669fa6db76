"""The one driver of every study: lock, store, content-keyed resume, progress, executor.

:func:`run_study` runs a :class:`~.study.Study` into an output directory:

* it first lets the study refuse input that cannot run (:meth:`~.study.Study.check`), before
  anything is written or loaded;
* it holds the directory's lock (:func:`~.lock.output_lock`) for the whole run, so a second
  process on the same directory is refused;
* it opens the results store (``results.sqlite``), registers the run under a content id (the
  hash of :meth:`Study.identity`) and records the finished rows under it;
* for each phase it computes only the tasks whose content keys the store lacks, hands them to
  the executor in batches (local, threads or Ray), and writes every finished batch in one
  transaction as it arrives, so a killed run loses at most the batches in flight and a re-run
  recomputes exactly what changed;
* it shows a progress bar with ETA per phase (and one line for each slow set-up step), and
  nothing of the libraries it calls unless the log is verbose (:mod:`.console`); a cell that runs
  in this process moves the bar as its work says how far it is (:func:`~.console.advance`), by at
  most its own tasks, so the bar moves within a cell of many samples, not only when it ends;
* it records the faults of every API model used during the run
  (:func:`~.faults.faults_recorded`) and writes them, per model and redacted,
  to ``faults.json`` beside the results, also when the run fails (the failure's cause is there).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, Hashable, Iterator

from .console import bar_name, libraries_quiet, progress_bar, reporting
from .executor import Cell, LocalExecutor
from .faults import faults_recorded
from .keys import content_key
from .lock import output_lock
from .study import Lazy, Phase, RunContext, Study, StudyResult

STORE_NAME = "results.sqlite"
log = logging.getLogger(__name__)


def run_study(study: Study, out: str | Path, *, executor: Any = None, progress: bool = True,
              lock: bool = True) -> StudyResult:
    """Run (or resume) ``study`` into ``out``; returns its result (nothing is written but the
    store: the caller saves the result's files with :meth:`StudyResult.save`).

    ``executor`` is a :mod:`perturblab.core.executor` executor (default: one cell after the other in
    this thread). ``lock=False`` leaves locking to a caller that already holds the directory.
    """
    from .store import ResultStore

    out = Path(out)
    study.check()  # bad input fails here: no lock file, no results store, no model loaded
    ex = executor if executor is not None else LocalExecutor(1)
    with libraries_quiet(), output_lock(out, what=f"the {study.name} study") if lock else nullcontext(out):
        with _unused_store_removed(out / STORE_NAME) as started, ResultStore(out / STORE_NAME) as store, \
                faults_recorded(out):
            ctx = RunContext(out, store, ex, progress)
            study.prepare(ctx)
            identity = study.identity()
            ctx.run_id = content_key(study.name, identity)
            store.start_run(ctx.run_id, study.name, identity)
            started.append(ctx.run_id)
            for phase in study.phases(ctx):
                run_phase(phase, ctx)
            result = study.finish(ctx)
            result.run_id = ctx.run_id
            store.set_rows(ctx.run_id, "rows", result.rows)
    return result


@contextmanager
def _unused_store_removed(path: Path) -> Iterator[list]:
    """A results store this run creates is removed again when the run fails before it started
    (bad data found while preparing leaves no store behind); the block appends to the yielded list
    once the run has started, from when the store keeps its work for a resume."""
    new, started = not path.exists(), []
    try:
        yield started
    except BaseException:
        if new and not started:
            for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                try:
                    p.unlink()
                except OSError:
                    pass
        raise


def run_phase(phase: Phase, ctx: RunContext) -> Phase:
    """Compute the phase's missing tasks on the context's executor and fill ``phase.results``."""
    unique: dict[str, Any] = {}
    for t in phase.tasks:  # one computation per key: the same content asked for twice is the same result
        unique.setdefault(t.key, t)
    keys = list(unique)
    stored = ctx.store.cell_keys(phase.name, keys)
    todo = [t for t in unique.values() if t.key not in stored]
    groups: dict[Hashable, list] = {}
    for t in todo:
        groups.setdefault(t.group, []).append(t)
    cells, cell_keys = [], {}
    size = max(1, int(phase.batch_size))
    bar = progress_bar(len(todo), bar_name(phase.label or phase.name), disable=not ctx.progress or not todo)
    moved = _Moved(bar)
    for group, tasks in groups.items():
        for start in range(0, len(tasks), size):
            chunk = tasks[start:start + size]
            ck = f"{phase.name}|{group}|{chunk[0].key}"
            cell_keys[ck] = [t.key for t in chunk]
            payloads = [t.payload.make() if isinstance(t.payload, Lazy) else t.payload for t in chunk]
            fn = partial(phase.compute, group, payloads)
            if ctx.executor.name == "local":  # here a cell's work moves the bar as it goes
                fn = partial(_reported, partial(moved.within, ck, len(chunk)), fn)
            cells.append(Cell(ck, fn, num_cpus=phase.num_cpus, num_gpus=phase.num_gpus))
    t0 = time.perf_counter()
    try:
        for cell, results in ctx.executor.run(cells):
            ks = cell_keys[cell.key]
            if len(results) != len(ks):
                raise RuntimeError(f"a {phase.name} cell returned {len(results)} results for {len(ks)} tasks")
            ctx.store.add_cells(phase.name, dict(zip(ks, results)))
            moved.finished(cell.key, len(ks))
    finally:
        bar.close()
    if cells:  # what a benchmark of an executor reads (with -v)
        log.debug("phase %s: %d cells of %d tasks in %.2f s on the %s executor", phase.name, len(cells), len(todo),
                  time.perf_counter() - t0, ctx.executor.name)
    phase.computed = len(todo)
    phase.results = ctx.store.cells_of(phase.name, keys)
    return phase


def _reported(to: Any, fn: Any) -> Any:
    """``fn()`` with what its work says of its progress sent ``to`` (:func:`~.console.reporting`)."""
    with reporting(to):
        return fn()


class _Moved:
    """A phase's bar, moved by the shares of tasks its running cells report (each by at most its
    own tasks) and by whole cells as they finish (by what their reports left)."""

    def __init__(self, bar: Any) -> None:
        self.bar, self.lock = bar, threading.Lock()
        self.done = 0  # tasks of finished cells
        self.running: dict[str, float] = {}  # a running cell's reported share of its tasks

    def _show(self) -> None:
        self.bar.update(self.done + sum(self.running.values()) - self.bar.n)

    def within(self, cell: str, tasks: int, share: float) -> None:
        with self.lock:
            self.running[cell] = min(self.running.get(cell, 0.0) + share, tasks - 1e-6)
            self._show()

    def finished(self, cell: str, tasks: int) -> None:
        with self.lock:
            self.running.pop(cell, None)
            self.done += tasks
            self._show()
