"""The SCoPE studies' Python functions on the study core: what a call's objects become in the
study (their names, the specs behind reported names, a corpus object's sentences, checkpoint
objects and directories) and what is refused before anything runs. Each study is built and
returned unrun (``Inputs.run`` replaced), so these take a second."""

from __future__ import annotations

import json

import pytest

import perturblab as pl
from helpers.lexicon import LexiconClassifier, make_splits, models
from perturblab.core.boundary import Inputs
from perturblab.errors import InputError
from perturblab.studies.scope.checkpoints import Checkpoint


@pytest.fixture
def built(monkeypatch):
    """The study a call builds, returned instead of run."""
    monkeypatch.setattr(Inputs, "run", lambda self, study, args: study)


def pair() -> tuple[LexiconClassifier, LexiconClassifier]:
    """The lexicon reference and target, without names."""
    given = models()
    return given["ref"], given["tgt"]


def unnamed(model: LexiconClassifier) -> LexiconClassifier:
    model.name = ""
    return model


def test_objects_are_named_by_their_place_and_specs_by_their_reported_name(built):
    ref, tgt = pair()
    study = pl.scope(unnamed(ref), unnamed(tgt), data=make_splits(), quiet=True)  # one target, not in a list
    assert (study.reference, study.targets) == ("reference", ["target0"])
    assert study.model("reference") is ref and study.model("target0") is tgt
    ref.name, tgt.name = "ref", "tgt"
    study = pl.scope(ref, ["small=tfidf-lr", tgt], data=make_splits(), quiet=True)
    assert (study.args.reference, study.args.targets) == ("ref", "small,tgt")  # the run's options hold the names
    assert study._specs == {"small": "small=tfidf-lr"}  # loaded by its spec, reported by its NAME=


def test_the_models_mapping_gives_the_objects_the_specs_name(built):
    ref, tgt = pair()
    study = pl.scope("a=tfidf-lr", "b=minilm-l3", models={"a": ref, "b": tgt}, data=make_splits(), quiet=True)
    assert study.model("a") is ref and study.model("b") is tgt


def test_a_spec_reported_under_an_objects_name_is_refused(tmp_path):
    ref, _ = pair()
    ref.name = "ref"
    with pytest.raises(InputError, match="two different models are named 'ref'; give one of them another name"):
        pl.scope(ref, ["ref=tfidf-lr"], data=make_splits(), out=tmp_path / "out", quiet=True)
    assert not (tmp_path / "out").exists()


def test_a_corpus_object_gives_its_sentences_of_five_to_forty_words(built):
    from helpers.tiny_lm import tiny_lm
    from perturblab.data.corpus import Corpus

    texts = ["the cat sat on the mat", "too short here", "a dog ran in the big green park",
             " ".join(["word"] * 41)]
    lm = tiny_lm(seed=0)
    study = pl.scope_lm(lm, [lm], corpus=Corpus(texts, [0, 0, 1, 2], name="hand"), quiet=True)
    assert study.sentences() == [texts[0], texts[2]]  # 6 and 8 words kept; 3 and 41 left out
    assert study.args.corpus == "hand"
    with pytest.raises(InputError, match="--corpus: give a corpus name, a file or a perturblab.data.corpus.Corpus, "
                                         "not a dict"):
        pl.scope_lm(lm, [lm], corpus={"text": texts}, quiet=True)


def model_dir(path, config: dict):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_checkpoint_objects_and_directories_reach_the_study(built, tmp_path):
    first, last = model_dir(tmp_path / "c0", {"step": 0}), model_dir(tmp_path / "c1", {"step": 1})
    ref, tgt = pair()
    cks = [Checkpoint("early", first, 0.0), Checkpoint("mid", tgt, 50.0), Checkpoint("final", last, 100.0)]
    study = pl.checkpoints(cks, data=make_splits(), quiet=True)
    assert study.checkpoints == cks and study.args.checkpoints is None  # objects: the options name no directories
    # a directory's fingerprint is its files', whatever the checkpoint's name; an object's is the model's
    assert Checkpoint("other", first).fingerprint == cks[0].fingerprint != cks[2].fingerprint
    assert cks[1].fingerprint == tgt.fingerprint
    ref.name = "start"
    study = pl.checkpoints([ref, str(last)], data=make_splits(), quiet=True)  # a classifier is a checkpoint too
    assert [(c.name, c.percent) for c in study.checkpoints] == [("start", None), (last.name, None)]
    assert study.checkpoints[0].model is ref and study.checkpoints[1].model == last


def test_bad_checkpoints_are_refused_naming_the_fix(tmp_path):
    with pytest.raises(InputError, match=r"checkpoint 'gone': '.*missing' is not a directory"):
        pl.checkpoints([Checkpoint("gone", tmp_path / "missing"), Checkpoint("b", tmp_path)], data=make_splits())
    with pytest.raises(InputError, match="holds no model"):
        pl.checkpoints([Checkpoint("empty", tmp_path), Checkpoint("b", tmp_path)], data=make_splits())
    ref, _ = pair()
    with pytest.raises(InputError, match="--finetune: give the encoder to fine-tune here as a preset name"):
        pl.checkpoints(finetune=ref, data=make_splits(), quiet=True)
    with pytest.raises(InputError, match="give either checkpoints"):
        pl.checkpoints(data=make_splits(), quiet=True)
