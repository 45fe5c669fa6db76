"""One model resolver: a model spec string to the model a study needs.

A spec is ``[NAME=]SOURCE[[OPTION=VALUE,...]]``:

* ``SOURCE`` — a preset (``perturblab models``), a local model directory, a hub id, a ``.gguf``
  file, an API model (``api:MODEL@BASE_URL``, or a name a study config defines), or a trainable
  model of the zoo (``tfidf-lr``, ``textrnn``, ``hf-finetune`` …);
* ``NAME=`` — the short name tables and files show (default: the source as written); a part
  before ``=`` that contains ``/`` is a path, not a name (``/data/run=7`` is one source);
* ``[OPTION=VALUE,...]`` — backend options: ``batch_size`` (rows), ``batch_tokens`` (padded
  tokens per batch, or ``auto``: :mod:`.batching`) and ``max_length`` for Hugging Face
  models (classifiers, regressors, encoders) and language models; ``device`` (``cpu``, ``cuda``,
  ``cuda:N``, ``auto``) and ``dtype`` (``float32``, ``bfloat16``, ``float16``) for Hugging Face
  models and language models given by a directory, hub id, ``.gguf`` file or language-model
  preset (:mod:`.device`; ``--device`` and ``--dtype`` set them for every model of a command);
  ``backend`` (``torch``, ``llamacpp``: a ``.gguf`` file or GGUF preset run by llama.cpp, which
  needs llama-cpp-python) for language models. An ``api:`` source takes the settings a study config's
  ``api:`` block takes (:data:`API_OPTIONS`): ``api_key_env`` (the *name* of the environment
  variable holding the key; ``none`` sends no key), ``timeout``, ``max_retries``,
  ``concurrency``, ``max_response_bytes``, ``backoff_base``, ``backoff_max``; for classifiers ``label_words`` (``negative|positive``
  in the data's label order, or ``neg:negative|pos:positive``), ``mode``, ``top_logprobs``,
  ``n_samples``, ``temperature``, ``max_tokens``; for language models ``max_length``,
  ``logprobs``, ``score_max_tokens`` and ``scoring`` (``echo`` or ``prompt_logprobs``). A key is
  never taken as a value (``api_key=...`` is refused without being echoed).

``minilm-l6``, ``ref=models/ft-run-3``, ``models/ft-run-3[batch_size=8,max_length=128]``,
``lm=smollm2-135m[batch_size=4]`` and
``gpt=api:gpt-3.5-turbo-instruct@https://api.openai.com/v1[api_key_env=MY_KEY,mode=sample]`` are specs. :func:`load_model` loads one for a role
(``classifier``, ``regressor``, ``encoder`` or ``language_model``); a model object passes through.
:func:`check_spec` refuses a spec that cannot load for its role without loading anything: an
unknown name lists the known ones, a path that names nothing says so (as :func:`load_model` does).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ..core.placement import check_device, check_dtype
from ..errors import InputError
from .batching import check_batch_tokens

if TYPE_CHECKING:  # pragma: no cover
    from ..data.examples import Dataset

ROLES = ("classifier", "regressor", "encoder", "language_model")
_SPEC = re.compile(r"^(?:(?P<name>[^=\[\]]+)=(?!=))?(?P<source>[^\[\]]+?)\s*(?:\[(?P<options>[^\[\]]*)\])?$")
_UNNAMED = re.compile(r"^(?P<name>[^\s\S])?(?P<source>[^\[\]]+?)\s*(?:\[(?P<options>[^\[\]]*)\])?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def _positive(key: str, least: int) -> Any:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise InputError(f"model option {key}={text!r} is not a whole number") from None
        if value < least:
            raise InputError(f"model option {key}={value} must be at least {least}")
        return value
    return convert


def _one_of(key: str, allowed: tuple[str, ...], why: str) -> Any:
    def convert(text: str) -> str:
        if text not in allowed:
            raise InputError(f"model option {key}={text!r}: {why}")
        return text
    return convert


def _model_option(check: Any, text: str) -> Any:
    try:
        return check(text)
    except InputError as e:
        raise InputError(f"model option {e}") from None


OPTIONS: dict[str, Any] = {
    "batch_size": _positive("batch_size", 1),
    "batch_tokens": lambda text: _model_option(check_batch_tokens, text),
    "max_length": _positive("max_length", 2),
    "backend": _one_of("backend", ("torch", "llamacpp"), "give torch (the default) or llamacpp (a .gguf file or "
                                                         "GGUF preset run natively by llama.cpp)"),
    "device": lambda text: _model_option(check_device, text),
    "dtype": lambda text: _model_option(check_dtype, text),
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Option names that would carry a secret: refused on sight, and never echoed.
SECRET_OPTIONS = frozenset({"api_key", "apikey", "key", "token", "access_token", "secret", "password",
                            "authorization", "bearer"})


def _env_name(text: str) -> str | None:
    if text.lower() == "none":
        return None
    if not _ENV_NAME.match(text):  # the value is not echoed: it may be the key itself
        raise InputError("model option api_key_env takes the NAME of an environment variable (letters, digits and "
                         "_, e.g. api_key_env=OPENAI_API_KEY; none sends no key), never the key itself")
    return text


def _number(key: str, least: float, *, above: bool = False) -> Any:
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"model option {key}={text!r} is not a number") from None
        if value < least or (above and value == least):
            raise InputError(f"model option {key}={value:g} must be {'above' if above else 'at least'} {least:g}")
        return value
    return convert


def _label_words(text: str) -> tuple[str, ...] | tuple[tuple[str, str], ...]:
    items = [w.strip() for w in text.split("|")]
    if len(items) < 2 or not all(items):
        raise InputError(f"model option label_words={text!r}: give one word per label separated by '|', in the "
                         "data's label order (negative|positive) or as label:word pairs (neg:negative|pos:positive)")
    if all(":" in w for w in items):
        return tuple(tuple(x.strip() for x in w.split(":", 1)) for w in items)  # type: ignore[misc]
    return tuple(items)


#: Options of ``api:`` sources (the settings of a config's ``api:`` block, the key's variable by name).
API_CLIENT_OPTIONS: dict[str, Any] = {
    "api_key_env": _env_name,
    "timeout": _number("timeout", 0.0, above=True),
    "max_retries": _positive("max_retries", 0),
    "concurrency": _positive("concurrency", 1),
    "max_response_bytes": _positive("max_response_bytes", 1024),
    "backoff_base": _number("backoff_base", 0.0),
    "backoff_max": _number("backoff_max", 0.0),
}
API_CLASSIFIER_OPTIONS: dict[str, Any] = {
    "label_words": _label_words,
    "mode": _one_of("mode", ("auto", "logprobs", "sample"), "mode is auto, logprobs or sample"),
    "top_logprobs": _positive("top_logprobs", 1),
    "n_samples": _positive("n_samples", 1),
    "temperature": _number("temperature", 0.0),
    "max_tokens": _positive("max_tokens", 1),
}
API_LM_OPTIONS: dict[str, Any] = {
    "logprobs": _positive("logprobs", 0),
    "score_max_tokens": _one_of("score_max_tokens", ("0", "1"), "score_max_tokens is 0 or 1"),
    "scoring": _one_of("scoring", ("echo", "prompt_logprobs"), "scoring is echo or prompt_logprobs"),
}
API_OPTIONS: dict[str, Any] = {**API_CLIENT_OPTIONS, **API_CLASSIFIER_OPTIONS, **API_LM_OPTIONS,
                               "max_length": OPTIONS["max_length"]}


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec (see the module docstring)."""

    source: str
    name: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, spec: str) -> "ModelSpec":
        """Parse ``[NAME=]SOURCE[[OPTION=VALUE,...]]``; an :class:`InputError` names what is wrong."""
        text = str(spec).strip()
        m = _SPEC.match(text)
        if m is not None and "/" in (m.group("name") or ""):
            m = _UNNAMED.match(text)  # a path before '=' ("/odd/path=x") is no name: all of it is the source
        if not text or m is None:
            raise InputError(f"model spec {spec!r} is not [NAME=]SOURCE[[option=value,...]], e.g. "
                             "ref=minilm-l6 or models/ft[batch_size=8]")
        name, source = (m.group("name") or "").strip(), m.group("source").strip()
        if m.group("name") is not None and not _NAME.match(name):
            raise InputError(f"model name {name!r} in {spec!r}: a name uses letters, digits, '.', '_', ':' or '-' "
                             "(NAME=SOURCE gives a model a short name)")
        from .api_client import is_api_spec, parse_api_spec, redact

        api = is_api_spec(source)
        if api:
            parse_api_spec(source)  # malformed, or a URL with credentials: refused before anything else
        known = API_OPTIONS if api else OPTIONS
        options: dict[str, Any] = {}
        from ..core.options import csv_list

        for item in csv_list(m.group("options") or ""):
            key, eq, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if key.lower() in SECRET_OPTIONS:
                raise InputError(f"model option {key}=... ({name or source}): secrets are never taken on the command "
                                 "line or in a model spec; export the key in an environment variable and name the "
                                 "variable with api_key_env=VARIABLE (e.g. api_key_env=OPENAI_API_KEY)")
            if not eq or key not in known:
                where = "an api: model" if api else "this model"
                extra = ("" if api or key not in API_OPTIONS else
                         f"; {key} is a setting of api: models (api:MODEL@BASE_URL)")
                raise InputError(f"model option {redact(item)!r} in {redact(spec)!r}: give option=value with one of "
                                 f"{', '.join(known)} for {where}{extra}")
            options[key] = known[key](value.strip())
        return cls(source=source, name=name or source, options=tuple(sorted(options.items())))

    @property
    def kwargs(self) -> dict[str, Any]:
        """The backend options a loader takes."""
        return dict(self.options)

    def __str__(self) -> str:
        opts = f"[{','.join(f'{k}={v}' for k, v in self.options)}]" if self.options else ""
        return (f"{self.name}=" if self.name != self.source else "") + self.source + opts


