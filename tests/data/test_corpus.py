"""Unlabelled corpora: sentence splitting, documents and passages, sampling, loaders."""

from __future__ import annotations

import json
import re
import sys

import pandas as pd
import pytest

from perturblab.data import (Corpus, available_corpora, load_corpus, register_corpus,
                             split_sentences)
from perturblab.data import corpus as corpus_mod
from perturblab.errors import InputError
from helpers.installed import corpus_or_skip

PARAGRAPH = ('Dr. Smith arrived at 5 p.m. on Monday. He met Mr. Jones, who works for the '
             'U.S. Navy!\nDid they talk?   "Yes," said Jones. (They talked for hours.) The end')
EXPECTED = ["Dr. Smith arrived at 5 p.m. on Monday.",
            "He met Mr. Jones, who works for the U.S. Navy!", "Did they talk?",
            '"Yes," said Jones.', "(They talked for hours.)", "The end"]


def hand_corpus() -> Corpus:
    """Documents of 4, 2, 3 and 7 sentences; sentence text 'd<doc>s<index>'."""
    sizes = [4, 2, 3, 7]
    sentences = [f"d{d}s{i} has some words" for d, m in enumerate(sizes) for i in range(m)]
    doc_ids = [d for d, m in enumerate(sizes) for _ in range(m)]
    return Corpus(sentences, doc_ids, "hand")


# --------------------------------------------------------------------------- splitting
def test_split_sentences_spacy_keeps_abbreviations():
    pytest.importorskip("spacy")
    assert split_sentences(PARAGRAPH) == EXPECTED


def test_split_sentences_regex_fallback(monkeypatch):
    monkeypatch.setattr(corpus_mod, "_sentencizer", lambda: None)  # as if spaCy were missing
    assert split_sentences(PARAGRAPH) == EXPECTED
    assert split_sentences("It rained. then it stopped. Fine") == ["It rained. then it stopped.",
                                                                    "Fine"]


