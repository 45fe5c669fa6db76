"""The trainable model zoo (perturblab.models.zoo) and TextRNN, on synthetic data and tiny BERTs
built from a config (no packaged models, no downloads)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.tiny_bert import word_tokenizer  # noqa: E402

from perturblab.errors import InputError, UnknownNameError  # noqa: E402
from perturblab.models import presets, zoo  # noqa: E402
from perturblab.models.base import Classifier  # noqa: E402
from perturblab.models.finetune import FinetuneConfig  # noqa: E402
from perturblab.models.head import EncoderClassifier  # noqa: E402
from perturblab.models.hf import HFEncoder, HFSequenceClassifier  # noqa: E402
from perturblab.models.textrnn import (TextRNNClassifier, _pad, length_batches, one_torch_thread,  # noqa: E402
                                       tokenize, train_textrnn)

FILLER = "the a cat dog sat on mat movie film was is very and it plot actors park river old new".split()


def marker_task(n: int = 300, seed: int = 0, markers=("bad", "good")) -> tuple[list[str], np.ndarray]:
    """Filler words with one class marker inserted; the label is the marker's index."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        y = i % len(markers)
        words = list(rng.choice(FILLER, size=int(rng.integers(4, 9))))
        words.insert(int(rng.integers(0, len(words) + 1)), markers[y])
        texts.append(" ".join(words))
        labels.append(y)
    return texts, np.asarray(labels)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def task():
    return marker_task()


@pytest.fixture(scope="module")
def rnn(task):
    return train_textrnn(*task, seed=0)


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer([*FILLER, "good", "bad"])


def tiny_bert(tok):
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=37, max_position_embeddings=64)
    return transformers.BertModel(cfg).eval()


# ---------------------------------------------------------------- TextRNN
def test_tokenizer():
    assert tokenize("Hello, World!  it's", lowercase=True) == ["hello", ",", "world", "!", "it", "'", "s"]
    assert tokenize("Hello, World!") == ["Hello", ",", "World", "!"]
    assert tokenize("") == []


def test_textrnn_learns_separable_task(rnn, task):
    texts, y = task
    assert isinstance(rnn, Classifier) and isinstance(rnn, TextRNNClassifier)
    assert rnn.labels == ["0", "1"]
    acc = float(np.mean(rnn.predict_proba(texts).argmax(1) == y))
    assert acc >= 0.95
    held_out, y2 = marker_task(100, seed=5)
    assert float(np.mean(rnn.predict_proba(held_out).argmax(1) == y2)) >= 0.9


def test_textrnn_seeded_and_rng_untouched(rnn, task):
    torch.manual_seed(123)
    np.random.seed(7)
    before, np_before = torch.get_rng_state(), np.random.get_state()[1].copy()
    again = train_textrnn(*task, seed=0)
    assert torch.equal(torch.get_rng_state(), before)
    assert np.array_equal(np.random.get_state()[1], np_before)
    other = train_textrnn(*task, seed=1)
    probe = task[0][:50] + ["", "good", "an unseen word"]
    np.testing.assert_array_equal(again.predict_proba(probe), rnn.predict_proba(probe))
    assert again.fingerprint == rnn.fingerprint
    assert not np.allclose(other.predict_proba(probe), rnn.predict_proba(probe))
    assert other.fingerprint != rnn.fingerprint


def test_textrnn_trained_in_threads_equals_trained_alone(task):
    from concurrent.futures import ThreadPoolExecutor

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = [train_textrnn(*task, seed=s, epochs=1) for s in (0, 1, 2, 3)]
        with ThreadPoolExecutor(2) as pool:
            threaded = list(pool.map(lambda s: train_textrnn(*task, seed=s, epochs=1), (0, 1, 2, 3)))
    finally:
        torch.set_num_threads(before)
    assert [m.fingerprint for m in threaded] == [m.fingerprint for m in alone]
    assert len({m.fingerprint for m in alone}) == 4


def test_one_torch_thread_nests_and_restores_across_threads(task):
    import threading

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen, inside = [], threading.Barrier(2)

        def work():
            with one_torch_thread():
                inside.wait()  # both threads inside at once
                with one_torch_thread():
                    seen.append(torch.get_num_threads())
                inside.wait()

        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert seen == [1, 1] and torch.get_num_threads() == 2  # restored once the last one left
        train_textrnn(*task, seed=0, epochs=1).predict_proba(["a b c"])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_textrnn_three_classes_shapes_and_empty_texts():
    texts, y = marker_task(150, seed=1, markers=("bad", "good", "zebra"))
    clf = train_textrnn(texts, y, seed=0, epochs=2, label_names=["neg", "pos", "zeb"])
    assert clf.labels == ["neg", "pos", "zeb"]
    p = clf.predict_proba(texts[:10] + ["", "   ", ("good film", "bad plot")])
    assert p.shape == (13, 3) and p.dtype == np.float64
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(p[10], p[11])  # both all-padding
    assert clf.predict_proba([]).shape == (0, 3)
    with pytest.raises(InputError):
        clf.predict_proba("a single string")