def _looks_like_path(source: str) -> bool:
    """Whether ``source`` is written as a path (``./m``, ``~/m``, ``/tmp/m``, ``runs/a/b``) rather than a name."""
    return "/" in source or "\\" in source or source.startswith((".", "~"))


def _unknown(kind: str, name: str, known: list[str], also: str, others: Sequence[str] = ()) -> InputError:
    """:class:`~perturblab.errors.UnknownNameError` for ``name`` listing ``known``, then ``also``
    (the other kinds of source the role takes), with the names of ``known`` and ``others`` closest
    to it as a "did you mean": those as close as the closest, when at least 3/4 alike (difflib's
    ratio; ``minilm-l7``: ``minilm-l3`` or ``minilm-l6``; ``minilm-probe`` is like no encoder)."""
    import difflib

    from ..errors import UnknownNameError

    e = UnknownNameError(kind, name, known)
    names = list(dict.fromkeys([*known, *others]))
    lowered = {n.lower(): n for n in names}
    scored = [(difflib.SequenceMatcher(None, name.lower(), low).ratio(), low) for low in lowered]
    best = max((r for r, _ in scored), default=0.0)
    close = [lowered[low] for r, low in sorted(scored, key=lambda x: (-x[0], x[1])) if r == best and r >= 0.75]
    head = f"unknown {kind} {name!r}"
    hint = f" (did you mean {' or '.join(close[:3])}?)" if close else ""
    e.args = (f"{head}{hint}{e.args[0][len(head):]}; {also}",)
    return e


