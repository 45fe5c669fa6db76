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
