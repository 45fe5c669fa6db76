"""A model's fingerprint is taken once, when the model is loaded, and never moves with use.

Tokenising rewrites two entries of a fast tokenizer's state (the truncation and padding of the
last call); a fingerprint that hashed them came out differently depending on whether it was first
asked for before or after the model's first use, so every result keyed on it (trained heads,
stored cells) was computed again on the next run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import TESTS, tiny_bert  # TESTS: the folder of the helpers package, for the fresh process
from helpers.installed import missing_packaged_encoders

TEXTS = ["good film and the plot was great", ("boring story", "the actors were dull")]
SENTENCES = ["A wonderful film with a moving story.", ("A dull plot.", "The actors were bored and so was I.")]


packaged = pytest.mark.skipif(missing_packaged_encoders() is not None, reason=str(missing_packaged_encoders()))


def backend_state(tok) -> tuple[dict | None, dict | None]:
    """(truncation, padding) entries of a fast tokenizer's backend: what tokenising rewrites."""
    state = json.loads(tok.backend_tokenizer.to_str())
    return state["truncation"], state["padding"]


def test_a_tiny_encoder_fingerprint_is_the_same_before_and_after_use():
    fresh = tiny_bert.encoder(seed=3)
    fp = fresh.fingerprint
    assert backend_state(fresh.tokenizer) == (None, None)

    used = tiny_bert.encoder(seed=3)  # the same model, its fingerprint read only after it has encoded
    out = used.pooled(TEXTS)
    # tokenising did rewrite the tokenizer's state: truncation at the encoder's max_length (the
    # tiny BERT has 32 positions)
    assert backend_state(used.tokenizer) == ({"direction": "Right", "max_length": 32, "strategy": "LongestFirst",
                                              "stride": 0}, None)
    assert used.max_length == 32
    assert used.fingerprint == fp
    assert fresh.fingerprint == fp
    # an encoder built on the used tokenizer is the same model: same fingerprint, same outputs
    from perturblab.models.hf import HFEncoder

    again = HFEncoder(used.model, used.tokenizer, name="tiny")
    assert again.fingerprint == fp
    np.testing.assert_array_equal(again.pooled(TEXTS), out)
    # while other weights still give another fingerprint
    assert tiny_bert.encoder(seed=4).fingerprint != fp


def test_a_tiny_classifier_and_causal_lm_fingerprint_do_not_move_with_use():
    from helpers.tiny_lm import SENTENCES as LM_SENTENCES
    from helpers.tiny_lm import tiny_causal_model, train_tokenizer

    from perturblab.models.hf import HFSequenceClassifier
    from perturblab.models.lm import HFCausalLM

    fp = HFSequenceClassifier(tiny_bert.bert(5, head=True), tiny_bert.tokenizer()).fingerprint
    clf = HFSequenceClassifier(tiny_bert.bert(5, head=True), tiny_bert.tokenizer())
    p = clf.predict_proba(TEXTS)
    assert p.shape == (2, 2) and np.allclose(p.sum(axis=1), 1.0)
    assert backend_state(clf.tokenizer)[0]["max_length"] == 32
    assert HFSequenceClassifier(clf.model, clf.tokenizer).fingerprint == clf.fingerprint == fp

    tok = train_tokenizer(LM_SENTENCES * 3)  # its own, so no other test has used it
    lm = HFCausalLM(tiny_causal_model(len(tok), seed=2), tok, name="tiny", start_token=None)
    before = lm.fingerprint
    assert backend_state(tok) == (None, None)
    tok(["The cat was tired."], truncation=True, max_length=5)  # leaves truncation at 5 tokens
    assert backend_state(tok)[0]["max_length"] == 5
    assert HFCausalLM(lm.model, tok, name="tiny", start_token=None).fingerprint == before
    assert len(lm.generate(["The cat"], max_new_tokens=2)) == 1
    assert lm.fingerprint == before


@packaged
def test_the_minilm_l3_preset_fingerprint_is_the_same_before_and_after_use(module_home):
    from perturblab.models.presets import load_encoder

    fresh = load_encoder("minilm-l3", fresh=True)
    fp = fresh.fingerprint
    used = load_encoder("minilm-l3", fresh=True)
    # as loaded, MiniLM's tokenizer.json truncates and pads to 128 tokens; the first call replaces
    # both with its own settings (truncation at the encoder's max_length 256, no padding)
    assert backend_state(used.tokenizer) == (
        {"direction": "Right", "max_length": 128, "strategy": "LongestFirst", "stride": 0},
        {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
         "pad_type_id": 0, "pad_token": "[PAD]"})
    states = used.pooled(SENTENCES)
    assert states.shape == (2, 384)
    assert backend_state(used.tokenizer) == (
        {"direction": "Right", "max_length": 256, "strategy": "LongestFirst", "stride": 0}, None)
    assert used.fingerprint == fp
    assert fresh.fingerprint == fp
    assert load_encoder("minilm-l3").fingerprint == fp