def _no_such_path(ms: ModelSpec, role: str, *, gguf: bool = False) -> InputError:
    """The error of a source written as a path where nothing (or no directory) is."""
    path = Path(ms.source).expanduser()
    what = role.replace("_", " ")
    where = f" ({path})" if ms.source.startswith("~") else ""  # where ~ points
    takes = "a directory holding config.json and the weights" + (", or a .gguf file" if gguf else "")
    if gguf and path.suffix == ".gguf":
        return InputError(f"{what} {ms.source!r}: no such GGUF file{where}; check the path")
    if path.exists():
        return InputError(f"{what} {ms.source!r} is a file, not a model directory; give {takes}")
    return InputError(f"{what} {ms.source!r}: no such directory{where}; check the path (a model given by its path "
                      f"is {takes})")


def _is_local_or_hub(source: str) -> bool:
    """Whether ``source`` is a hub id or a local model directory; a directory without a
    ``config.json`` (an empty or unsaved folder) is refused here, before anything is timed or
    loaded."""
    from .sources import local_or_hub

    found = local_or_hub(source)
    if found is None:
        return False
    path = Path(found)
    if path.is_dir() and not (path / "config.json").is_file():
        raise InputError(f"model directory {source!r} has no config.json, so it is not a saved Hugging Face model; "
                         "give the directory that save_pretrained() wrote (config.json and the weights)")
    return True


