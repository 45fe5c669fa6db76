"""Synonym swaps that keep the meaning (``synonyms="meaning"``): the word-level checks (contextual
similarity and part-of-speech agreement of each changed word, read in a window), the most frequent
WordNet sense, and the option through the studies and ``compare``.

The default tier checks the checks' logic with hand-made scorers; the tests on the packaged
MiniLM-L6 encoder, WordNet and spaCy's tagger load those and are in the slow tier."""

from __future__ import annotations

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.perturb.search_settings import MEANING_CONTEXT_SIMILARITY, MEANING_SENSES, SearchSettings
from perturblab.perturb.semantics import (WINDOW, PartOfSpeechAgreement, WordContextSimilarity, _WordCheck,
                                          changed_positions)
from perturblab.perturb.transformations import SynonymSwap
from synonym_assets import missing_assets


class Recorded(_WordCheck):
    """Scores a word by a table (one number per word); records every batch of windows it is asked for."""

    def __init__(self, table, window=WINDOW):
        super().__init__(window)
        self.table, self.batches = table, []

    def score_many(self, windows):
        self.batches.append(list(windows))
        return [self.table.get(w[i], 0.0) for w, i in windows]

    def admits(self, original, candidates):
        return np.array([pairs is not None and all(abs(x - y) < 0.5 for x, y in pairs)
                         for pairs in self._pairs(original, candidates)])


def test_changed_positions():
    assert changed_positions(["a", "good", "movie"], ["a", "good", "film"]) == [2]
    assert changed_positions(["a", "good", "movie"], ["a", "good", "movie"]) == []
    assert changed_positions(["a", "good", "movie"], ["good", "movie"]) is None


def test_word_checks_read_each_changed_word_in_its_window_and_keep_the_scores():
    text = " ".join(f"w{i}" for i in range(40))
    check = Recorded({"w20": 1.0, "x20": 1.2, "y20": 3.0, "w3": 2.0, "x3": 2.1})
    swapped = text.replace("w20", "x20")
    both = swapped.replace("w3 ", "x3 ")
    assert check.admits(text, [swapped, text.replace("w20", "y20"), both, "w0 w1"]).tolist() == \
        [True, False, True, False]
    windows = [w for batch in check.batches for w in batch]
    # every window holds the word and WINDOW words either side of it (fewer at the start of the text)
    assert all(len(w) <= 2 * WINDOW + 1 for w, _ in windows)
    assert (tuple(f"w{i}" for i in range(13, 28)), 7) in windows and (tuple(f"w{i}" for i in range(0, 11)), 3) in windows
    # one batch per call, each window scored once; a second call reuses them all
    assert len(check.batches) == 1 and len(windows) == len(set(windows))
    check.admits(text, [swapped])
    assert len(check.batches) == 1
    with pytest.raises(InputError, match="window"):
        Recorded({}, window=0)


def test_word_context_similarity_takes_the_least_cosine_of_the_changed_words(monkeypatch):
    vectors = {"movie": [1.0, 0.0], "film": [0.8, 0.6], "flick": [0.0, 1.0], "good": [0.6, 0.8], "fine": [0.6, 0.8]}
    check = WordContextSimilarity(0.5)
    monkeypatch.setattr(check, "score_many", lambda windows: [
        None if w[i] not in vectors else np.array(vectors[w[i]]) for w, i in windows])
    x = "a good movie"
    sims = check.similarities(x, ["a good film", "a good flick", "a fine film", x, "a good", "a good qqq"])
    # unit vectors: cos(movie, film) = 0.8, cos(movie, flick) = 0, min(cos(good, fine) = 1, 0.8)
    np.testing.assert_allclose(sims[:4], [0.8, 0.0, 0.8, 1.0], atol=1e-12)
    assert sims[4] == -np.inf and sims[5] == -np.inf  # not a word swap; a word without an embedding
    assert check.admits(x, ["a good film", "a good flick"]).tolist() == [True, False]
    for bad in (-1.0, 1.01, "0.4", True):
        with pytest.raises(InputError, match="min_similarity"):
            WordContextSimilarity(bad)


def test_pos_agreement_compares_the_tags_of_the_changed_words(monkeypatch):
    tags = {"bought": "VBD", "purchased": "VBD", "buy": "VB", "Smith": "NNP", "man": "NN", "men": "NNS"}
    check = PartOfSpeechAgreement()
    monkeypatch.setattr("perturblab.resources.pos.tagger_available", lambda: True)
    monkeypatch.setattr("perturblab.resources.pos.pos_tags_many",
                        lambda sents, fine=False: [[tags.get(w, "XX") for w in s] for s in sents])
    got = check.admits("I bought it from the man", ["I purchased it from the man", "I buy it from the man",
                                                   "I bought it from the Smith", "I bought it from the men",
                                                   "I bought it from man"])
    # NNP is read as NN (a proper noun for a common one of the same number); NNS is not NN
    assert got.tolist() == [True, False, True, False, False]


