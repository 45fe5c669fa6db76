"""Language-model backend: batch invariance, first-token handling, errors, memo; the packaged
SmolLM2 (assets)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from perturblab.errors import InputError
from perturblab.models.lm import HFCausalLM, log_perplexity
from perturblab.models.lm_cache import MemoLanguageModel
from helpers.tiny_lm import SENTENCES, tiny_causal_model, tiny_lm, tiny_tokenizer

TEXTS = SENTENCES[:6] + ["Hi there.", "A much longer sentence that goes on and on, with commas, clauses and "
                         "more words than any of the others in this small list of texts."]


def _reference_logprobs(lm: HFCausalLM, text: str) -> np.ndarray:
    """Independent: one unpadded forward, full log-softmax in float64."""
    ids = torch.tensor([lm.prefix + lm.encode(text)])
    with torch.inference_mode():
        logits = lm.model(input_ids=ids).logits[0].double()
    return torch.log_softmax(logits, -1).numpy()


@pytest.mark.parametrize("bos", [False, True])
def test_batched_equals_one_by_one_and_independent_forward(bos):
    lm = tiny_lm(bos=bos, batch_size=3, batch_tokens=64)
    batched = lm.token_logprobs(TEXTS)
    single = [lm.token_logprobs([t])[0] for t in TEXTS]
    nb = lm.next_token_logprobs(TEXTS)
    ns = np.stack([lm.next_token_logprobs([t])[0] for t in TEXTS])
    assert max(np.abs(a - b).max() for a, b in zip(batched, single)) <= 1e-4
    assert np.abs(nb - ns).max() <= 1e-4
    for text, lp, nxt in zip(TEXTS, batched, nb):
        ref = _reference_logprobs(lm, text)
        ids = lm.prefix + lm.encode(text)
        want = ref[np.arange(len(ids) - 1), ids[1:]]
        np.testing.assert_allclose(lp, want, atol=1e-4)
        np.testing.assert_allclose(nxt, ref[-1], atol=1e-4)


def test_first_token_rule():
    plain, bos = tiny_lm(), tiny_lm(bos=True)
    n = len(plain.encode(TEXTS[0]))
    assert plain.prefix == [] and len(plain.token_logprobs([TEXTS[0]])[0]) == n - 1
    assert bos.prefix == [1] and len(bos.token_logprobs([TEXTS[0]])[0]) == n
    eot = tiny_lm(start_token="<|endoftext|>")
    assert eot.prefix == [0] and len(eot.token_logprobs([TEXTS[0]])[0]) == n
    with pytest.raises(InputError, match="not in the vocabulary"):
        tiny_lm(start_token="<nope>")


def test_span_logprobs_rows_match_token_logprobs():
    lm = tiny_lm()
    ids = lm.encode(TEXTS[1])
    span = lm.span_logprobs([ids], [2])[0]
    assert span.shape == (len(ids) - 2, lm.vocab_size)
    tok = lm.token_logprobs([ids])[0]  # tok[j] scores ids[j + 1]
    # float32 forward passes by two paths: log-probabilities agree to about 1e-6 of their magnitude
    np.testing.assert_allclose(span[np.arange(len(ids) - 3), ids[3:]], tok[2:], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(span[-1], lm.next_token_logprobs([ids])[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.exp(span).sum(axis=1), 1.0, atol=1e-4)


def test_generation_greedy_is_batch_invariant_and_sampling_is_seeded():
    lm = tiny_lm(batch_size=4)
    prompts = TEXTS[:5]
    batched = lm.generate(prompts, max_new_tokens=6)
    assert batched == [lm.generate([p], max_new_tokens=6)[0] for p in prompts]
    before = torch.random.get_rng_state()
    a = lm.generate(prompts, max_new_tokens=6, sample=True, seed=3)
    assert a == lm.generate(prompts, max_new_tokens=6, sample=True, seed=3)
    assert torch.equal(before, torch.random.get_rng_state())  # global RNG untouched


def _tiny_gemma2():
    """A 2-layer Gemma2 (final logit soft-capping 5.0) over the tiny tokenizer."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    tok = tiny_tokenizer()
    cfg = Gemma2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=8, intermediate_size=64, max_position_embeddings=256,
                       final_logit_softcapping=5.0, initializer_range=0.5, bos_token_id=1, eos_token_id=0,
                       pad_token_id=0)
    return HFCausalLM(Gemma2ForCausalLM(cfg).eval(), tok, name="tiny-gemma2", batch_size=3)


@pytest.mark.parametrize("case", ["float32", "bfloat16", "softcap", "two-calls"])
def test_generate_with_next_is_generate_and_next_token_logprobs(case):
    """One pass per prompt gives the texts of ``generate`` and the distributions of
    ``next_token_logprobs`` (left- vs right-padded batches: float rounding, relative to the
    largest |log-prob|: float32 1e-5, bfloat16 3e-2, a few of its 2**-8 steps)."""
    from perturblab.models.lm import generate_with_next

    if case == "softcap":
        lm = _tiny_gemma2()
        assert lm._head_path()  # the soft-capped head is the path under test
    else:
        lm = tiny_lm(batch_size=3, dtype="bfloat16" if case == "bfloat16" else None)
    if case == "two-calls":
        lm._gather = False  # a model whose logits are not its head over its decoder states
    prompts = TEXTS[:7]
    texts, nxt = generate_with_next(lm, prompts, max_new_tokens=5)
    want = lm.next_token_logprobs(prompts)
    assert texts == lm.generate(prompts, max_new_tokens=5)
    assert nxt.shape == want.shape == (len(prompts), lm.vocab_size) and nxt.dtype == np.float32
    tol = (3e-2 if case == "bfloat16" else 1e-5) * np.abs(want).max()
    assert np.abs(nxt - want).max() <= tol
    if case == "softcap":  # the cap is applied: logits within +-5, so no log-prob below -10 - log V
        floor = -10.0 - np.log(lm.vocab_size) - 1e-4
        assert want.min() >= floor and nxt.min() >= floor
    assert (nxt.argmax(1) == want.argmax(1)).all() or case == "bfloat16"
    sampled = generate_with_next(lm, prompts[:3], max_new_tokens=4, sample=True, seed=5)[0]
    assert sampled == lm.generate(prompts[:3], max_new_tokens=4, sample=True, seed=5)
    wrapped = MemoLanguageModel(lm)  # through the memo: the wrapped model's own single pass
    assert generate_with_next(wrapped, prompts[:2], max_new_tokens=3)[0] == lm.generate(prompts[:2], max_new_tokens=3)