def _check_source(ms: ModelSpec, role: str) -> None:
    """Refuse, without loading anything, a (parsed) spec whose source cannot give a ``role`` model:
    an unknown name (listing the known ones), a path where no directory (or ``.gguf`` file) is,
    an API model for a role it cannot serve or with options of another role, backend options a
    source does not take. A hub id (``org/name``) is taken as it is."""
    from .api_client import is_api_spec

    if is_api_spec(ms.source):
        _api_options(ms, role)
        return
    from . import named

    name = ms.source
    if role == "language_model":
        from .lm_presets import LM_PRESETS

        if named.api_definition(name, role) is not None or name in LM_PRESETS:
            return
        path = Path(name).expanduser()
        if path.suffix == ".gguf":
            if not path.is_file():
                raise _no_such_path(ms, role, gguf=True)
            return
        if _is_local_or_hub(name):
            return
        if _looks_like_path(name):
            raise _no_such_path(ms, role, gguf=True)
        raise _unknown("language model preset", name, LM_PRESETS.names(),
                       "or give a model directory, a .gguf file, a hub id (org/name) or api:MODEL@BASE_URL")
    from . import presets, zoo

    if role == "encoder":
        from .lm_presets import LM_PRESETS

        encoders = [n for n in presets.PRESETS.names() if presets.PRESETS.create(n).kind == "encoder"]
        if name in presets.PRESETS and presets.PRESETS.create(name).make_encoder is None:
            raise InputError(f"model preset {name!r} has no encoder (no hidden states); choose one of "
                             + ", ".join(encoders))
        _encoder_options(ms)
        if name in presets.PRESETS or name in LM_PRESETS:
            return
        if Path(name).expanduser().suffix == ".gguf":
            if not Path(name).expanduser().is_file():
                raise _no_such_path(ms, role, gguf=True)
            return
        if _is_local_or_hub(name):
            return
        if _looks_like_path(name):
            raise _no_such_path(ms, role, gguf=True)
        raise _unknown("encoder", name, encoders + LM_PRESETS.names(),
                       "or give a model directory, a .gguf file or a hub id (org/name)")
    if role == "regressor":
        if name.lower() in zoo.TRAINABLE.names() and name not in presets.PRESETS:
            _no_options(ms, "models trained here")
            if name.lower() != "hf-finetune":
                raise InputError(f"{name} trains classifiers only; on a regression task use hf-finetune, an encoder "
                                 "preset (a ridge head), tfidf-ridge, or a fine-tuned one-output HF model directory")
            return
        if name in presets.PRESETS:
            _no_options(ms, "presets")
            preset = presets.PRESETS.create(name)
            if preset.kind == "tfidf" and preset.name != "tfidf-ridge":
                raise InputError(f"{preset.name} is a classifier; for a regression task use tfidf-ridge")
            return
    else:  # classifier (a classifier option may name a regressor: the data's task decides)
        if named.api_definition(name, "classifier") is not None:
            return
        if name in presets.PRESETS:
            _no_options(ms, "presets")
            return
        if name.lower() in zoo.TRAINABLE.names():
            _no_options(ms, "models trained here")
            return
    if _is_local_or_hub(name):
        _check_head(name, role)
        return
    raise _not_found(ms, role)


