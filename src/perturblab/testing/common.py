"""What a check found (:class:`StudyReport`), how a broken contract is said, and the command
run in this process with its output kept."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence



@dataclass
class StudyReport:
    """What :func:`check_study` checked (``checked``: one line per contract) and skipped
    (``skipped``: (contract, why)); ``seconds``: the time each run of the example took."""

    study: str
    checked: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"{self.study}: {len(self.checked)} contracts hold"]
        lines += [f"  ok    {c}" for c in self.checked]
        lines += [f"  skip  {c}: {why}" for c, why in self.skipped]
        return "\n".join(lines)


def _fail(study: str, contract: str, detail: str) -> AssertionError:
    return AssertionError(f"study {study!r} breaks the contract '{contract}': {detail}")


def _require(ok: Any, study: str, contract: str, detail: str | Callable[[], str]) -> None:
    if not ok:
        raise _fail(study, contract, detail() if callable(detail) else detail)


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """stdout and stderr of the block, kept (the command's table and progress, its errors)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def _command(argv: Sequence[str]) -> tuple[int, str, str]:
    """``perturblab ARGV`` run in this process: (exit status, stdout, stderr); argparse's exit
    (a refused option) is its status too."""
    from ..cli import main

    with _captured() as (out, err):
        try:
            rc = main(list(argv))
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def _text(value: Any) -> str:
    """A value as the command line gives it (a list as its comma text)."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def command_line(name: str, options: Mapping[str, Any], out: str | Path) -> list[str]:
    """The command line of study ``name`` with ``options`` (a list as its comma text, ``True`` as a
    switch), ``--out OUT --quiet`` added."""
    from ..core.readers import option_name

    args = [name]
    for k, v in options.items():
        if v is True:
            args.append(option_name(k))
        elif v is not False:
            args += [option_name(k), _text(v)]
    return args + ["--out", str(out), "--quiet"]


