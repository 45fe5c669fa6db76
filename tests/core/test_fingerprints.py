"""Fingerprints that results are resumed under change whenever the model or trainer does, and stay
put (in every process) when it does not: whole-file content hashes of weight files, trainers
hashed by what they compute, and per-process model caches keyed on the driver's fingerprint."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.models.base import SETTLED_NS, file_fingerprint

MIB = 1 << 20


# ---------------------------------------------------------------- file_fingerprint
def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


def _settle() -> None:
    """Wait until the files just written are older than the time a rewrite could hide in."""
    time.sleep(SETTLED_NS / 1e9 + 0.2)


def test_a_file_changed_only_in_the_middle_gets_another_fingerprint(tmp_path):
    path = tmp_path / "model.safetensors"
    data = bytearray(np.random.default_rng(0).integers(0, 256, 6 * MIB, dtype=np.uint8).tobytes())
    path.write_bytes(data)
    _settle()
    before, st = file_fingerprint(path), os.stat(path)
    assert file_fingerprint(path) == before  # the same file, the same fingerprint
    # "retrained in place with its outer tensors frozen": same inode, size, first and last MiB, mtime
    with open(path, "r+b") as f:
        f.seek(3 * MIB)
        f.write(b"\x00" * 1024)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = os.stat(path)
    assert (now.st_ino, now.st_size, now.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    changed = file_fingerprint(path)
    assert changed != before
    _settle()
    assert file_fingerprint(path) == changed
    # the original content back, in a new file moved over it: the original fingerprint
    (tmp_path / "new").write_bytes(data)
    os.replace(tmp_path / "new", path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_fingerprint(path) == before


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts the bytes read through /proc/self/io")
def test_an_unchanged_file_is_not_read_again(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 8 * MIB, dtype=np.uint8).tobytes())
    _settle()
    start = _bytes_read()
    first = file_fingerprint(path)
    assert _bytes_read() - start >= 8 * MIB  # the whole content is hashed once
    start = _bytes_read()
    for _ in range(5):
        assert file_fingerprint(tmp_path / "." / "weights.bin") == first
    assert _bytes_read() - start < 64 * 1024  # then only stat-ed
    # a file written moments ago is read every time: a rewrite within one timestamp tick could hide
    fresh = tmp_path / "fresh.bin"
    fresh.write_bytes(b"x" * MIB)
    file_fingerprint(fresh)
    start = _bytes_read()
    file_fingerprint(fresh)
    assert _bytes_read() - start >= MIB


def test_an_hf_directory_retrained_in_place_with_outer_tensors_frozen_gets_another_fingerprint(tmp_path):
    """A real model directory: only a middle layer's weights change (the embeddings at the start of
    the weight file and the last layers at its end stay as they were)."""
    import torch
    import transformers
    from safetensors import safe_open
    from safetensors.torch import save_file

    from perturblab.models.hf import HFSequenceClassifier

    words = ["good", "bad", "film", "plot", "story", "music"]
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    tok = transformers.BertTokenizer(vocab=vocab)
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=3, num_attention_heads=2,
                                  intermediate_size=4096, num_labels=2, id2label={0: "negative", 1: "positive"},
                                  label2id={"negative": 0, "positive": 1})
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(cfg).eval().save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    original = weights.read_bytes()
    _settle()
    first = HFSequenceClassifier(str(tmp_path))
    texts = ["good film", "bad plot story"]
    p_first = first.predict_proba(texts)

    with safe_open(weights, "pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    middle = "bert.encoder.layer.1.intermediate.dense.weight"
    tensors[middle] = tensors[middle] * 3.0  # "retrained": one middle layer, same shapes
    save_file(tensors, weights, metadata=meta)
    edited = weights.read_bytes()
    assert len(edited) == len(original) and len(original) > 4 * MIB
    assert edited[:MIB] == original[:MIB] and edited[-MIB:] == original[-MIB:] and edited != original

    again = HFSequenceClassifier(str(tmp_path))
    assert not np.allclose(again.predict_proba(texts), p_first)  # other outputs ...
    assert again.fingerprint != first.fingerprint  # ... so another fingerprint


# ---------------------------------------------------------------- trainer_fingerprint
def _bow(texts, labels, seed, C=1.0):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from perturblab.models.sklearn_backend import SklearnClassifier

    pipe = make_pipeline(CountVectorizer(), LogisticRegression(C=C, max_iter=1000)).fit(texts, labels)
    return SklearnClassifier(pipe, labels=["0", "1"])


class BowTrainer:
    """A trainer object: what it trains depends on its state."""

    def __init__(self, C: float, stopwords: set[str]):
        self.C, self.stopwords = C, stopwords

    def __call__(self, texts, labels, seed):
        kept = [" ".join(w for w in t.split() if w not in self.stopwords) for t in texts]
        return _bow(kept, labels, seed, C=self.C)


def test_partials_and_trainer_objects_are_told_apart_by_their_arguments_and_state():
    from perturblab.models.zoo import fit_model
    from perturblab.studies.learnability.study import trainer_fingerprint as fp

    assert fp(functools.partial(_bow, C=1.0)) == fp(functools.partial(_bow, C=1.0))
    assert fp(functools.partial(_bow, C=1.0)) != fp(functools.partial(_bow, C=0.01))
    assert fp(functools.partial(fit_model, "tfidf-lr")) != fp(functools.partial(fit_model, "textrnn"))
    assert fp(functools.partial(functools.partial(_bow, C=1.0))) != fp(functools.partial(functools.partial(_bow)))
    assert fp(BowTrainer(1.0, {"the", "a"})) == fp(BowTrainer(1.0, {"a", "the"}))
    assert fp(BowTrainer(1.0, {"the"})) != fp(BowTrainer(2.0, {"the"}))
    assert fp(BowTrainer(1.0, {"the"})) != fp(BowTrainer(1.0, {"a"}))
    assert fp(BowTrainer(1.0, {"the"}).__call__) != fp(BowTrainer(1.0, {"a"}).__call__)  # a bound method


def test_a_trainer_without_a_stable_hash_is_refused_and_a_fingerprint_attribute_accepted():
    from perturblab.studies.learnability.config import LearnabilityArgs
    from perturblab.studies.learnability.study import LearnabilityStudy, trainer_fingerprint

    lock = threading.Lock()

    def fit(texts, labels, seed):
        with lock:
            return _bow(texts, labels, seed)

    with pytest.raises(InputError, match="fingerprint` attribute") as err:
        trainer_fingerprint(fit)
    assert "'lock'" in str(err.value) and " at 0x" not in str(err.value)
    cfg = LearnabilityArgs(models="mine", perturbations="leet_letters", data="unused.csv")
    with pytest.raises(InputError, match="fingerprint` attribute"):
        LearnabilityStudy(cfg, trainers={"mine": fit})  # before any data is read or file written
    fit.fingerprint = "bow-v1"
    v1 = trainer_fingerprint(fit)
    assert v1 == trainer_fingerprint(fit)
    fit.fingerprint = "bow-v2"
    assert trainer_fingerprint(fit) != v1
    fit.fingerprint = ""
    with pytest.raises(InputError, match="non-empty string"):
        trainer_fingerprint(fit)


TRAINERS = '''
import functools
from perturblab.models.zoo import fit_model

STOP = frozenset({"the", "a", "an", "of"})

def make(C):
    def fit(texts, labels, seed):
        kept = [" ".join(w for w in t.split() if w not in STOP) for t in texts]
        return fit_model("tfidf-lr", kept, labels, seed)
    fit.C = C
    return fit

class Trainer:
    def __init__(self):
        self.words = {"good", "bad", "film", "plot"}
    def __call__(self, texts, labels, seed):
        return fit_model("tfidf-lr", [t for t in texts if set(t.split()) & self.words], labels, seed)

import json
from perturblab.studies.learnability.study import trainer_fingerprint as fp
print(json.dumps([fp(make(1.0)), fp(functools.partial(fit_model, "tfidf-lr")), fp(Trainer())]))
'''


def test_trainer_fingerprints_are_the_same_in_every_process(tmp_path):
    """No memory address and no per-process set order enters a fingerprint, so a run resumes in
    the next process (a trainer with a comprehension, a closure, a set of strings)."""
    script = tmp_path / "trainers.py"
    script.write_text(TRAINERS)
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
        runs.append(json.loads(out.stdout))
    assert runs[0] == runs[1]
    assert len(set(runs[0])) == 3


def test_a_trainer_partial_with_other_arguments_trains_again(tmp_path, marker_csv):
    import perturblab as pl

    data = str(marker_csv(tmp_path / "d.csv", 120))
    kw = dict(perturbations="leet_letters", seeds=1, n_train=40, n_test=20, ps=[0.1, 1.0], workers=1, quiet=True,
              data=data)
    first = pl.learnability(["bow"], trainers={"bow": functools.partial(_bow, C=1.0)}, out=tmp_path / "o", **kw)
    other = pl.learnability(["bow"], trainers={"bow": functools.partial(_bow, C=1e-4)}, out=tmp_path / "o", **kw)
    fresh = pl.learnability(["bow"], trainers={"bow": functools.partial(_bow, C=1e-4)}, out=tmp_path / "f", **kw)
    assert other.run_id != first.run_id
    assert other.rows == fresh.rows and other.rows != first.rows


# ---------------------------------------------------------------- per-process model caches
class Named:
    def __init__(self, fingerprint: str):
        self.fingerprint = fingerprint


def test_once_per_process_keeps_a_model_per_fingerprint():
    from perturblab.core.executor import once_per_process

    made = []

    def make(fp):
        made.append(fp)
        return Named(fp)

    key = ("test-model", "m", 0)
    a = once_per_process(key, lambda: make("A"), fingerprint="A")
    assert once_per_process(key, lambda: make("A"), fingerprint="A") is a and made == ["A"]
    b = once_per_process(key, lambda: make("B"), fingerprint="B")  # same name, other weights
    assert b is not a and b.fingerprint == "B"
    with pytest.raises(InputError, match="other weights than the driver"):
        once_per_process(key, lambda: make("B"), fingerprint="C")  # this process loads other weights
    assert once_per_process(key, lambda: make("B"), fingerprint="B") is b


def test_a_worker_reference_of_a_directory_retrained_in_place_is_loaded_again(tmp_path):
    """A Ray worker loads the SCoPE reference by name once per process; after the directory is
    retrained in place, the driver's new fingerprint loads the new weights, never the old model."""
    from helpers.tiny_classifier import WORDS, tiny_model_dir

    from perturblab.data import Dataset, Example
    from perturblab.models.resolve import load_model
    from perturblab.studies.scope import RemoteModel

    rng = np.random.default_rng(0)
    train = Dataset([Example(" ".join(rng.choice(WORDS[:15], size=6)), i % 2) for i in range(20)],
                    ["negative", "positive"])
    model = tiny_model_dir(tmp_path / "model", seed=0)

    def driver_fingerprint():
        return load_model(model, "classifier", train=train, seed=0).fingerprint

    def remote(fingerprint):  # what a search cell is handed for the reference
        return RemoteModel(model, "classifier", fingerprint, train=train, seed=0, data="d")

    fp0 = driver_fingerprint()
    ref0 = remote(fp0).load()
    assert ref0.fingerprint == fp0 and remote(fp0).load() is ref0
    tiny_model_dir(tmp_path / "model", seed=1)  # retrained in place
    fp1 = driver_fingerprint()
    assert fp1 != fp0
    ref1 = remote(fp1).load()
    assert ref1 is not ref0 and ref1.fingerprint == fp1
    texts = ["the good film .", "the bad plot ."]
    np.testing.assert_allclose(ref1.predict_proba(texts), load_model(model, "classifier", train=train).predict_proba(
        texts), atol=1e-6)
    with pytest.raises(InputError, match="other weights than the driver"):
        remote(fp0).load()  # the driver's model is not what this process sees


def test_a_perturbation_is_keyed_on_what_it_does_not_its_name():
    """Stored results of a perturbation are keyed on its class's code, parameters and tables: a
    changed default (leet_letters' rule, visual_attack_letters' rate) recomputes instead of reading
    back the old numbers; the key is the same in every process."""
    import subprocess
    import sys

    from perturblab.perturb.catalogue import perturbation_key

    leet = perturbation_key("leet_letters")
    assert leet.startswith("leet_letters@") and leet == perturbation_key("leet_letters")
    assert leet != perturbation_key("leet_letters", prob=0.3, table="classic")
    assert perturbation_key("visual_attack_letters") != perturbation_key("visual_attack_letters", prob=0.3)
    assert perturbation_key("insert_abbreviation")  # a compiled regular expression has a stable digest
    code = "from perturblab.perturb.catalogue import perturbation_key as k; print(k('leet_letters'), k('insert_abbreviation'))"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert outs == {f"{leet} {perturbation_key('insert_abbreviation')}\n"}