def _check_head(source: str, role: str) -> None:
    """Refuse a local directory given as a classifier or regressor whose ``config.json`` names
    architectures none of which is a sequence classification model (a bare encoder such as
    ``BertModel``: its head would be random), before any model is timed or loaded; a directory
    whose config names none is left to the loader."""
    from .sources import architectures

    archs = architectures(source)
    if archs and not any(a.endswith("ForSequenceClassification") for a in archs):
        raise InputError(f"{role} {source!r} is not a fine-tuned sequence classification model (its config.json "
                         f"names {', '.join(archs)}, without a classification head); give a fine-tuned "
                         "classifier directory, or compare its hidden states with `perturblab similarity`")


def _not_found(ms: ModelSpec, role: str) -> InputError:
    """The error of a classifier or regressor source that is no preset, no model trained here, no
    directory and no hub id: no such directory when it is written as a path, else the known names."""
    from . import presets, zoo

    if _looks_like_path(ms.source):
        return _no_such_path(ms, role)
    trained = [n for n in zoo.TRAINABLE.names() if n not in presets.PRESETS
               and (role == "classifier" or n == "hf-finetune")]
    return _unknown("model preset", ms.source, presets.PRESETS.names(),
                    f"models trained here: {', '.join(trained)}; or give a model directory or a hub id (org/name)",
                    others=trained)


def fits(spec: "str | ModelSpec", role: str) -> bool:
    """Whether ``spec`` can give a ``role`` model (:func:`check_spec` refuses nothing)."""
    try:
        check_spec(spec, role)
    except InputError:
        return False
    return True


def check_spec(spec: "str | ModelSpec", role: str) -> None:
    """Refuse a model spec that cannot give a ``role`` model (``classifier``, ``regressor``,
    ``encoder`` or ``language_model``) with an :class:`InputError` naming the spec and the fix,
    without loading a model or reading a model file: the spec is parsed (:meth:`ModelSpec.parse`),
    a preset or trainable name must be known for the role, a path must name an existing model
    directory (or ``.gguf`` file, for language models and encoders), an ``api:`` spec must parse and
    carry options of its role (a variable it names in ``api_key_env`` must be set), options must be
    those of the role (an encoder takes :data:`ENCODER_OPTIONS`), and ``[backend=llamacpp]`` must
    name a ``.gguf`` file or GGUF preset, with llama-cpp-python installed. A string of the
    form of a hub id (``org/name``) is accepted as it is: whether the hub has it is known only when
    it is fetched. A classifier option may name a regressor (``tfidf-ridge``, ``r3=minilm-l3``):
    whether the data is a regression task decides later."""
    if role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    ms = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    _check_equals(ms)
    _check_source(ms, role)
    opts = dict(ms.options)
    if "backend" in opts and role != "language_model":
        raise InputError(f"{ms.name}: backend= chooses how a language model runs; drop it for "
                         f"{'an' if role[0] in 'aeiou' else 'a'} {role.replace('_', ' ')}")
    if opts.get("backend") == "llamacpp":  # a directory, an option llama.cpp cannot honour, no llama-cpp-python
        from .lm_presets import check_llamacpp

        check_llamacpp(ms.source, opts)
    if "device" in opts or "dtype" in opts:  # CUDA where there is none: said before any work
        from ..core.placement import resolve

        try:
            resolve(opts.get("device"), opts.get("dtype"))
        except InputError as e:
            raise InputError(f"{ms.name}: {e}") from None


