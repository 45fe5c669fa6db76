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


pytestmark = pytest.mark.usefixtures("home")


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


def test_a_corrupt_cached_chunk_is_recomputed_with_a_warning(caplog):
    enc = LengthEncoder()
    want = layer_states(enc, TEXTS, chunk_size=5, progress=False)
    chunks = sorted(states_dir(enc, TEXTS, "mean").glob("rows*.npy"))
    chunks[1].write_bytes(b"not an array")  # unreadable
    np.save(chunks[2], np.zeros((2, 3, 3), np.float32))  # readable, but other rows than the chunk's
    enc.seen = 0
    with caplog.at_level("WARNING"):
        got = layer_states(enc, TEXTS, chunk_size=5, progress=False)
    assert enc.seen == 10  # the two bad chunks of five texts, nothing else
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert caplog.text.count("discarding corrupt cached hidden states") == 1  # one warning for the two
    enc.seen = 0
    layer_states(enc, TEXTS, chunk_size=5, progress=False)
    assert enc.seen == 0  # rewritten whole


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
    from perturblab.studies.grounding.similarity import streamed_minibatch_cka

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


class PooledLengthEncoder(LengthEncoder):
    hidden_size = 3

    def pooled(self, inputs, layer=-1, pooling="mean"):
        return self.hidden_states(inputs, pooling)[layer]


DISTINCT = [f"text{i} " + " ".join("y" * ((i + j) % 6 + 1) for j in range(3)) for i in range(23)]


def test_memo_encoder_encodes_each_input_once_and_returns_the_same_states():
    from perturblab.models.states import MemoEncoder

    assert len(set(DISTINCT)) == len(DISTINCT) == 23
    inner = PooledLengthEncoder()
    memo = MemoEncoder(inner, max_items=30)
    assert memo.fingerprint == inner.fingerprint and memo.hidden_size == 3
    first = memo.pooled(DISTINCT[:10])
    np.testing.assert_array_equal(first, PooledLengthEncoder().pooled(DISTINCT[:10]))
    mixed = memo.pooled(DISTINCT[5:15] + DISTINCT[5:7])  # 5 seen, 5 new, 2 repeated within the call
    assert inner.seen == 15 and memo.encoded == 15
    np.testing.assert_array_equal(mixed, PooledLengthEncoder().pooled(DISTINCT[5:15] + DISTINCT[5:7]))
    np.testing.assert_array_equal(memo.pooled(DISTINCT[:3], layer=0), PooledLengthEncoder().pooled(DISTINCT[:3], layer=0))
    assert inner.seen == 18  # another layer is another state
    memo.pooled(DISTINCT)  # 23 states of layer -1 + 3 of layer 0 = 26
    assert len(memo._memo) == 26
    memo.pooled(DISTINCT[:10], layer=0)  # 7 more: 33 > 30, the 3 least recently used are dropped
    assert len(memo._memo) == 30 and (DISTINCT[10], -1, "mean") in memo._memo
    assert (DISTINCT[0], -1, "mean") not in memo._memo
    with pytest.raises(InputError, match="pooled"):
        MemoEncoder(LengthEncoder())


def test_threads_writing_the_same_chunk_at_once_each_finish_and_leave_it_whole(tmp_path):
    """Studies run at once in one process (a comparison's layers on a cluster) may write the same
    chunk of a model they share: each thread writes a temporary file of its own and moves it in
    place, so none fails and the chunk is whole (all writers write the same values)."""
    import threading

    from perturblab.models.states import _save

    path = tmp_path / "rows0-8.npy"
    arrays = [np.arange(24, dtype=np.float32).reshape(8, 3) + k for k in range(2)]
    start, failures = threading.Barrier(4), []

    def write() -> None:
        start.wait()
        for _ in range(100):
            try:
                _save(path, arrays)
            except OSError as e:  # another thread moved a temporary file it shared
                failures.append(e)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert np.array_equal(np.load(path), np.stack(arrays)) and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
