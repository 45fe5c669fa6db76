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
directory) and a later plan reads it back.

The timing of one model takes at most :data:`MOST_SECONDS`, its warm-up included (its loading
is not: a comparison loads each model once, for its timing and all its studies); see
:func:`_timed`. A figure is kept only when it looks steady (:func:`_unsteady`): at least two
whole passes of the probe that differ little, and not far below the figure the same model had
here within :data:`MAX_AGE_DAYS`; other work sharing the machine makes passes slow and uneven,
and such a figure is used by the plan that measured it and measured again by the next. A kept
figure is read back for :data:`MAX_AGE_DAYS` days, then measured again (``retime=True``, the
``--retime`` of ``compare``, measures it again at once).

>>> s = Speed(texts_per_s=812.0, tokens_per_s=41_000.0, where="cuda:0, bfloat16, NVIDIA H200")
>>> s.text()
'cuda:0, bfloat16, NVIDIA H200: 41k tokens/s'
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import InputError

__all__ = ["PROBE_TEXTS", "Speed", "count_parameters", "measure_speed", "speed_key"]

#: changes when the probe does (texts, repetitions, what a kept figure records), so earlier
#: figures are measured again
PROBE_VERSION = 4
#: the least seconds of timed work and the least timed passes per figure (the fastest pass counts)
LEAST_SECONDS, LEAST_PASSES = 1.0, 3
#: the most seconds the timing of one model takes, warm-up included (its loading is not)
MOST_SECONDS = 10.0
#: the most whole passes timed per figure (a fast model reaches :data:`LEAST_SECONDS` after many)
MOST_PASSES = 50
#: texts of the probe per piece: the warm-up is one piece, and a model whose whole pass does not
#: fit in :data:`MOST_SECONDS` is timed a piece at a time
PIECE = 8
#: a figure whose passes' median is more than this many times its fastest pass is not kept
#: (other work shared the machine while it was measured)
UNSTEADY = 1.5
#: a figure below this share of the one kept for the same model within :data:`MAX_AGE_DAYS` is
#: not kept (it looks measured while other work shared the machine)
FAR_BELOW = 0.5
#: days a kept figure is read back before it is measured again
MAX_AGE_DAYS = 30

#: the clock the timing reads (a test gives its own)
_clock: Callable[[], float] = time.perf_counter

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
    threads), whether it was read back from the cache (``cached``), the day it was measured, and
    for a figure measured now that was not kept, why (``unkept``: it looked measured while other
    work shared the machine; the next plan measures it again)."""

    texts_per_s: float
    tokens_per_s: float | None
    where: str
    cached: bool = False
    #: the day it was measured (``2026-11-28``)
    measured: str = ""
    #: why a figure measured now was not kept ("" : kept, or read back)
    unkept: str = ""

    def text(self) -> str:
        """``cuda:0, bfloat16, NVIDIA H200: 41k tokens/s`` (texts/s where tokens are not counted)."""
        if self.tokens_per_s is not None:
            return f"{self.where}: {_short(self.tokens_per_s)} tokens/s"
        return f"{self.where}: {_short(self.texts_per_s)} texts/s"

    def when(self, today: datetime.date | None = None) -> str:
        """When it was measured, for a plan: ``measured 2026-11-20, 11 days ago`` for a figure read
        back; ``measured now, not kept: ...`` for one that was not kept; "" for one measured now
        and kept."""
        if self.cached:
            age = self.age_days(today)
            ago = "" if age is None else ", today" if age == 0 else ", 1 day ago" if age == 1 else f", {age} days ago"
            return f"measured {self.measured or 'before'}{ago}"
        return f"measured now, not kept: {self.unkept}" if self.unkept else ""

    def age_days(self, today: datetime.date | None = None) -> int | None:
        """Whole days since it was measured (None when the day is not known)."""
        return _age_days(self.measured, today)


def _short(x: float) -> str:
    return f"{x / 1000:.0f}k" if x >= 10_000 else f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


def _age_days(measured: Any, today: datetime.date | None = None) -> int | None:
    """Whole days since the day ``measured`` (``2026-11-20``), or None when it is no day."""
    try:
        day = datetime.date.fromisoformat(str(measured))
    except ValueError:
        return None
    return ((today or datetime.date.today()) - day).days


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
    from .spec import ModelSpec

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


@dataclass(frozen=True)
class _Timing:
    """What :func:`_timed` measured: ``seconds`` the figure's ``texts`` took (the fastest whole pass,
    or the pieces timed when no whole pass fitted), the seconds of each whole pass (``passes``),
    and how long the timing took, warm-up included (``spent``)."""

    seconds: float
    texts: int
    passes: tuple[float, ...] = ()
    spent: float = 0.0
    #: the texts timed, in the probe's order (all of them when a whole pass was timed)
    timed: tuple[str, ...] = field(default=(), repr=False)

    def spread(self) -> float | None:
        """The passes' median over the fastest (None with fewer than two passes)."""
        if len(self.passes) < 2:
            return None
        return statistics.median(self.passes) / max(min(self.passes), 1e-12)


