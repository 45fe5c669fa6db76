"""How a corpus file is cut into examples: ``load_corpus(..., split=...)`` (lines, paragraphs,
sentences, auto), the reading it reports, the ``corpus_split`` option of the studies that read
corpus files, and the packaged corpora read exactly as before."""

from __future__ import annotations

import hashlib
import json
import logging
import types

import pandas as pd
import pytest

from perturblab.data import corpus as corpus_mod
from perturblab.data.corpus import SPLITS, Corpus, load_corpus
from perturblab.errors import InputError
from helpers.installed import corpus_or_skip

# one text per line: abbreviations that end no sentence, a line that is only "(see above)",
# lines ending in ")"; the sentence splitter would merge and glue several of them
LINES = ["The amendment was drafted by an aide to Sen.",
         "Kennedy read it aloud on the floor of the chamber.",
         "Sen. Byrd objected to the second clause (see above).",
         "(see above)",
         "The vote was delayed until Jan. 4 by the U.S. Senate.",
         "(The clause was later struck out.)"]

# hard-wrapped running text: line breaks fall mid-sentence
WRAPPED = ("The committee met on a cold morning in March. Its members had\n"
           "travelled from every part of the country, and most of them were\n"
           "tired. Nobody expected the chair to speak first, but she did.\n"
           "\n"
           "Her speech was short. It asked the members to look again at the\n"
           "numbers before they voted on anything at all.\n")


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- one text per line
def test_lines_file_comes_back_line_by_line(tmp_path):
    path = write(tmp_path, "senate.txt", "\n".join(LINES) + "\n")
    for split in ("auto", "lines"):
        c = load_corpus(path, split=split, min_words=0)
        assert c.sentences == LINES, split
        assert c.doc_ids == [0] * 6
    auto = load_corpus(path, min_words=0)
    assert auto.reading == "6 texts, one per line, from senate.txt (auto)"
    assert load_corpus(path, split="lines", min_words=0).reading == "6 texts, one per line, from senate.txt"
    # the default min_words=3 leaves out "(see above)" and says so
    c = load_corpus(path, split="lines")
    assert c.sentences == [t for t in LINES if t != "(see above)"]
    assert c.reading == "5 texts, one per line, from senate.txt; 1 under 3 words left out"


def test_sentences_split_the_same_lines_as_running_text(tmp_path):
    path = write(tmp_path, "senate.txt", "\n".join(LINES) + "\n")
    c = load_corpus(path, split="sentences", min_words=0)
    assert c.sentences != LINES
    assert "The amendment was drafted by an aide to Sen. Kennedy read it aloud on the floor of the chamber." \
        in c.sentences  # merged at "Sen."
    assert c.reading == f"{len(c)} sentences split from the running text of senate.txt"


def test_lines_keep_their_words(tmp_path):
    text = "  An indented line loses its margins.  \r\nA line  with two  gaps.\r\n\r\n\r\nLast line, after blanks.\r\n"
    path = tmp_path / "crlf.txt"
    path.write_bytes(text.encode("utf-8"))
    c = load_corpus(path, split="lines")
    assert c.sentences == ["An indented line loses its margins.", "A line with two gaps.",
                           "Last line, after blanks."]
    assert c.doc_ids == [0, 0, 1]  # blank lines separate documents
    assert load_corpus(path).sentences == c.sentences  # auto


def test_oanc_200_lines_come_back_unchanged(tmp_path, oanc):
    lines = oanc.sentences[:200]
    path = write(tmp_path, "oanc200.txt", "\n".join(lines) + "\n")
    c = load_corpus(path)
    assert len(c) == 200 and c.sentences == lines
    assert c.reading == "200 texts, one per line, from oanc200.txt (auto)"
    # read as running text (the reading before "auto" existed) the lines are not given back
    assert load_corpus(path, split="sentences").sentences != lines


