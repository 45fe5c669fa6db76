"""Device and dtype of the local model backends, on the CPU: the options in model specs and
for a whole command, bfloat16 scores within bfloat16's tolerance of float32 ones, fingerprints
(and so cached results) that tell the dtypes apart, and one clear error where there is no CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers.tiny_lm import SENTENCES, tiny_causal_model
from perturblab.core.placement import check_device, check_dtype, defaults, placement, resolve
from perturblab.errors import InputError
from perturblab.models.hf import HFEncoder
from perturblab.models.lm import HFCausalLM
from perturblab.models.spec import ModelSpec

SENTS = SENTENCES[:6]
NO_CUDA = not torch.cuda.is_available()


def _model(tok):
    """The same 2-layer Llama each time, with peaked next-token distributions."""
    return tiny_causal_model(len(tok), 0, max_positions=64, initializer_range=0.3)


def _lm(tok, **kw):
    return HFCausalLM(_model(tok), tok, name="tiny", **kw)


def test_device_and_dtype_values():
    assert [check_device(d) for d in ("CPU", "auto", "cuda", "cuda:1")] == ["cpu", "auto", "cuda", "cuda:1"]
    assert [check_dtype(d) for d in ("bf16", "float32", "FP16")] == ["bfloat16", "float32", "float16"]
    for bad in ("gpu", "cuda:x", "tpu"):
        with pytest.raises(InputError, match="give cpu, cuda"):
            check_device(bad)
    with pytest.raises(InputError, match="give one of float32, bfloat16, float16"):
        check_dtype("int8")
    spec = ModelSpec.parse("lm=smollm2-135m[device=auto,dtype=bf16]")
    assert spec.kwargs == {"device": "auto", "dtype": "bfloat16"}


@pytest.mark.skipif(not NO_CUDA, reason="asks for CUDA where there is none")
def test_cuda_where_there_is_none_is_one_clear_error():
    with pytest.raises(InputError, match="no CUDA device on this machine"):
        resolve("cuda")
    assert resolve("auto")[0] == torch.device("cpu")
    with pytest.raises(InputError, match="float16 on the CPU"):
        resolve("cpu", "float16")


def test_a_commands_placement_is_the_default_and_a_models_own_wins():
    assert defaults() == ("cpu", "float32")
    with placement(dtype="bfloat16"):
        assert defaults() == ("cpu", "bfloat16") and resolve()[1] == torch.bfloat16
        assert resolve(dtype="float32")[1] == torch.float32
    assert defaults() == ("cpu", "float32")


def test_bfloat16_scores_are_within_its_tolerance_and_have_their_own_fingerprint(tok):
    fp32, bf16 = _lm(tok), _lm(tok, dtype="bfloat16")
    assert next(bf16.model.parameters()).dtype == torch.bfloat16
    assert fp32.fingerprint != bf16.fingerprint
    assert _lm(tok).fingerprint == fp32.fingerprint  # float32 keeps its key
    a, b = fp32.next_token_logprobs(SENTS), bf16.next_token_logprobs(SENTS)
    assert a.dtype == b.dtype and np.isfinite(b).all()
    # bfloat16 rounds to 8 significant bits (unit roundoff 2**-8 = 0.0039 of a value); through the
    # ~10 rounded steps of a 2-layer model (attention, MLP, norms, head) the log-probabilities, up to
    # |12.7| here, move by a few roundoffs of the largest: measured 0.167 at most (1.3 %), 0.021 on
    # average; allowed 2.5 % and 0.4 % of the largest magnitude
    scale = np.abs(a).max()
    assert np.abs(a - b).max() < 0.025 * scale and np.abs(a - b).mean() < 0.004 * scale
    assert (a.argmax(1) == b.argmax(1)).mean() >= 5 / 6
    ta, tb = fp32.token_logprobs(SENTS), bf16.token_logprobs(SENTS)
    assert all(np.abs(x - y).max() < 0.025 * scale for x, y in zip(ta, tb))


def test_an_object_keeps_its_placement_unless_one_is_given(tok):
    model = _model(tok)
    with placement(dtype="bfloat16"):  # a command's default applies to models perturblab loads
        kept = HFCausalLM(model, tok, name="obj")
    assert next(kept.model.parameters()).dtype == torch.float32
    cast = HFCausalLM(_model(tok), tok, name="obj", dtype="bfloat16")
    assert next(cast.model.parameters()).dtype == torch.bfloat16 and cast.fingerprint != kept.fingerprint


def test_an_encoder_in_bfloat16(tok):
    fp32 = HFEncoder(_model(tok).model, tok, name="enc")
    bf16 = HFEncoder(_model(tok).model, tok, name="enc", dtype="bfloat16")
    assert fp32.fingerprint != bf16.fingerprint
    a, b = fp32.pooled(SENTS, layer=-1), bf16.pooled(SENTS, layer=-1)
    assert a.dtype == np.float32 and b.dtype == np.float32
    # mean-pooled last-layer states up to |1.23|: measured 0.011 at most (0.9 % of the largest),
    # within the same few bfloat16 roundoffs allowed above
    scale = np.abs(a).max()
    assert np.abs(a - b).max() < 0.025 * scale


def _cells(out):
    from perturblab.testing import cells

    return {key for (_study, key) in cells(out)}


def test_a_bfloat16_run_stores_its_own_results_beside_the_float32_ones(tmp_path, tok, capsys):
    """The same command in one output directory: float32, then --dtype bfloat16 (computed afresh,
    never read from the float32 cells), then bfloat16 from the model spec (read back)."""
    import json

    from perturblab.cli import main

    model = tmp_path / "m"
    _model(tok).save_pretrained(model)
    tok.save_pretrained(model)
    corpus = tmp_path / "c.txt"
    corpus.write_text(" ".join(SENTENCES) + "\n")
    out = tmp_path / "out"
    argv = ["scope-lm", "--reference", str(model), "--targets", str(model), "--capabilities", "typo", "--corpus",
            str(corpus), "--n", "4", "--trials", "1", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    fp32_cells, fp32_rows = _cells(out), json.loads((out / "results.json").read_text())
    assert main(argv + ["--dtype", "bfloat16"]) == 0
    both = _cells(out)
    assert fp32_cells < both and len(both) >= 2 * len(fp32_cells) - 1
    bf16_rows = json.loads((out / "results.json").read_text())
    assert bf16_rows[0]["n"] == fp32_rows[0]["n"] == 4
    spec = f"{model}[dtype=bf16]"
    assert main(["scope-lm", "--reference", spec, "--targets", spec, *argv[5:]]) == 0
    assert _cells(out) == both  # the spec's bfloat16 is the option's: everything read back
    capsys.readouterr()


@pytest.mark.skipif(not NO_CUDA, reason="asks for CUDA where there is none")
def test_bad_placement_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    from perturblab.cli import main

    out = tmp_path / "out"
    for extra in (["--device", "cuda"], ["--dtype", "int4"], ["--dtype", "float16"], ["--device", "gpu"]):
        assert main(["selfcheck", "--models", "smollm2-135m", "--n", "5", "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: --d"), err
    assert main(["selfcheck", "--models", "smollm2-135m[device=cuda]", "--n", "5", "--out", str(out)]) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert not out.exists()


def _oom_above(module, rows: int, calls: list) -> None:
    """Make ``module`` run out of memory (as CUDA does) on a batch of more than ``rows`` inputs."""
    def hook(_module, args, kwargs):
        x = kwargs.get("input_ids", args[0] if args else None)
        calls.append(len(x))
        if len(x) > rows:
            raise torch.OutOfMemoryError(f"CUDA out of memory (injected: {len(x)} rows)")
    module.register_forward_pre_hook(hook, with_kwargs=True)


def test_a_batch_that_runs_out_of_memory_is_halved_and_every_input_scored(tok, caplog):
    """Out-of-memory errors injected above 2 rows: the language model and the encoder halve their
    batches down to 2 rows and return what one-row batches return (float32: to round-off of a
    different padding, 1e-5 of log-probabilities of magnitude about 13); an input that does not
    fit alone is one clear error."""
    texts = SENTENCES[:7]
    alone = HFCausalLM(_model(tok), tok, name="tiny", batch_size=1)
    want_tok, want_next = alone.token_logprobs(texts), alone.next_token_logprobs(texts)
    lm, calls = HFCausalLM(_model(tok), tok, name="tiny", batch_size=8), []
    _oom_above(lm.model.model, 2, calls)
    with caplog.at_level("WARNING", logger="perturblab.models.device"):
        got_tok, got_next = lm.token_logprobs(texts), lm.next_token_logprobs(texts)
    assert {7, 4, 3} <= set(calls) and max(calls) == 7  # tried, ran out, halved
    assert "out of device memory on a batch of 7 inputs; running it as 3 + 4" in caplog.text
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(want_tok, got_tok))
    assert np.allclose(want_next, got_next, atol=1e-5)

    enc_alone = HFEncoder(_model(tok).model, tok, name="enc", batch_size=1).hidden_states(texts)
    enc, calls = HFEncoder(_model(tok).model, tok, name="enc", batch_size=8), []
    _oom_above(enc.model, 2, calls)
    got = enc.hidden_states(texts)
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(enc_alone, got))

    one, calls = HFCausalLM(_model(tok), tok, name="tiny", batch_size=8), []
    one.next_token_logprobs(texts[:1])  # its set-up probe, before the memory runs out
    _oom_above(one.model.model, 0, calls)
    with pytest.raises(InputError, match="one input does not fit in the device's memory"):
        one.token_logprobs(texts[:3])


def test_a_large_model_loads_straight_onto_the_gpus_in_its_dtype(tmp_path, tok, monkeypatch):
    """No GPU here: torch is told it has two, and the loader builds a 7B-parameter Llama (an 8B's
    layers, a tiny vocabulary) on the meta device, as accelerate does before it places the shards.
    perturblab asks for bfloat16 weights loaded in place over the GPUs (device_map auto), keeps the
    placement it got, and allocates nothing of the model's 14 GB."""
    import resource

    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8)
    asked = {}

    def from_pretrained(source, **kw):
        asked.update(kw)
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg).to(kw["dtype"])
        model.hf_device_map = {"": "meta"}  # where the loader put it
        return model

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    big = tmp_path / "big"
    big.mkdir()
    tok.save_pretrained(big)
    (big / "config.json").write_text(cfg.to_json_string())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    lm = HFCausalLM(str(big), device="auto", dtype="bfloat16")
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert asked == {"dtype": torch.bfloat16, "low_cpu_mem_usage": True, "device_map": "auto"}
    assert sum(p.numel() for p in lm.model.parameters()) > 6.9e9
    assert next(lm.model.parameters()).is_meta and lm.model.hf_device_map == {"": "meta"}
    assert grew_mb < 500, grew_mb  # 7B parameters in bfloat16 would be 14 GB
    from perturblab.models.device import loading

    assert loading("cuda:1", "float32") == {"dtype": torch.float32, "low_cpu_mem_usage": True, "device_map": {"": 1}}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert loading("auto", None) == {"dtype": torch.float32, "low_cpu_mem_usage": True}