def spec_capabilities(spec: str) -> frozenset[str]:
    """What the language model of ``spec`` can do, its options read too, without loading it:
    ``[backend=llamacpp]`` gives :data:`~.llamacpp.LLAMACPP_CAPABILITIES`, any other spec what
    :func:`~.lm_presets.language_model_capabilities` says of its source."""
    from .api_client import is_api_spec
    from .lm_presets import language_model_capabilities

    if is_api_spec(spec):
        return language_model_capabilities(spec)
    ms = ModelSpec.parse(spec)
    if dict(ms.options).get("backend") == "llamacpp":
        from .llamacpp import LLAMACPP_CAPABILITIES

        return LLAMACPP_CAPABILITIES
    return language_model_capabilities(ms.source)


#: the models loaded within :func:`shared_loads`, by what they were loaded for (None: outside it)
_SHARED: ContextVar["dict[tuple, Any] | None"] = ContextVar("perturblab_shared_loads", default=None)


@contextmanager
def shared_loads() -> Iterator[None]:
    """Within it (in this thread), :func:`load_model` returns the model it loaded before for the
    same spec, role, training data, seed, device and dtype instead of loading it again: a
    comparison's studies (and the timing of its plan) load each model once.

    >>> from perturblab.data import Dataset, Example
    >>> toy = Dataset([Example(text=t, label=i % 2) for i, t in enumerate(["a good film", "a bad film",
    ...                "fine acting", "awful plot"])], ["neg", "pos"])
    >>> with shared_loads():
    ...     load_model("tfidf-lr", train=toy) is load_model("tfidf-lr", train=toy)
    True
    >>> load_model("tfidf-lr", train=toy) is load_model("tfidf-lr", train=toy)
    False
    """
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def loaded_fingerprints(spec: str, role: str | None = None) -> list[str]:
    """The fingerprints of the models loaded for ``spec`` (as ``role``, or any role) within the
    current :func:`shared_loads`: one per role and training data it was loaded for; empty outside
    it or before any load. Which roles were loaded depends on what the run needed (a model's
    speed measured as a bare encoder, say), so a stable record names the role."""
    memo = _SHARED.get() or {}
    key = repr(ModelSpec.parse(spec))
    return sorted({str(getattr(m, "fingerprint", "")) for k, m in memo.items()
                   if k[0] == key and (role is None or k[1] == role)} - {""})


def load_model(spec: "str | ModelSpec | Any", role: str = "classifier", *, train: "Dataset | None" = None,
               seed: int = 0, data_name: str | None = None) -> Any:
    """The model ``spec`` names, for ``role`` (see the module docstring).

    ``train`` (with ``seed``) trains what a preset or zoo model needs (a classifier head, a
    model trained from scratch); ``data_name`` is recorded as the head's provenance. A model
    object (anything with a ``fingerprint``) is returned as it is. Within :func:`shared_loads`
    a model loaded before for the same purpose is returned again."""
    if role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if not isinstance(spec, (str, ModelSpec)):
        if not hasattr(spec, "fingerprint"):
            raise InputError(f"{type(spec).__name__} is not a model: give a spec or an object with a fingerprint")
        return spec
    ms = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    memo = _SHARED.get()
    if memo is None:
        return _load(ms, role, train, seed, data_name)
    from ..core.placement import defaults
    from .presets import data_fingerprint

    key = (repr(ms), role, None if train is None else data_fingerprint(train), seed, defaults())
    if key not in memo:
        memo[key] = _load(ms, role, train, seed, data_name)
    return memo[key]


