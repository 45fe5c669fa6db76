"""Where the models of a run go and in which floating-point type: the names, their checks, and
the placement of a command (``--device`` / ``--dtype``) that models without their own take.

What a device or dtype means for a model, and how a model is moved, cast and fingerprinted, is
:mod:`perturblab.models.device`'s.

>>> resolve("cpu", "bfloat16")
(device(type='cpu'), torch.bfloat16)
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Any, Iterator

from ..errors import InputError

DTYPES = ("float32", "bfloat16", "float16")
DEFAULT_DEVICE, DEFAULT_DTYPE = "cpu", "float32"
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
_defaults: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar(
    "perturblab_model_placement", default=(DEFAULT_DEVICE, DEFAULT_DTYPE))


def check_device(text: str) -> str:
    """``text`` when it names a device (``auto``, ``cpu``, ``cuda``, ``cuda:N``), else InputError."""
    value = str(text).strip().lower()
    if not _DEVICE.match(value):
        raise InputError(f"device {text!r}: give cpu, cuda, cuda:N (the N-th GPU) or auto (CUDA when available)")
    return value


def check_dtype(text: str) -> str:
    """``text`` when it names a dtype of :data:`DTYPES` (``fp32``, ``bf16``, ``fp16`` too)."""
    value = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}.get(
        str(text).strip().lower(), str(text).strip().lower())
    if value not in DTYPES:
        raise InputError(f"dtype {text!r}: give one of {', '.join(DTYPES)}")
    return value


def restore(value: tuple[str, str]) -> None:
    """In a worker process: the driver's placement (:func:`defaults`), for the models its cells
    load (the executor carries it to Ray workers)."""
    _defaults.set(value)


def defaults() -> tuple[str, str]:
    """The (device, dtype) a model without its own takes: ``--device`` / ``--dtype`` of the
    command running (:func:`placement`), else cpu and float32."""
    return _defaults.get()


@contextlib.contextmanager
def placement(device: str | None = None, dtype: str | None = None) -> Iterator[None]:
    """Within the block, models without their own device or dtype take these (None: unchanged)."""
    old = _defaults.get()
    token = _defaults.set((check_device(device) if device else old[0], check_dtype(dtype) if dtype else old[1]))
    try:
        yield
    finally:
        _defaults.reset(token)


def resolve(device: str | None = None, dtype: str | None = None) -> tuple[Any, Any]:
    """(torch.device, torch.dtype) of ``device`` and ``dtype`` (None: :func:`defaults`): ``auto``
    picks CUDA when torch sees it; CUDA where there is none, a GPU index beyond those there are,
    and float16 on the CPU are refused with the fix."""
    import torch

    d_default, t_default = defaults()
    name, dt = check_device(device or d_default), check_dtype(dtype or t_default)
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"device={name}: torch sees no CUDA device on this machine (a CPU-only torch, or no "
                             "GPU); use device=cpu, or device=auto to take CUDA only where there is one")
        index = int(name.split(":")[1]) if ":" in name else 0
        if index >= torch.cuda.device_count():
            raise InputError(f"device={name}: there {'is' if torch.cuda.device_count() == 1 else 'are'} "
                             f"{torch.cuda.device_count()} CUDA device(s), numbered from 0")
    if dt == "float16" and not name.startswith("cuda"):
        raise InputError("dtype=float16 on the CPU: many CPU kernels lack float16; use dtype=bfloat16 (or float32)")
    return torch.device(name), getattr(torch, dt)