def test_pos_agreement_keeps_every_candidate_without_a_tagger(monkeypatch):
    import perturblab.resources.pos as pos

    monkeypatch.setattr(pos, "tagger_available", lambda: False)
    monkeypatch.setattr(pos, "_warned_missing", False)
    with pytest.warns(RuntimeWarning, match="part-of-speech agreement"):
        assert PartOfSpeechAgreement().admits("I bought it", ["I buy it"]).tolist() == [True]


def test_meaning_synonyms_set_up_the_sense_the_inflection_and_the_checks():
    from perturblab.core.keys import content_key
    from perturblab.perturb.capabilities import get_capability

    cap, typo = get_capability("synonym"), get_capability("typo")
    meaning = SearchSettings(synonyms="meaning")
    swap, checks = meaning.synonym_setup(cap)
    assert isinstance(swap, SynonymSwap) and swap.reinflect and swap.senses == MEANING_SENSES == 1
    assert swap.keep_expressions
    assert cap.transformation.senses is None and not cap.transformation.reinflect  # the registered one untouched
    assert not cap.transformation.keep_expressions
    assert [type(c).__name__ for c in checks] == ["PartOfSpeechAgreement", "WordContextSimilarity"]
    assert checks[1].min_similarity == MEANING_CONTEXT_SIMILARITY == 0.5
    assert meaning.synonym_setup(typo) == (typo.transformation, [])
    # the key: the set's name replaces the re-inflection it includes, with the candidates' revision;
    # typo searches keep theirs
    revision = {"synonym_revision": SynonymSwap.REVISION}
    assert SynonymSwap.REVISION == 2
    assert meaning.synonym_key("synonym") == {"synonyms": "meaning", **revision}
    assert SearchSettings(synonyms="meaning", reinflect_synonyms=True).synonym_key("synonym") == \
        {"synonyms": "meaning", **revision}
    assert SearchSettings(synonyms="meaning", synonym_min_similarity=0.9).synonym_key("synonym") == \
        {"synonyms": "meaning", "synonym_min_similarity": 0.9, **revision}
    assert meaning.synonym_key("typo") == {} and SearchSettings().synonym_key("synonym") == {}
    key = lambda o, c: content_key("searches", "ref", c, 0, 1, ["x"], o.key(c))
    assert key(meaning, "synonym") != key(SearchSettings(), "synonym")
    assert key(meaning, "typo") == key(SearchSettings(), "typo")
    with pytest.raises(InputError, match="synonyms must be one of wordnet, meaning"):
        SearchSettings(synonyms="bert").check_synonym_options()


def test_meaning_searches_stored_before_the_revision_are_not_read_back():
    from perturblab.core.keys import content_key

    meaning = SearchSettings(synonyms="meaning")
    # the key of a meaning search as an earlier version stored it: the options without the revision
    earlier = {k: v for k, v in meaning.key("synonym").items() if k != "synonym_revision"}
    assert earlier == {**SearchSettings().key("synonym"), "synonyms": "meaning"}
    assert content_key("searches", "ref", "synonym", earlier) != \
        content_key("searches", "ref", "synonym", meaning.key("synonym"))


def test_fixed_expressions_are_runs_of_words_with_only_spaces_between(monkeypatch):
    import perturblab.resources.wordnet as wordnet
    from perturblab.perturb.text import WordText
    from perturblab.perturb.transformations import in_fixed_expression

    lemmas, runs = {"coffee_maker"}, []

    def collocation(words, index):
        runs.append((tuple(words), index))
        return next(("_".join(words[a:b]) for a in range(index + 1) for b in range(index + 1, len(words) + 1)
                     if "_".join(words[a:b]) in lemmas), None)

    monkeypatch.setattr(wordnet, "collocation", collocation)
    monkeypatch.setattr(wordnet, "is_number", lambda w: w in {"nine", "9"})
    monkeypatch.setattr(wordnet, "is_measure", lambda w: w in {"years", "hours"})
    text = WordText.from_text("my new coffee maker, coffee. maker is nine years old and 9 hours, long")
    pos = ["ADJ" if w in ("old", "long") else "NOUN" for w in text.words]
    fixed = [w for i, w in enumerate(text.words) if in_fixed_expression(text, i, pos[i])]
    # the collocation only where nothing but spaces separates its words; the unit after a number and
    # the modifier after the pair; a comma ends the run ("9 hours, long")
    assert fixed == ["coffee", "maker", "years", "old", "hours"]
    assert (("my", "new", "coffee", "maker"), 3) in runs
    assert (("maker", "is", "nine", "years", "old", "and", "9", "hours"), 0) in runs
    # the word after number and unit only when it is an adjective or adverb (or untagged)
    text = WordText.from_text("nine years passed")
    assert not in_fixed_expression(text, 2, "VERB") and in_fixed_expression(text, 2, None)
    assert in_fixed_expression(text, 2, "RB") and not in_fixed_expression(text, 2, "VBD")


