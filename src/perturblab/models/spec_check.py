"""Load-free checks of model specs: whether a spec can give a model for a role, said before anything
is loaded, timed or written.

:func:`check_spec` refuses a spec (:mod:`.spec`) that cannot load for its role without loading
anything: an unknown name lists the known ones, a path that names nothing says so (as
:func:`~.resolve.load_model` does); :func:`fits` asks the same as a yes or no, and
:func:`spec_capabilities` says what a language model spec can do. The loader runs the steps it
shares with them (:func:`check_source`, :func:`api_options`, :func:`no_options`,
:func:`check_encoder_options`, :func:`not_found`) on the spec it loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..errors import InputError
from ..core.options import MODEL_ROLES
from .base import API_ROLES
from .sources import architectures, exists_locally, is_local_file, local_or_hub
from .spec import (API_CLASSIFIER_OPTIONS, API_CLIENT_OPTIONS, API_LM_OPTIONS, ENCODER_OPTIONS, ModelSpec,
                   check_equals, looks_like_path)


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
    those of the role (an encoder takes :data:`~.spec.ENCODER_OPTIONS`), and ``[backend=llamacpp]``
    must name a ``.gguf`` file or GGUF preset, with llama-cpp-python installed. A string of the
    form of a hub id (``org/name``) is accepted as it is: whether the hub has it is known only when
    it is fetched. A classifier option may name a regressor (``tfidf-ridge``, ``r3=minilm-l3``):
    whether the data is a regression task decides later."""
    if role not in MODEL_ROLES:
        raise InputError(f"role must be one of {', '.join(MODEL_ROLES)}, got {role!r}")
    ms = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    check_equals(ms)
    check_source(ms, role)
    opts = dict(ms.options)
    if "backend" in opts and role != "language_model":
        raise InputError(f"{ms.name}: backend= chooses how a language model runs; drop it for "
                         f"{'an' if role[0] in 'aeiou' else 'a'} {role.replace('_', ' ')}")
    if "n_threads" in opts and opts.get("backend") != "llamacpp":
        raise InputError(f"{ms.name}: n_threads= sets the CPU threads of llama.cpp (with backend=llamacpp); torch "
                         "takes its threads from OMP_NUM_THREADS")
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


def check_source(ms: ModelSpec, role: str) -> None:
    """Refuse, without loading anything, a (parsed) spec whose source cannot give a ``role`` model:
    an unknown name (listing the known ones), a path where no directory (or ``.gguf`` file) is,
    an API model for a role it cannot serve or with options of another role, backend options a
    source does not take. A hub id (``org/name``) is taken as it is."""
    from .api_client import is_api_spec

    if is_api_spec(ms.source):
        api_options(ms, role)
    elif role == "language_model":
        _check_language_model(ms)
    elif role == "encoder":
        _check_encoder(ms)
    elif not _known_name(ms, role):
        if not _is_local_or_hub(ms.source):
            raise not_found(ms, role)
        _check_head(ms.source, role)


def _check_language_model(ms: ModelSpec) -> None:
    """:func:`check_source` of a language model: an API model a study config defines, a
    language-model preset, a ``.gguf`` file, a model directory or a hub id."""
    from . import named
    from .lm_presets import LM_PRESETS

    name = ms.source
    if named.api_definition(name, "language_model") is not None or name in LM_PRESETS:
        return
    if not _gguf_or_directory(ms, "language_model"):
        raise _unknown("language model preset", name, LM_PRESETS.names(),
                       "or give a model directory, a .gguf file, a hub id (org/name) or api:MODEL@BASE_URL")


def _check_encoder(ms: ModelSpec) -> None:
    """:func:`check_source` of an encoder: a preset with hidden states, a language-model preset, a
    ``.gguf`` file, a model directory or a hub id, with the options of an encoder."""
    from . import presets
    from .lm_presets import LM_PRESETS

    name = ms.source
    encoders = [n for n in presets.PRESETS.names() if presets.PRESETS.create(n).kind == "encoder"]
    if name in presets.PRESETS and presets.PRESETS.create(name).make_encoder is None:
        raise InputError(f"model preset {name!r} has no encoder (no hidden states); choose one of "
                         + ", ".join(encoders))
    check_encoder_options(ms)
    if name in presets.PRESETS or name in LM_PRESETS:
        return
    if not _gguf_or_directory(ms, "encoder"):
        raise _unknown("encoder", name, encoders + LM_PRESETS.names(),
                       "or give a model directory, a .gguf file or a hub id (org/name)")


def _gguf_or_directory(ms: ModelSpec, role: str) -> bool:
    """Whether the source of ``ms`` is an existing ``.gguf`` file, a model directory or a hub id;
    a ``.gguf`` path where no file is, or a path where no directory is, is refused."""
    path = Path(ms.source).expanduser()
    if path.suffix == ".gguf":
        if not is_local_file(ms.source):
            raise _no_such_path(ms, role, gguf=True)
        return True
    if _is_local_or_hub(ms.source):
        return True
    if looks_like_path(ms.source):
        raise _no_such_path(ms, role, gguf=True)
    return False


