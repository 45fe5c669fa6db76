"""Chunked, cached layer states: same values as one call, resume after a crash, cache hits."""

from __future__ import annotations

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.models.base import fingerprint_of
from perturblab.models.states import clear_states_cache, iter_layer_states, layer_states, states_dir


class LengthEncoder:
    """Two 'layers' computed from word lengths; counts the texts it encodes."""

    num_layers = 1

    def __init__(self, fail_after: int | None = None):
        self.fingerprint = fingerprint_of("length-encoder")
        self.seen = 0
        self.fail_after = fail_after

    def hidden_states(self, inputs, pooling="mean"):
        if self.fail_after is not None and self.seen >= self.fail_after:
            raise RuntimeError("simulated crash")
        self.seen += len(inputs)
        lens = np.array([[len(w) for w in t.split()][:3] + [0] * (3 - min(3, len(t.split()))) for t in inputs], float)
        return [lens, lens ** 2 + (1.0 if pooling == "last" else 0.0)]


TEXTS = [" ".join("x" * ((i * 7 + j) % 9 + 1) for j in range(4)) for i in range(23)]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))


def test_chunks_equal_one_call_and_cache_hits():
    enc = LengthEncoder()
    want = enc.hidden_states(TEXTS)
    enc.seen = 0
    got = layer_states(enc, TEXTS, chunk_size=5, progress=False)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.astype(np.float32))
    assert enc.seen == 23
    again = layer_states(enc, TEXTS, chunk_size=5, progress=False)
    assert enc.seen == 23  # all from the cache
    np.testing.assert_array_equal(again[1], got[1])
    other = layer_states(enc, TEXTS, pooling="last", chunk_size=5, progress=False)
    assert enc.seen == 46 and not np.array_equal(other[1], got[1])  # pooling is part of the key


def test_resume_after_crash_recomputes_only_missing_chunks():
    crashing = LengthEncoder(fail_after=10)
    with pytest.raises(RuntimeError):
        layer_states(crashing, TEXTS, chunk_size=5, progress=False)
    assert len(list(states_dir(crashing, TEXTS, "mean").glob("rows*.npy"))) == 2
    fresh = LengthEncoder()
    got = layer_states(fresh, TEXTS, chunk_size=5, progress=False)
    assert fresh.seen == 13  # chunks 10-15, 15-20, 20-23
    np.testing.assert_array_equal(got[0], LengthEncoder().hidden_states(TEXTS)[0].astype(np.float32))
    assert clear_states_cache() == 1


def test_streaming_without_cache_and_errors():
    enc = LengthEncoder()
    rows = [r for r, _ in iter_layer_states(enc, TEXTS, chunk_size=10, cache=False, progress=False)]
    assert rows == [slice(0, 10), slice(10, 20), slice(20, 23)]
    with pytest.raises(InputError, match="pooling"):
        layer_states(enc, TEXTS, pooling="max")
    with pytest.raises(InputError, match="no inputs"):
        layer_states(enc, [])


def test_streamed_minibatch_cka_equals_batches_by_hand():
    from perturblab.measures.cka import MinibatchCKA
    from perturblab.studies.similarity import streamed_minibatch_cka

    enc = LengthEncoder()
    texts = TEXTS + [t + " yy" for t in TEXTS]  # 46 inputs: batches of 10, the last of 6
    got = streamed_minibatch_cka(enc, enc, texts, pooling_b="last", batch_size=10, progress=False)
    acc = MinibatchCKA(2, 2)
    for s in range(0, 46, 10):
        a = enc.hidden_states(texts[s:s + 10])
        b = enc.hidden_states(texts[s:s + 10], "last")
        acc.update(a, b)
    np.testing.assert_allclose(got, acc.value(), atol=1e-12)
    assert got[0, 0] == pytest.approx(1.0)