def _timed(run: Callable[[Sequence[str]], Any], texts: tuple[str, ...], budget: float | None = None) -> _Timing:
    """Time ``run`` over ``texts`` in at most ``budget`` seconds (default :data:`MOST_SECONDS`), its
    warm-up included.

    The warm-up is one call on the first :data:`PIECE` texts (the first use of the kernels and
    caches, a quantised model's first dequantisation). Then whole passes over ``texts`` are timed,
    each in one call (the model batches them as a study does), while the next one is expected to
    end within the budget (expected: as long as the slowest so far; the first, at the warm-up's
    time per text), until at least :data:`LEAST_PASSES` passes and :data:`LEAST_SECONDS` of
    timed work (at most :data:`MOST_PASSES`). The fastest pass, not the mean, counts, so a moment
    of other work on the machine does not stay in the figure (the minimum of repeats, as timeit
    takes it). When not even one whole pass fits (a slow model, a loaded machine), the texts are
    timed :data:`PIECE` at a time, from the second piece on, while the next piece is expected to
    fit; when none fits, the warm-up's own time is the figure. So the timing ends within the
    budget unless one call runs far longer than the calls before it (the warm-up runs whatever
    it takes)."""
    clock = _clock
    start = clock()
    deadline = start + (MOST_SECONDS if budget is None else budget)
    first = texts[:PIECE]
    t = clock()
    run(first)
    warm = clock() - t
    passes: list[float] = []
    expected = warm * len(texts) / max(len(first), 1)
    while len(passes) < MOST_PASSES:
        if len(passes) >= LEAST_PASSES and sum(passes) >= LEAST_SECONDS:
            break
        if clock() + (max(passes) if passes else expected) > deadline:
            break
        t = clock()
        run(texts)
        passes.append(clock() - t)
    if passes:
        return _Timing(min(passes), len(texts), tuple(passes), clock() - start, texts)
    pieces = [texts[k:k + PIECE] for k in range(0, len(texts), PIECE)]
    done: list[str] = []
    seconds, per_text = 0.0, warm / max(len(first), 1)  # expected seconds a text of the next piece takes
    for piece in pieces[1:] + pieces[:1]:  # the first piece last: its warm-up was no timing
        if clock() + per_text * len(piece) > deadline:
            break
        t = clock()
        run(piece)
        took = clock() - t
        per_text = max(took / len(piece), per_text if done else 0.0)  # the slowest timed piece's
        seconds += took
        done.extend(piece)
    if not done:  # not even one piece fits after the warm-up: its time is the figure
        return _Timing(warm, len(first), (), clock() - start, first)
    return _Timing(seconds, len(done), (), clock() - start, tuple(done))