# --------------------------------------------------------------------------- running text
def test_auto_splits_hard_wrapped_text_into_sentences(tmp_path):
    path = write(tmp_path, "wrapped.txt", WRAPPED)
    expected = ["The committee met on a cold morning in March.",
                "Its members had travelled from every part of the country, and most of them were tired.",
                "Nobody expected the chair to speak first, but she did.",
                "Her speech was short.",
                "It asked the members to look again at the numbers before they voted on anything at all."]
    for split in ("auto", "sentences"):
        c = load_corpus(path, split=split)
        assert c.sentences == expected, split
        assert c.doc_ids == [0, 0, 0, 1, 1]
    assert load_corpus(path).reading == \
        "5 sentences split from the running text of wrapped.txt (auto: hard-wrapped lines)"
    lines = load_corpus(path, split="lines")
    assert lines.sentences == [t for t in WRAPPED.splitlines() if t]


def test_paragraphs_are_one_text_each(tmp_path):
    path = write(tmp_path, "wrapped.txt", WRAPPED)
    c = load_corpus(path, split="paragraphs")
    assert c.sentences == [
        "The committee met on a cold morning in March. Its members had travelled from every part of the "
        "country, and most of them were tired. Nobody expected the chair to speak first, but she did.",
        "Her speech was short. It asked the members to look again at the numbers before they voted on "
        "anything at all."]
    assert c.doc_ids == [0, 1]
    assert c.reading == "2 texts, one per blank-line-separated paragraph, from wrapped.txt"


def test_blank_line_separated_paragraphs_read_as_before(tmp_path):
    # wrapped paragraphs: split into sentences as before, one document per paragraph
    path = write(tmp_path, "notes.txt", "First doc starts here. It goes on\nover two lines.\n\n  \n"
                 "Second doc is here. Ok.\nThird sentence of doc two.\n\n\nLast one is alone.")
    c = load_corpus(path)
    assert c.sentences == ["First doc starts here.", "It goes on over two lines.", "Second doc is here.",
                           "Third sentence of doc two.", "Last one is alone."]
    assert c.doc_ids == [0, 0, 1, 1, 2]
    # texts separated by blank lines come back as the texts (whitespace runs as one space, as
    # before), one document each
    texts = [f"text number {i} says {'a' * (i % 5)} and {'o' * (i % 3)}" for i in range(40)]
    path = write(tmp_path, "t.txt", "\n\n".join(texts))
    c = load_corpus(path)
    assert c.sentences == [" ".join(t.split()) for t in texts] and c.doc_ids == list(range(40))
    assert c.sentences[:2] == ["text number 0 says and", "text number 1 says a and o"]
    assert c.reading == "40 texts, one per line, from t.txt (auto)"


def test_auto_keeps_unpunctuated_lower_case_lines(tmp_path):
    # every break looks mid-sentence, but no line holds a sentence end: not running text
    queries = ["how do i reset my password", "what time does the shop open", "show me cheap flights to rome",
               "best way to learn the violin"]
    path = write(tmp_path, "queries.txt", "\n".join(queries))
    assert load_corpus(path).sentences == queries


REVIEWS = ["Great phone. The battery lasts two days and the screen is sharp.",
           "Stopped working after a week! Support never answered my emails.",
           "It does the job. Nothing more, nothing less."]