def _load(ms: "ModelSpec", role: str, train: "Dataset | None", seed: int, data_name: str | None) -> Any:
    """:func:`load_model` of a parsed spec (no sharing)."""
    _check_equals(ms)
    if _looks_like_path(ms.source):  # a path that names no model: said before any loader runs
        _check_source(ms, role)
    kw = ms.kwargs
    from .api_client import is_api_spec

    if is_api_spec(ms.source):
        return _api_model(ms, role, train)
    if role == "language_model":
        from .lm_presets import load_language_model

        return load_language_model(ms.source, **({"name": ms.name} if ms.name != ms.source else {}), **kw)
    if role == "encoder":
        from .presets import load_encoder

        _encoder_options(ms)
        return load_encoder(ms.source, **kw)
    if train is None:
        raise InputError(f"loading {ms.source!r} as a {role} needs the training split (train=) for its head")
    if role == "regressor":
        return _regressor(ms, train, seed)
    return _classifier(ms, train, seed, data_name)


def _check_equals(ms: ModelSpec) -> None:
    """A source with ``=`` that names no existing file or directory was meant as NAME=SOURCE with a
    name that is none (``a/b=minilm-l6``, ``=minilm-l6``): say so rather than "unknown preset"."""
    source = ms.source
    if "=" not in source or "://" in source or Path(source).expanduser().exists():
        return
    name, _, rest = source.partition("=")
    name = name.strip()
    if not name:
        why = "nothing comes before '='"
    elif _NAME.match(name) and rest.startswith("="):
        why = "'==' is no separator: write one '='"
    else:
        why = "a name uses letters, digits, '.', '_', ':' or '-'"
    raise InputError(f"model spec {source!r}: {why} (NAME=SOURCE gives a model a short name, e.g. ref=minilm-l6), "
                     f"and no file or directory {source!r} exists; fix the name or the path")


def _api_model(ms: ModelSpec, role: str, train: "Dataset | None") -> Any:
    """The model an ``api:MODEL@BASE_URL`` spec names for ``role``: an
    :class:`~.api.ApiClassifier` answering with the training split's labels, or an
    :class:`~.api_lm.ApiLanguageModel`; the key is read from the variable ``api_key_env`` names
    (default :func:`~.api_client.default_api_key_env`), which must be set when it is named."""
    from .api_client import ApiClient, api_config_from_spec

    client, opts = _api_options(ms, role)
    if role == "language_model":
        from .lm_presets import load_api_language_model

        if "score_max_tokens" in opts:
            opts["score_max_tokens"] = int(opts["score_max_tokens"])
        return load_api_language_model(ms.source, name=ms.name, **client, **opts)
    if train is None or not train.label_names:
        raise InputError(f"{ms.name}: an API classifier needs the data's class labels (a classification training "
                         "split); regression targets cannot be asked of it")
    from .api import ApiClassifier

    from .api import label_words_for

    labels = list(train.label_names)
    words = label_words_for(ms.name, opts.pop("label_words", None), labels)
    config = api_config_from_spec(ms.source, **client)
    return ApiClassifier(ApiClient(config), labels, label_words=words, name=ms.name, **opts)