def test_bad_inputs_have_clear_errors():
    lm = HFCausalLM(tiny_causal_model(len(tiny_tokenizer()), max_positions=24), tiny_tokenizer())
    with pytest.raises(InputError, match="context window"):
        lm.token_logprobs([" ".join(["word"] * 40)])
    with pytest.raises(InputError, match="at least 1 needed"):
        lm.next_token_logprobs([""])
    with pytest.raises(InputError, match="single string"):
        lm.token_logprobs("a text")
    with pytest.raises(InputError, match="single token"):
        lm.token_logprobs(["a"])
    with pytest.raises(InputError, match="exceed the context window"):
        lm.generate(["April is the fourth month"], max_new_tokens=30)
    with pytest.raises(InputError, match="starts"):
        lm.span_logprobs(["April is"], [99])
    with pytest.raises(InputError, match="no scored tokens"):
        log_perplexity(np.zeros(0))


def test_memo_serves_repeats_without_calling_the_model():
    lm = tiny_lm()
    calls = []
    real = lm.next_token_logprobs
    lm.next_token_logprobs = lambda inputs: (calls.append(len(inputs)), real(inputs))[1]
    memo = MemoLanguageModel(lm, max_entries=3)
    a = memo.next_token_logprobs(TEXTS[:2])
    b = memo.next_token_logprobs([TEXTS[1], TEXTS[0], TEXTS[2], TEXTS[1]])
    assert calls == [2, 1] and memo.hits == 3 and memo.misses == 3
    np.testing.assert_array_equal(a[0], b[1])
    np.testing.assert_array_equal(b[0], b[3])
    assert memo.vocab_size == lm.vocab_size and memo.name == lm.name


@pytest.mark.assets
def test_packaged_smollm2_batch_invariance_and_fp32_cache():
    from perturblab.models.lm_presets import load_language_model

    lm = load_language_model("smollm2-135m")
    assert lm.prefix == [] and lm.vocab_size == 49152  # SmolLM2's tokenizer adds no BOS
    texts = ["April is the fourth month of the year.", "The cat sat on the mat.",
             "Media.Vision would return to the franchise with the development of Valkyria: Azure Revolution."]
    batched, single = lm.token_logprobs(texts), [lm.token_logprobs([t])[0] for t in texts]
    assert max(np.abs(a - b).max() for a, b in zip(batched, single)) <= 1e-4
    nb = lm.next_token_logprobs(texts)
    assert np.abs(nb - np.stack([lm.next_token_logprobs([t])[0] for t in texts])).max() <= 1e-4
    assert 1.0 < log_perplexity(batched[0]) < 6.0  # a fluent sentence, not noise
    again = load_language_model("smollm2-135m")  # served from the fp32 copy
    assert again.fingerprint == lm.fingerprint


def test_output_layer_at_chosen_positions_equals_the_full_forward_path():
    fast, slow = tiny_lm(batch_size=3), tiny_lm(batch_size=3)
    slow._gather = False  # logits_to_keep over the union of positions instead
    assert fast._head_path() is True
    for a, b in zip(fast.token_logprobs(TEXTS), slow.token_logprobs(TEXTS)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast.next_token_logprobs(TEXTS), slow.next_token_logprobs(TEXTS), rtol=1e-5, atol=1e-5)
    starts = [3] * len(TEXTS)
    for a, b in zip(fast.span_logprobs(TEXTS, starts), slow.span_logprobs(TEXTS, starts)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_checkpoint_decoding_settings_do_not_change_greedy_generation():
    """A checkpoint's beam search, n-gram blocking, repetition penalty and minimum length are
    overridden: generation is plain greedy for every model of a study."""
    tok = tiny_tokenizer()
    plain = HFCausalLM(tiny_causal_model(len(tok), 3), tok).generate(SENTENCES[:3], max_new_tokens=8)
    beamy = tiny_causal_model(len(tok), 3)
    beamy.generation_config.num_beams = 4
    beamy.generation_config.no_repeat_ngram_size = 1
    beamy.generation_config.repetition_penalty = 3.0
    beamy.generation_config.min_new_tokens = 8
    assert HFCausalLM(beamy, tok).generate(SENTENCES[:3], max_new_tokens=8) == plain


def test_a_language_model_preset_takes_a_name_of_its_own():
    """``q=smollm2-135m-int8`` (a spec's NAME=) names the packaged language models as it names any
    model: the loaded model is called ``q``, and its weights' fingerprint is the preset's."""
    from perturblab.models.resolve import load_model

    named, plain = load_model("q=smollm2-135m-int8", "language_model"), load_model("smollm2-135m-int8",
                                                                                    "language_model")
    assert (named.name, plain.name) == ("q", "smollm2-135m-int8")
    assert named.fingerprint == plain.fingerprint
    assert load_model("p=smollm2-135m[batch_size=4]", "language_model").name == "p"