def test_worker_threads_and_processes_load_models_where_the_command_placed_them():
    """A cell runs in a thread with the command's placement, and a Ray worker restores it."""
    from perturblab.core.executor import _WORKER_STATE, Cell, LocalExecutor, _run_cell

    with placement(dtype="bfloat16"):
        seen = dict(LocalExecutor(2).run([Cell(str(i), defaults) for i in range(4)]))
        state = [(restore, snapshot()) for snapshot, restore in _WORKER_STATE]
    assert set(seen.values()) == {("cpu", "bfloat16")}
    assert defaults() == ("cpu", "float32")
    import contextvars

    threads = torch.get_num_threads()  # a worker's cell sets torch's threads: restored here
    try:
        assert contextvars.Context().run(_run_cell, defaults, 1, state)[1] == ("cpu", "bfloat16")  # a fresh worker
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("module", ["perturblab.core.placement", "perturblab.core.executor",
                                    "perturblab.studies.compare.severity"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


def test_a_named_language_model_spec_loads_under_its_name(tmp_path, tok):
    from perturblab.models.resolve import load_model

    _model(tok).save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    lm = load_model(f"short={tmp_path / 'm'}[dtype=bf16]", "language_model")
    assert lm.name == "short" and next(lm.model.parameters()).dtype == torch.bfloat16


def test_models_that_run_only_on_the_cpu_refuse_their_own_placement_and_keep_out_of_the_commands(caplog):
    """The int8 preset and llama.cpp compute on the CPU in their own arithmetic: a device= or dtype=
    in their own spec is refused; a command's --device/--dtype place the other models, and these
    stay on the CPU with a note (a quantised model compared with a bfloat16 one in one command)."""
    from perturblab.models.lm_presets import own_placement

    why = "runs on the CPU"
    for device, dtype, shown in (("cuda", None, "device=cuda"), (None, "bfloat16", "dtype=bfloat16"),
                                 ("cuda:1", "float16", "device=cuda:1, dtype=float16")):
        with pytest.raises(InputError, match=f"^m runs on the CPU; drop {shown}$"):
            own_placement("m", device, dtype, why)
    with caplog.at_level("DEBUG", logger="perturblab.models.lm_presets"):
        own_placement("m", "cpu", "float32", why)
        own_placement("m", None, None, why)
        assert not caplog.records  # the command's placement is the CPU in float32: nothing to say
        with placement(dtype="bfloat16"):
            own_placement("m", None, None, why)
            own_placement("m", None, "float32", why)  # its own float32 overrides: no note
    assert [r.getMessage() for r in caplog.records] == [
        "m runs on the CPU: it stays there; --device/--dtype (cpu, bfloat16) place the other models"]
