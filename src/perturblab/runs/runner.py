"""Run, resume and inspect the studies of a config (:mod:`.config`): ``perturblab run|resume|status``.

A run directory holds ``run.yaml`` (the config as run; ``resume`` reads it), ``run.json`` (each
study's state, times and last error), one folder per study with that study's usual outputs and a
``study.json`` manifest (name, kind, options), and ``report.html`` at the end. Studies run in
order; a finished study is skipped on the next run, an unfinished one resumes from its own store
(every study writes each finished piece of work once, so a killed run loses only the work in
flight). A study whose options changed since it ran is refused rather than mixed. One run
directory is worked on by one process at a time (a lock file).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..core.console import lines_shown
from ..core.files import atomic_write_text, write_json
from ..errors import InputError
from ..core.executor import make_executor
from ..models import named
from .config import RunConfig, StudySpec, load_config

log = logging.getLogger(__name__)
RUN_FILE, CONFIG_COPY, MANIFEST, LOCK = "run.json", "run.yaml", "study.json", ".run.lock"
STATES = ("pending", "running", "done", "failed", "interrupted")


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(options, default=str))


def _write_json(path: Path, data: Any) -> None:
    write_json(path, data, indent=1, sort_keys=True)  # whole or not at all


@contextmanager
def _locked(out: Path) -> Iterator[None]:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is an existing file; give a directory (it is created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        f = open(out / LOCK, "a+")
    except OSError as e:
        raise InputError(f"cannot write to the run directory {out}: {e.strerror or e}; choose a writable "
                         "--out") from None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise InputError(f"another perturblab process is running the studies in {out} "
                             f"(pid {f.read().strip() or '?'}); wait for it or stop it first") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


#: options renamed since a manifest may have been written: old destination -> new
RENAMED = {"seeds": "trials", "n_test": "n_eval"}


def _check_unchanged(cfg: RunConfig) -> None:
    for s in cfg.studies:
        manifest = cfg.out / s.name / MANIFEST
        if not manifest.is_file():
            continue
        try:
            old = json.loads(manifest.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"{manifest} is not readable JSON ({e}); delete it to run study {s.name!r} again "
                             "(its results store is kept)") from None
        from ..studies.registry import entry as study_entry

        recorded = {f.name for f, o in study_entry(s.kind).options().fields() if o.in_config}  # where, not what
        new = {k: v for k, v in _jsonable(s.options).items() if k not in recorded}
        defaults = _jsonable(s.defaults)
        before = {RENAMED.get(k, k): v for k, v in old.get("options", {}).items() if k not in recorded}
        # an option the command gained since the study ran counts as unchanged while it keeps its default
        diff = sorted(k for k in set(before) | set(new) if before.get(k) != new.get(k)
                      and not (k not in before and k in defaults and new.get(k) == defaults[k]))
        if old.get("kind") != s.kind or diff:
            raise InputError(f"study {s.name!r} in {cfg.out} ran with other options (changed: "
                             f"{', '.join(diff) or 'kind'}); give the study a new name or use another out directory")


@lines_shown()
def run(cfg: RunConfig, *, executor: str | None = None, address: str | None = None, num_cpus: int | None = None,
        workers: int | None = None, only: Sequence[str] | None = None, progress: bool = True,
        keep_going: bool = False) -> dict[str, Any]:
    """Run (or resume) the studies of ``cfg`` into ``cfg.out``; returns the run state (``run.json``).

    ``executor``/``address``/``num_cpus``/``workers`` override the config's ``executor:``;
    ``only`` runs a subset of the studies by name; ``keep_going`` goes on after a failed study.
    Its lines show on stderr as the command's do, unless the application configured perturblab's
    log (:func:`~perturblab.core.console.lines_shown`).
    """
    names = [s.name for s in cfg.studies]
    unknown = [n for n in only or [] if n not in names]
    if unknown:
        raise InputError(f"--only names studies {unknown} that {cfg.path} does not have; it has {names}")
    ex_cfg = dict(cfg.executor)
    for k, v in (("kind", executor), ("address", address), ("num_cpus", num_cpus), ("workers", workers)):
        if v is not None:
            ex_cfg[k] = v
    out = cfg.out
    with _locked(out):
        _check_unchanged(cfg)
        atomic_write_text(out / CONFIG_COPY, cfg.text)
        state = _read_state(out)
        state.update(config=str(cfg.path.resolve()), config_dir=str(cfg.base), executor=ex_cfg)
        studies = state.setdefault("studies", {})
        for s in cfg.studies:
            studies.setdefault(s.name, {"kind": s.kind, "state": "pending"})
        state["order"] = names
        _write_json(out / RUN_FILE, state)
        named.clear()
        for name, d in cfg.models.items():
            if "api" in d:
                named.define(name, d)
        ex = make_executor(ex_cfg.get("kind", "local"), workers=int(ex_cfg.get("workers", 1)),
                           address=ex_cfg.get("address"), num_cpus=ex_cfg.get("num_cpus"))
        try:
            for s in cfg.studies:
                entry = studies[s.name]
                if (only and s.name not in only) or (entry["state"] == "done" and (out / s.name / MANIFEST).is_file()):
                    continue
                if not _run_study(s, out, ex, progress, state) and not keep_going:
                    break
        finally:
            if hasattr(ex, "shutdown"):
                ex.shutdown()
        if cfg.report and all(studies[n]["state"] == "done" for n in names):
            _report(out)
    return state


def _run_study(s: StudySpec, out: Path, ex: Any, progress: bool, state: dict) -> bool:
    entry = state["studies"][s.name]
    sdir = out / s.name
    sdir.mkdir(parents=True, exist_ok=True)
    _write_json(sdir / MANIFEST, {"name": s.name, "kind": s.kind, "options": _jsonable(s.options)})
    entry.update(state="running", pid=os.getpid(), started=time.time(), error=None)
    _write_json(out / RUN_FILE, state)
    t0 = time.time()
    try:
        exit_code = _call_study(s, sdir, ex, progress)
    except KeyboardInterrupt:
        entry.update(state="interrupted", seconds=entry.get("seconds", 0) + time.time() - t0)
        _write_json(out / RUN_FILE, state)
        raise
    except Exception as e:  # recorded, then reported by the caller
        entry.update(state="failed", error=f"{type(e).__name__}: {e}", seconds=entry.get("seconds", 0) + time.time() - t0)
        _write_json(out / RUN_FILE, state)
        log.error("study %s failed: %s", s.name, e)
        if not isinstance(e, InputError):
            raise
        return False
    entry.update(state="done", seconds=entry.get("seconds", 0) + time.time() - t0, finished=time.time(),
                 exit_code=exit_code)
    entry.pop("pid", None)
    _write_json(out / RUN_FILE, state)
    return True


def _call_study(s: StudySpec, sdir: Path, ex: Any, progress: bool) -> int:
    """Run one study of the config through the one entry (:func:`~perturblab.core.entry.run_saved`):
    the study's class with the entry's options, the run's executor where the study takes one,
    then the result's files and what its command prints; returns the exit status its command
    would have (``compare``: 1 when a check failed)."""
    from ..core.entry import run_saved
    from ..studies.registry import entry

    study = entry(s.kind)
    args = study.options()
    names = {f.name for f, _ in args.fields()}
    options = args(**{k: v for k, v in s.options.items() if k in names}, quiet=not progress)
    res, _ = run_saved(study.study, options, out=sdir, what=f"study {s.name}", executor=ex,
                       prefix=f"{s.name}: ")
    print(f"{s.name} ({s.kind}):\n{res.console()}\n")
    return res.exit_code()


def _report(out: Path) -> None:
    try:
        from ..report.html import write_report
    except ImportError:  # the report module is optional for running studies
        return
    write_report(out)


def _read_state(out: Path) -> dict[str, Any]:
    p = out / RUN_FILE
    if not p.is_file():
        return {"created": time.time()}
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise InputError(f"{p} is not readable JSON ({e}); delete it to start the run's bookkeeping afresh "
                         "(study outputs are kept)") from None


def resume(out: str | Path, **kw: Any) -> dict[str, Any]:
    """Go on with the run in ``out`` from its saved ``run.yaml`` (same keywords as :func:`run`)."""
    out = Path(out)
    if not (out / CONFIG_COPY).is_file():
        raise InputError(f"{out} holds no {CONFIG_COPY}; is it the out directory of `perturblab run`?")
    base = _read_state(out).get("config_dir")  # relative paths as when the run started
    return run(load_config(out / CONFIG_COPY, out=out, base=base), **kw)


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def status(out: str | Path) -> list[dict[str, Any]]:
    """One row per study of the run in ``out``: name, kind, state, seconds, error. A study marked
    running whose process is gone is reported ``interrupted``."""
    out = Path(out)
    if not (out / RUN_FILE).is_file():
        raise InputError(f"{out} holds no {RUN_FILE}; is it the out directory of `perturblab run`?")
    state = _read_state(out)
    rows = []
    for name in state.get("order", list(state.get("studies", {}))):
        e = state["studies"].get(name, {})
        st = e.get("state", "pending")
        if st == "running" and not _alive(e.get("pid")):
            st = "interrupted"
        seconds = e.get("seconds")
        if st == "running":
            seconds = (seconds or 0) + time.time() - e.get("started", time.time())
        rows.append({"name": name, "kind": e.get("kind"), "state": st, "seconds": seconds, "error": e.get("error")})
    return rows
