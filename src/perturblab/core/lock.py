"""One process at a time on an output directory.

:func:`output_lock` takes an exclusive ``flock`` on a lock file in the directory (released by the
operating system when the process dies, so a killed run never leaves a stale lock). A second
process asking for the same directory is refused at once with an error naming the holder's pid.
The same thread may take the lock again (a study that runs other studies into its directory);
another thread of the same process is refused like another process.

A block that fails leaves no trace of the lock: the lock file it created is removed, and so are
the directories it created when they are empty again (bad input refused inside the block creates
no output directory).
"""

from __future__ import annotations

import fcntl
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import InputError

LOCK_NAME = ".perturblab.lock"
_held: dict[str, list[int]] = {}  # lock path -> [owning thread id, depth]
_held_lock = threading.Lock()


class LockedError(InputError):
    """Another process holds the output directory."""


@contextmanager
def output_lock(out: str | Path, *, name: str = LOCK_NAME, what: str = "a study") -> Iterator[Path]:
    """Hold ``out/<name>`` exclusively while the block runs; yields the directory.

    Raises :class:`LockedError` when another process holds it, and an
    :class:`~perturblab.errors.InputError` when ``out`` is a file or cannot be created."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is an existing file; give a directory (it is created if missing)")
    created = [d for d in (out, *out.parents) if not d.exists()]  # deepest first
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output directory {out}: {e.strerror or e}; choose another --out") from None
    path = str((out / name).resolve())
    me = threading.get_ident()
    with _held_lock:
        entry = _held.get(path)
        if entry is not None and entry[0] != me:
            raise LockedError(f"another thread of this process is writing {what} in {out}; wait for it to finish, "
                              "or choose another --out")
        if entry is not None:
            entry[1] += 1
    if entry is not None:
        try:
            yield out
        finally:
            with _held_lock:
                entry[1] -= 1
        return
    new_lock = not os.path.exists(path)
    try:
        f = open(path, "a+")
    except OSError as e:
        _remove_empty(created)
        raise InputError(f"cannot write to the output directory {out}: {e.strerror or e}; "
                         "choose a writable --out") from None
    failed = False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            pid = f.read().strip() or "?"
            raise LockedError(f"another perturblab process (pid {pid}) is writing {what} in {out}; wait for it to "
                              "finish or stop it, or choose another --out") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        with _held_lock:
            _held[path] = [me, 1]
        try:
            yield out
        except BaseException:
            failed = True
            raise
        finally:
            with _held_lock:
                _held.pop(path, None)
            if failed and new_lock:
                try:
                    os.unlink(path)  # still held: no other process can have taken it
                except OSError:
                    pass
            fcntl.flock(f, fcntl.LOCK_UN)
            if failed:
                _remove_empty(created)


def _remove_empty(dirs: list[Path]) -> None:
    """Remove the directories ``dirs`` (deepest first) that are empty; stop at the first that is not."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            return
