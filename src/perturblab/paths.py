"""Where perturblab keeps its per-user data (assets, trained heads, caches).

The root is ``$PERTURBLAB_HOME`` when set, else the platform's user data directory
(``~/.local/share/perturblab`` on Linux). Nothing is ever written inside the
installed package or the source checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOME = "PERTURBLAB_HOME"


def data_home() -> Path:
    """Root of the per-user data directory (created on first use)."""
    env = os.environ.get(ENV_HOME)
    if env:
        root = Path(env).expanduser()
    else:
        from platformdirs import user_data_dir

        root = Path(user_data_dir("perturblab", appauthor=False))
    root.mkdir(parents=True, exist_ok=True)
    return root


def subdir(*parts: str) -> Path:
    """A sub-directory of :func:`data_home`, created on demand."""
    p = data_home().joinpath(*parts)
    p.mkdir(parents=True, exist_ok=True)
    return p


def assets_dir() -> Path:
    """Unpacked offline assets (corpora, WordNet)."""
    return subdir("assets")


def heads_dir() -> Path:
    """Trained classifier heads of the named model presets."""
    return subdir("heads")


def cache_dir() -> Path:
    """Converted model weights and other derived, re-creatable files."""
    return subdir("cache")


def writable_by_others(root: Path | None = None) -> list[tuple[Path, str]]:
    """Directories that users other than the owner can write, which would let them change what
    perturblab reads (trained heads, corpora, WordNet): ``[(directory, "group" | "others" |
    "group and others"), ...]``.

    Checked: ``root`` (default :func:`data_home`) and its sub-directories, where any group or
    other write bit counts; and the parents of ``root`` that belong to the current user (the
    ones ``data_home()`` may have created, up to the first one owned by someone else), where a
    write bit counts unless the sticky bit is set (in a sticky directory others cannot rename or
    replace what they do not own). POSIX only: an empty list elsewhere.
    """
    import stat

    if os.name != "posix":
        return []
    root = Path(root) if root is not None else data_home()
    out: list[tuple[Path, str]] = []

    def check(d: Path, sticky_ok: bool) -> None:
        try:
            mode = d.stat().st_mode
        except OSError:
            return
        who = [name for bit, name in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others")) if mode & bit]
        if who and not (sticky_ok and mode & stat.S_ISVTX):
            out.append((d, " and ".join(who)))

    check(root, False)
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        children = []
    for child in children:
        check(child, False)
    uid = os.getuid()
    for parent in root.resolve().parents:
        try:
            if parent.stat().st_uid != uid:
                break
        except OSError:
            break
        check(parent, True)
    return out
