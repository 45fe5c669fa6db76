"""Where a local model runs and in which floating-point type.

Every Hugging Face backend (encoders, sequence classifiers and regressors, causal and
sequence-to-sequence language models) takes ``device`` and ``dtype``:

* ``device``: ``cpu``, ``cuda``, ``cuda:N``, or ``auto`` (CUDA when torch sees a CUDA device, else
  the CPU). Asking for CUDA where torch sees none is one :class:`~perturblab.errors.InputError`.
* ``dtype``: ``float32`` (the default), ``bfloat16`` or ``float16``. ``float16`` needs CUDA: many
  CPU kernels lack it, so it is refused on the CPU with a pointer to ``bfloat16``.

They come from a model spec (``smollm2-135m[device=cuda,dtype=bfloat16]``) or, for every model
of a command, from ``--device`` / ``--dtype`` (:func:`~perturblab.core.placement.defaults`); a
spec's own wins. A model's fingerprint names its dtype when it is not float32 (:func:`dtype_tag`),
so cached results of a bfloat16 model are never read for the float32 one, nor the other way
round. The device is not in the fingerprint: float32 on a GPU gives the CPU's numbers to
round-off (TF32 matrix products stay off, torch's default), and a run moved from CPU to GPU
resumes.

The names, their checks and a command's placement are :mod:`perturblab.core.placement`'s.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence, TypeVar

from ..core.placement import resolve
from ..errors import InputError

__all__ = ["dtype_tag", "model_dtype", "loading", "placed", "with_dtype", "split_on_oom"]
log = logging.getLogger(__name__)
T = TypeVar("T")


def dtype_tag(dtype: Any) -> str:
    """What a model's fingerprint adds for its dtype: nothing for float32 (so float32 results keep
    their keys), else the dtype's name (``bfloat16``)."""
    name = str(dtype).replace("torch.", "")
    return "" if name == "float32" else name


def model_dtype(model: Any) -> Any:
    """The dtype of ``model``'s first floating-point parameter (float32 when it has none)."""
    import torch

    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)


def loading(device: str | None, dtype: str | None) -> dict[str, Any]:
    """``from_pretrained`` keywords that load a model straight where it runs, in its dtype, one
    layer at a time (``low_cpu_mem_usage``): never a float32 copy in RAM first. On CUDA the
    weights go to the GPUs through accelerate's ``device_map``: ``cuda`` and ``auto`` spread a
    model larger than one GPU over all of them (and the CPU, for what none holds), ``cuda:N``
    puts it on that GPU. On the CPU, no ``device_map``."""
    dev, dt = resolve(device, dtype)
    kw: dict[str, Any] = {"dtype": dt, "low_cpu_mem_usage": True}
    if dev.type == "cuda":
        kw["device_map"] = {"": dev.index} if dev.index is not None else "auto"
    return kw


def placed(model: Any, device: str | None, dtype: str | None, *, loaded: bool) -> Any:
    """``model`` on ``device`` in ``dtype`` (:func:`resolve`), its floating-point parameters and
    buffers cast, in eval mode. A model perturblab ``loaded`` takes the command's placement
    (:func:`~perturblab.core.placement.defaults`) for what is not given; a model object passed in
    stays as it is unless ``device`` or ``dtype`` is given."""
    if not loaded and device is None and dtype is None:
        return model
    if getattr(model, "hf_device_map", None):  # placed by accelerate as it loaded (:func:`loading`)
        return model
    dev, dt = resolve(device, dtype)
    first = next(iter(model.parameters()), None)
    if first is not None and first.device == dev and model_dtype(model) == dt:
        return model
    return model.to(device=dev, dtype=dt).eval()


def with_dtype(fingerprint: str, model: Any) -> str:
    """``fingerprint`` extended by the model's dtype when it is not float32 (:func:`dtype_tag`)."""
    from .base import fingerprint_of

    tag = dtype_tag(model_dtype(model))
    return fingerprint_of(fingerprint, "dtype", tag) if tag else fingerprint


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is a device running out of memory (torch's OutOfMemoryError, or the
    RuntimeError older kernels raise for it)."""
    import torch

    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower())


def split_on_oom(idx: Sequence[int], forward: Callable[[Sequence[int]], list[T]], *, what: str) -> list[T]:
    """``forward(idx)``: one result per index of a batch, in order. When the device runs out of
    memory the batch is halved and each half run again (halving again as needed), with a warning;
    a single input that does not fit is an :class:`InputError` naming the fix. Every input is still
    scored, by the same model: only which inputs share a forward pass changes, so results agree
    with one unsplit batch to the batch-invariance tolerance of the dtype (padding and reduction
    order)."""
    try:
        return forward(idx)
    except Exception as e:  # noqa: BLE001 - only out-of-memory errors are handled
        if not is_out_of_memory(e):
            raise
    _free_cached_memory()
    if len(idx) == 1:
        raise InputError(f"{what}: one input does not fit in the device's memory; use a shorter max_length, a "
                         "lower dtype (bfloat16), or a device with more memory") from None
    mid = len(idx) // 2
    log.warning("%s: out of device memory on a batch of %d inputs; running it as %d + %d", what, len(idx), mid,
                len(idx) - mid)
    return split_on_oom(idx[:mid], forward, what=what) + split_on_oom(idx[mid:], forward, what=what)


def _free_cached_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
