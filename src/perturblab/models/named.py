"""Models named in a study config (``models:``), found by the loaders by name.

A definition is either a source (``ref: minilm-l6``, ``ft: {path: ./my-model}``), which the
config simply substitutes, or an OpenAI-compatible endpoint::

    gpt:
      api:
        base_url: https://api.openai.com/v1
        model: gpt-3.5-turbo-instruct
        api_key_env: OPENAI_API_KEY        # the key is read from this variable, never stored
        label_words: {neg: negative, pos: positive}   # or a list in the data's label order
        template: "{text}\\nSentiment ({choices}):"    # optional; classifier prompt
        mode: auto                          # logprobs | sample | auto (classifiers)
        timeout: 60, max_retries: 5, concurrency: 4, n_samples: 10, ...
        max_response_bytes: 16777216        # larger answers are refused (16 MiB)

An API model serves as a classifier (SCoPE, robustness) and as a language model (selfcheck,
scope-lm) where the endpoint can do what the metric needs. :func:`define` registers definitions
for this process; :func:`snapshot`/:func:`restore` carry them to executor workers.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import InputError
from .base import API_ROLES
from .sources import exists_locally

CLIENT_KEYS = ("base_url", "model", "api_key_env", "timeout", "max_retries", "backoff_base", "backoff_max",
               "concurrency", "max_response_bytes")
CLASSIFIER_KEYS = ("label_words", "template", "mode", "top_logprobs", "n_samples", "temperature", "max_tokens")
_DEFINED: dict[str, dict[str, Any]] = {}
_LOCK = threading.Lock()


def check_definition(name: str, spec: Any, base: Path | None = None) -> dict[str, Any]:
    """A checked, JSON-able definition: ``{"source": str}`` or ``{"api": {...}, "roles": [...]}``."""
    if isinstance(spec, str):
        return {"source": spec}
    if not isinstance(spec, dict) or len(spec) != 1 or not set(spec) <= {"path", "source", "api"}:
        raise InputError("expected a model source (preset, directory, hub id), {path: DIR} or {api: {...}}")
    if "source" in spec:
        return {"source": str(spec["source"])}
    if "path" in spec:
        p = Path(str(spec["path"])).expanduser()
        if not p.is_absolute() and base is not None:
            p = base / p
        if not exists_locally(str(p)):
            raise InputError(f"path {p} does not exist")
        return {"source": str(p)}
    api = spec["api"]
    if not isinstance(api, dict) or "base_url" not in api:
        raise InputError("api needs at least base_url (e.g. https://api.openai.com/v1) and usually model")
    unknown = set(api) - set(CLIENT_KEYS) - set(CLASSIFIER_KEYS) - {"roles"}
    if unknown:
        raise InputError(f"unknown api settings {sorted(unknown)}; allowed: "
                         f"{', '.join(CLIENT_KEYS + CLASSIFIER_KEYS + ('roles',))}")
    roles = api.get("roles", list(API_ROLES))
    roles = [roles] if isinstance(roles, str) else list(roles)
    if not roles or set(roles) - set(API_ROLES):
        raise InputError(f"roles must be a subset of {list(API_ROLES)}")
    settings = {k: v for k, v in api.items() if k != "roles"}
    _client(settings)  # checks base_url and numbers now, not when a study starts
    words = settings.get("label_words")
    if words is not None and not isinstance(words, (list, dict)):
        raise InputError("label_words is a list (in the data's label order) or a {label: word} mapping")
    return {"api": settings, "roles": roles}


def define(name: str, definition: dict[str, Any]) -> None:
    """Register a checked definition under ``name`` for this process."""
    with _LOCK:
        _DEFINED[name] = dict(definition)


@contextmanager
def defined(definitions: dict[str, dict[str, Any]]) -> Iterator[None]:
    """The API models of ``definitions`` defined for the block only (a config's values are checked
    before its run defines them); the definitions before the block are restored after it."""
    before = snapshot()
    for name, d in definitions.items():
        if "api" in d:
            define(name, d)
    try:
        yield
    finally:
        clear()
        restore(before)


def clear() -> None:
    """Forget every definition."""
    with _LOCK:
        _DEFINED.clear()


def snapshot() -> dict[str, dict[str, Any]]:
    """The current definitions (to send to a worker process)."""
    with _LOCK:
        return {k: dict(v) for k, v in _DEFINED.items()}


def restore(definitions: dict[str, dict[str, Any]]) -> None:
    """Register ``definitions`` (from :func:`snapshot`) in this process."""
    for name, d in definitions.items():
        define(name, d)


def api_definition(name: str, role: str) -> dict[str, Any] | None:
    """The API settings of ``name`` if it is an API model defined for ``role``; else None."""
    d = _DEFINED.get(name)
    if d is None or "api" not in d:
        return None
    if role not in d["roles"]:
        raise InputError(f"model {name!r} is defined as an API {' / '.join(d['roles'])}, not a {role}")
    return d["api"]


def _client(settings: dict[str, Any]):
    from .api_client import ApiClient, ApiConfig

    try:
        return ApiClient(ApiConfig(**{k: settings[k] for k in CLIENT_KEYS if k in settings}))
    except TypeError as e:
        raise InputError(f"bad api settings: {e}") from None


def api_classifier(name: str, labels: Sequence[str]):
    """The :class:`~.api.ApiClassifier` defined as ``name``, answering with the data's ``labels``."""
    from .api import ApiClassifier, label_words_for

    settings = api_definition(name, "classifier")
    if settings is None:
        return None
    words = label_words_for(f"model {name!r}", settings.get("label_words"), labels)
    kw = {k: settings[k] for k in CLASSIFIER_KEYS if k in settings and k != "label_words"}
    return ApiClassifier(_client(settings), list(labels), label_words=words, name=name, **kw)


def _share() -> None:
    from ..core.executor import share_with_workers

    share_with_workers(snapshot, restore)  # Ray workers see the driver's named models


_share()
