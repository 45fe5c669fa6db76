"""The fine-tuned model of the study: trained once on the training split (within a time budget,
saved under ``data_home()/finetuned`` by :func:`perturblab.models.finetune.load_or_finetune` and
reused), or the user's own copy."""

from __future__ import annotations

import re
from typing import Any

from ....data.examples import Dataset
from ....errors import InputError
from ....models.finetune import FinetuneConfig, load_or_finetune


def finetune_source(base: str) -> tuple[Any, Any]:
    """(weights, tokenizer) to fine-tune for an encoder name: the packaged MiniLM-L6 directory,
    a preset's loaded torch model and tokenizer, or the name itself (a directory or hub id) with
    its own tokenizer (``None``)."""
    from ....models.presets import PRESETS, load_encoder

    if base == "minilm-l6":
        from ....models.onnx_convert import tokenizer_dir

        return tokenizer_dir(), None
    if base in PRESETS:
        enc = load_encoder(base)
        return enc.model, enc.tokenizer
    return base, None


def finetuned_encoder(base: str, train: Dataset, seed: int, config: FinetuneConfig, *, progress: bool = True) -> Any:
    """An :class:`~perturblab.models.hf.HFEncoder` of ``base`` fine-tuned on ``train`` (trained once,
    then loaded from ``data_home()/finetuned``)."""
    from ....models.hf import HFEncoder

    source, tok = finetune_source(base)
    path = load_or_finetune(base, source, train, seed=seed, tokenizer=tok, config=config, progress=progress)
    return HFEncoder(path, name=f"{base}-ft{seed}")


def finetuned_copy(base: Any, name: str, fingerprint: str, train: Dataset, seed: int, config: FinetuneConfig, *,
                   progress: bool = True) -> Any:
    """:func:`finetuned_encoder` for a base that is not a packaged preset: an encoder object (an
    :class:`~perturblab.models.hf.HFEncoder` with ``model`` and ``tokenizer``) or a directory /
    hub id. Its fine-tune is kept under its name and weights ``fingerprint``, so another model
    under the same name (or a directory retrained in place) is fine-tuned anew."""
    from ....models.hf import HFEncoder

    if isinstance(base, str):
        source, tok = finetune_source(base)
    else:
        source, tok = getattr(base, "model", None), getattr(base, "tokenizer", None)
        if source is None or tok is None:
            raise InputError(f"base {name!r} is a {type(base).__name__} without `model` and `tokenizer` (a "
                             "transformers encoder and its tokenizer), so it cannot be fine-tuned here; pass "
                             "finetuned= (a fine-tuned copy) or give base as a preset name or a directory")
    key = (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model") + "-" + str(fingerprint)[:16]
    path = load_or_finetune(key, source, train, seed=seed, tokenizer=tok, config=config, progress=progress)
    return HFEncoder(path, name=f"{name}-ft{seed}")
