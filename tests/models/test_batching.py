"""Batches bounded by rows and by a token budget (``batch_tokens``, ``auto`` sized where the model
runs), and batch invariance per dtype: what an input scores does not depend on which inputs share
its forward pass, beyond the round-off of the dtype.

Tolerances, relative to the largest magnitude of what is compared: float32 1e-5 (padding and
batch shape change only the order of float32 sums: measured up to 3.1e-7 here); bfloat16 3e-2
(bfloat16 keeps 8 significant bits, one round-off is up to 2^-8 = 3.9e-3 of a value, and a batch
shape that reorders a sum can move a rounded activation by a step or two per layer: measured up
to 5.7e-3, a causal LM's per-token log-probabilities in one batch against alone).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import transformers

from helpers.tiny_lm import SENTENCES, tiny_causal_model
from perturblab.errors import InputError
from perturblab.models import batching
from perturblab.models.batching import auto_batch_tokens, batches, bytes_per_token, check_batch_tokens
from perturblab.models.hf import HFEncoder, HFSequenceClassifier
from perturblab.models.lm import HFCausalLM
from perturblab.models.spec import ModelSpec

TOL = {"float32": 1e-5, "bfloat16": 3e-2}
#: texts of very different lengths, so that budgets change which inputs share a batch
TEXTS = SENTENCES[:6] + [" ".join(SENTENCES[:3]), "Yes.", " ".join(SENTENCES[3:5])]


def test_batches_are_bounded_by_rows_and_padded_tokens():
    widths = [5, 3, 9, 2, 9]  # widest first: 2, 4 (9), 0 (5), 1 (3), 3 (2)
    assert list(batches(widths, 2, 20)) == [[2, 4], [0, 1], [3]]  # rows bind: 2 x 9 = 18 <= 20
    assert list(batches(widths, 8, 8)) == [[2], [4], [0], [1, 3]]  # tokens bind; a 9 alone exceeds 8 and still runs
    assert list(batches(widths, 8, 100)) == [[2, 4, 0, 1, 3]]
    assert list(batches([], 4, 10)) == []
    rng = np.random.default_rng(0)
    for _ in range(50):
        w = rng.integers(1, 40, size=int(rng.integers(1, 30))).tolist()
        rows, budget = int(rng.integers(1, 9)), int(rng.integers(1, 120))
        got = list(batches(w, rows, budget))
        assert sorted(i for b in got for i in b) == list(range(len(w)))
        assert all(len(b) <= rows and (len(b) == 1 or len(b) * max(w[i] for i in b) <= budget) for b in got)


def test_batch_tokens_values():
    assert [check_batch_tokens(v) for v in ("auto", " AUTO ", 512, "64")] == ["auto", "auto", 512, 64]
    for bad in ("0", "-3", "lots", True, 2.5, None):
        with pytest.raises(InputError, match="batch_tokens must be a positive number of padded tokens per batch or 'auto'"):
            check_batch_tokens(bad)
    assert ModelSpec.parse("m=models/x[batch_tokens=4096,batch_size=8]").kwargs == {"batch_tokens": 4096, "batch_size": 8}
    assert ModelSpec.parse("m=models/x[batch_tokens=auto]").kwargs == {"batch_tokens": "auto"}
    with pytest.raises(InputError, match="model option batch_tokens must be a positive number"):
        ModelSpec.parse("m=models/x[batch_tokens=0]")


def test_auto_is_the_cpu_budget_on_the_cpu_and_a_share_of_free_memory_on_cuda(tok, monkeypatch):
    enc = HFEncoder(transformers.BertModel(_bert_config(tok)).eval(), tok, name="enc")
    lm = HFCausalLM(tiny_causal_model(len(tok), 0, max_positions=64), tok, name="lm")
    assert enc.batch_tokens == batching.CPU_BATCH_TOKENS["encoder"] == 4096
    assert lm.batch_tokens == batching.CPU_BATCH_TOKENS["language_model"] == 2048
    assert HFEncoder(enc.model, tok, batch_tokens=300).batch_tokens == 300

    # CUDA, without one: a module whose weights say cuda, and torch's free-memory answer replaced
    config = SimpleNamespace(hidden_size=64, num_hidden_layers=2, intermediate_size=128, num_attention_heads=4)
    per = bytes_per_token(config, 2, max_length=128)
    assert per == 2 * (3 * 64 + 2 * 128 + 4 * 128) == 1920  # states of 3 layers, FFN, one layer's scores
    assert bytes_per_token(config, 2, max_length=128, vocab=1000) == 1920 + 8000  # float32 logits, log-probs
    weight = SimpleNamespace(device=torch.device("cuda", 0), element_size=lambda: 2)
    fake = SimpleNamespace(config=config, parameters=lambda: iter([weight]))
    for free, want in ((3 * 1920 * 1000, 1000), (3 * 1920 * 10, 512), (3 * 1920 * 10 ** 7, 1 << 20)):
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device, free=free: (free, 2 * free))
        assert auto_batch_tokens(fake, "encoder", max_length=128) == want  # a third of free, within 512 .. 2^20


def _bert_config(tok):
    return transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=64, max_position_embeddings=128, num_labels=3)


def _close(a, b, dtype):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max()) <= TOL[dtype]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_encoders_and_classifiers_are_batch_invariant_per_dtype(tok, dtype):
    """Every layer's pooled states and the class probabilities of each text: alone, in batches of
    the default budget (all in one), and in budgets of 80 and 160 padded tokens (the long texts
    alone, the others in pairs or fours)."""
    torch.manual_seed(0)
    body = transformers.BertModel(_bert_config(tok)).eval()
    torch.manual_seed(1)
    head = transformers.BertForSequenceClassification(_bert_config(tok)).eval()
    make = {"encoder": lambda **kw: HFEncoder(body, tok, name="enc", dtype=dtype, **kw),
            "classifier": lambda **kw: HFSequenceClassifier(head, tok, name="clf", dtype=dtype, **kw)}
    ask = {"encoder": lambda m, t: np.stack(m.hidden_states(t)), "classifier": lambda m, t: m.predict_proba(t)}
    widths = [len(x) for x in tok(TEXTS)["input_ids"]]
    for kind in make:
        alone = np.concatenate([ask[kind](make[kind](batch_size=1), [t]) for t in TEXTS], axis=-2 if kind == "encoder" else 0)
        sizes = {}
        for budget in ("auto", 80, 160):
            model = make[kind](batch_tokens=budget)
            sizes[budget] = [len(b) for b in batches(widths, model.batch_size, model.batch_tokens)]
            got = ask[kind](model, TEXTS)
            assert _close(got, alone, dtype), (kind, budget, np.abs(got - alone).max())
        # different company each time: 80 -> 104 | 67 | 38+36 | 33+33 | 29+25 | 3 tokens, 160 -> 104 | 67+38 | ...
        assert sizes["auto"] == [len(TEXTS)] and len(sizes[80]) > len(sizes[160]) > 1 and max(sizes[80]) == 2


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_language_models_are_batch_invariant_per_dtype(tok, dtype):
    """Per-token log-probabilities and next-token distributions: alone, and in budgets that put
    different texts together."""
    torch.manual_seed(0)
    model = tiny_causal_model(len(tok), 0, max_positions=128, initializer_range=0.3)
    lm = lambda **kw: HFCausalLM(model, tok, name="tiny", dtype=dtype, **kw)  # noqa: E731
    one = lm(batch_size=1)
    want_tok = [one.token_logprobs([t])[0] for t in TEXTS]
    want_next = np.concatenate([one.next_token_logprobs([t]) for t in TEXTS])
    for budget in ("auto", 80, 160):
        m = lm(batch_tokens=budget)
        assert all(_close(g, w, dtype) for g, w in zip(m.token_logprobs(TEXTS), want_tok)), budget
        assert _close(m.next_token_logprobs(TEXTS), want_next, dtype), budget
