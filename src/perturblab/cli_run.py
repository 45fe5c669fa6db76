"""CLI commands of study configs: ``perturblab run``, ``resume`` and ``status`` (registered by
:mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
from typing import Callable

from .core.options import csv_list as _list


def executor_options(p: argparse.ArgumentParser, *, default: str | None = "local",
                     help: str = "run the work cells here (default) or on Ray") -> None:
    """``--executor``, ``--address``, ``--num-cpus``: where the studies' work cells run."""
    p.add_argument("--executor", choices=["local", "ray"], default=default, help=help)
    p.add_argument("--address", default=None, help="Ray cluster address ('auto', 'ray://host:10001'); default: "
                   "start a local Ray instance")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray instance")


def _executor_args(p: argparse.ArgumentParser) -> None:
    executor_options(p, default=None, help="where work cells run (default: the config's executor, else local)")
    p.add_argument("--workers", type=int, default=None, help="threads of the local executor")
    p.add_argument("--only", default=None, help="comma list of study names to run (default: all)")
    p.add_argument("--keep-going", action="store_true", help="go on with the next study after one fails")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run (or resume) the studies of a YAML config")
    p.add_argument("config", help="the study config (YAML; see docs/configs.md)")
    p.add_argument("--out", default=None, help="run directory (default: the config's out:, else runs/<name>)")
    p.add_argument("--check", action="store_true", help="only check the config (its keys, values and data files; "
                   "every error is reported) and list its studies")
    _executor_args(p)
    p = sub.add_parser("resume", help="go on with a run directory of `perturblab run`")
    p.add_argument("out", help="the run directory")
    _executor_args(p)
    p = sub.add_parser("status", help="state of each study of a run directory")
    p.add_argument("out", help="the run directory")


def _kw(args) -> dict:
    return dict(executor=args.executor, address=args.address, num_cpus=args.num_cpus, workers=args.workers,
                only=_list(args.only) if args.only else None, progress=not args.quiet, keep_going=args.keep_going)


def _finish(state: dict, out) -> int:
    bad = {n: e for n, e in state.get("studies", {}).items() if e.get("state") == "failed"}
    for name, e in bad.items():
        print(f"study {name} failed: {e.get('error')}")
    failed_checks = {n: e["exit_code"] for n, e in state.get("studies", {}).items()
                     if e.get("state") == "done" and e.get("exit_code")}
    for name, code in failed_checks.items():
        print(f"study {name}: a check failed (its command would exit with {code}); see {out / name}")
    done = sum(e.get("state") == "done" for e in state.get("studies", {}).values())
    print(f"\n{done} of {len(state.get('studies', {}))} studies done; outputs in {out}"
          + ("; report.html" if (out / "report.html").is_file() else ""))
    return 1 if bad or failed_checks else 0


def cmd_run(args) -> int:
    from .runs.config import load_config
    from .runs.runner import run

    cfg = load_config(args.config, out=args.out)
    if args.check:
        n = len(cfg.studies)
        print(f"{cfg.path}: valid; {n} stud{'y' if n == 1 else 'ies'} (values and data files checked); out {cfg.out}")
        for s in cfg.studies:
            print(f"  {s.name:24s} {s.kind}")
        return 0
    return _finish(run(cfg, **_kw(args)), cfg.out)


def cmd_resume(args) -> int:
    from pathlib import Path

    from .runs.runner import resume

    return _finish(resume(args.out, **_kw(args)), Path(args.out))


def cmd_status(args) -> int:
    from .runs.runner import status

    rows = status(args.out)
    print(f"{'study':24s} {'kind':13s} {'state':12s} {'time':>8s}")
    for r in rows:
        t = "" if r["seconds"] is None else f"{r['seconds']:.0f} s"
        print(f"{r['name']:24s} {r['kind'] or '':13s} {r['state']:12s} {t:>8s}"
              + (f"  {r['error']}" if r["error"] and r["state"] == "failed" else ""))
    if any(r["state"] != "done" for r in rows):
        print(f"\nresume with: perturblab resume {args.out}")
    return 0


COMMANDS: dict[str, Callable] = {"run": cmd_run, "resume": cmd_resume, "status": cmd_status}
