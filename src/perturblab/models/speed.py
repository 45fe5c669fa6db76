"""How fast a model runs where it will run: a few real batches timed on its own device, dtype
and backend, remembered per model layout and machine, and its parameter count read from its
files.

A plan that sizes studies to a time budget (``perturblab compare``) measures each model with
:func:`measure_speed` instead of assuming the 2-core CPU its costs were measured on: a language
model scores the per-token log-probabilities of :data:`PROBE_TEXTS`, an encoder (the body of a
classifier) gives their hidden states. The figure depends on the model's layout (its
``config.json`` and the sizes of its files), the backend, device and dtype, the number of CPU
threads and the library versions, never on the weights' values, so it is kept in the cache under
those (:func:`speed_key`, in the file :data:`SPEEDS_ENV` names, else ``speeds.json`` of the cache
directory) and a second plan reads it back; a figure taken while other work shared the machine
stays until that file is deleted, so the plan shows each figure and the day it was measured.

>>> s = Speed(texts_per_s=812.0, tokens_per_s=41_000.0, where="cuda:0, bfloat16, NVIDIA H200")
>>> s.text()
'cuda:0, bfloat16, NVIDIA H200: 41k tokens/s'
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError

__all__ = ["PROBE_TEXTS", "Speed", "count_parameters", "measure_speed", "speed_key"]

#: changes when the probe does (texts, repetitions), so earlier figures are measured again
PROBE_VERSION = 3
#: the least seconds of timed work and the least timed passes per figure (the fastest pass counts)
LEAST_SECONDS, LEAST_PASSES = 1.0, 3
#: the most seconds of timed work per figure (a slow model: fewer passes)
MOST_SECONDS = 10.0

_WORDS = ("the film was not as good as the book and the actors seemed tired of their roles while the music "
          "kept the story moving through a long and quiet middle part that most people in the room found "
          "slow but the ending brought back some of the warmth of the first scenes with a small surprise").split()


def _probe_texts() -> tuple[str, ...]:
    """32 sentences of 10 to 31 common English words (the length of a review's sentence)."""
    out = []
    for i in range(32):
        start, length = (7 * i) % len(_WORDS), 10 + (i * 13) % 22
        words = [_WORDS[(start + j) % len(_WORDS)] for j in range(length)]
        out.append(" ".join(words).capitalize() + ".")
    return tuple(out)


#: the texts every figure is measured on
PROBE_TEXTS = _probe_texts()


@dataclass(frozen=True)
class Speed:
    """A model's measured speed: ``texts_per_s`` of :data:`PROBE_TEXTS`, ``tokens_per_s`` where the
    model counts tokens (language models), ``where`` it ran (device, dtype, the card or the CPU
    threads) and whether it was read back from the cache (``cached``)."""

    texts_per_s: float
    tokens_per_s: float | None
    where: str
    cached: bool = False
    #: the day it was measured (``2026-11-28``)
    measured: str = ""

    def text(self) -> str:
        """``cuda:0, bfloat16, NVIDIA H200: 41k tokens/s`` (texts/s where tokens are not counted)."""
        if self.tokens_per_s is not None:
            return f"{self.where}: {_short(self.tokens_per_s)} tokens/s"
        return f"{self.where}: {_short(self.texts_per_s)} texts/s"


def _short(x: float) -> str:
    return f"{x / 1000:.0f}k" if x >= 10_000 else f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


def _where(device: Any, dtype: Any, backend: str | None = None) -> str:
    """Where a model runs, in words: ``cpu (2 threads), float32`` or ``cuda:0, bfloat16, NVIDIA H200``."""
    import torch

    dt = str(dtype).replace("torch.", "")
    if backend == "llamacpp":
        return "llama.cpp"
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index}, {dt}, {torch.cuda.get_device_name(index)}"
    return f"cpu ({torch.get_num_threads()} threads), {dt}"


def _layout(source: str) -> Any:
    """What a model's speed depends on in its files: a preset's name; a directory's ``config.json``
    and its files' names and sizes; a file's name and size."""
    path = Path(source).expanduser()
    if path.is_file():
        return (path.name, path.stat().st_size)
    if path.is_dir():
        config = path / "config.json"
        return (config.read_text(encoding="utf-8", errors="replace") if config.is_file() else "",
                sorted((p.name, p.stat().st_size) for p in path.iterdir() if p.is_file()))
    return source


def speed_key(spec: str, role: str) -> tuple[str, str]:
    """(cache key, where) of ``spec`` measured for ``role`` under the current placement (see the
    module docstring)."""
    import platform

    import torch
    import transformers

    from ..core.placement import resolve
    from .base import fingerprint_of
    from .resolve import ModelSpec

    ms = ModelSpec.parse(spec)
    opts = dict(ms.options)
    device, dtype = resolve(opts.get("device"), opts.get("dtype"))
    where = _where(device, dtype, opts.get("backend"))
    rest = sorted((k, v) for k, v in opts.items() if k not in ("device", "dtype"))  # those are in where
    key = fingerprint_of(PROBE_VERSION, role, _layout(ms.source), rest, where, platform.machine(),
                         platform.processor(), torch.__version__, transformers.__version__)
    return key, where


#: the environment variable naming the file the measured speeds are kept in (default:
#: ``speeds.json`` in perturblab's cache directory)
SPEEDS_ENV = "PERTURBLAB_SPEEDS"


def _cache_file() -> Path:
    import os

    from ..paths import cache_dir

    return Path(os.environ[SPEEDS_ENV]) if os.environ.get(SPEEDS_ENV) else cache_dir() / "speeds.json"


