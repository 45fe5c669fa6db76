"""Perturbation engine: text handling, transformations, constraints, goals and search."""

from __future__ import annotations

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.perturb.constraints import (AlphabeticOnly, MinWordLength, RepeatModification,
                                            StopwordConstraint, eligible_indices)
from perturblab.perturb.engine import run_searches, run_searches_naive
from perturblab.perturb.goals import InvarianceGoal, kl_loss, l1_loss
from perturblab.perturb.search import BeamSearch, GreedySearch, SearchProblem
from perturblab.perturb.text import WordText
from perturblab.perturb.transformations import MiddleCharSwap, WordSwap

RNG = np.random.default_rng(0)


class TableSwap(WordSwap):
    """Replacements from a fixed table (a stand-in for WordNet in search tests)."""

    def __init__(self, table):
        self.table = table

    def replacements(self, text, index, pos, rng):
        return list(self.table.get(text.words[index].lower(), []))


def test_wordtext_roundtrip_and_replace():
    s = 'the rock is "destined" to be -- well-made, isn\'t it?  yes.'
    wt = WordText.from_text(s)
    assert wt.text == s
    assert "well-made" in wt.words and "isn't" in wt.words
    i = wt.words.index("destined")
    wt2 = wt.replace(i, "fated")
    assert wt2.text == s.replace("destined", "fated") and wt2.modified == {i}
    assert wt2.changes(wt) == [(i, "destined", "fated")]
    assert WordText.from_text("a b c").delete(1).text == "a c"


def test_middle_char_swap_keeps_ends_and_differs():
    wt = WordText.from_text("loud letters")
    cands = MiddleCharSwap().candidates(wt, 0, None, RNG)
    assert cands == ["luod"]  # 'ou' -> 'uo'; first and last kept
    cands = MiddleCharSwap().candidates(wt, 1, None, RNG)
    # letters: swaps at (1,2)=e,t -> lteters ; (2,3)=t,t identical -> skipped; (3,4)=t,e -> letetrs; (4,5)=e,r -> lettres
    assert cands == ["lteters", "letetrs", "lettres"]
    for c in cands:
        assert c[0] == "l" and c[-1] == "s" and sorted(c) == sorted("letters")
    assert MiddleCharSwap().candidates(WordText.from_text("abc"), 0, None, RNG) == []


def test_constraints():
    wt = WordText.from_text("The movie was an utterly awful 2024 experience")
    cons = [RepeatModification(), AlphabeticOnly(), MinWordLength(4), StopwordConstraint()]
    idx = eligible_indices(wt, cons)
    assert [wt.words[i] for i in idx] == ["movie", "utterly", "awful", "experience"]
    wt2 = wt.replace(1, "film")
    assert 1 not in eligible_indices(wt2, cons)


def test_alphabetic_only_can_be_turned_off():
    from perturblab.perturb.capabilities import get_capability, scope_constraints
    from perturblab.perturb.catalogue import get_perturbation

    wt = WordText.from_text("The movie was an utterly awful 2024 experience")
    assert [wt.words[i] for i in eligible_indices(wt, scope_constraints())] == ["movie", "utterly", "awful",
                                                                               "experience"]
    assert [wt.words[i] for i in eligible_indices(wt, scope_constraints(alphabetic_only=False))] == [
        "movie", "utterly", "awful", "2024", "experience"]
    for name in ("synonym", "typo"):
        assert any(isinstance(c, AlphabeticOnly) for c in get_capability(name).constraints)
        off = get_capability(name, alphabetic_only=False).constraints
        assert [type(c) for c in off] == [RepeatModification, MinWordLength, StopwordConstraint]
    # the catalogue's random typo: numbers stay unless the constraint is off ("2024" -> "2204")
    assert get_perturbation("random_typo")("in 2024", np.random.default_rng(0)) == "in 2024"
    assert get_perturbation("random_typo", alphabetic_only=False)("in 2024", np.random.default_rng(0)) == "in 2204"


def test_losses():
    p0 = np.array([0.7, 0.3])
    P = np.array([[0.7, 0.3], [0.5, 0.5]])
    assert l1_loss(p0, P).tolist() == pytest.approx([0.0, 0.4])
    kl = kl_loss(p0, P)
    assert kl[0] == pytest.approx(0.0)
    assert kl[1] == pytest.approx(0.7 * np.log(0.7 / 0.5) + 0.3 * np.log(0.3 / 0.5))
    with pytest.raises(InputError):
        InvarianceGoal("l3")


def _problem(text, table, goal="l1"):
    return SearchProblem(fields=(text,), transformation=TableSwap(table),
                         constraints=[RepeatModification(), MinWordLength(4)],
                         goal=InvarianceGoal(goal), rng=np.random.default_rng(0))


TABLE = {"movie": ["film", "flick", "picture"], "good": ["great", "fine"], "story": ["tale"]}