def test_auto_splits_blank_line_paragraphs_of_several_sentences(tmp_path):
    # one unwrapped paragraph per line, blank lines between them: running text, as before
    path = write(tmp_path, "paragraphs.txt", "\n\n".join(REVIEWS) + "\n")
    c = load_corpus(path)
    assert c.sentences == ["The battery lasts two days and the screen is sharp.",
                           "Stopped working after a week!", "Support never answered my emails.",
                           "It does the job.", "Nothing more, nothing less."]
    assert c.doc_ids == [0, 1, 1, 2, 2]
    assert load_corpus(path, min_words=0).sentences[0] == "Great phone."
    assert c.reading == "5 sentences split from the running text of paragraphs.txt (auto: paragraphs of several " \
                        "sentences); 1 under 3 words left out"  # "Great phone." has two words
    # the same texts one per line, without blank lines: one text each
    path = write(tmp_path, "reviews.txt", "\n".join(REVIEWS) + "\n")
    assert load_corpus(path).sentences == REVIEWS
    # all of them on one line: running text
    path = write(tmp_path, "one.txt", " ".join(REVIEWS) + "\n")
    assert load_corpus(path).sentences == c.sentences
    assert load_corpus(path, split="lines").sentences == [" ".join(REVIEWS)]
    # with blank lines, but most lines one sentence (abbreviations are no sentence end): one text each
    path = write(tmp_path, "grouped.txt", "\n".join(LINES[:3]) + "\n\n" + "\n".join(LINES[3:]) + "\n")
    c = load_corpus(path, min_words=0)
    assert c.sentences == LINES and c.doc_ids == [0, 0, 0, 1, 1, 1]


# --------------------------------------------------------------------------- records, names, errors
def test_records_split_or_kept_whole(tmp_path):
    frame = pd.DataFrame({"text": ["The cat sat down. It purred loudly.", None, "Dogs bark at night."]})
    path = tmp_path / "docs.csv"
    frame.to_csv(path, index=False)
    c = load_corpus(path)
    assert c.sentences == ["The cat sat down.", "It purred loudly.", "Dogs bark at night."]
    assert c.reading == "3 sentences split from the records of column 'text' of docs.csv"
    for split in ("lines", "paragraphs"):
        whole = load_corpus(path, split=split)
        assert whole.sentences == ["The cat sat down. It purred loudly.", "Dogs bark at night."]
        assert whole.doc_ids == [0, 1]
    assert whole.reading == "2 texts, one per record of column 'text' of docs.csv"


def test_unknown_split_is_refused(tmp_path):
    path = write(tmp_path, "a.txt", "One line of text here.\n")
    assert SPLITS == ("auto", "lines", "paragraphs", "sentences")
    with pytest.raises(InputError, match="split must be one of auto, lines, paragraphs, sentences, got 'words'"):
        load_corpus(path, split="words")


def test_filter_adds_to_the_reading(tmp_path):
    path = write(tmp_path, "senate.txt", "\n".join(LINES) + "\n")
    c = load_corpus(path, split="lines").filter(7, 10)
    assert c.sentences == LINES[:3]
    assert c.reading == "5 texts, one per line, from senate.txt; 1 under 3 words left out; 3 with 7..10 words kept"
    assert load_corpus(path, split="lines").filter(10).reading.endswith("; 2 with at least 10 words kept")
    hand = Corpus(["one two three"], [0])
    assert hand.reading == "" and hand.filter(1).reading == ""
    assert hand == Corpus(["one two three"], [0], reading="something else")  # not part of equality


# --------------------------------------------------------------------------- packaged corpora


def _digest(c: Corpus) -> str:
    return hashlib.sha256(json.dumps([c.sentences, c.doc_ids]).encode()).hexdigest()


# measured on the code before `split` existed
PACKAGED = {
    "oanc": (corpus_mod.OANC_FILE, 14_467, 803,
             "35d9374239a3e1bfb17d41204c559bcef5714e055acb045f4977c5f5c15edae0"),
    "conll2010": (corpus_mod.CONLL_FILE, 2_593, 384,
                  "febbad0c981b5788c29cff29b2526281b55de1031bba58ab91e2027ab8dc7755"),
}


@pytest.mark.slow
@pytest.mark.assets
@pytest.mark.parametrize("name", sorted(PACKAGED))
def test_packaged_corpora_read_as_before(name):
    filename, size, docs, digest = PACKAGED[name]
    corpus_or_skip(filename)
    for split in SPLITS:  # a packaged corpus is read its own way whatever the split
        c = load_corpus(name, split=split)
        assert (len(c), c.n_documents, _digest(c)) == (size, docs, digest), split
    assert c.reading.startswith(f"{size:,} sentences of the registered corpus {name}")


