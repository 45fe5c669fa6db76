"""Hidden states of decoders: padding never leaks into pooled states; loaders route LM names."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from perturblab.models.hf import HFEncoder
from helpers.tiny_lm import SENTENCES, tiny_lm

TEXTS = ["The cat slept.", SENTENCES[0], "Paris is the capital of France and lies on the river Seine, they say.",
         "Water boils."]


@pytest.fixture(scope="module")
def decoder():
    return HFEncoder.from_causal_lm(tiny_lm(seed=1), batch_size=4)


@pytest.mark.parametrize("pooling", ["mean", "last", "cls"])
def test_batched_decoder_states_equal_one_by_one(decoder, pooling):
    batched = decoder.hidden_states(TEXTS, pooling=pooling)
    single = [decoder.hidden_states([t], pooling=pooling) for t in TEXTS]
    assert len(batched) == decoder.num_layers + 1 == 3
    for layer, arr in enumerate(batched):
        want = np.concatenate([s[layer] for s in single])
        np.testing.assert_allclose(arr, want, atol=2e-5, err_msg=f"{pooling} layer {layer}")


def test_decoder_last_and_mean_by_hand(decoder):
    tok, model = decoder.tokenizer, decoder.model
    got_last = decoder.hidden_states(TEXTS, pooling="last")
    got_mean = decoder.hidden_states(TEXTS, pooling="mean")
    for i, text in enumerate(TEXTS):
        ids = torch.tensor([tok(text)["input_ids"]])
        with torch.inference_mode():
            states = model(input_ids=ids, output_hidden_states=True).hidden_states
        for layer, h in enumerate(states):
            np.testing.assert_allclose(got_last[layer][i], h[0, -1].numpy(), atol=2e-5)
            np.testing.assert_allclose(got_mean[layer][i], h[0].mean(0).numpy(), atol=2e-5)


def test_decoder_fingerprint_follows_the_model():
    a = HFEncoder.from_causal_lm(tiny_lm(seed=1))
    b = HFEncoder.from_causal_lm(tiny_lm(seed=2))
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == HFEncoder.from_causal_lm(tiny_lm(seed=1)).fingerprint


def test_decoder_batch_size_follows_the_language_model():
    one = HFEncoder.from_causal_lm(tiny_lm(seed=1, batch_size=1))
    many = HFEncoder.from_causal_lm(tiny_lm(seed=1))
    assert one.batch_size == 1 and many.batch_size == 16
    assert one.fingerprint != many.fingerprint  # batch composition can change dynamically quantised outputs