def test_compare_searches_meaning_keeping_synonyms_unless_told_otherwise():
    from perturblab.studies.compare.config import CompareArgs
    from perturblab.studies.scope.compare import _invariances, _lm_invariances

    class Plan:
        notes: list = []
        left_out: list = []

    args = CompareArgs(reference="minilm-l6", targets="minilm-l3", data="rotten_tomatoes")
    assert args.synonyms == "meaning"
    assert _invariances(args, 20, Plan())["synonyms"] == "meaning"
    assert _lm_invariances(args, 20, Plan())["synonyms"] == "meaning"
    paper = CompareArgs(reference="minilm-l6", targets="minilm-l3", synonyms="wordnet")
    assert _invariances(paper, 20, Plan())["synonyms"] == "wordnet"


def test_synonyms_refuses_a_bad_number_of_senses():
    from perturblab.resources.wordnet import synonyms

    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="senses"):
            synonyms("cheap", "a", senses=bad)


# ------------------------------------------------------------------ packaged encoder, WordNet, tagger



@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_most_frequent_sense_drops_the_other_senses():
    from perturblab.resources.wordnet import synonyms

    # WordNet 3.0: cheap.a.01 (low in price) lists "inexpensive"; the "tawdry" sense lists brassy, tatty, ...
    assert synonyms("cheap", "a", senses=1) == ["inexpensive"]
    assert "brassy" in synonyms("cheap", "a") and synonyms("cheap", "a")[0] == "inexpensive"
    assert synonyms("movie", "n", senses=1) == synonyms("movie", "n") == ["film", "picture", "pic", "flick"]
    assert synonyms("Cheap", "a", senses=1) == ["Inexpensive"]
    # two senses hold the first one's lemmas and more
    two = synonyms("funny", "a", senses=2)
    assert two[:len(synonyms("funny", "a", senses=1))] == synonyms("funny", "a", senses=1) and len(two) > 6


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_packaged_checks_on_the_swaps_a_reader_doubts():
    x = "Cheap plastic that cracked after a week , bought it for my son ."
    cands = [x.replace("Cheap", "Inexpensive"), x.replace("Cheap", "Brassy"), x.replace("cracked", "snap"),
             x.replace("cracked", "snapped"), x.replace("bought", "buy"), x.replace("bought", "purchased")]
    pos = PartOfSpeechAgreement().admits(x, cands)
    assert pos.tolist() == [True, False, False, True, False, True]
    sims = WordContextSimilarity(MEANING_CONTEXT_SIMILARITY).similarities(x, cands)
    # all-MiniLM-L6-v2 in float32: the right sense reads alike in context (0.89, 0.96), a wrong one not
    # (brassy 0.30); 0.03 allows other BLAS kernels and is far from the threshold for these
    np.testing.assert_allclose(sims[[0, 1, 5]], [0.893, 0.300, 0.959], atol=0.03)
    assert sims[0] >= MEANING_CONTEXT_SIMILARITY > sims[1]
    # an independent formulation: the encoder's last layer over the window's words, averaged over the
    # changed word's pieces
    import torch

    from perturblab.models.presets import load_encoder
    from perturblab.perturb.text import WordText

    enc = load_encoder("minilm-l6")

    def vec(text, i):
        words = WordText.from_text(text).words
        lo = max(0, i - WINDOW)
        b = enc.tokenizer([list(words[lo:i + WINDOW + 1])], is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            h = enc.model(**b).last_hidden_state[0].double().numpy()
        v = h[[t for t, w in enumerate(b.word_ids(0)) if w == i - lo]].mean(axis=0)
        return v / np.linalg.norm(v)

    assert float(vec(x, 0) @ vec(cands[1], 0)) == pytest.approx(sims[1], abs=1e-4)  # float32 states, batch padding


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_a_meaning_search_accepts_only_swaps_that_pass_every_check(tmp_path):
    import perturblab as pl
    from perturblab.perturb.text import WordText

    res = pl.scope("minilm-l6", "tfidf-lr", capabilities="synonym", synonyms="meaning", n=12, trials=1, out=tmp_path,
                   quiet=True)
    rows = [r for r in res.perturbations if r["perturbed"] is not None and r["changes"]]
    # 124 of the 150 sentences of docs/synonym_swaps.md's second sample have a swap; of these 12 short
    # ones 5 (urban legend, a mixed bag: fixed expressions)
    assert len(rows) >= 4
    from perturblab.resources.inflection import reinflect
    from perturblab.resources.pos import pos_tags
    from perturblab.resources.wordnet import synonyms

    from perturblab.perturb.transformations import in_fixed_expression
    from perturblab.resources.inflection import known_form

    ctx, agree = WordContextSimilarity(MEANING_CONTEXT_SIMILARITY), PartOfSpeechAgreement()
    for r in rows:
        x, xp = r["original"], r["perturbed"]
        assert ctx.admits(x, [xp])[0] and agree.admits(x, [xp])[0]
        before, after = WordText.from_text(x).words, WordText.from_text(xp).words
        pos, tags = pos_tags(list(before)), pos_tags(list(before), fine=True)
        for i in changed_positions(before, after):
            # the new word is a lemma of the replaced word's most frequent sense, in the replaced word's inflection
            first = synonyms(before[i], pos[i], senses=1)
            assert after[i] in {reinflect(c, tags[i]) for c in first}, (before[i], after[i], first)
            assert known_form(after[i]) and not in_fixed_expression(WordText.from_text(x), i, pos[i])


def _candidates(swap, sentence, index):
    """``swap``'s candidates for word ``index`` of ``sentence``, tagged by spaCy's tagger as a search does."""
    from perturblab.perturb.text import WordText
    from perturblab.resources.pos import pos_tags

    wt = WordText.from_text(sentence)
    pos, tags = pos_tags(list(wt.words)), pos_tags(list(wt.words), fine=True)
    return wt.words[index], swap.candidates(wt, index, pos[index], np.random.default_rng(0), tag=tags[index])


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_words_of_fixed_expressions_are_not_swapped():
    from perturblab.perturb.text import WordText
    from perturblab.perturb.transformations import in_fixed_expression
    from perturblab.resources.wordnet import collocation, is_measure, is_number

    # WordNet 3.0 lemmas of two words; a word is read in its base forms too (brings -> bring)
    assert collocation(["a", "new", "coffee", "maker"], 3) == "coffee_maker"
    assert collocation(["we", "met", "in", "person"], 3) == "in_person"
    assert collocation(["she", "brings", "out", "the", "best"], 1) == "bring_out"
    assert collocation(["a", "new", "coffee", "grinder"], 1) is None
    assert [is_number(w) for w in ("nine", "9", "1,000", "twenty-five", "first", "few")] == [True] * 4 + [False] * 2
    assert [is_measure(w) for w in ("years", "hours", "miles", "people", "movie")] == [True] * 3 + [False] * 2
    free, kept = SynonymSwap(reinflect=True, senses=1), SynonymSwap(reinflect=True, senses=1, keep_expressions=True)
    cases = [("i bought a new coffee maker last week .", 5), ("you have to see it in person .", 6),
             ("my son is nine years old .", 4), ("my son is nine years old .", 5)]
    for sentence, i in cases:
        word, got = _candidates(kept, sentence, i)
        assert got == [] and in_fixed_expression(WordText.from_text(sentence), i), (sentence, word)
    # without keep_expressions the swap is there (in person -> in somebody)
    assert "somebody" in _candidates(free, cases[1][0], 6)[1]
    # the same words outside those expressions keep their candidates
    assert "somebody" in _candidates(kept, "every person in the room laughed .", 1)[1]
    # maker.n.01's other lemma, "shaper", is no word form of LemmInflect's tables: dropped as a rare word
    assert _candidates(kept, "the maker of this film , sadly , knew it .", 1)[1] == []
    text = WordText.from_text("nine people ; the years went by , old friends .")
    assert [in_fixed_expression(text, i) for i in (1, 3, 6)] == [False, False, False]


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_a_plural_takes_the_senses_of_its_more_frequent_form():
    from perturblab.resources.wordnet import synonyms

    # nltk looks "days" up as the lemma "days" (days.n.01, with "years"; SemCor count 1) before "day"
    # (day.n.01, count 169, and more senses): the paper's set keeps nltk's order, the first sense is day's
    assert synonyms("days", "n")[0] == "years"
    assert synonyms("days", "n", senses=1) == ["day"]  # day.n.01's other lemmas are multiword
    assert synonyms("years", "n", senses=1) == ["year", "twelvemonth", "yr"]
    # one form (movie): WordNet's order, after the word's own lemma (which re-inflection drops)
    assert synonyms("movies", "n", senses=1) == ["movie", *synonyms("movie", "n", senses=1)]
    word, got = _candidates(SynonymSwap(reinflect=True, senses=1), "it took me two days to finish it .", 4)
    assert word == "days" and got == []  # day -> days is the word itself; never "yearses"
    assert "yearses" not in _candidates(SynonymSwap(reinflect=True), "it took me two days to finish it .", 4)[1]
