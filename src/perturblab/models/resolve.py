"""One model resolver: a model spec (:mod:`.spec`) to the model a study needs.

:func:`load_model` loads a spec for a role (``classifier``, ``regressor``, ``encoder`` or
``language_model``); a model object passes through. It refuses what :func:`~.spec_check.check_spec`
refuses, with the same words, before a loader runs. Within :func:`shared_loads` a model loaded
before for the same purpose is returned again (:func:`loaded_fingerprints` names what was loaded).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import InputError
from ..core.options import MODEL_ROLES
from .spec import ModelSpec, check_equals, looks_like_path
from .spec_check import api_options, check_encoder_options, check_source, no_options, not_found

if TYPE_CHECKING:  # pragma: no cover
    from ..data.examples import Dataset

#: the models loaded within :func:`shared_loads`, by what they were loaded for (None: outside it)
_SHARED: ContextVar["dict[tuple, Any] | None"] = ContextVar("perturblab_shared_loads", default=None)
#: held while a shared load runs: studies run at once (a comparison's layers on a cluster) load a
#: model they share once, not each its own
_SHARED_LOCK = threading.RLock()


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
    if role not in MODEL_ROLES:
        raise InputError(f"role must be one of {', '.join(MODEL_ROLES)}, got {role!r}")
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
    with _SHARED_LOCK:
        if key not in memo:
            memo[key] = _load(ms, role, train, seed, data_name)
        return memo[key]


class HubLoadError(InputError):
    """A hub id that could not be fetched: no network and not in the cache, or no such repository."""


def _load(ms: "ModelSpec", role: str, train: "Dataset | None", seed: int, data_name: str | None) -> Any:
    """:func:`load_model` of a parsed spec (no sharing); a hub id that cannot be fetched (no
    network and not in the cache, no such repository) is refused in one line."""
    try:
        return _load_source(ms, role, train, seed, data_name)
    except OSError as e:
        from .sources import HUB_ID, is_local_dir

        if not HUB_ID.match(ms.source) or is_local_dir(ms.source):
            raise
        said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise HubLoadError(f"{role.replace('_', ' ')} {ms.source!r}: could not be loaded from the Hugging Face hub "
                         f"({said}); check the id and the network, or fill the hub's cache (HF_HOME) on a machine "
                         "that reaches it, or give a local model directory") from None


def _load_source(ms: "ModelSpec", role: str, train: "Dataset | None", seed: int, data_name: str | None) -> Any:
    """:func:`_load` without the hub's refusal."""
    check_equals(ms)
    if looks_like_path(ms.source):  # a path that names no model: said before any loader runs
        check_source(ms, role)
    kw = ms.kwargs
    from .api_client import is_api_spec

    if is_api_spec(ms.source):
        return _api_model(ms, role, train)
    if role == "language_model":
        from .lm_presets import load_language_model

        return load_language_model(ms.source, **({"name": ms.name} if ms.name != ms.source else {}), **kw)
    if role == "encoder":
        from .presets import load_encoder

        check_encoder_options(ms)
        return load_encoder(ms.source, **kw)
    if train is None:
        raise InputError(f"loading {ms.source!r} as a {role} needs the training split (train=) for its head")
    if role == "regressor":
        return _regressor(ms, train, seed)
    return _classifier(ms, train, seed, data_name)


def _api_model(ms: ModelSpec, role: str, train: "Dataset | None") -> Any:
    """The model an ``api:MODEL@BASE_URL`` spec names for ``role``: an
    :class:`~.api.ApiClassifier` answering with the training split's labels, or an
    :class:`~.api_lm.ApiLanguageModel`; the key is read from the variable ``api_key_env`` names
    (default :func:`~.api_client.default_api_key_env`), which must be set when it is named."""
    from .api_client import ApiClient, api_config_from_spec

    client, opts = api_options(ms, role)
    if role == "language_model":
        from .lm_presets import load_api_language_model

        if "score_max_tokens" in opts:
            opts["score_max_tokens"] = int(opts["score_max_tokens"])
        return load_api_language_model(ms.source, name=ms.name, **client, **opts)
    if train is None or not train.label_names:
        raise InputError(f"{ms.name}: an API classifier needs the data's class labels (a classification training "
                         "split); regression targets cannot be asked of it")
    from .api import ApiClassifier, label_words_for

    labels = list(train.label_names)
    words = label_words_for(ms.name, opts.pop("label_words", None), labels)
    config = api_config_from_spec(ms.source, **client)
    return ApiClassifier(ApiClient(config), labels, label_words=words, name=ms.name, **opts)


def _classifier(ms: ModelSpec, train: "Dataset", seed: int, data_name: str | None) -> Any:
    from . import named, presets, zoo
    from .sources import local_or_hub

    name = ms.source
    if named.api_definition(name, "classifier") is None and name not in presets.PRESETS:
        if name.lower() in zoo.TRAINABLE.names():
            no_options(ms, "models trained here")
            return zoo.fit_model(name, train.inputs(), train.labels, seed, label_names=train.label_names)
        source = local_or_hub(name)
        if source is not None:
            from .hf import HFSequenceClassifier

            return HFSequenceClassifier(source, name=ms.name, **ms.kwargs)
        raise not_found(ms, "classifier")
    no_options(ms, "presets")
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
        no_options(ms, "models trained here")
        if name.lower() == "hf-finetune":
            return zoo.finetune_regressor(train, seed)
        raise InputError(f"{name} trains classifiers only; on a regression task use hf-finetune, an encoder preset "
                         "(a ridge head), tfidf-ridge, or a fine-tuned one-output HF model directory")
    source = None if name in PRESETS else local_or_hub(name)
    if source is None and name not in PRESETS:
        raise not_found(ms, "regressor")
    if source is not None:
        from .hf import HFSequenceRegressor

        regression_targets(train, f"model {name!r}")
        return HFSequenceRegressor(source, name=ms.name, **ms.kwargs)
    no_options(ms, "presets")
    return load_regressor(name, train, seed=seed)