def test_textrnn_padding_invariance(rnn, task):
    long = " ".join(["the very old movie"] * 30)
    batch = [task[0][0], long, task[0][1], "good", ""]
    together = rnn.predict_proba(batch)
    for i, t in enumerate(batch):
        np.testing.assert_allclose(rnn.predict_proba([t])[0], together[i], atol=1e-6)
    rnn_small = TextRNNClassifier(rnn.model, rnn.vocab, rnn.labels, rnn.config, batch_size=2)
    np.testing.assert_allclose(rnn_small.predict_proba(batch), together, atol=1e-6)


def test_textrnn_equals_packed_bidirectional_gru(rnn):
    """The two-GRU forward pass is a packed BiGRU with the same weights (an independent formulation)."""
    m = rnn.model
    bi = torch.nn.GRU(m.embed.embedding_dim, m.forward_gru.hidden_size, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(bi, name).copy_(getattr(m.forward_gru, name))
            getattr(bi, name + "_reverse").copy_(getattr(m.backward_gru, name))
    ids, lengths = _pad(rnn.encode(["a good movie indeed", "bad", "the very old movie was bad and dull", ""]))
    packed = torch.nn.utils.rnn.pack_padded_sequence(m.embed(ids), lengths, batch_first=True, enforce_sorted=False)
    h, _ = torch.nn.utils.rnn.pad_packed_sequence(bi(packed)[0], batch_first=True, total_length=ids.shape[1])
    real = torch.arange(ids.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
    expected = m.out(h.masked_fill(~real.unsqueeze(-1), float("-inf")).max(dim=1).values)
    with torch.inference_mode():
        torch.testing.assert_close(m(ids, lengths), expected.detach(), atol=1e-6, rtol=1e-5)


def test_length_batches_cover_every_index_once_and_group_lengths():
    lengths = np.random.default_rng(3).integers(1, 60, size=1000).tolist()
    batches = length_batches(lengths, 16, np.random.default_rng(0), block=10)
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    assert all(len(b) <= 16 for b in batches)
    spread = np.mean([np.ptp([lengths[i] for i in b]) for b in batches])
    assert spread < 15  # unsorted batches of 16 span ~50 of the 59 possible lengths
    again = length_batches(lengths, 16, np.random.default_rng(0), block=10)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again))


def test_textrnn_max_seconds_and_bad_args(task):
    quick = train_textrnn(*task, seed=0, max_seconds=0.0)  # stops after one step
    assert quick.predict_proba(task[0][:3]).shape == (3, 2)
    with pytest.raises(InputError, match="labels"):
        train_textrnn(task[0], task[1][:-1], seed=0)
    with pytest.raises(InputError):
        train_textrnn(task[0], task[1], seed=0, epochs=0)


# ---------------------------------------------------------------- the zoo
def test_registered_names_and_unknown():
    assert {"tfidf-lr", "textrnn", "minilm-probe", "hf-finetune"} <= set(zoo.TRAINABLE.names())
    with pytest.raises(UnknownNameError, match="textrnn") as err:
        zoo.get_trainer("nope")
    assert "tfidf-lr" in str(err.value) and "trainable model" in str(err.value)
    with pytest.raises(UnknownNameError):
        zoo.fit_model("nope", ["a", "b"], [0, 1], 0)


def test_tfidf_deterministic_and_label_names(task):
    texts, y = task
    a = zoo.fit_model("tfidf-lr", texts, y, 0)
    b = zoo.get_trainer("tfidf-lr")(texts, y.copy(), 0)
    assert a.labels == ["0", "1"] and a.fingerprint == b.fingerprint
    np.testing.assert_array_equal(a.predict_proba(texts[:20]), b.predict_proba(texts[:20]))
    assert float(np.mean(a.predict_proba(texts).argmax(1) == y)) >= 0.95
    named = zoo.fit_model("tfidf-lr", texts, y, 0, label_names=["neg", "pos"])
    assert named.labels == ["neg", "pos"] and named.fingerprint != a.fingerprint


