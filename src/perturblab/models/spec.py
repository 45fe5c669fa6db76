"""The model spec grammar: a string naming a model, parsed and described without loading it.

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
  needs llama-cpp-python) for language models, and ``n_threads`` (its CPU threads, for
  evaluation and generation alike) with ``backend=llamacpp``. An ``api:`` source takes the settings a study config's
  ``api:`` block takes (:data:`API_OPTIONS`): ``api_key_env`` (the *name* of the environment
  variable holding the key; ``none`` sends no key), ``timeout``, ``max_retries``,
  ``concurrency``, ``max_response_bytes``, ``backoff_base``, ``backoff_max``; for classifiers ``label_words`` (``negative|positive``
  in the data's label order, or ``neg:negative|pos:positive``), ``mode``, ``top_logprobs``,
  ``n_samples``, ``temperature``, ``max_tokens``; for language models ``max_length``,
  ``logprobs``, ``score_max_tokens`` and ``scoring`` (``echo`` or ``prompt_logprobs``). A key is
  never taken as a value (``api_key=...`` is refused without being echoed).

``minilm-l6``, ``ref=models/ft-run-3``, ``models/ft-run-3[batch_size=8,max_length=128]``,
``lm=smollm2-135m[batch_size=4]`` and
``gpt=api:gpt-3.5-turbo-instruct@https://api.openai.com/v1[api_key_env=MY_KEY,mode=sample]`` are specs.
:meth:`ModelSpec.parse` reads one, checking each option's value; :mod:`.spec_check` refuses a spec
that cannot give a model for its role without loading anything, and :func:`~.resolve.load_model`
loads one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.placement import check_device, check_dtype
from ..errors import InputError
from .batching import check_batch_tokens
from .sources import exists_locally

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
    "n_threads": _positive("n_threads", 1),
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


#: the options an encoder takes (a directory, hub id, ``.gguf`` file or language-model preset):
#: where it runs and in which dtype, and how its inputs are batched and cut
ENCODER_OPTIONS = ("batch_size", "batch_tokens", "max_length", "device", "dtype")


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


def looks_like_path(source: str) -> bool:
    """Whether ``source`` is written as a path (``./m``, ``~/m``, ``/tmp/m``, ``runs/a/b``) rather than a name."""
    return "/" in source or "\\" in source or source.startswith((".", "~"))


def check_equals(ms: ModelSpec) -> None:
    """A source with ``=`` that names no existing file or directory was meant as NAME=SOURCE with a
    name that is none (``a/b=minilm-l6``, ``=minilm-l6``): say so rather than "unknown preset"."""
    source = ms.source
    if "=" not in source or "://" in source or exists_locally(source):
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