def test_split_sentences_whitespace_and_bad_input():
    assert split_sentences("") == [] and split_sentences(" \n\t ") == []
    assert split_sentences("  one\n two   three  ") == ["one two three"]
    with pytest.raises(InputError, match="needs a str"):
        split_sentences(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- corpus
def test_documents_and_passages_never_cross_documents():
    c = hand_corpus()
    assert len(c) == 16 and c.n_documents == 4
    assert [len(d) for d in c.documents()] == [4, 2, 3, 7]
    passages = c.passages(3)
    assert len(passages) == 1 + 0 + 1 + 2  # 4 // 3, 2 // 3, 3 // 3, 7 // 3
    for p in passages:
        assert len(p) == 3 and len({s[:2] for s in p}) == 1  # one document per passage
    assert passages[0] == ("d0s0 has some words", "d0s1 has some words", "d0s2 has some words")
    assert passages[-1][0].startswith("d3s3")  # non-overlapping: 0-2, 3-5 of document 3
    assert len(c.passages(1)) == 16 and c.passages(8) == []
    with pytest.raises(InputError, match="k"):
        c.passages(0)


def test_same_id_apart_is_two_documents():
    c = Corpus(["a", "b", "c", "d"], [0, 0, 1, 0], "x")
    assert c.documents() == [["a", "b"], ["c"], ["d"]] and c.passages(2) == [("a", "b")]


def test_sample_is_deterministic_and_ordered():
    c = Corpus([f"sentence number {i}" for i in range(200)], [i // 10 for i in range(200)], "s")
    a, b, other = c.sample(20, seed=1), c.sample(20, seed=1), c.sample(20, seed=2)
    assert a == b and a != other and len(set(a)) == 20
    assert a == sorted(a, key=c.sentences.index)  # corpus order kept
    assert c.sample(500, seed=0) == c.sentences and c.sample(0) == []
    with pytest.raises(InputError, match="non-negative|>= 0"):
        c.sample(-1)
    with pytest.raises(InputError, match="empty"):
        Corpus([], [], "void").sample(3)


def test_sample_passages():
    c = hand_corpus()
    assert c.sample_passages(10, k=3, seed=0) == c.passages(3)  # more than available: all
    two = c.sample_passages(2, k=3, seed=5)
    assert len(two) == 2 and two == c.sample_passages(2, k=3, seed=5)
    assert len({c.sample_passages(1, k=1, seed=s)[0] for s in range(10)}) > 1
    with pytest.raises(InputError, match=r"'hand'.*no passage of 8.*smaller k"):
        c.sample_passages(1, k=8)


def test_filter_and_validation():
    c = Corpus(["one", "one two", "one two three", "a b c d e"], [0, 0, 1, 1], "f")
    kept = c.filter(min_words=2, max_words=3)
    assert kept.sentences == ["one two", "one two three"] and kept.doc_ids == [0, 1]
    assert kept is not c and len(c) == 4
    with pytest.raises(InputError, match="none of the 4 sentences"):
        c.filter(min_words=9)
    with pytest.raises(InputError, match="below min_words"):
        c.filter(min_words=3, max_words=2)
    with pytest.raises(InputError, match="doc_ids"):
        Corpus(["a", "b"], [0], "bad")


# --------------------------------------------------------------------------- files
def test_txt_blank_lines_separate_documents(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("First doc starts here. It goes on\nover two lines.\n\n  \n"
                    "Second doc is here. Ok.\nThird sentence of doc two.\n\n\nLast one is alone.")
    c = load_corpus(str(path))
    assert c.name == "notes"
    assert c.sentences == ["First doc starts here.", "It goes on over two lines.",
                           "Second doc is here.", "Third sentence of doc two.",
                           "Last one is alone."]  # "Ok." is under min_words=3
    assert c.doc_ids == [0, 0, 1, 1, 2]
    assert len(load_corpus(path, min_words=0)) == 6


def test_txt_dropped_document_renumbers(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Too short.\n\nA real sentence here.\n\nAnother real sentence here.")
    assert load_corpus(path).doc_ids == [0, 1]


@pytest.mark.parametrize("suffix", ["jsonl", "json", "csv", "parquet"])
def test_record_files_use_text_column(tmp_path, suffix):
    frame = pd.DataFrame({"id": [1, 2, 3],
                          "body": ["The cat sat down. It purred loudly.", None,
                                   "Dogs bark at night. Birds sing at dawn. Fish swim."]})
    path = tmp_path / f"docs.{suffix}"
    if suffix == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == "json":
        path.write_text(json.dumps(frame.to_dict(orient="records")))
    elif suffix == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    c = load_corpus(str(path), text_column="body")
    assert c.sentences == ["The cat sat down.", "It purred loudly.", "Dogs bark at night.",
                           "Birds sing at dawn."]
    assert c.doc_ids == [0, 0, 1, 1]
    with pytest.raises(InputError, match=r"text column 'text' not in docs\..*id, body"):
        load_corpus(str(path))


def test_empty_and_unknown_inputs(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        load_corpus(str(empty))
    blank = tmp_path / "blank.jsonl"
    blank.write_text('{"text": "  "}\n{"text": "Hi."}\n')
    with pytest.raises(InputError, match="none of the 1 sentences"):
        load_corpus(blank)
    with pytest.raises(InputError, match=r"not a registered corpus.*conll2010.*oanc.*\.jsonl"):
        load_corpus("no_such_corpus")
    with pytest.raises(InputError, match="not a registered corpus"):
        load_corpus(str(tmp_path / "missing.txt"))
    with pytest.raises(InputError, match="min_words"):
        load_corpus(str(empty), min_words=-1)


def test_hf_specs(monkeypatch):
    with pytest.raises(InputError, match=r"hf:<name>"):
        load_corpus("hf:")
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` fails
    with pytest.raises(InputError, match=r"pip install perturblab\[hf\]"):
        load_corpus("hf:wikitext:test")

    class FakeHF:
        column_names = ["title", "content"]

        def __getitem__(self, column):
            return {"title": ["A", "B"], "content": ["Rows are docs here. Two of them.",
                                                     "Second row text here."]}[column]

    calls = []
    fake = type(sys)("datasets")
    fake.load_dataset = lambda name, split: calls.append((name, split)) or FakeHF()
    monkeypatch.setitem(sys.modules, "datasets", fake)
    c = load_corpus("hf:some/set", text_column="content")
    assert calls == [("some/set", "train")] and c.name == "hf:some/set:train"
    assert c.sentences == ["Rows are docs here.", "Two of them.", "Second row text here."]
    assert c.doc_ids == [0, 0, 1]
    with pytest.raises(InputError, match="columns are: title, content"):
        load_corpus("hf:some/set:test")


def test_register_corpus(monkeypatch):
    monkeypatch.setattr(corpus_mod.CORPORA, "_items", dict(corpus_mod.CORPORA._items))
    monkeypatch.setattr(corpus_mod.CORPORA, "_docs", dict(corpus_mod.CORPORA._docs))
    assert {"oanc", "conll2010", "wikipedia"} <= set(available_corpora())

    @register_corpus("tiny_corpus")
    def tiny() -> Corpus:
        """Three short sentences."""
        return Corpus(["a b c d", "x", "e f g h"], [0, 0, 0], "tiny")

    assert available_corpora()["tiny_corpus"] == "Three short sentences."
    c = load_corpus("tiny_corpus")
    assert c.sentences == ["a b c d", "e f g h"] and c.doc_ids == [0, 0]
    with pytest.raises(InputError, match="already registered"):
        register_corpus("tiny_corpus", tiny)


# --------------------------------------------------------------------------- packaged


@pytest.mark.assets
def test_oanc_is_detokenized_text(oanc):
    assert 14_000 <= len(oanc) <= 15_000 and oanc.n_documents > 500
    assert len(oanc.passages(3)) > 4_000
    tag = re.compile(r"\S/(NNP?S?|VB[DGNPZ]?|DT|IN|JJ|POS|PRP)\b")
    assert not any(tag.search(s) for s in oanc.sentences)
    assert not any(" 's" in s or " n't" in s or " ," in s for s in oanc.sentences)
    assert oanc.sentences[0] == ("Has the Internet abandoned its role as the leading incubator "
                                 "of political rumor?")
    assert oanc.sentences[1].startswith("Judging from the Net's nonchalant treatment")
    # source lines "In its Jan ." + "4 , 2000 , issue ..." and ") Ms ." + "X , described ..."
    assert oanc.sentences[2].startswith("In its Jan. 4, 2000, issue, the National Enquirer")
    assert any(s.startswith('Ms. X, described by the Enquirer as a "stunning Playboy model,"')
               for s in oanc.sentences[:10])
    assert any("after 4.4 days" in s for s in oanc.sentences)
    assert sum("U.S." in s for s in oanc.sentences) > 100
    assert all(len(s.split()) >= 3 for s in oanc.sentences)
    assert sorted(set(oanc.doc_ids)) == list(range(oanc.n_documents))


@pytest.mark.assets
def test_conll2010_articles():
    corpus_or_skip(corpus_mod.CONLL_FILE)
    wiki = load_corpus("conll2010")
    assert 2_500 <= len(wiki) < 3_000 and 300 <= wiki.n_documents <= 450
    assert load_corpus("wikipedia").sentences == wiki.sentences
    titles = {"Prelingual deafness", "Preliminary Discourse to the Encyclopedia of Diderot",
              "Prehistoric music"}
    assert not titles & set(wiki.sentences)
    assert all(re.search(r"[.!?\u2026][\"'\u201d\u2019)\]]*$", s) for s in wiki.sentences)
    assert not any("&quot;" in s or "&amp;" in s for s in wiki.sentences)
    first = wiki.documents()[0]
    assert first[0] == ("In children, this type of hearing loss can lead to social isolation "
                        "for several reasons.") and len(first) == 4
    assert wiki.documents()[1][0].startswith("Instead of writing in terms of general ideas")
    passages = wiki.passages(3)
    assert len(passages) > 600 and passages[0] == tuple(first[:3])
    sampled = wiki.sample_passages(50, k=3, seed=0)
    assert len(sampled) == 50 and sampled == wiki.sample_passages(50, k=3, seed=0)
