"""The thread pools of the math libraries when several test processes (pytest-xdist workers)
share the cores. Threads beyond a worker's share of the cores spin while the other workers
compute: on 2 cores shared by 2 workers, a fine-tune of a tiny BERT took 28 s instead of 2, and a
llama.cpp test 63 s instead of 2 (OpenMP threads waiting for each other awake)."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: the variables that size the thread pools of torch (intra-op), OpenMP, MKL and OpenBLAS
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def share_cores(environ: MutableMapping[str, str], workers: int, cores: int) -> None:
    """For one of ``workers`` processes on ``cores`` cores (``workers`` > 1): size the thread
    pools of :data:`THREAD_VARIABLES` to cores // workers, at least 1, and let OpenMP threads wait
    asleep (``OMP_WAIT_POLICY=PASSIVE``: llama.cpp sizes its own pool), in ``environ``, leaving
    what it sets already; the processes a test starts inherit it. One process (``workers`` ≤ 1)
    keeps the libraries' defaults."""
    if workers <= 1:
        return
    for name in THREAD_VARIABLES:
        environ.setdefault(name, str(max(1, cores // workers)))
    environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
