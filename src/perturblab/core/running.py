"""Where a study runs: its output directory (a temporary one when none is given) and its
executor, made and shut down around the driver (:func:`run`: what :meth:`~.study.Study.call`
does by default, through :meth:`~.boundary.Inputs.run`)."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .study import Study, StudyResult


def check_out(out: str | Path) -> Path:
    """``out`` as a directory path; an empty one is refused (it would write into the current
    directory)."""
    if not str(out).strip():
        raise InputError("--out is empty; give an output directory (it is created if missing)")
    return Path(out)


@contextmanager
def workspace(out: str | Path | None, executor: Any = "local", *, address: str | None = None,
              num_cpus: int | None = None, workers: int = 1) -> Iterator[tuple[Path, Any]]:
    """The output directory (a temporary one, removed afterwards, when ``out`` is None) and the
    executor: one given as an object is used as it is; one named (``local``, ``threads``, ``ray``)
    is made here and shut down when the block ends, also when it fails."""
    if out is not None:
        check_out(out)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ex = executor
        if isinstance(executor, str) or executor is None:
            from .executor import make_executor

            ex = make_executor(executor or "local", workers=workers, address=address, num_cpus=num_cpus)
            if hasattr(ex, "shutdown"):
                stack.callback(ex.shutdown)
            if address and hasattr(ex, "start"):
                ex.start()  # an unreachable cluster is refused before any model loads or file is written
        yield where, ex


def run(study: "Study", out: str | Path | None = None, *, executor: Any = "local", address: str | None = None,
        num_cpus: int | None = None, workers: int = 1, quiet: bool = False) -> "StudyResult":
    """Run (or resume) ``study`` in :func:`workspace` ``out`` on ``executor``; returns its result
    (the caller saves its files). Its lines show on stderr as a study function's do, unless the
    application configured perturblab's log (:func:`~.console.lines_shown`)."""
    from .console import lines_shown
    from .driver import run_study

    with lines_shown(), \
            workspace(out, executor, address=address, num_cpus=num_cpus, workers=workers) as (where, ex):
        return run_study(study, where, executor=ex, progress=not quiet)