def _known_name(ms: ModelSpec, role: str) -> bool:
    """Whether the source of a classifier or regressor spec is a name known here (a preset, a
    model trained here, or for a classifier an API model a study config defines), refusing the
    options such a name does not take and, for a regressor, a name that trains classifiers only."""
    from . import named, presets, zoo

    name = ms.source
    if role == "regressor":
        if name.lower() in zoo.TRAINABLE.names() and name not in presets.PRESETS:
            no_options(ms, "models trained here")
            if name.lower() != "hf-finetune":
                raise InputError(f"{name} trains classifiers only; on a regression task use hf-finetune, an encoder "
                                 "preset (a ridge head), tfidf-ridge, or a fine-tuned one-output HF model directory")
            return True
        if name in presets.PRESETS:
            no_options(ms, "presets")
            preset = presets.PRESETS.create(name)
            if preset.kind == "tfidf" and preset.name != "tfidf-ridge":
                raise InputError(f"{preset.name} is a classifier; for a regression task use tfidf-ridge")
            return True
        return False
    # a classifier (a classifier option may name a regressor: the data's task decides)
    if named.api_definition(name, "classifier") is not None:
        return True
    if name in presets.PRESETS:
        no_options(ms, "presets")
        return True
    if name.lower() in zoo.TRAINABLE.names():
        no_options(ms, "models trained here")
        return True
    return False


def _is_local_or_hub(source: str) -> bool:
    """Whether ``source`` is a hub id or a local model directory; a directory without a
    ``config.json`` (an empty or unsaved folder) is refused here, before anything is timed or
    loaded."""
    found = local_or_hub(source)
    if found is None:
        return False
    path = Path(found)
    if path.is_dir() and not (path / "config.json").is_file():
        raise InputError(f"model directory {source!r} has no config.json, so it is not a saved Hugging Face model; "
                         "give the directory that save_pretrained() wrote (config.json and the weights)")
    return True


def _check_head(source: str, role: str) -> None:
    """Refuse a local directory given as a classifier or regressor whose ``config.json`` names
    architectures none of which is a sequence classification model (a bare encoder such as
    ``BertModel``: its head would be random), before any model is timed or loaded; a directory
    whose config names none is left to the loader."""
    archs = architectures(source)
    if archs and not any(a.endswith("ForSequenceClassification") for a in archs):
        raise InputError(f"{role} {source!r} is not a fine-tuned sequence classification model (its config.json "
                         f"names {', '.join(archs)}, without a classification head); give a fine-tuned "
                         "classifier directory, or compare its hidden states with `perturblab similarity`")


def api_options(ms: ModelSpec, role: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(client settings, model options) of an ``api:`` spec after checking that it serves ``role``
    (a classifier or a language model), that its options are those of that role and that a
    variable it names in ``api_key_env`` is set."""
    import os

    opts = dict(ms.options)
    client = {k: opts.pop(k) for k in list(opts) if k in API_CLIENT_OPTIONS}
    if role not in API_ROLES:
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


def no_options(ms: ModelSpec, what: str) -> None:
    """Refuse the backend options of a spec whose source (``what``: presets, models trained here)
    takes none."""
    if ms.kwargs:
        raise InputError(f"{ms}: backend options are taken by Hugging Face classifiers, encoders and language "
                         f"models, not by {what} in this version; drop the [...] part (--device and --dtype place "
                         "every model of a command)")


def check_encoder_options(ms: ModelSpec) -> None:
    """Refuse the options of an encoder preset (it takes none) and an option that means nothing
    for any encoder (``backend``: how a language model scores), naming the ones it takes."""
    from .presets import PRESETS

    if ms.source in PRESETS:
        no_options(ms, "presets")
        return
    wrong = [k for k in ms.kwargs if k not in ENCODER_OPTIONS]
    if wrong:
        raise InputError(f"{ms}: {', '.join(f'{k}=' for k in wrong)} means nothing for an encoder (its hidden states); "
                         f"drop it (an encoder takes {', '.join(ENCODER_OPTIONS)})")


def not_found(ms: ModelSpec, role: str) -> InputError:
    """The error of a classifier or regressor source that is no preset, no model trained here, no
    directory and no hub id: no such directory when it is written as a path, else the known names."""
    from . import presets, zoo

    if looks_like_path(ms.source):
        return _no_such_path(ms, role)
    trained = [n for n in zoo.TRAINABLE.names() if n not in presets.PRESETS
               and (role == "classifier" or n == "hf-finetune")]
    return _unknown("model preset", ms.source, presets.PRESETS.names(),
                    f"models trained here: {', '.join(trained)}; or give a model directory or a hub id (org/name)",
                    others=trained)


def _no_such_path(ms: ModelSpec, role: str, *, gguf: bool = False) -> InputError:
    """The error of a source written as a path where nothing (or no directory) is."""
    path = Path(ms.source).expanduser()
    what = role.replace("_", " ")
    where = f" ({path})" if ms.source.startswith("~") else ""  # where ~ points
    takes = "a directory holding config.json and the weights" + (", or a .gguf file" if gguf else "")
    if gguf and path.suffix == ".gguf":
        return InputError(f"{what} {ms.source!r}: no such GGUF file{where}; check the path")
    if exists_locally(ms.source):
        return InputError(f"{what} {ms.source!r} is a file, not a model directory; give {takes}")
    return InputError(f"{what} {ms.source!r}: no such directory{where}; check the path (a model given by its path "
                      f"is {takes})")


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
