"""What kind each model of a comparison is, and what a sample of it costs against the packaged
models the parts' costs were measured with (:class:`~perturblab.studies.part.Cost`): measured where
it runs, or scaled by its parameters."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..part import CLASSIFIER, LANGUAGE_MODEL

log = logging.getLogger(__name__)

__all__ = ["EitherKind", "model_kind", "models_kind", "PARAMS", "MEASURED_WITH", "LEAST_RELATIVE", "model_params",
           "BASELINE", "SPEED_ROLE", "measured_cost", "relative_cost"]


class EitherKind(InputError):
    """A model that could be either kind (an ``api:`` model, a hub id): refused unless ``--studies``
    names studies of one kind."""


def model_kind(spec: str) -> str:
    """:data:`CLASSIFIER` or :data:`LANGUAGE_MODEL` for the model ``spec`` (without loading it): a
    preset is what it is; a local HF directory is a language model when its ``config.json`` names a
    causal or sequence-to-sequence LM architecture; a ``.gguf`` file is a language model. A spec
    that could be either (a hub id, an ``api:`` model without ``label_words``) is refused: give
    ``--studies``, or compare it with a model of known kind."""
    from ...models.spec import ModelSpec
    from ...models.spec_check import check_spec, fits
    from ...models.sources import architectures

    try:
        archs = architectures(ModelSpec.parse(spec).source)
    except InputError:  # not a spec: refused below
        archs = None
    if archs:  # a saved model directory says what it is
        if any(a.endswith(("ForCausalLM", "ForConditionalGeneration", "LMHeadModel")) for a in archs):
            return LANGUAGE_MODEL
        check_spec(spec, "classifier")  # a bare encoder's head would be random: refused before any timing
        return CLASSIFIER
    as_clf, as_lm = fits(spec, "classifier"), fits(spec, "language_model")
    if as_clf and as_lm and "label_words=" in spec.partition("[")[2]:  # an api: model given labels
        return CLASSIFIER
    if as_clf and not as_lm:
        return CLASSIFIER
    if as_lm and not as_clf:
        return LANGUAGE_MODEL
    if as_clf and as_lm:
        if archs is not None:  # a saved model directory that names no architecture
            return CLASSIFIER
        raise EitherKind(f"cannot tell whether {spec!r} is a classifier or a language model without loading it; "
                         "give --studies (invariances,robustness,layers for classifiers; "
                         "lm-invariances,selfcheck,layers for language models)")
    raise InputError(f"{spec!r} is neither a classifier nor a language model perturblab can load; give a preset "
                     "(perturblab models lists them), a local model directory, a .gguf file or an api: spec")


def models_kind(reference: str, targets: list[str]) -> str:
    """The one kind of the reference and every target: a model that could be either (an
    ``api:`` model) takes the kind of the others; models of two kinds are refused."""
    kinds, either = {}, None
    for m in dict.fromkeys([reference, *targets]):
        try:
            kinds[m] = model_kind(m)
        except EitherKind as e:
            either = either or e
    if not kinds and either is not None:
        raise either
    if len(set(kinds.values())) > 1:
        raise InputError("compare models of one kind: " + ", ".join(f"{m} is a {k}" for m, k in kinds.items())
                         + "; compare the classifiers and the language models separately")
    return next(iter(kinds.values()))


#: millions of parameters of the packaged models; the costs were measured with MiniLM-L6 (and its
#: copies) and SmolLM2-135M
PARAMS = {"minilm-l6": 22.7, "minilm-l6-int8": 22.7, "minilm-l3": 17.4, "tfidf-lr": 0.0, "tfidf-ridge": 0.0,
          "smollm2-135m": 134.5, "smollm2-135m-int8": 134.5, "gemma3-270m": 268.1}
MEASURED_WITH = {CLASSIFIER: 22.7, LANGUAGE_MODEL: 134.5}
#: the least relative cost taken for a model (loading, tokenising and the study's own work remain)
LEAST_RELATIVE = 0.1


def model_params(spec: str) -> tuple[float | None, str]:
    """Millions of parameters of the model ``spec`` without loading it, and where that comes
    from: a packaged model's (:data:`PARAMS`); a local HF directory's, counted exactly from its
    safetensors headers or its ``config.json`` (:func:`~perturblab.models.speed.count_parameters`); a
    ``.gguf`` file's tensor shapes; (None, why) for anything else (an ``api:`` model, a hub id)."""
    from ...models.spec import ModelSpec
    from ...models.speed import count_parameters

    try:
        source = ModelSpec.parse(spec).source
    except InputError:
        return None, "not a model spec"
    if source in PARAMS:
        return PARAMS[source], "packaged"
    path = Path(source).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        try:
            import gguf
            import numpy as np

            tensors = gguf.GGUFReader(str(path)).tensors
            return sum(int(np.prod(t.shape)) for t in tensors) / 1e6, "its GGUF tensors"
        except Exception as e:  # an unreadable file is refused when the study loads it
            return None, f"its GGUF file could not be read ({type(e).__name__})"
    if path.is_dir():
        return count_parameters(str(path))
    return None, "not a packaged model, local directory or .gguf file"


#: the packaged model each kind's costs were measured with, and the speed of the probe
#: (:data:`~perturblab.models.speed.PROBE_TEXTS`) on it on the same 2 CPU cores, float32: texts/s
BASELINE = {CLASSIFIER: ("minilm-l6", 115.0), LANGUAGE_MODEL: ("smollm2-135m", 13.0)}
#: the role a model of each kind is timed in (a classifier by its encoder, its costly part)
SPEED_ROLE = {CLASSIFIER: "encoder", LANGUAGE_MODEL: "language_model"}


def measured_cost(spec: str, kind: str, plan: Any, quiet: bool = True, retime: bool = False,
                  least: float = LEAST_RELATIVE) -> float:
    """How many times the cost measured with the packaged models a sample of ``spec`` takes where
    it runs: the probe's speed on :data:`BASELINE`'s model over its speed on ``spec``
    (:func:`~perturblab.models.speed.measure_speed`, recorded in ``plan.speeds``; a figure kept
    from an earlier plan is read back unless ``retime``), at least ``least``;
    :func:`relative_cost` for a model that cannot be timed (an ``api:`` model, a classifier
    without hidden states)."""
    from ...models.speed import measure_speed

    if spec not in plan.speeds:
        say = None if quiet else log.info
        plan.speeds[spec] = measure_speed(spec, SPEED_ROLE[kind], retime=retime, say=say)
    speed = plan.speeds[spec]
    if speed is None:
        return relative_cost(spec, kind, plan, least=least)
    return max(BASELINE[kind][1] / speed.texts_per_s, least)


def relative_cost(spec: str, kind: str, plan: Any, least: float = LEAST_RELATIVE) -> float:
    """How many times the cost measured with the packaged models (each part's :class:`~perturblab.studies.part.Cost`) a sample of
    ``spec`` is planned to take: its parameters over the measured model's, at least ``least``; 1 (with a note in ``plan``) when its size is not known."""
    params, source = model_params(spec)
    if params is None:
        plan.notes.append(f"{spec}: size unknown ({source}); planned as costing what the packaged models do, "
                          "so read the intervals the run reaches")
        return 1.0
    ratio = max(params / MEASURED_WITH[kind], least)
    if abs(ratio - 1) <= 0.25:  # as the models the costs were measured with (MiniLM-L3 among them)
        return 1.0
    if source != "packaged":
        plan.notes.append(f"{spec}: about {params:.0f}M parameters (from {source}), planned at {ratio:.1f}x the "
                          f"per-sample cost measured with the packaged {kind}s")
    return ratio