def test_fit_model_textrnn_matches_direct(rnn, task):
    clf = zoo.fit_model("textrnn", task[0], task[1], 0)
    assert clf.fingerprint == rnn.fingerprint


@pytest.mark.parametrize("texts, labels, match", [
    (["a", "b", "c"], [0, 1], "labels has shape"),
    (["a", "b"], [1, 1], "only one class"),
    ([], [], "texts is empty"),
    ("a b", [0, 1], "single string"),
    (["a", 3], [0, 1], r"texts\[1\]"),
    (["a", "b"], [0.5, 1.0], "integer class indices"),
    (["a", "b"], ["neg", "pos"], "integer class indices"),
    (["a", "b"], [-1, 0], "integer class indices"),
    (["a", "b"], [0.0, np.inf], "integer class indices"),
])
def test_fit_model_input_errors(texts, labels, match):
    with pytest.raises(InputError, match=match):
        zoo.fit_model("tfidf-lr", texts, labels, 0)


def test_fit_model_label_names_too_few(task):
    with pytest.raises(InputError, match="label_names"):
        zoo.fit_model("tfidf-lr", task[0], task[1] * 2, 0, label_names=["a", "b"])


def test_register_trainer_user_model(lexicon):
    @zoo.register_trainer("lexicon-test")
    def fit(texts, labels, seed):
        return lexicon

    try:
        clf = zoo.fit_model("lexicon-test", ["good", "bad"], np.array([1, 0]), 0, label_names=["neg", "pos"])
        assert clf.labels == ["neg", "pos"] and clf.fingerprint != lexicon.fingerprint
        np.testing.assert_array_equal(clf.predict_proba(["good"]), lexicon.predict_proba(["good"]))
        plain = zoo.get_trainer("lexicon-test")(["good", "bad"], [1, 0], 0)
        assert plain.labels == ["0", "1"]
    finally:
        zoo.TRAINABLE._items.pop("lexicon-test", None)
        zoo.TRAINABLE._docs.pop("lexicon-test", None)


def test_minilm_probe_with_tiny_encoder(monkeypatch, tok, task):
    enc = HFEncoder(tiny_bert(tok), tok, batch_size=16, name="tiny")
    asked = []
    monkeypatch.setattr(presets, "load_encoder", lambda name, **kw: asked.append(name) or enc)
    texts, y = task
    texts, y = texts[:120], y[:120]
    clf = zoo.fit_model("minilm-probe", texts, y, 0, label_names=["bad", "good"])
    assert asked == ["minilm-l6"] and isinstance(clf, EncoderClassifier)
    assert clf.labels == ["bad", "good"] and clf.mean is not None
    p = clf.predict_proba(texts)
    assert p.shape == (120, 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert float(np.mean(p.argmax(1) == y)) >= 0.9

    def no_encoding(*a, **k):
        raise AssertionError("states should come from the cache")

    monkeypatch.setattr(enc, "hidden_states", no_encoding)
    again = zoo.fit_model("minilm-probe", texts, y, 0, label_names=["bad", "good"])
    assert again.fingerprint == clf.fingerprint


def test_hf_finetune_with_tiny_bert(monkeypatch, tok, tmp_path, task):
    base = tmp_path / "tiny-bert"
    tiny_bert(tok).save_pretrained(base)
    tok.save_pretrained(base)
    monkeypatch.setattr(zoo, "HF_BASE", base)
    monkeypatch.setattr(zoo, "HF_CONFIG", FinetuneConfig(max_steps=2, batch_size=8, max_length=32, max_seconds=None))
    texts, y = task[0][:40], task[1][:40]
    a = zoo.fit_model("hf-finetune", texts, y, 0, label_names=["bad", "good"])
    assert isinstance(a, HFSequenceClassifier) and a.labels == ["bad", "good"]
    p = a.predict_proba(texts[:5] + [("good film", "bad plot")])
    assert p.shape == (6, 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    again = zoo.fit_model("hf-finetune", texts, y, 0, label_names=["bad", "good"])  # reused from disk
    assert again.fingerprint == a.fingerprint
    other = zoo.fit_model("hf-finetune", texts, y, 1, label_names=["bad", "good"])
    assert other.fingerprint != a.fingerprint


def test_fingerprints_differ_across_models(rnn, task):
    tfidf = zoo.fit_model("tfidf-lr", *task, 0)
    three = train_textrnn(task[0], np.where(task[1] == 1, 2, task[1]), seed=0, epochs=1)
    assert len({rnn.fingerprint, tfidf.fingerprint, three.fingerprint}) == 3
