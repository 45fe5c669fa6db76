"""Output files written whole or not at all, and JSON that never holds a bare ``NaN``.

Every file a study writes goes through :func:`atomic_write_bytes`: the bytes go to a temporary
file in the same directory, are flushed to disk, and replace the target in one ``os.replace``. A
crash or a full disk leaves the previous file (or none), never a truncated one. An ``OSError``
(read-only directory, full disk, a directory where a file should be) becomes one
:class:`~perturblab.errors.InputError` naming the file.

Inside :func:`all_or_nothing` (the command line saves a study's files in one) every file is first
written whole to its temporary file and the targets are replaced only when all of them were
written: a full disk half-way through a save leaves every earlier output as it was.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..errors import InputError


def json_safe(value: Any) -> Any:
    """``value`` ready for strict JSON: NaN and infinities as ``None``, numpy scalars and arrays as
    Python numbers and lists, tuples as lists, recursively through dicts and lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy scalar or array
        return json_safe(value.tolist())
    return value


_staged = threading.local()  # .pending: [(temporary file, target)] of the innermost all_or_nothing


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Files written by :func:`atomic_write_bytes` in this block (in this thread) replace their
    targets together when the block ends without an error; on an error every temporary file is
    removed and no target is created or changed. Nested blocks join the outer one."""
    if getattr(_staged, "pending", None) is not None:
        yield
        return
    _staged.pending = pending = []
    try:
        yield
    except BaseException:
        for tmp, _ in pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    finally:
        _staged.pending = None
    for i, (tmp, target) in enumerate(pending):
        try:
            os.replace(tmp, target)
        except OSError as e:
            for rest, _ in pending[i:]:
                try:
                    os.unlink(rest)
                except OSError:
                    pass
            raise InputError(f"cannot write {target}: {e.strerror or e}; choose a writable output directory "
                             "(--out)") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring); returns the path."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory", str(path))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}; choose a writable output directory "
                         "(--out)") from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes owner-only files; outputs get the usual mode
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        pending = getattr(_staged, "pending", None)
        if pending is not None:
            pending.append((tmp, path))
            return path
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"cannot write {path}: {e.strerror or e}; free disk space or choose another output "
                         "directory (--out); the previous file, if any, is unchanged") from None
    return path


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode(encoding))


def dumps_json(data: Any, *, indent: int | None = 1, sort_keys: bool = False) -> str:
    """Strict JSON of ``data`` after :func:`json_safe` (no ``NaN`` tokens)."""
    return json.dumps(json_safe(data), indent=indent, sort_keys=sort_keys, allow_nan=False)


def write_json(path: str | Path, data: Any, *, indent: int | None = 1, sort_keys: bool = False) -> Path:
    """Write ``data`` as strict JSON to ``path`` atomically."""
    return atomic_write_text(path, dumps_json(data, indent=indent, sort_keys=sort_keys))


def write_csv(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """Write a CSV file (``csv`` module dialect, ``\\r\\n`` line ends) atomically."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return atomic_write_text(path, buf.getvalue())


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Lay out a matplotlib figure, write it as PNG atomically and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())
