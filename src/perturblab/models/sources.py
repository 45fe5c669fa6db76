"""Where a model named by a string comes from when it is no preset: a local directory or a hub id."""

from __future__ import annotations

import json
import re
from pathlib import Path

#: ``owner/name`` of the Hugging Face hub
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _probe(name: str, test: str) -> bool:
    """``Path(name).expanduser().<test>()``, False for a name no file system holds (one longer
    than a file name may be, where pathlib raises instead of answering)."""
    try:
        return bool(getattr(Path(name).expanduser(), test)())
    except OSError:
        return False


def is_local_dir(name: str) -> bool:
    """Whether ``name`` is an existing directory (False for a name no file system holds, such as
    one longer than a file name may be, where ``Path.is_dir`` raises).

    >>> is_local_dir("/"), is_local_dir("m" * 300)
    (True, False)
    """
    return _probe(name, "is_dir")


def is_local_file(name: str) -> bool:
    """Whether ``name`` is an existing file (False, as :func:`is_local_dir`, for a name no file
    system holds)."""
    return _probe(name, "is_file")


def exists_locally(name: str) -> bool:
    """Whether anything is at the path ``name`` (False, as :func:`is_local_dir`, for a name no
    file system holds)."""
    return _probe(name, "exists")


def local_or_hub(name: str) -> str | None:
    """``name`` as a local model directory or hub id, or None when it is neither."""
    if is_local_dir(name):
        return str(Path(name).expanduser())
    if HUB_ID.match(name):
        return name
    return None


def architectures(source: str) -> list[str] | None:
    """The ``architectures`` the ``config.json`` of the local model directory ``source`` names
    (``[]`` when it names none or cannot be read: the loader says what is wrong with it), or None
    where there is no such file."""
    config = Path(source).expanduser() / "config.json"
    if not is_local_file(str(config)):
        return None
    try:
        archs = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [str(a) for a in archs]