def _api_options(ms: ModelSpec, role: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(client settings, model options) of an ``api:`` spec after checking that it serves ``role``
    (a classifier or a language model), that its options are those of that role and that a
    variable it names in ``api_key_env`` is set."""
    import os

    opts = dict(ms.options)
    client = {k: opts.pop(k) for k in list(opts) if k in API_CLIENT_OPTIONS}
    if role not in ("classifier", "language_model"):
        raise InputError(f"{ms.name}: an API model serves as a classifier or a language model, not as a "
                         f"{role}; use a local model for it")
    env = client.get("api_key_env", "")
    if env and not os.environ.get(env):
        raise InputError(f"{ms.name}: api_key_env names the environment variable {env}, which is not set; export "
                         f"{env}=<your key> first (or api_key_env=none for a server that needs no key)")
    if role == "language_model":
        wrong = sorted(set(opts) - set(API_LM_OPTIONS) - {"max_length"})
        if wrong:
            raise InputError(f"{ms}: {', '.join(wrong)} set an API classifier, not a language model; language-model "
                             f"options are {', '.join([*API_LM_OPTIONS, 'max_length'])}")
    else:
        wrong = sorted(set(opts) - set(API_CLASSIFIER_OPTIONS))
        if wrong:
            raise InputError(f"{ms}: {', '.join(wrong)} set an API language model, not a classifier; classifier "
                             f"options are {', '.join(API_CLASSIFIER_OPTIONS)}")
    return client, opts


def _no_options(ms: ModelSpec, what: str) -> None:
    if ms.kwargs:
        raise InputError(f"{ms}: backend options are taken by Hugging Face classifiers, encoders and language "
                         f"models, not by {what} in this version; drop the [...] part (--device and --dtype place "
                         "every model of a command)")


#: the options an encoder takes (a directory, hub id, ``.gguf`` file or language-model preset):
#: where it runs and in which dtype, and how its inputs are batched and cut
ENCODER_OPTIONS = ("batch_size", "batch_tokens", "max_length", "device", "dtype")


def _encoder_options(ms: ModelSpec) -> None:
    """Refuse the options of an encoder preset (it takes none) and an option that means nothing
    for any encoder (``backend``: how a language model scores), naming the ones it takes."""
    from .presets import PRESETS

    if ms.source in PRESETS:
        _no_options(ms, "presets")
        return
    wrong = [k for k in ms.kwargs if k not in ENCODER_OPTIONS]
    if wrong:
        raise InputError(f"{ms}: {', '.join(f'{k}=' for k in wrong)} means nothing for an encoder (its hidden states); "
                         f"drop it (an encoder takes {', '.join(ENCODER_OPTIONS)})")


def _classifier(ms: ModelSpec, train: "Dataset", seed: int, data_name: str | None) -> Any:
    from . import named, presets, zoo
    from .sources import local_or_hub

    name = ms.source
    if named.api_definition(name, "classifier") is None and name not in presets.PRESETS:
        if name.lower() in zoo.TRAINABLE.names():
            _no_options(ms, "models trained here")

            return zoo.fit_model(name, train.inputs(), train.labels, seed, label_names=train.label_names)
        source = local_or_hub(name)
        if source is not None:
            from .hf import HFSequenceClassifier

            return HFSequenceClassifier(source, name=ms.name, **ms.kwargs)
        raise _not_found(ms, "classifier")
    _no_options(ms, "presets")
    return presets.load_classifier(name, train, seed=seed, data_name=data_name)


def _regressor(ms: ModelSpec, train: "Dataset", seed: int) -> Any:
    """A regressor for a regression training set: ``hf-finetune`` fine-tuned with a one-output
    head (:func:`~.zoo.finetune_regressor`), an encoder preset with a ridge head, ``tfidf-ridge``,
    or a fine-tuned one-output HF model directory / hub id (:func:`~.regression.load_regressor`);
    the other trainable zoo models train classifiers only (an :class:`InputError`)."""
    from . import zoo
    from .presets import PRESETS
    from .regression import load_regressor, regression_targets
    from .sources import local_or_hub

    name = ms.source
    if name.lower() in zoo.TRAINABLE.names() and name not in PRESETS:
        _no_options(ms, "models trained here")
        if name.lower() == "hf-finetune":
            return zoo.finetune_regressor(train, seed)
        raise InputError(f"{name} trains classifiers only; on a regression task use hf-finetune, an encoder preset "
                         "(a ridge head), tfidf-ridge, or a fine-tuned one-output HF model directory")
    source = None if name in PRESETS else local_or_hub(name)
    if source is None and name not in PRESETS:
        raise _not_found(ms, "regressor")
    if source is not None:
        from .hf import HFSequenceRegressor

        regression_targets(train, f"model {name!r}")
        return HFSequenceRegressor(source, name=ms.name, **ms.kwargs)
    _no_options(ms, "presets")
    return load_regressor(name, train, seed=seed)