def _unsteady(timing: _Timing, rate: float, before: dict[str, Any] | None) -> str:
    """Why a figure of ``rate`` texts/s from ``timing`` is not kept ("" : it is), ``before`` being
    the figure kept for the same layout and machine, if any: only pieces or one whole pass fitted
    in the time the timing may take; the passes' median is more than :data:`UNSTEADY` times the
    fastest; or it is below :data:`FAR_BELOW` times a figure kept within :data:`MAX_AGE_DAYS`."""
    if not timing.passes:
        return (f"a whole pass over the {len(PROBE_TEXTS)} probe texts does not fit in the {MOST_SECONDS:g} s the "
                f"timing may take, so it was timed on {timing.texts} of them")
    spread = timing.spread()
    if spread is None:
        return f"one pass fitted in the {MOST_SECONDS:g} s the timing may take, too few to tell a steady figure"
    if spread > UNSTEADY:
        return (f"its {len(timing.passes)} passes varied {spread:.1f}x (median over the fastest), as when other "
                "work shares the machine")
    if before is not None:
        try:
            old, day = float(before["texts_per_s"]), str(before.get("measured", ""))
        except (KeyError, TypeError, ValueError):
            return ""
        age = _age_days(day)
        if age is not None and age <= MAX_AGE_DAYS and rate < FAR_BELOW * old:
            return (f"{rate / old:.2f}x the figure of {day}, as when other work shares the machine (that one is "
                    "kept)")
    return ""


def measure_speed(spec: str, role: str, *, cached: bool = True, retime: bool = False,
                  say: Callable[[str], None] | None = None) -> Speed | None:
    """The speed of the model ``spec`` in ``role`` (``language_model`` or ``encoder``) under the
    current placement, timed on :data:`PROBE_TEXTS` in at most :data:`MOST_SECONDS` after it is
    loaded (:func:`_timed`); None for a model that cannot be timed without loading it from its
    data or a server (an ``api:`` model, a classifier without an encoder such as ``tfidf-lr``).

    A figure kept for the same layout and machine within :data:`MAX_AGE_DAYS` is read back
    (``cached``), unless ``retime``; a figure measured now is kept only when it looks steady
    (:func:`_unsteady`, else its ``unkept`` says why). ``cached=False`` neither reads nor keeps
    one. A spec that cannot be loaded is an :class:`InputError`, so a plan refuses it before any
    study starts. ``say`` hears what is being timed (when it is)."""
    from ..core.files import atomic_write_text
    from .api_client import is_api_spec
    from .resolve import HubLoadError, load_model
    from .spec import ModelSpec

    if role not in ("language_model", "encoder"):
        raise InputError(f"speeds are measured for language models and encoders, not for {role}")
    ms = ModelSpec.parse(spec)
    if is_api_spec(ms.source):
        return None
    key, where = speed_key(spec, role)
    before = _read_cache().get(key) if cached else None
    before = before if isinstance(before, dict) else None
    if before is not None and not retime:
        try:
            hit = Speed(float(before["texts_per_s"]), None if before.get("tokens_per_s") is None
                        else float(before["tokens_per_s"]), str(before["where"]), cached=True,
                        measured=str(before.get("measured", "")))
        except (KeyError, TypeError, ValueError):
            hit = None
        age = None if hit is None else hit.age_days()
        if hit is not None and age is not None and 0 <= age <= MAX_AGE_DAYS:
            return hit
    if say is not None:
        say(f"timing {spec} on {where} ({len(PROBE_TEXTS)} texts, at most {MOST_SECONDS:g} s once loaded) ...")
    try:
        model = load_model(spec, role)
    except HubLoadError:
        raise
    except InputError:
        if role == "encoder":  # a classifier with no hidden states (tfidf-lr): timed by its study alone
            return None
        raise
    lm = role == "language_model"
    timing = _timed(model.token_logprobs if lm else model.hidden_states, PROBE_TEXTS)
    rate = timing.texts / timing.seconds
    tokens = sum(len(model.encode(t)) for t in timing.timed) / timing.seconds if lm else None
    speed = Speed(rate, tokens, where, measured=_today(), unkept=_unsteady(timing, rate, before))
    if speed.unkept:
        return speed
    if cached:
        data = _read_cache()
        data[key] = {**{k: v for k, v in asdict(speed).items() if k not in ("cached", "unkept")},
                     "passes": [round(p, 4) for p in timing.passes]}
        try:
            atomic_write_text(_cache_file(), json.dumps(data, indent=1, sort_keys=True))
        except OSError:  # a read-only cache: the figure is measured again next time
            pass
    return speed


def _today() -> str:
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