@packaged
def test_fingerprints_are_the_same_in_a_fresh_process(module_home, tmp_path):
    """A process with another hash seed and another data directory (a new MiniLM-L3 conversion in
    another place) gives the same fingerprints, asked for after the models have encoded."""
    from perturblab.models.presets import load_encoder

    tiny = tiny_bert.encoder(seed=3).fingerprint
    l3 = load_encoder("minilm-l3", fresh=True).fingerprint
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from helpers import tiny_bert\n"
        "from perturblab.models.presets import load_encoder\n"
        "enc, l3 = tiny_bert.encoder(seed=3), load_encoder('minilm-l3')\n"
        f"enc.pooled({TEXTS!r}); l3.pooled({SENTENCES!r})\n"
        "print(enc.fingerprint, l3.fingerprint)\n")
    env = {**os.environ, "PYTHONHASHSEED": "7", "PERTURBLAB_HOME": str(tmp_path / "other-home")}
    run = subprocess.run([sys.executable, "-c", code, str(TESTS)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [tiny, l3]
    assert list((tmp_path / "other-home" / "cache" / "converted").glob("minilm-l3-*"))  # really converted there


def _regression_data():
    from perturblab.data.examples import Dataset, Example

    pairs = [("a man is playing a guitar", "a man plays the guitar", 4.8),
             ("a woman is slicing an onion", "a woman cuts an onion", 4.2),
             ("a dog runs in the park", "a cat sleeps on the sofa", 0.6),
             ("the stock market fell", "a child is eating cake", 0.0),
             ("two men are talking", "two people are having a conversation", 3.9),
             ("a plane is taking off", "an airplane departs", 4.5),
             ("a boy is reading a book", "the weather is cold today", 0.2),
             ("someone is cooking pasta", "a person boils noodles", 3.6)]
    return Dataset([Example(a, y, b) for a, b, y in pairs], [], "sts-mini")


def _classification_data():
    from perturblab.data.examples import Dataset, Example

    pos = ["a wonderful film", "I loved every minute", "great acting and a great story", "truly delightful"]
    neg = ["a terrible film", "I hated every minute", "awful acting and a dull story", "truly boring"]
    return Dataset([Example(t, 1) for t in pos] + [Example(t, 0) for t in neg], ["neg", "pos"], "mini")


@packaged
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_a_preset_head_is_loaded_on_the_next_run_with_the_same_fingerprint(module_home, monkeypatch, task):
    """The second build of ``minilm-l3``'s head on the same data (a new run: a freshly loaded
    encoder) loads the stored head, with the same fingerprint and predictions; training it again
    writes the very same bytes."""
    from perturblab.models import presets, regression

    if task == "regression":
        data, module, trainer = _regression_data(), regression, "train_encoder_ridge"
        path = module_home / "heads" / f"minilm-l3-ridge__{presets.data_fingerprint(data)}__seed0.npz"

        def build(**kw):
            return regression.load_regressor("minilm-l3", data, **kw)
    else:
        data, module, trainer = _classification_data(), presets, "train_encoder_head"
        path = presets.head_path("minilm-l3", data, 0)

        def build(**kw):
            return presets.load_classifier("minilm-l3", data, **kw)

    inputs = [("a man plays a guitar", "a man is playing music"), "a wonderful, moving story"]
    monkeypatch.setattr(presets, "_ENCODERS", {})
    first = build()
    stored = path.read_bytes()
    predict = (lambda m: m.predict_values(inputs)) if task == "regression" else (lambda m: m.predict_proba(inputs))
    expected = predict(first)

    monkeypatch.setattr(presets, "_ENCODERS", {})  # the next run loads the encoder again
    train = getattr(module, trainer)
    monkeypatch.setattr(module, trainer, lambda *a, **k: pytest.fail("the stored head was trained again"))
    second = build()
    assert second.encoder is not first.encoder
    assert second.fingerprint == first.fingerprint
    assert second.head_hash == first.head_hash
    np.testing.assert_array_equal(predict(second), expected)
    assert path.read_bytes() == stored  # loaded, not written again

    monkeypatch.setattr(module, trainer, train)
    retrained = build(retrain=True)
    assert retrained.fingerprint == first.fingerprint
    assert path.read_bytes() == stored  # the same head makes the same file
