"""The packaged SmolLM2 GGUF run natively by llama.cpp (``[backend=llamacpp]``): its scores
against the float32 path, the LanguageModel contract, and the studies on it.

Needs the optional extra (``./setup.sh --llamacpp``); without it these tests skip, unless
``PERTURBLAB_REQUIRE_LLAMACPP=1`` (set by CI) makes the missing extra a failure.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

if os.environ.get("PERTURBLAB_REQUIRE_LLAMACPP") == "1":
    import llama_cpp  # noqa: F401 - a missing extra fails here
else:
    pytest.importorskip("llama_cpp", reason="the llamacpp extra is not installed (./setup.sh --llamacpp)")

from perturblab.errors import InputError
from perturblab.models.resolve import load_model

SENTENCE = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def torch_path():
    return load_model("smollm2-135m", "language_model")


def test_the_quantised_kernels_score_as_llama_cpp_does_not_as_the_float32_copy(native, torch_path):
    """Mean token NLL of the sentence: 4.949 through llama.cpp, 4.983 through the de-quantised
    float32 weights (the figures measured with llama-cpp-python 0.3.36 and perturblab's float32
    path); the two tokenize alike and agree closely, but not to round-off."""
    assert native.encode(SENTENCE) == torch_path.encode(SENTENCE)
    assert native.prefix == torch_path.prefix == []  # SmolLM2's tokenizer adds no start token
    nll_native = -float(np.mean(native.token_logprobs([SENTENCE])[0]))
    nll_torch = -float(np.mean(torch_path.token_logprobs([SENTENCE])[0]))
    assert nll_native == pytest.approx(4.949, abs=0.002) and nll_torch == pytest.approx(4.983, abs=0.002)
    assert native.fingerprint != torch_path.fingerprint
    a, b = native.next_token_logprobs([SENTENCE])[0], torch_path.next_token_logprobs([SENTENCE])[0]
    assert a.shape == b.shape == (native.vocab_size,)
    assert np.exp(a).sum() == pytest.approx(1.0, abs=1e-4)
    assert a.argmax() == b.argmax()


def test_the_language_model_contract(native):
    """Spans are the token log-probs' rows, the next token is the last row, a sequence scores
    the same alone and beside others, greedy generation is its own argmax chain and sampling is
    seeded; the tokenizer object is a capability it lacks."""
    texts = [SENTENCE, "Water boils at one hundred degrees."]
    tok = native.token_logprobs(texts)
    ids = native.encode(texts[0])
    (span,) = native.span_logprobs([texts[0]], [0])
    assert span.shape == (len(ids), native.vocab_size)
    assert np.allclose(span[np.arange(len(ids) - 1), ids[1:]], tok[0], atol=1e-5)
    assert np.allclose(span[-1], native.next_token_logprobs([texts[0]])[0], atol=1e-6)
    assert np.allclose(native.token_logprobs([texts[1]])[0], tok[1], atol=1e-6)
    greedy = native.generate(["The capital of France is"], max_new_tokens=4)[0]
    first = native.decode([int(native.next_token_logprobs(["The capital of France is"])[0].argmax())])
    assert greedy.startswith(first)
    s1, s2 = (native.generate(["Once upon a time"], max_new_tokens=6, sample=True, seed=3) for _ in range(2))
    assert s1 == s2
    both, nxt = native.generate_with_next(["The capital of France is", texts[1]], max_new_tokens=4)
    assert both == native.generate(["The capital of France is", texts[1]], max_new_tokens=4) and both[0] == greedy
    assert np.allclose(nxt, native.next_token_logprobs(["The capital of France is", texts[1]]), atol=1e-6)
    assert "tokenizer" not in native.capabilities
    with pytest.raises(InputError, match="outside the"):
        native.span_logprobs([texts[0]], [len(ids)])


def test_bad_llamacpp_specs_are_refused(tmp_path):
    with pytest.raises(InputError, match="quantised weights on the CPU; drop dtype=bfloat16$"):
        load_model("smollm2-135m[backend=llamacpp,dtype=bf16]", "language_model")
    from perturblab.core.placement import placement

    with placement(dtype="bfloat16"):  # a command's dtype places the other models; llama.cpp keeps its own
        assert load_model("smollm2-135m[backend=llamacpp]", "language_model").encode("Hi") == [26843]
    with pytest.raises(InputError, match="runs .gguf files and the GGUF presets"):
        load_model("smollm2-135m-int8[backend=llamacpp]", "language_model")
    from helpers.tiny_classifier import tiny_model_dir

    from perturblab.models.spec_check import check_spec

    model = tiny_model_dir(tmp_path / "clf", 0)
    with pytest.raises(InputError, match="backend= chooses how a language model runs"):
        check_spec(f"{model}[backend=llamacpp]", "classifier")


def test_selfcheck_runs_on_llama_cpp_and_refuses_what_it_cannot_give(tmp_path, capsys):
    from perturblab.cli import main

    out = tmp_path / "sc"
    assert main(["selfcheck", "--models", "smollm2-135m[backend=llamacpp]", "--metrics", "negation,word_order",
                 "--n", "6", "--no-ablations", "--quiet", "--out", str(out)]) == 0
    headline = json.loads((out / "headline.json").read_text())
    assert {e["key"].split(":")[0] for e in headline["estimates"]} >= {"word_order"}
    capsys.readouterr()
    assert main(["selfcheck", "--models", "smollm2-135m[backend=llamacpp]", "--metrics", "tokenization",
                 "--n", "6", "--quiet", "--out", str(tmp_path / "tk")]) == 2
    assert "tokenization" in capsys.readouterr().err


@pytest.mark.slow
def test_scope_lm_compares_the_quantised_kernels_with_the_float32_copy(tmp_path, capsys):
    """LM SCoPE with the llama.cpp model as the reference and the float32 copy as the target:
    the two share one vocabulary, so the study runs; the target keeps the reference's top-1
    token on most of the sentences."""
    from perturblab.cli import main

    out = tmp_path / "lm"
    assert main(["scope-lm", "--reference", "q4=smollm2-135m[backend=llamacpp]", "--targets", "smollm2-135m",
                 "--capabilities", "typo", "--n", "4", "--trials", "1", "--quiet", "--out", str(out)]) == 0
    (row,) = json.loads((out / "results.json").read_text())
    assert row["n"] == 4 and 0 <= row["soft_scope"] <= row["hard_scope"] <= 1
    assert row["iid_top1_agreement"] >= 0.5
    capsys.readouterr()


def test_n_threads_sets_llama_cpps_threads_for_scoring_and_generation(native):
    """``[backend=llamacpp,n_threads=1]``: llama.cpp evaluates and generates with one thread (not
    every core for the evaluation of a batch), and scores as with its own choice of threads; the
    option is refused where llama.cpp does not run the model."""
    one = load_model("one=smollm2-135m[backend=llamacpp,n_threads=1]", "language_model")
    assert one._llm.n_threads == one._llm.n_threads_batch == 1
    texts = [SENTENCE, "Water boils at one hundred degrees."]
    mine, theirs = one.token_logprobs(texts), native.token_logprobs(texts)
    # float32 log-probabilities of a few units; llama.cpp gives each thread whole rows (measured: identical on
    # 2 cores), and a build that split sums across threads would still agree to round-off
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(mine, theirs))
    from perturblab.models.spec_check import check_spec

    with pytest.raises(InputError, match="n_threads= sets the CPU threads of llama.cpp"):
        check_spec("smollm2-135m[n_threads=2]", "language_model")
    with pytest.raises(InputError, match="n_threads"):
        check_spec("minilm-l6[n_threads=2]", "encoder")
    with pytest.raises(InputError, match="model option n_threads=0 must be at least 1"):
        check_spec("smollm2-135m[backend=llamacpp,n_threads=0]", "language_model")
