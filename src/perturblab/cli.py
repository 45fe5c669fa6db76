"""Command-line interface: ``perturblab <command> ...``.

Errors the user can fix (bad names, missing files or assets, an output directory that is a file,
read-only or on a full disk) print one ``error:`` line (a checked config: one per error) and exit
with status 2; they never end in a traceback, and a study's output files are saved all or none.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .core.arguments import Parser
from .errors import PerturblabError


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    ap = Parser(prog="perturblab", description="Compare NLP models through text perturbations.")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="log what the study does, and let the libraries it calls print their own progress and warnings")
    ap.add_argument("--version", action="version", version=f"perturblab {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    for study in registered_studies():
        study.options().add_arguments(sub.add_parser(study.name, help=study.help), study.defaults)
    for module in _command_modules():
        module.add_parsers(sub)
    return ap


def registered_studies() -> list:
    """The registered studies (:func:`perturblab.studies.registry.entries`); a study plugin left out
    when they are first read (:class:`~perturblab.studies.registry.PluginWarning`) is said in one
    ``warning:`` line on stderr and never raised, so the other commands keep working
    (:func:`~perturblab.core.console.warnings_as_lines`); other warnings as Python shows them."""
    from .core.console import warnings_as_lines
    from .studies.registry import entries

    with warnings_as_lines():
        return entries()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line parsed; an unknown option names the closest option of its command."""
    import difflib

    ap = build_parser()
    args, extra = ap.parse_known_args(argv)
    if extra:
        sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
        hints = []
        for x in extra:
            if x.startswith("--"):
                close = difflib.get_close_matches(x.split("=", 1)[0], sub.options(), n=1)
                if close:
                    hints.append(f"{x}: did you mean {close[0]}?")
        sub.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else ""))
    return args


# Modules that add commands: each has ``add_parsers(sub)`` and ``COMMANDS`` (name -> function).
COMMAND_MODULES = ("cli_catalogue", "cli_history", "cli_report", "cli_run")


def _command_modules() -> list:
    import importlib

    return [importlib.import_module(f".{m}", __package__) for m in COMMAND_MODULES]


def all_commands() -> dict[str, Callable]:
    """Every command's function by name (the registered studies' and the command modules')."""
    from .studies.registry import entries

    commands: dict[str, Callable] = {e.name: study_command(e.name) for e in entries()}
    for module in _command_modules():
        commands.update(module.COMMANDS)
    return commands


def study_command(name: str) -> Callable[[argparse.Namespace], int]:
    """The command of the registered study ``name``: its options read from the command line, its
    Python function called under the output directory's lock, the result saved and printed; the
    exit status is the result's ``exit_code()`` (``compare``: 1 when a check failed). When API
    models took part, one line counts their faults (details in ``faults.json``), also when the
    study failed."""

    def command(args: argparse.Namespace) -> int:
        from .core.entry import run_saved
        from .studies.registry import entry

        study = entry(name)
        options = study.options().from_cli(args)
        t0 = time.time()
        res, paths = run_saved(study.study, options, out=options.out, what=f"the {study.name} study")
        out = Path(options.out)
        print(res.console())
        stores = ["results.sqlite"] if (out / "results.sqlite").is_file() else \
            sorted(str(p.relative_to(out)) for p in out.glob("*/results.sqlite"))  # compare: one per study
        print(f"\n{time.time() - t0:.0f} s; outputs in {out.resolve()}: {', '.join([p.name for p in paths] + stores)}")
        return res.exit_code()

    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: the process's); returns the exit status. Output
    piped into a reader that stops early (``perturblab models | head -1``) ends the command
    quietly, with the status of a process ended by SIGPIPE (141), not a traceback."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # the reader of stdout is gone: what is left unwritten goes nowhere (and not to the flush at exit)
        with contextlib.suppress(OSError, ValueError):  # stdout with no file descriptor: nothing to point
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + getattr(signal, "SIGPIPE", 13)


def _main(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    from .core.console import command_lines, libraries_quiet, warnings_as_lines

    try:
        # perturblab's lines and warnings one line each (an option's old name: a note line); the
        # libraries' bars and warnings, and perturblab's detailed log, only with -v
        with command_lines(verbose=args.verbose), warnings_as_lines(), libraries_quiet(), \
                terminated_as_interrupt():
            return all_commands()[args.command](args)
    except PerturblabError as e:
        for line in str(e).splitlines() or [type(e).__name__]:  # a checked config reports each error
            print(f"error: {line}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.OperationalError) as e:
        line = _storage_error(e)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        if isinstance(e, Terminated):  # what CI runners and `timeout` send
            print("terminated (SIGTERM); re-run the same command to resume", file=sys.stderr)
            return 128 + signal.SIGTERM
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it ends as on Ctrl-C: the work cells already
    stored are kept, no file is half-written, and the same command resumes."""


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """Within it, SIGTERM raises :class:`Terminated` in the main thread (elsewhere: nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    before = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


#: errno values that mean the output cannot be written (not a bug): full disk, quota, read-only, denied
_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def _storage_error(e: BaseException) -> str | None:
    """One line for an error of the disk under the outputs (full, read-only, not permitted), else None."""
    if isinstance(e, sqlite3.OperationalError):
        text = str(e)
        if any(w in text for w in ("disk is full", "readonly database", "disk I/O error", "unable to open")):
            return f"cannot write the results store: {text}; free disk space or choose a writable --out"
        return None
    code = getattr(e, "errno", None)
    if code not in _STORAGE_ERRNOS:
        return None
    where = f" {e.filename}" if getattr(e, "filename", None) else ""
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot write{where}: {e.strerror or e}; free disk space or choose another --out"
    return f"cannot use{where}: {e.strerror or e}; check its permissions or choose a writable --out"


if __name__ == "__main__":
    sys.exit(main())