def test_greedy_first_step_is_the_minimum_loss_single_swap(lexicon):
    text = "a good movie with a story"
    prob = _problem(text, TABLE)
    res = run_searches([prob], GreedySearch(max_words=1), lexicon, progress=False)[0]
    # brute force over all single swaps
    wt = WordText.from_text(text)
    p0 = lexicon.predict_proba([text])[0]
    best = min(((float(l1_loss(p0, lexicon.predict_proba([wt.replace(i, c).text]))[0]), wt.replace(i, c).text)
                for i, w in enumerate(wt.words) for c in TABLE.get(w, [])))
    assert res.ok and res.perturbed == best[1]
    assert res.loss == pytest.approx(best[0])
    assert res.argmax_invariant is True


def test_greedy_stops_at_zero_loss(lexicon):
    # 'story' -> 'tale' leaves the lexicon score unchanged: loss 0, nothing can beat it
    res = run_searches([_problem("movie story", TABLE)], GreedySearch(), lexicon, progress=False)[0]
    assert res.perturbed == "movie tale" and res.loss == 0.0


def test_greedy_rejects_changes_that_do_not_lower_the_loss(lexicon):
    # best single swap: movie -> picture (score +.1); then good -> great/fine moves further away
    res = run_searches([_problem("good movie", TABLE)], GreedySearch(), lexicon, progress=False)[0]
    assert res.perturbed == "good picture" and res.changes == [(1, "movie", "picture")]


def test_greedy_accepts_a_second_change_that_cancels_the_first():
    from helpers.lexicon import LexiconClassifier

    clf = LexiconClassifier({"up": 0.3, "down": -0.2})
    table = {"alpha": ["up"], "beta": ["down"]}
    res = run_searches([_problem("alpha beta", table)], GreedySearch(), clf, progress=False)[0]
    # first beta -> down (|-.2| < |.3|), then alpha -> up brings the score to +.1: accepted
    assert res.perturbed == "up down" and len(res.changes) == 2
    p0 = clf.predict_proba(["alpha beta"])[0]
    single = float(l1_loss(p0, clf.predict_proba(["alpha down"]))[0])
    assert res.loss < single


def test_no_candidate_is_recorded_not_raised(lexicon):
    res = run_searches([_problem("a an the of", TABLE)], GreedySearch(), lexicon, progress=False)[0]
    assert not res.ok and res.status == "no_candidate" and res.perturbed is None


def test_batched_and_naive_drivers_agree(lexicon):
    texts = ["a good movie with a story", "movie story", "good movie", "bad awful picture",
             "nothing to swap here"]
    for search in (GreedySearch(), BeamSearch(width=2), GreedySearch(order="saliency")):
        fast = run_searches([_problem(t, TABLE) for t in texts], search, lexicon, progress=False)
        slow = run_searches_naive([_problem(t, TABLE) for t in texts], search, lexicon)
        for a, b in zip(fast, slow):
            assert a.perturbed == b.perturbed and a.changes == b.changes
            assert (np.isnan(a.loss) and np.isnan(b.loss)) or a.loss == pytest.approx(b.loss)


def test_batched_driver_uses_fewer_calls(lexicon):
    texts = ["a good movie with a story"] * 8
    lexicon.calls = 0
    run_searches([_problem(t, TABLE) for t in texts], GreedySearch(), lexicon, progress=False)
    fast_calls = lexicon.calls
    lexicon.calls = 0
    run_searches_naive([_problem(t, TABLE) for t in texts], GreedySearch(), lexicon)
    assert fast_calls < lexicon.calls / 5


def test_beam_is_at_least_as_good_as_greedy(lexicon):
    texts = ["a good movie with a story", "good movie", "bad awful picture movie"]
    g = run_searches([_problem(t, TABLE) for t in texts], GreedySearch(), lexicon, progress=False)
    b = run_searches([_problem(t, TABLE) for t in texts], BeamSearch(width=4), lexicon, progress=False)
    for x, y in zip(g, b):
        if x.ok:
            assert y.loss <= x.loss + 1e-12


def test_pair_inputs_perturb_only_the_chosen_field(lexicon):
    prob = SearchProblem(fields=("good movie", "a story"), transformation=TableSwap(TABLE),
                         constraints=[RepeatModification()], goal=InvarianceGoal(),
                         rng=np.random.default_rng(0), field_index=1)
    res = run_searches([prob], GreedySearch(), lexicon, progress=False)[0]
    assert res.ok and res.perturbed[0] == "good movie" and res.perturbed[1] == "a tale"


def test_bad_search_options():
    with pytest.raises(InputError):
        GreedySearch(order="sideways")
    with pytest.raises(InputError):
        BeamSearch(width=0)


def test_patience_stops_the_walk_early(lexicon):
    table = {w: ["picture", "tale"] for w in ["movie", "story", "plot", "acting", "music", "scene"]}
    text = "movie story plot acting music scene"
    full = run_searches([_problem(text, table)], GreedySearch(stop_loss=-1), lexicon, progress=False)[0]
    short = run_searches([_problem(text, table)], GreedySearch(patience=1, stop_loss=-1), lexicon,
                         progress=False)[0]
    assert short.ok and short.queries < full.queries
    assert full.loss <= short.loss
    with pytest.raises(InputError):
        GreedySearch(patience=0)
