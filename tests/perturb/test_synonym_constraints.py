"""Optional meaning-keeping constraints of synonym swaps: the sentence-similarity check on candidate
texts, re-inflection of WordNet lemmas, their study options, and the once-only warning when no
part-of-speech tagger is installed.

The default tier uses hand-made encoders and replacement tables (cosines computed by hand); the
tests on the packaged MiniLM-L6 encoder, WordNet, spaCy's tagger and LemmInflect load those (tens of
seconds) and are in the slow tier."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from perturblab.core.keys import content_key
from perturblab.errors import InputError
from perturblab.perturb.catalogue import RandomWordSwap, apply_perturbation, get_perturbation
from perturblab.perturb.constraints import RepeatModification
from perturblab.perturb.engine import attach_pos, run_searches
from perturblab.perturb.goals import InvarianceGoal
from perturblab.perturb.search import PERTURBED, GreedySearch, SearchProblem
from perturblab.perturb.semantics import SentenceSimilarity
from perturblab.perturb.transformations import SynonymSwap, WordSwap
from perturblab.perturb.search_settings import SearchSettings
from synonym_assets import missing_assets


class TableSwap(WordSwap):
    """Replacements from a fixed table."""

    needs_pos = True

    def __init__(self, table):
        self.table = table

    def replacements(self, text, index, pos, rng):
        return list(self.table.get(text.words[index].lower(), []))


class TableEncoder:
    """``pooled`` gives each text a fixed vector (so every cosine is known by hand)."""

    def __init__(self, vectors):
        self.vectors, self.calls = vectors, []

    def pooled(self, texts):
        self.calls.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


# cosines with [1, 0]: [1, 1] -> 1/sqrt(2) = 0.70711; [0, 1] -> 0; [3, 0.3] -> 3/sqrt(9.09) = 0.99504
VECTORS = {"a good movie": [1.0, 0.0], "a good film": [1.0, 1.0], "a good flick": [0.0, 1.0],
           "a good picture": [3.0, 0.3]}


def test_sentence_similarity_keeps_candidates_at_or_above_the_threshold():
    cands = ["a good film", "a good flick", "a good picture"]
    sim = SentenceSimilarity(0.7, encoder=TableEncoder(VECTORS))
    # float32 vectors of small integers: the cosines are exact to ~1e-7, far from the thresholds
    np.testing.assert_allclose(sim.similarities("a good movie", cands), [2 ** -0.5, 0.0, 3 / 9.09 ** 0.5], atol=1e-6)
    assert sim.admits("a good movie", cands).tolist() == [True, False, True]
    assert SentenceSimilarity(0.71, encoder=TableEncoder(VECTORS)).admits("a good movie", cands).tolist() == \
        [False, False, True]
    for bad in (1.5, -1.0, "0.8", True):
        with pytest.raises(InputError, match="min_similarity"):
            SentenceSimilarity(bad)


def _problem(lexicon_table, checks=()):
    return SearchProblem(fields=("a good movie",), transformation=TableSwap(lexicon_table),
                         constraints=[RepeatModification()], goal=InvarianceGoal("l1"),
                         rng=np.random.default_rng(0), pos=["DET", "ADJ", "NOUN"], checks=list(checks))


def test_search_takes_the_best_admitted_candidate(lexicon):
    # lexicon logits: movie 0.1, picture 0.2, film 0.5, flick -0.4 -> the closest swap is "picture"
    table = {"movie": ["film", "flick", "picture"]}
    free = run_searches([_problem(table)], GreedySearch(), lexicon, progress=False)[0]
    assert free.perturbed == "a good picture"
    # refuse "picture" (cos 0 with the original): the next closest, film (|0.5 - 0.1| < |-0.4 - 0.1|)
    vectors = dict(VECTORS, **{"a good picture": [0.0, 1.0]})
    enc = TableEncoder(vectors)
    res = run_searches([_problem(table, [SentenceSimilarity(0.5, encoder=enc)])], GreedySearch(), lexicon,
                       progress=False)[0]
    assert res.status == PERTURBED and res.perturbed == "a good film"
    # the first pass checks all candidates in one batch; the original is encoded once
    assert enc.calls == [["a good film", "a good flick", "a good picture"], ["a good movie"]]
    # a threshold nothing passes leaves the sample unperturbed
    none = run_searches([_problem(table, [SentenceSimilarity(0.999, encoder=TableEncoder(vectors))])],
                        GreedySearch(), lexicon, progress=False)[0]
    assert none.status == "no_candidate" and none.perturbed is None


def test_random_synonym_options_and_checks():
    t = get_perturbation("random_synonym", reinflect=True, min_similarity=0.85)
    assert t.swap.reinflect and t.swap.needs_tags and [c.min_similarity for c in t.checks] == [0.85]
    plain = get_perturbation("random_synonym")
    assert not plain.swap.reinflect and not plain.swap.needs_tags and plain.checks == []
    with pytest.raises(InputError, match="min_similarity"):
        get_perturbation("random_synonym", min_similarity=2)
    # with the check only "a good film" and "a good picture" (cos >= 0.7) can come out
    table = TableSwap({"movie": ["film", "flick", "picture"]})
    swap = RandomWordSwap(table, 1.0, constraints=[], checks=[SentenceSimilarity(0.7, TableEncoder(VECTORS))])
    outs = set(apply_perturbation(swap, ["a good movie"] * 40, seed=0).texts)
    assert outs == {"a good film", "a good picture"}
    assert set(apply_perturbation(RandomWordSwap(table, 1.0, constraints=[]), ["a good movie"] * 40,
                                  seed=0).texts) == {"a good film", "a good flick", "a good picture"}


def test_missing_tagger_warns_once_per_process(monkeypatch):
    from perturblab.resources import pos

    monkeypatch.setattr(pos, "load_tagger", lambda: None)
    monkeypatch.setattr(pos, "_warned_missing", False)
    table = {"movie": ["film"]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            p = _problem(table)
            p.pos = None
            attach_pos([p])
            assert p.pos is None
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and "no part-of-speech tagger" in msgs[0] and "all parts of speech" in msgs[0]


def test_synonym_options_enter_only_the_synonym_keys():
    base = SearchSettings()
    # the default key is what stores written by earlier versions hold (so they resume)
    assert base.key("typo") == {"loss": "l1", "search": "greedy", "max_words": None, "patience": None,
                                "max_candidates": None, "seed": 0, "perturb_field": 0}
    assert base.key("typo", pairs=False) == {k: v for k, v in base.key("typo").items() if k != "perturb_field"}
    assert SearchSettings(search="beam", beam_width=5, alphabetic_only=False).key("typo") == {
        **base.key("typo"), "search": "beam", "beam_width": 5, "alphabetic_only": False}
    assert base.synonym_key("synonym") == {} and base.synonym_key("typo") == {}
    opts = SearchSettings(synonym_min_similarity=0.85, reinflect_synonyms=True)
    # re-inflected candidates carry their revision (an earlier revision's results are not read back)
    want = {"synonym_min_similarity": 0.85, "reinflect_synonyms": True, "synonym_revision": SynonymSwap.REVISION}
    assert opts.synonym_key("synonym") == want and opts.synonym_key("synonym*") == want
    assert SearchSettings(synonym_min_similarity=0.85).synonym_key("synonym") == {"synonym_min_similarity": 0.85}
    assert opts.synonym_key("typo") == {} and opts.synonym_key("fairness") == {}
    assert opts.key("synonym") == {**base.key("synonym"), **want} and opts.key("typo") == base.key("typo")
    key = lambda o, cap: content_key("searches", "ref", cap, 0, 1, ["x"], o.key(cap))
    assert key(opts, "synonym") != key(base, "synonym") and key(opts, "typo") == key(base, "typo")
    assert key(SearchSettings(reinflect_synonyms=True), "synonym") != key(opts, "synonym")

    from perturblab.perturb.capabilities import get_capability

    cap = get_capability("synonym")
    swap, checks = opts.synonym_setup(cap)
    assert isinstance(swap, SynonymSwap) and swap.reinflect and not cap.transformation.reinflect
    assert [type(c).__name__ for c in checks] == ["SentenceSimilarity"] and checks[0].min_similarity == 0.85
    assert base.synonym_setup(cap) == (cap.transformation, [])
    typo = get_capability("typo")
    assert opts.synonym_setup(typo) == (typo.transformation, [])
    with pytest.raises(InputError, match="min_similarity"):
        SearchSettings(synonym_min_similarity=1.2).check_synonym_options()


# ------------------------------------------------------------------ packaged encoder, WordNet, tagger



@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_reinflect_known_words():
    from perturblab.resources.inflection import reinflect

    cases = {("sense", "VBD"): "sensed", ("feel", "VBD"): "felt", ("experience", "VBN"): "experienced",
             ("go", "VBN"): "gone", ("run", "VBG"): "running", ("admit", "VBZ"): "admits",
             ("movie", "NNS"): "movies", ("child", "NNS"): "children", ("Film", "NNS"): "Films",
             ("FILM", "NNS"): "FILMS", ("happy", "JJR"): "happier", ("fast", "RBS"): "fastest",
             ("sense", "NN"): "sense", ("sense", "VB"): "sense", ("sense", None): "sense"}
    assert {k: reinflect(*k) for k in cases} == cases
    assert reinflect("flummox", "VBD") == "flummoxed"
    assert reinflect("beautiful", "JJR") is None  # comparatives from the table only
    assert reinflect("McCoy", "NNS") is None
    with pytest.raises(InputError, match="non-empty word"):
        reinflect("", "NNS")


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_reinflection_never_makes_a_non_word():
    from lemminflect import getInflection

    from perturblab.resources.inflection import known_form, reinflect

    # "years" is a WordNet lemma (days.n.01: days, years) but no lemma of LemmInflect's tables; its
    # regular rule puts a plural -s on the plural
    assert getInflection("years", tag="NNS", inflect_oov=True) == ("yearses",)
    assert reinflect("years", "NNS") is None and reinflect("year", "NNS") == "years"
    # the tables know "crap" as a noun only; the rule's "craps" is a word, but not this one
    assert getInflection("crap", tag="VBZ", inflect_oov=True) == ("craps",) and reinflect("crap", "VBZ") is None
    assert [known_form(w) for w in ("years", "Films", "sensed", "lay", "flummoxed")] == [True] * 5
    # WordNet lemmas the lexicon lacks: read as rare words, not kept
    assert [known_form(w) for w in ("yearses", "refreshfully", "agnise", "cognizes")] == [False] * 4
    with pytest.raises(InputError, match="non-empty word"):
        known_form(" ")


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_every_reinflected_swap_is_a_form_of_its_lemma_in_the_tables():
    from lemminflect import getAllInflections, getAllLemmas

    from perturblab.data import rotten_tomatoes
    from perturblab.perturb.capabilities import get_capability
    from perturblab.perturb.constraints import eligible_indices
    from perturblab.perturb.text import WordText
    from perturblab.resources.pos import pos_tags_many

    texts = [ex.text for ex in rotten_tomatoes(hub_fallback=False).examples]
    picked = [texts[int(i)] for i in np.random.default_rng(7).permutation(len(texts))[:60]]
    picked.append("it took me two days , nine years ago , to find the words .")  # days -> years -> yearses
    cap = get_capability("synonym")
    swaps = [SynonymSwap(reinflect=True), SynonymSwap(reinflect=True, senses=1, keep_expressions=True)]
    wts = [WordText.from_text(t) for t in picked]
    tags_all = pos_tags_many([list(wt.words) for wt in wts], fine=True)
    pos_all = pos_tags_many([list(wt.words) for wt in wts])
    rng, made = np.random.default_rng(0), 0
    for wt, tags, pos in zip(wts, tags_all, pos_all):
        for i in eligible_indices(wt, cap.constraints):
            for swap in swaps:
                for lemma in swap.replacements(wt, i, pos[i], rng):
                    out = swap.form(lemma, wt.words[i], tags[i])
                    if out is None:
                        continue
                    made += 1
                    # the lexicon lemmatises the new word, and lists it among the forms of the lemma it came from
                    forms = {f for fs in getAllInflections(lemma.lower()).values() for f in fs} | {lemma.lower()}
                    assert getAllLemmas(out.lower()) and out.lower() in forms, (wt.words[i], tags[i], lemma, out)
                assert all(c.lower() != wt.words[i].lower() for c in swap.candidates(wt, i, pos[i], rng, tag=tags[i]))
    assert made > 300  # enough swaps for the property to mean something


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_reinflected_synonyms_of_known_words():
    from perturblab.perturb.text import WordText
    from perturblab.resources.pos import pos_tags

    wt = WordText.from_text("He felt sad about the movies.")
    pos, tags = pos_tags(list(wt.words)), pos_tags(list(wt.words), fine=True)
    assert (tags[1], tags[5]) == ("VBD", "NNS")
    rng = np.random.default_rng(0)
    plain, inflected = SynonymSwap(), SynonymSwap(reinflect=True)
    # WordNet 3.0 lemmas of the verb synsets of feel/felt, then LemmInflect 0.2.3's past tenses
    assert plain.candidates(wt, 1, pos[1], rng) == ["matte", "mat", "feel", "experience", "find", "sense", "finger",
                                                     "palpate"]
    assert inflected.candidates(wt, 1, pos[1], rng, tag=tags[1]) == ["matted", "experienced", "found", "sensed",
                                                                      "fingered", "palpated"]  # feel -> felt: dropped
    assert plain.candidates(wt, 5, pos[5], rng) == ["movie", "film", "picture", "pic", "flick"]
    # "pic" is no lemma of LemmInflect's tables: no plural, so no "pics"
    assert inflected.candidates(wt, 5, pos[5], rng, tag=tags[5]) == ["films", "pictures", "flicks"]


@pytest.mark.slow
@pytest.mark.assets
@missing_assets
def test_packaged_encoder_refuses_a_swap_at_a_high_threshold_and_keeps_it_at_a_low_one(lexicon):
    x = "I was going to the store."
    sim = SentenceSimilarity(0.85)
    # all-MiniLM-L6-v2 (fp32): cos 0.713 for "rifle", a WordNet synonym of "go" in another sense
    cos = float(sim.similarities(x, ["I was rifle to the store."])[0])
    assert cos == pytest.approx(0.7134, abs=0.005)  # float32 encoder; 0.005 allows other BLAS kernels
    assert not sim.admits(x, ["I was rifle to the store."])[0]
    assert SentenceSimilarity(0.5).admits(x, ["I was rifle to the store."])[0]

    from perturblab.perturb.capabilities import get_capability

    cap = get_capability("synonym")

    def search(*checks, swap=cap.transformation):
        p = SearchProblem(fields=(x,), transformation=swap, constraints=cap.constraints, goal=InvarianceGoal("l1"),
                          rng=np.random.default_rng(0), checks=list(checks))
        return run_searches([p], GreedySearch(), lexicon, progress=False)[0]

    # the lexicon ignores every word here, so the search takes the first admitted candidate of "going"
    assert search().perturbed == "I was travel to the store."
    assert search(SentenceSimilarity(0.0)).perturbed == "I was travel to the store."
    # no candidate of this sentence reaches 0.95 (the closest, "storehouse", has about 0.93)
    assert search(SentenceSimilarity(0.95)).status == "no_candidate"
    both = search(SentenceSimilarity(0.85), swap=SynonymSwap(reinflect=True))
    assert both.ok and both.changes[0][:2] == (2, "going") and both.changes[0][2].endswith("ing")
    assert float(sim.similarities(x, [both.perturbed])[0]) >= 0.85
