"""Where a study's work cells run: in this process (default) or on a Ray cluster.

A study splits its grid (model × perturbation × seed, reference × capability × trial, …) into
:class:`Cell` objects: a key, a function of no arguments that *computes* a result, and the CPUs /
GPUs it needs. An :class:`Executor` runs the cells and yields ``(cell, result)`` pairs as they
finish. Cells never write the results store: the study's calling thread writes every result it
receives, in one transaction per cell, keyed by the cell's key. So a result is either stored
whole or not at all (a killed run loses at most the cells in flight, which the next run
recomputes), and no key is stored twice. Because every cell is deterministic for its seeds and
inputs (it scores batches made from its own inputs) and studies assemble their outputs in key
order, not completion order, a Ray run writes the same bytes as a local run whose cells compute
with the same intra-op threads (a Ray cell: one per CPU it reserves); a transformer's scores
can move in their last bits with the threads (docs/cluster.md).

* :class:`LocalExecutor` — ``workers=1`` runs cells one after the other in this thread;
  ``workers=N`` runs N at once in threads, each with ``torch.get_num_threads() // N`` intra-op
  threads (cell functions must then be thread-safe; the built-in ones are).
* :class:`RayExecutor` — one Ray task per cell with ``num_cpus``/``num_gpus`` from the cell, and a
  GPU per cell where the command places its models on CUDA (:func:`gpus_per_cell`); each worker
  runs its cells with the driver's placement.
  ``address=None`` starts a local Ray instance (``num_cpus`` caps it), ``"auto"`` or
  ``"ray://host:10001"`` joins a cluster whose workers have perturblab installed. Each task runs
  torch with as many intra-op threads as the cell's CPUs.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol, Sequence

from ..errors import InputError
from . import placement

log = logging.getLogger(__name__)
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class Cell:
    """One unit of work: ``fn()`` computes a JSON-able result (it must not write the store)."""

    key: str
    fn: Callable[[], Any]
    num_cpus: float = 1.0
    num_gpus: float = 0.0


class Executor(Protocol):
    """Runs cells; yields ``(cell, result)`` as each finishes (in any order)."""

    name: str

    def run(self, cells: Sequence[Cell]) -> Iterator[tuple[Cell, Any]]: ...


def _check_keys(cells: Sequence[Cell]) -> None:
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"cell keys must be unique; repeated: {dup[:5]}")


class LocalExecutor:
    """Cells in this process: inline (``workers=1``) or on a thread pool."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise InputError(f"workers must be a positive integer, got {workers!r}")
        self.workers = workers

    def __repr__(self) -> str:
        return f"LocalExecutor(workers={self.workers})"

    def run(self, cells: Sequence[Cell]) -> Iterator[tuple[Cell, Any]]:
        _check_keys(cells)
        if self.workers == 1 or len(cells) <= 1:
            for cell in cells:
                yield cell, cell.fn()
            return
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(max(1, before // self.workers))
        try:
            with ThreadPoolExecutor(self.workers) as pool:
                # each thread runs its cell in the driver's context (a command's model placement)
                futures = {pool.submit(contextvars.copy_context().run, c.fn): c for c in cells}
                try:
                    for f in as_completed(futures):
                        yield futures[f], f.result()
                finally:
                    for f in futures:
                        f.cancel()
        finally:
            torch.set_num_threads(before)


_PROCESS_MEMO: dict[tuple, tuple[str | None, Any]] = {}  # key -> (fingerprint, object)
_PROCESS_MEMO_LOCK = threading.Lock()


def once_per_process(key: tuple, make: Callable[[], Any], *, fingerprint: str | None, what: str = "the model") -> Any:
    """``make()`` the first time ``key`` is asked for in this process, the same object after:
    how a cell on a worker loads a model it names once, whatever number of cells use it.

    A model is kept under ``key`` *and* ``fingerprint``, the fingerprint the driver computed for
    it (its results are stored under it): a worker that outlives a run (a joined cluster's) never
    serves a model loaded for another fingerprint under the same name, and the object ``make()``
    returns must have that ``fingerprint``, else :class:`InputError` (this process would compute
    with other weights than the driver's: the files changed during the run, or differ on this
    machine). ``fingerprint=None`` is for objects that are not models."""
    with _PROCESS_MEMO_LOCK:
        held = _PROCESS_MEMO.get(key)
        if held is not None and held[0] == fingerprint:
            return held[1]
        obj = make()
        if fingerprint is not None:
            got = getattr(obj, "fingerprint", None)
            if got != fingerprint:
                raise InputError(f"{what} loaded in process {os.getpid()} has "
                                 f"fingerprint {got!r}, but the run's is {fingerprint!r}: this worker sees other "
                                 "weights than the driver (the files changed during the run, or differ on this "
                                 "machine); make the same model files available to every worker, or run with "
                                 "--executor local")
        _PROCESS_MEMO[key] = (fingerprint, obj)  # a model of another fingerprint under this key is let go
        return obj


#: what a worker process must share with the driver before it runs a cell (e.g. the models defined
#: by name): ``(snapshot, restore)`` pairs, registered by the modules that hold such state
_WORKER_STATE: list[tuple[Callable[[], Any], Callable[[Any], None]]] = []


def share_with_workers(snapshot: Callable[[], Any], restore: Callable[[Any], None]) -> None:
    """Register state a worker process needs: ``snapshot()`` is taken in the driver when cells are
    sent, ``restore(state)`` runs in the worker before each cell. The executor knows nothing of
    what the state is (it is registered by the module that owns it)."""
    if (snapshot, restore) not in _WORKER_STATE:
        _WORKER_STATE.append((snapshot, restore))


# the models a worker's cells load go where the driver's command placed them (--device / --dtype)
share_with_workers(placement.defaults, placement.restore)


def _run_cell(fn: Callable[[], Any], num_cpus: float, state: list[tuple[Callable[[Any], None], Any]]) -> Any:
    """Body of a Ray task: the driver's shared state is restored (:func:`share_with_workers`),
    torch gets the cell's CPUs as intra-op threads; returns the node it ran on (the first 8
    characters of its id; "" outside Ray) and the cell's result."""
    import ray

    for restore, value in state:
        restore(value)
    try:
        import torch

        torch.set_num_threads(max(1, int(num_cpus)))
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    node = ray.get_runtime_context().get_node_id()[:8] if ray.is_initialized() else ""
    return node, fn()


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """Refuse a Ray ``address`` (``host:port`` or ``ray://host:port``; ``auto`` and ``local`` are left
    to Ray) whose port takes no connection within ``timeout`` seconds: Ray itself keeps retrying an
    unreachable cluster for minutes before it gives up."""
    import socket

    text = address.strip()
    if text.lower() in ("auto", "local"):
        return
    host, _, port = text.split("://", 1)[-1].rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise InputError(f"--address {address!r} is not HOST:PORT or ray://HOST:PORT (or 'auto' for a cluster "
                         "started on this machine)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise InputError(f"could not reach the Ray cluster at --address {address!r} ({e}); check that it runs and "
                         "the address, or drop --address to start a local instance") from None


class RayExecutor:
    """Cells as Ray tasks (see the module docstring). Needs ``pip install 'perturblab[ray]'``."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 max_in_flight: int | None = None) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise InputError("the Ray executor needs Ray: pip install 'perturblab[ray]' (or pip install ray), "
                             "or use --executor local") from None
        self.address, self.num_cpus = address, num_cpus
        self.max_in_flight = max_in_flight
        self._started, self._closed = False, False
        self._lock = threading.Lock()  # a comparison runs several studies' cells at once, from threads
        #: the cells each node ran (by the first 8 characters of its id), over this executor's life
        self.cells_by_node: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus})"

    def start(self) -> None:
        """Start or join Ray now (:meth:`run` does it at its first cells otherwise)."""
        import ray

        with self._lock:
            self._check_open()
            if not ray.is_initialized():
                self._start(ray)

    def _start(self, ray: Any) -> None:
        from .console import verbose

        # Ray's own lines (its start, its token authentication) only with -v
        kw: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False, "include_dashboard": False,
                              "logging_level": logging.INFO if verbose() else logging.ERROR}
        if self.address:
            check_reachable(self.address)
            kw["address"] = self.address
        elif self.num_cpus:
            kw["num_cpus"] = self.num_cpus
        try:
            ray.init(**kw)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise InputError(f"could not start or join Ray (address={self.address!r}): {e}; check --address, "
                             "or drop it to start a local instance") from e
        self._started = True

    def _check_open(self) -> None:
        if self._closed:  # a study still running in a thread of an interrupted comparison
            raise RuntimeError("this Ray executor was shut down; make a new one")

    def resources(self) -> str:
        """The cluster in words, starting or joining it first: ``Ray (3 nodes, 6 CPUs)`` (and
        its GPUs, where it has some)."""
        return self.cluster()[0]

    def cluster(self) -> tuple[str, float]:
        """The cluster in words (:meth:`resources`) and its CPUs, starting or joining it first."""
        import ray

        self.start()
        alive = [n for n in ray.nodes() if n.get("Alive")]
        total = ray.cluster_resources()
        cpus, gpus = int(total.get("CPU", 0)), int(total.get("GPU", 0))
        nodes = f"{len(alive)} node{'s' if len(alive) != 1 else ''}"
        return f"Ray ({nodes}, {cpus} CPUs" + (f", {gpus} GPUs)" if gpus else ")"), float(total.get("CPU", 0))

    def shutdown(self) -> None:
        """Stop the local Ray instance this executor started (a joined cluster is left running);
        the executor runs no cells after it."""
        import ray

        with self._lock:
            self._closed = True
            if self._started and ray.is_initialized():
                ray.shutdown()
            self._started = False

    def run(self, cells: Sequence[Cell]) -> Iterator[tuple[Cell, Any]]:
        _check_keys(cells)
        if not cells:
            return
        import ray

        self.start()
        remote, models = ray.remote(_run_cell), [(restore, snapshot()) for snapshot, restore in _WORKER_STATE]
        gpus = gpus_per_cell(placement.defaults()[0], float(ray.cluster_resources().get("GPU", 0)))
        limit = self.max_in_flight or max(1, len(cells))
        pending: dict[Any, Cell] = {}
        todo = list(cells)
        try:
            while todo or pending:
                with self._lock:  # Ray would start a fresh instance for a task sent after shutdown
                    self._check_open()
                    while todo and len(pending) < limit:
                        c = todo.pop(0)
                        ref = remote.options(num_cpus=c.num_cpus, num_gpus=max(c.num_gpus, gpus)).remote(
                            c.fn, c.num_cpus, models)
                        pending[ref] = c
                done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                self._check_open()
                for ref in done:
                    cell = pending.pop(ref)
                    try:
                        node, result = ray.get(ref)
                    except ray.exceptions.RayTaskError as e:  # re-raise the cell's own error
                        raise e.as_instanceof_cause() from None
                    with self._lock:
                        self.cells_by_node[node] = self.cells_by_node.get(node, 0) + 1
                    yield cell, result
        finally:
            if not self._closed:
                for ref in pending:
                    ray.cancel(ref, force=True)


def gpus_per_cell(device: str, cluster_gpus: float) -> float:
    """The GPUs each Ray cell reserves for the command's model placement ``device``: one where the
    models go to CUDA (``cuda``, ``cuda:N``, or ``auto`` on a cluster with GPUs), so that each worker
    holds a GPU and loads its model there once; none otherwise. A cell's own ``num_gpus`` is kept
    when larger.

    >>> gpus_per_cell("cuda", 0.0), gpus_per_cell("auto", 8.0), gpus_per_cell("auto", 0.0), gpus_per_cell("cpu", 8.0)
    (1.0, 1.0, 0.0, 0.0)
    """
    return 1.0 if device.startswith("cuda") or (device == "auto" and cluster_gpus > 0) else 0.0


def make_executor(kind: str = "local", *, workers: int = 1, address: str | None = None,
                  num_cpus: int | None = None) -> LocalExecutor | RayExecutor:
    """``local`` (``workers`` threads) or ``ray`` (``address``/``num_cpus`` as in :class:`RayExecutor`)."""
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(address=address, num_cpus=num_cpus)
    raise InputError(f"executor must be one of {', '.join(EXECUTORS)}, got {kind!r}")
