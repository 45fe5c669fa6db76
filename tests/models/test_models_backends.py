"""Model backends on tiny, randomly initialised BERTs built here (no assets, no network)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.tiny_bert import word_tokenizer  # noqa: E402

from perturblab.data.examples import Dataset, Example  # noqa: E402
from perturblab.errors import InputError, UnknownNameError  # noqa: E402
from perturblab.models import presets  # noqa: E402
from perturblab.models.base import CountingClassifier  # noqa: E402
from perturblab.models.cache import CachedClassifier  # noqa: E402
from perturblab.models.callable_backend import CallableClassifier  # noqa: E402
from perturblab.models.head import EncoderClassifier, train_encoder_head  # noqa: E402
from perturblab.models.hf import HFEncoder, HFSequenceClassifier  # noqa: E402
from perturblab.models.sklearn_backend import SklearnClassifier, train_tfidf_lr  # noqa: E402

WORDS = ("the a cat dog sat on mat good bad movie film was is very not great awful and it i liked "
         "hated plot actors fun boring ##s ##ing").split()
TEXTS = ["the cat sat", "a very very good movie and the actors were fun", "bad", "i hated it",
         "the dogs sat on the mat and it was not boring at all", "great film", "awful plot"]


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer(WORDS)


def tiny_config(tok, **kw):
    return transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=37, max_position_embeddings=64, **kw)


@pytest.fixture(scope="module")
def encoder(tok):
    torch.manual_seed(0)
    return HFEncoder(transformers.BertModel(tiny_config(tok)).eval(), tok, batch_size=3, name="tiny")


def toy_data(k: int = 3, n: int = 36) -> Dataset:
    names = ["neg", "pos", "neu"][:k]
    rng = np.random.default_rng(0)
    lex = {0: ["bad", "awful", "boring"], 1: ["good", "great", "fun"], 2: ["the", "a", "on"]}
    ex = []
    for i in range(n):
        y = i % k
        words = list(rng.choice(lex[y], size=3)) + list(rng.choice(["cat", "dog", "movie", "film"], size=2))
        ex.append(Example(" ".join(words), y, uid=str(i)))
    return Dataset(ex, names, "toy")


# ---------------------------------------------------------------- HFEncoder
def test_batched_equals_one_by_one(encoder):
    batched = encoder.hidden_states(TEXTS)
    assert len(batched) == encoder.num_layers + 1 == 3
    assert all(h.shape == (len(TEXTS), 32) and h.dtype == np.float32 for h in batched)
    for i, t in enumerate(TEXTS):  # float32 states: padding changes them by ~1e-6 of their magnitude
        single = encoder.hidden_states([t])
        for layer in range(3):
            np.testing.assert_allclose(batched[layer][i], single[layer][0], rtol=1e-5, atol=1e-5)


def test_pooled_fast_path_matches_all_layers(encoder):
    for pooling in ("mean", "cls", "last"):
        full = encoder.hidden_states(TEXTS, pooling=pooling)
        for layer in (0, 1, 2, -1, -2):
            np.testing.assert_allclose(encoder.pooled(TEXTS, layer=layer, pooling=pooling), full[layer], atol=1e-6)
    assert len(encoder.hidden_states(TEXTS, layers=[-1])) == 1


def test_pooling_by_hand_over_real_tokens(encoder, tok):
    # TEXTS[0] is padded in its batch (TEXTS[1] is longer): padding must not leak into the mean.
    got = {p: encoder.hidden_states(TEXTS[:2], pooling=p) for p in ("mean", "cls", "last")}
    enc = tok([TEXTS[0]], return_tensors="pt")
    with torch.inference_mode():
        states = encoder.model(**enc, output_hidden_states=True).hidden_states
    n_tokens = enc["input_ids"].shape[1]
    assert n_tokens < len(tok(TEXTS[1])["input_ids"])
    for layer in range(3):
        h = states[layer][0].numpy()
        np.testing.assert_allclose(got["mean"][layer][0], h.sum(0) / n_tokens, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got["cls"][layer][0], h[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got["last"][layer][0], h[n_tokens - 1], rtol=1e-5, atol=1e-5)


def test_pairs_and_order(encoder, tok):
    pair = ("the cat sat", "a dog")
    mixed = [pair, "the cat sat", ("bad movie", "great film and fun"), "i hated it"]
    out = encoder.pooled(mixed)
    enc = tok(["the cat sat"], ["a dog"], return_tensors="pt")
    assert enc["token_type_ids"].sum() == 3  # second segment: a dog [SEP]
    with torch.inference_mode():
        h = encoder.model(**enc).last_hidden_state[0].numpy()
    np.testing.assert_allclose(out[0], h.mean(0), rtol=1e-5, atol=1e-5)
    assert np.abs(out[0] - out[1]).max() > 1e-3  # a pair is not its first text
    np.testing.assert_allclose(encoder.pooled(mixed[::-1]), out[::-1], rtol=1e-5, atol=1e-5)


def test_encoder_errors_and_fingerprint(encoder, tok):
    with pytest.raises(InputError, match="out of range"):
        encoder.pooled(TEXTS, layer=3)
    with pytest.raises(InputError, match="pooling"):
        encoder.hidden_states(TEXTS, pooling="max")
    with pytest.raises(InputError, match="empty"):
        encoder.pooled(["ok", "  "])
    with pytest.raises(InputError, match="single string"):
        encoder.pooled("the cat")
    torch.manual_seed(0)
    model = transformers.BertModel(tiny_config(tok)).eval()
    a = HFEncoder(model, tok).fingerprint
    assert a == HFEncoder(model, tok).fingerprint and len(a) == 16
    with torch.no_grad():
        model.encoder.layer[1].output.dense.bias[0] += 1e-3
    assert HFEncoder(model, tok).fingerprint != a


# ---------------------------------------------------------------- EncoderClassifier
def test_head_save_load_identical(encoder, tmp_path):
    data = toy_data(3)
    clf = train_encoder_head(encoder, data, seed=0)
    p = clf.predict_proba(TEXTS)
    assert p.shape == (len(TEXTS), 3)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    clf.save(tmp_path / "h.npz", extra={"seed": 0})
    back = EncoderClassifier.load(tmp_path / "h.npz", encoder)
    assert np.array_equal(back.predict_proba(TEXTS), p)
    assert back.fingerprint == clf.fingerprint and back.labels == ["neg", "pos", "neu"]
    assert EncoderClassifier.read_meta(tmp_path / "h.npz")["extra"] == {"seed": 0}
    # training accuracy well above chance on separable toy data
    assert (clf.predict_proba([e.text for e in data]).argmax(1) == data.labels).mean() > 0.8


def test_head_binary_matches_sklearn_and_checks_encoder(encoder, tok, tmp_path):
    from sklearn.linear_model import LogisticRegression

    data = toy_data(2)
    clf = train_encoder_head(encoder, data, seed=0, standardize=True)
    p = clf.predict_proba(TEXTS)
    assert p.shape == (len(TEXTS), 2)
    h = encoder.pooled([e.text for e in data])
    scaled = (h - h.mean(0)) / h.std(0)
    ref = LogisticRegression(C=1.0, max_iter=1000, random_state=0).fit(scaled, data.labels)
    q = encoder.pooled(TEXTS)
    np.testing.assert_allclose(p, ref.predict_proba((q - h.mean(0)) / h.std(0)), atol=1e-6)
    clf.save(tmp_path / "b.npz")
    torch.manual_seed(1)
    other = HFEncoder(transformers.BertModel(tiny_config(tok)).eval(), tok)
    with pytest.raises(InputError, match="retrain"):
        EncoderClassifier.load(tmp_path / "b.npz", other)


# ---------------------------------------------------------------- CallableClassifier
def _uniform(texts):
    return np.full((len(texts), 2), 0.5)


def test_callable_validation():
    ok = CallableClassifier(_uniform, ["a", "b"], "uniform")
    assert np.array_equal(ok.predict_proba(["x", ("y", "z")]), np.full((2, 2), 0.5))
    bad = {
        "shape": lambda t: np.full((len(t), 3), 1 / 3),
        "rows": lambda t: np.full((len(t), 2), 0.6),
        "too few rows": lambda t: np.full((1, 2), 0.5),
        "negative": lambda t: np.tile([1.5, -0.5], (len(t), 1)),
        "text": lambda t: [["a", "b"]] * len(t),
    }
    for name, fn in bad.items():
        with pytest.raises(InputError, match=name.split()[0] if name != "rows" else "sums to"):
            CallableClassifier(fn, ["a", "b"], name).predict_proba(["x", "y"])
    with pytest.raises(InputError):
        CallableClassifier(_uniform, ["only"], "one label")
    other = CallableClassifier(lambda t: np.tile([0.2, 0.8], (len(t), 1)), ["a", "b"], "uniform")
    assert other.fingerprint != ok.fingerprint


# ---------------------------------------------------------------- CachedClassifier
def _scorer(texts):
    n = np.array([len(t if isinstance(t, str) else t[0] + t[1]) for t in texts], dtype=float)
    z = np.stack([np.sin(n), np.cos(n), n / 10], axis=1)
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_cache_hits_skip_the_model():
    inner = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"))
    cache = CachedClassifier(inner)
    first = cache.predict_proba(["aa", "bbb", "aa", ("aa", "b")])
    assert (inner.calls, inner.inputs_scored) == (1, 3)  # in-batch duplicate scored once
    assert (cache.misses, cache.hits) == (3, 1)
    np.testing.assert_allclose(first, _scorer(["aa", "bbb", "aa", ("aa", "b")]), atol=1e-7)
    again = cache.predict_proba(["bbb", "aa"])
    assert inner.calls == 1 and (cache.misses, cache.hits) == (3, 3)
    assert np.array_equal(again, first[[1, 0]])
    mixed = cache.predict_proba(["cccc", "aa", "cccc"])
    assert (inner.calls, inner.inputs_scored) == (2, 4)
    assert np.array_equal(mixed[1], first[0]) and np.array_equal(mixed[0], mixed[2])
    assert cache.labels == ["x", "y", "z"] and cache.fingerprint == inner.fingerprint


def test_cache_lru_bound():
    inner = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"))
    cache = CachedClassifier(inner, max_entries=2)
    cache.predict_proba(["a", "bb", "ccc"])
    assert len(cache) == 2
    cache.predict_proba(["ccc"])
    assert inner.inputs_scored == 3
    cache.predict_proba(["a"])  # evicted: scored again
    assert inner.inputs_scored == 4


def test_cache_sqlite_persists_across_instances(tmp_path):
    db = tmp_path / "cache.sqlite"
    texts = ["one", "two", ("three", "four")]
    inner1 = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"))
    with CachedClassifier(inner1, path=db) as c1:
        p1 = c1.predict_proba(texts)
    inner2 = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"))
    c2 = CachedClassifier(inner2, path=db)
    p2 = c2.predict_proba(texts[::-1])
    assert inner2.calls == 0 and c2.disk_hits == 3
    assert np.array_equal(p2, p1[::-1])
    changed = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer", fingerprint="v2"))
    CachedClassifier(changed, path=db).predict_proba(texts)
    assert changed.inputs_scored == 3  # another fingerprint never reads these rows


def test_a_corrupt_cache_entry_or_file_is_recomputed_with_a_warning(tmp_path, caplog):
    import sqlite3

    db = tmp_path / "cache.sqlite"
    texts = ["one", "two", "three"]
    with CachedClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"), path=db) as c:
        want = c.predict_proba(texts)
    con = sqlite3.connect(db)
    with con:  # one entry truncated, one holding NaN
        keys = [k for (k,) in con.execute("SELECT key FROM probs ORDER BY key")]
        con.execute("UPDATE probs SET probs=? WHERE key=?", (b"\x00\x01", keys[0]))
        con.execute("UPDATE probs SET probs=? WHERE key=?", (np.full(3, np.nan, np.float32).tobytes(), keys[1]))
    con.close()
    inner = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"))
    with caplog.at_level("WARNING"), CachedClassifier(inner, path=db) as c:
        got = c.predict_proba(texts)
    assert inner.inputs_scored == 2 and np.array_equal(got, want)  # the two bad entries scored again
    assert "corrupt entry" in caplog.text
    with CachedClassifier(CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer")), path=db) as c:
        c.predict_proba(texts)
        assert c.disk_hits == 3  # and stored again, whole
    db.write_bytes(b"garbage" * 500)  # a file that is no database at all
    inner = CountingClassifier(CallableClassifier(_scorer, ["x", "y", "z"], "scorer"))
    with caplog.at_level("WARNING"), CachedClassifier(inner, path=db) as c:
        assert np.array_equal(c.predict_proba(texts), want) and inner.inputs_scored == 3
    assert (tmp_path / "cache.sqlite.corrupt").read_bytes().startswith(b"garbage")
    assert "moved it to cache.sqlite.corrupt" in caplog.text


# ---------------------------------------------------------------- HFSequenceClassifier
@pytest.fixture(scope="module")
def seq_model(tok):
    torch.manual_seed(3)
    cfg = tiny_config(tok, num_labels=3, id2label={0: "neg", 1: "pos", 2: "neu"},
                      label2id={"neg": 0, "pos": 1, "neu": 2})
    return transformers.BertForSequenceClassification(cfg).eval()


def test_sequence_classifier(seq_model, tok, tmp_path):
    clf = HFSequenceClassifier(seq_model, tok, batch_size=2)
    assert clf.labels == ["neg", "pos", "neu"]
    inputs = TEXTS + [("the cat sat", "a dog")]
    p = clf.predict_proba(inputs)
    with torch.inference_mode():
        logits = np.stack([seq_model(**tok([x] if isinstance(x, str) else [x[0]], None if isinstance(x, str)
                                           else [x[1]], return_tensors="pt")).logits[0].numpy() for x in inputs])
    ref = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(p, ref / ref.sum(1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    seq_model.save_pretrained(tmp_path / "clf")
    tok.save_pretrained(tmp_path / "clf")
    loaded = presets.load_classifier(str(tmp_path / "clf"), toy_data())
    assert isinstance(loaded, HFSequenceClassifier)
    np.testing.assert_allclose(loaded.predict_proba(inputs), p, atol=1e-6)
    torch.manual_seed(0)
    transformers.BertModel(tiny_config(tok)).save_pretrained(tmp_path / "bare")
    tok.save_pretrained(tmp_path / "bare")
    with pytest.raises(InputError, match="not a fine-tuned"):
        HFSequenceClassifier(str(tmp_path / "bare"))


# ---------------------------------------------------------------- sklearn + presets
def test_tfidf_lr_save_load_and_pairs(tmp_path):
    data = toy_data(3)
    clf = train_tfidf_lr(data, seed=0)
    p = clf.predict_proba(["good great fun", "awful bad", ("good", "bad")])
    assert p.shape == (3, 3) and p[0].argmax() == 1 and p[1].argmax() == 0
    back = SklearnClassifier.load(clf.save(tmp_path / "m.npz"))
    assert back.fingerprint == clf.fingerprint
    assert np.array_equal(back.predict_proba(["good great fun"]), p[:1])
    np.testing.assert_allclose(clf.predict_proba([("good", "bad")]), clf.predict_proba(["good [SEP] bad"]))
    two = Dataset([e for e in data.examples if e.label != 2], data.label_names, "two")
    p2 = train_tfidf_lr(two, seed=0).predict_proba(["good"])
    assert p2.shape == (1, 3) and p2[0, 2] == 0.0  # unseen class


def test_presets_store_and_reload(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    data = toy_data(3)
    first = presets.load_classifier("tfidf-lr", data, seed=1, data_name="toy")
    path = presets.head_path("tfidf-lr", data, 1)
    assert path.parent == tmp_path / "heads" and path.name.endswith("__seed1.npz") and path.is_file()

    def no_training(*a, **k):
        raise AssertionError("retrained instead of loading")

    monkeypatch.setattr(presets, "train_tfidf_lr", no_training)
    again = presets.load_classifier("TFIDF-LR", data, seed=1)
    assert again.fingerprint == first.fingerprint
    with pytest.raises(UnknownNameError, match="minilm-l6-int8"):
        presets.load_classifier("minilm-l7", data)
    assert presets.data_fingerprint(data) != presets.data_fingerprint(data[:-1])


def test_import_is_lazy():
    code = ("import sys, perturblab.models as m; m.PRESETS.names(); m.CachedClassifier; "
            "print(any(k in sys.modules for k in ('torch', 'transformers', 'sklearn', 'onnx')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip() == "False"