# --------------------------------------------------------------------------- the studies' option
def test_corpus_split_option():
    from perturblab.studies.scope.config import LMScopeArgs
    from perturblab.studies.selfcheck.config import SelfCheckArgs

    assert SelfCheckArgs.from_config({"models": "m"}).corpus_split == "auto"
    assert SelfCheckArgs.from_config({"models": "m", "corpus-split": "lines"}).corpus_split == "lines"
    assert LMScopeArgs.from_config({"reference": "a", "targets": "b", "corpus_split": "sentences"}
                                   ).corpus_split == "sentences"
    for args, base in ((SelfCheckArgs, {"models": "m"}), (LMScopeArgs, {"reference": "a", "targets": "b"})):
        with pytest.raises(InputError, match="'words' is not one of auto, lines, paragraphs, sentences"):
            args.from_config({**base, "corpus-split": "words"}).check()


def _lines(caplog) -> list[str]:
    """The lines perturblab said (its INFO records), taken out of ``caplog``."""
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    caplog.clear()
    return said


def test_selfcheck_study_reads_corpora_with_the_split(tmp_path, monkeypatch, caplog):
    from perturblab.studies.selfcheck import study as study_mod
    from perturblab.studies.selfcheck.config import SelfCheckArgs

    path = write(tmp_path, "senate.txt", "\n".join(LINES) + "\n")
    seen = {}
    monkeypatch.setattr(study_mod.SelfCheckStudy, "check_capabilities", lambda self: None)
    monkeypatch.setattr(study_mod, "Examples", lambda args, corpus, benign: seen.update(corpus=corpus, benign=benign))
    args = SelfCheckArgs(models="m", corpus=str(path), benign_corpus=str(path), metrics="negation")
    caplog.set_level(logging.INFO, logger="perturblab")
    study_mod.SelfCheckStudy(args)
    assert seen["corpus"].sentences == seen["benign"].sentences == LINES[:3] + LINES[4:]
    err = "\n".join(_lines(caplog))
    assert f"corpus {path}: 5 texts, one per line, from senate.txt (auto)" in err
    assert f"benign corpus {path}: 5 texts" in err
    args.corpus_split = "sentences"  # the option, once the options carry it
    study_mod.SelfCheckStudy(args, progress=False)
    assert seen["corpus"].reading.endswith("sentences split from the running text of senate.txt")
    assert seen["corpus"].sentences != LINES[:3] + LINES[4:]
    assert _lines(caplog) == []


def test_scope_lm_pool_reads_the_corpus_with_the_split(tmp_path, caplog, monkeypatch):
    from perturblab.studies.scope import lm as lm_mod
    from perturblab.studies.scope.lm import LMScopeStudy

    path = write(tmp_path, "senate.txt", "\n".join(LINES) + "\n")
    monkeypatch.setattr(lm_mod, "SENTENCE_WORDS", (7, 40))  # the base sentences' word range
    args = types.SimpleNamespace(corpus=str(path), corpus_split="auto", text_column="text")
    study = types.SimpleNamespace(_pool=None, args=args, progress=True)
    caplog.set_level(logging.INFO, logger="perturblab")
    assert LMScopeStudy.sentences(study) == [LINES[0], LINES[1], LINES[2], LINES[4]]
    assert _lines(caplog) == [f"corpus {path}: 5 texts, one per line, from senate.txt (auto); "
                              "1 under 3 words left out; 4 with 7..40 words kept"]
    args.corpus_split = "sentences"
    study = types.SimpleNamespace(_pool=None, args=args, progress=False)
    assert LMScopeStudy.sentences(study)[0] == \
        "The amendment was drafted by an aide to Sen. Kennedy read it aloud on the floor of the chamber."