def _read_cache() -> dict[str, Any]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _timed(run: Any, texts: tuple[str, ...]) -> float:
    """Seconds of the fastest pass of ``run`` over ``texts``, after one whole pass to warm up (the
    kernels of every batch shape, caches): passes are repeated until :data:`LEAST_SECONDS` of timed
    work and at least :data:`LEAST_PASSES` passes (at most :data:`MOST_SECONDS`). The fastest pass,
    not the mean, so that other work that shares the machine for a moment does not stay in the
    cached figure (the minimum of repeats, as timeit takes it)."""
    run(texts)
    passes, fastest, t0 = 0, math.inf, time.perf_counter()
    while True:
        start = time.perf_counter()
        run(texts)
        passes += 1
        fastest = min(fastest, time.perf_counter() - start)
        spent = time.perf_counter() - t0
        if (spent >= LEAST_SECONDS and passes >= LEAST_PASSES) or spent >= MOST_SECONDS or passes >= 50:
            return fastest


def measure_speed(spec: str, role: str, *, cached: bool = True,
                  say: Callable[[str], None] | None = None) -> Speed | None:
    """The speed of the model ``spec`` in ``role`` (``language_model`` or ``encoder``) under the
    current placement, timed on :data:`PROBE_TEXTS` (read from the cache when it was measured
    for the same layout and machine, unless ``cached=False``); None for a model that cannot be
    timed without loading it from its data or a server (an ``api:`` model, a classifier without
    an encoder such as ``tfidf-lr``). A spec that cannot be loaded is an :class:`InputError`, so a
    plan refuses it before any study starts. ``say`` hears what is being timed (when it is)."""
    from ..core.files import atomic_write_text
    from .api_client import is_api_spec
    from .resolve import ModelSpec, load_model

    if role not in ("language_model", "encoder"):
        raise InputError(f"speeds are measured for language models and encoders, not for {role}")
    ms = ModelSpec.parse(spec)
    if is_api_spec(ms.source):
        return None
    key, where = speed_key(spec, role)
    if cached:
        hit = _read_cache().get(key)
        if isinstance(hit, dict):
            try:
                return Speed(float(hit["texts_per_s"]), None if hit.get("tokens_per_s") is None
                             else float(hit["tokens_per_s"]), str(hit["where"]), cached=True,
                             measured=str(hit.get("measured", "")))
            except (KeyError, TypeError, ValueError):
                pass
    if say is not None:
        say(f"timing {spec} on {where} ({len(PROBE_TEXTS)} texts) ...")
    try:
        model = load_model(spec, role)
    except InputError:
        if role == "encoder":  # a classifier with no hidden states (tfidf-lr): timed by its study alone
            return None
        raise
    if role == "language_model":
        seconds = _timed(model.token_logprobs, PROBE_TEXTS)
        tokens = sum(len(model.encode(t)) for t in PROBE_TEXTS)
        speed = Speed(len(PROBE_TEXTS) / seconds, tokens / seconds, where, measured=_today())
    else:
        seconds = _timed(model.hidden_states, PROBE_TEXTS)
        speed = Speed(len(PROBE_TEXTS) / seconds, None, where, measured=_today())
    if cached:
        data = _read_cache()
        data[key] = {k: v for k, v in asdict(speed).items() if k != "cached"}
        try:
            atomic_write_text(_cache_file(), json.dumps(data, indent=1, sort_keys=True))
        except OSError:  # a read-only cache: the figure is measured again next time
            pass
    return speed


def _today() -> str:
    import datetime

    return datetime.date.today().isoformat()


def count_parameters(source: str) -> tuple[float | None, str]:
    """Millions of parameters of the local model ``source`` without loading its weights, and
    where the count comes from: the shapes in its ``.safetensors`` headers (exact); else a model
    of its ``config.json`` built on PyTorch's meta device (exact, no memory); else, for an
    architecture transformers does not know, an estimate from the config's layer count and
    width; else (None, why)."""
    path = Path(source).expanduser()
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else []
    if files:
        try:
            total = 0
            for f in files:
                with open(f, "rb") as fh:
                    size = int.from_bytes(fh.read(8), "little")
                    header = json.loads(fh.read(size))
                total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
            return total / 1e6, "its safetensors headers"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if (path / "config.json").is_file():
        try:
            import torch
            from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

            config = AutoConfig.from_pretrained(str(path))
            archs = getattr(config, "architectures", None) or []
            auto = AutoModelForCausalLM if any(a.endswith("ForCausalLM") for a in archs) else AutoModel
            with torch.device("meta"):
                model = auto.from_config(config)
            return sum(p.numel() for p in model.parameters()) / 1e6, "its config.json"
        except Exception:  # an architecture transformers does not know: counted from its shape
            return _from_shape(path / "config.json")
    return None, "no safetensors or config.json"


def _from_shape(config: Path) -> tuple[float | None, str]:
    """About how many parameters a transformer of ``config``'s layer count and width has: layers ×
    (4·width² + 2·width·intermediate) + vocabulary × width."""
    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
        cfg = {**cfg.get("text_config", {}), **cfg} if isinstance(cfg.get("text_config"), dict) else cfg
        first = (lambda *keys: next((int(cfg[k]) for k in keys if isinstance(cfg.get(k), (int, float))), None))
        layers, hidden = first("num_hidden_layers", "n_layer", "num_layers"), first("hidden_size", "n_embd", "d_model")
        if layers and hidden:
            inter = first("intermediate_size", "n_inner", "d_ff") or 4 * hidden
            vocab = first("vocab_size") or 0
            return (layers * (4 * hidden ** 2 + 2 * hidden * inter) + vocab * hidden) / 1e6, \
                "its config.json's layer count and width (about)"
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return None, "its config.json names no layer count and width"
