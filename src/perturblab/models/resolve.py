"""One model resolver: a model spec string to the model a study needs.

A spec is ``[NAME=]SOURCE[[OPTION=VALUE,...]]``:

* ``SOURCE`` — a preset (``perturblab models``), a local model directory, a hub id, a ``.gguf``
  file, an API model (``api:MODEL@BASE_URL``, or a name a study config defines), or a trainable
  model of the zoo (``tfidf-lr``, ``textrnn``, ``hf-finetune`` …);
* ``NAME=`` — the short name tables and files show (default: the source as written); a part
  before ``=`` that contains ``/`` is a path, not a name (``/data/run=7`` is one source);
* ``[OPTION=VALUE,...]`` — backend options: ``batch_size`` and ``max_length`` for Hugging Face
  models and language models; ``device`` and ``dtype`` are read and checked (``cpu`` and
  ``float32`` only in this version).

``minilm-l6``, ``ref=models/ft-run-3``, ``models/ft-run-3[batch_size=8,max_length=128]`` and
``lm=smollm2-135m[batch_size=4]`` are specs. :func:`load_model` loads one for a role
(``classifier``, ``regressor``, ``encoder`` or ``language_model``); a model object passes through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..data.examples import Dataset

ROLES = ("classifier", "regressor", "encoder", "language_model")
_SPEC = re.compile(r"^(?:(?P<name>[^=\[\]]+)=(?!=))?(?P<source>[^\[\]]+?)\s*(?:\[(?P<options>[^\[\]]*)\])?$")
_UNNAMED = re.compile(r"^(?P<name>[^\s\S])?(?P<source>[^\[\]]+?)\s*(?:\[(?P<options>[^\[\]]*)\])?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
DEVICES = ("cpu",)
DTYPES = ("float32",)


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


OPTIONS: dict[str, Any] = {
    "batch_size": _positive("batch_size", 1),
    "max_length": _positive("max_length", 2),
    "device": _one_of("device", DEVICES, "the model backends run on the CPU in this version; drop device="),
    "dtype": _one_of("dtype", DTYPES, "the model backends compute in float32 in this version; drop dtype="),
}


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
        options: dict[str, Any] = {}
        for item in filter(None, (x.strip() for x in (m.group("options") or "").split(","))):
            key, eq, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if not eq or key not in OPTIONS:
                raise InputError(f"model option {item!r} in {spec!r}: give option=value with one of "
                                 f"{', '.join(OPTIONS)}")
            options[key] = OPTIONS[key](value.strip())
        return cls(source=source, name=name or source, options=tuple(sorted(options.items())))

    @property
    def kwargs(self) -> dict[str, Any]:
        """The backend options a loader takes (device and dtype, checked, are the defaults)."""
        return {k: v for k, v in self.options if k not in ("device", "dtype")}

    def __str__(self) -> str:
        opts = f"[{','.join(f'{k}={v}' for k, v in self.options)}]" if self.options else ""
        return (f"{self.name}=" if self.name != self.source else "") + self.source + opts


def load_model(spec: "str | ModelSpec | Any", role: str = "classifier", *, train: "Dataset | None" = None,
               seed: int = 0, data_name: str | None = None) -> Any:
    """The model ``spec`` names, for ``role`` (see the module docstring).

    ``train`` (with ``seed``) trains what a preset or zoo model needs (a classifier head, a
    model trained from scratch); ``data_name`` is recorded as the head's provenance. A model
    object (anything with a ``fingerprint``) is returned as it is."""
    if role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if not isinstance(spec, (str, ModelSpec)):
        if not hasattr(spec, "fingerprint"):
            raise InputError(f"{type(spec).__name__} is not a model: give a spec or an object with a fingerprint")
        return spec
    ms = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    kw = ms.kwargs
    if role == "language_model":
        from .lm_presets import load_language_model

        return load_language_model(ms.source, **({"name": ms.name} if ms.name != ms.source else {}), **kw)
    if role == "encoder":
        from .presets import load_encoder

        _no_options(ms, "encoders")
        return load_encoder(ms.source)
    if train is None:
        raise InputError(f"loading {ms.source!r} as a {role} needs the training split (train=) for its head")
    if role == "regressor":
        return _regressor(ms, train, seed)
    return _classifier(ms, train, seed, data_name)


def _no_options(ms: ModelSpec, what: str) -> None:
    if ms.kwargs:
        raise InputError(f"{ms}: backend options are taken by Hugging Face classifiers and language models, not "
                         f"by {what} in this version; drop the [...] part")


def _classifier(ms: ModelSpec, train: "Dataset", seed: int, data_name: str | None) -> Any:
    from . import named, presets, zoo
    from .sources import local_or_hub

    name = ms.source
    if named.api_definition(name, "classifier") is None and name not in presets.PRESETS:
        if name.lower() in zoo.TRAINABLE.names():
            _no_options(ms, "models trained here")
            from .head import dataset_inputs

            return zoo.fit_model(name, dataset_inputs(train), train.labels, seed, label_names=train.label_names)
        source = local_or_hub(name)
        if source is not None:
            from .hf import HFSequenceClassifier

            return HFSequenceClassifier(source, name=ms.name, **ms.kwargs)
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
    if source is not None:
        from .hf import HFSequenceRegressor

        regression_targets(train, f"model {name!r}")
        return HFSequenceRegressor(source, name=ms.name, **ms.kwargs)
    _no_options(ms, "presets")
    return load_regressor(name, train, seed=seed)


def specs_by_name(specs: Mapping[str, Any] | list[Any]) -> dict[str, Any]:
    """Display name -> spec for a list of specs (or model objects, by their ``name``)."""
    out: dict[str, Any] = {}
    for s in (specs.values() if isinstance(specs, Mapping) else specs):
        name = ModelSpec.parse(s).name if isinstance(s, str) else str(getattr(s, "name", "") or type(s).__name__)
        if name in out and out[name] != s:
            raise InputError(f"two models are named {name!r}; give one of them another name with NAME=SOURCE")
        out[name] = s
    return out
