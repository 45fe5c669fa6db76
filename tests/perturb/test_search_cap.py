"""The cap on word positions: a search considers at most ``max_positions`` eligible words of a
text, so its number of scored candidates stays bounded however long the text is; texts within
the cap are searched exactly as without it."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from helpers.lexicon import LexiconClassifier
from helpers.lexicon import make_splits, models
from perturblab.core.entry import run
from perturblab.errors import InputError
from perturblab.perturb.capabilities import get_capability
from perturblab.perturb.engine import run_searches, run_searches_naive
from perturblab.perturb.goals import InvarianceGoal
from perturblab.perturb.search import MAX_POSITIONS, BeamSearch, GreedySearch, SearchProblem, positions_cut_note
from perturblab.perturb.search_settings import SearchSettings
from perturblab.studies.scope import ScopeArgs, ScopeStudy

VOCAB = ("remarkable cinema wonderful performance terrible story actor scene gorgeous music dreadful script "
         "brilliant boring clever").split()
WEIGHTS = {"remarkable": 1.0, "wonderful": 2.0, "terrible": -2.0, "gorgeous": 1.5, "dreadful": -1.5,
           "brilliant": 2.0, "boring": -1.0, "clever": 0.5}
CANDIDATES = 2  # candidates per word (max_candidates), so a search's cost can be bounded by hand


def text_of(n_words: int) -> str:
    return " ".join(VOCAB[(k * 7 + k // len(VOCAB)) % len(VOCAB)] for k in range(n_words))


def problem(text: str, seed: int = 0, **kw) -> SearchProblem:
    cap = get_capability("typo")
    return SearchProblem(fields=(text,), transformation=cap.transformation, constraints=cap.constraints,
                         goal=InvarianceGoal("l1"), rng=np.random.default_rng([seed, 0, 1]),
                         max_candidates=CANDIDATES, **kw)


def eligible(p: SearchProblem) -> list[int]:
    return [i for i in p.visible() if all(c.allows(p.words, i) for c in p.constraints)]


def search(p: SearchProblem, method=None):
    """(result, inputs the model scored) of one search of ``p``."""
    model = LexiconClassifier(WEIGHTS)
    result = run_searches([p], method or GreedySearch(), model, progress=False)[0]
    return result, model.inputs_scored


def outcome(r) -> tuple:
    return (r.perturbed, r.changes, r.loss, r.queries, r.status,
            None if r.pert_probs is None else r.pert_probs.tolist())


def test_the_default_cap_and_its_checks():
    assert MAX_POSITIONS == 512 and problem("a b c").max_positions == MAX_POSITIONS
    assert SearchSettings().max_positions == MAX_POSITIONS
    for bad in (0, -3, True):
        with pytest.raises(InputError, match="max_positions"):
            problem("a b c", max_positions=bad)


@pytest.mark.parametrize("n_words", [600, 3000])
def test_a_long_text_scores_a_bounded_number_of_candidates(n_words):
    """Each of the at most ``cap`` positions is scored with its candidates once in the first pass and
    at most once more in the walk, so at most ``2 · cap · candidates`` inputs (and the original),
    whatever the length of the text."""
    cap = 40
    p = problem(text_of(n_words), max_positions=cap)
    n_eligible = len(eligible(p))
    assert n_eligible > 10 * cap
    result, scored = search(p)
    assert result.ok and result.positions_cut == n_eligible - cap
    assert result.queries <= 2 * cap * CANDIDATES and scored <= 2 * cap * CANDIDATES + 1
    # the same seed searches the same positions; changes only ever land on them
    again, _ = search(problem(text_of(n_words), max_positions=cap))
    assert outcome(again) == outcome(result)
    kept, cut = problem(text_of(n_words), max_positions=cap).capped(eligible(p))
    assert len(kept) == cap and cut == n_eligible - cap and kept == sorted(kept)
    assert set(kept) <= set(eligible(p)) and all(i in kept for i, _, _ in result.changes)
    other, _ = problem(text_of(n_words), seed=1, max_positions=cap).capped(eligible(p))
    assert other != kept  # another seed draws other positions


def test_without_the_cap_the_cost_grows_with_the_text():
    cap, text = 40, text_of(600)
    capped, capped_scored = search(problem(text, max_positions=cap))
    full, full_scored = search(problem(text, max_positions=None))
    assert full.positions_cut == 0 and full.queries > 5 * capped.queries
    assert full_scored > 5 * capped_scored


def test_the_default_cap_bounds_a_text_longer_than_it():
    p = problem(text_of(2000))
    n_eligible = len(eligible(p))
    assert n_eligible > 2 * MAX_POSITIONS
    result, scored = search(p)
    assert result.positions_cut == n_eligible - MAX_POSITIONS
    assert scored <= 2 * MAX_POSITIONS * CANDIDATES + 1


@pytest.mark.parametrize("order", ["best-swap", "saliency", "left-to-right", "random"])
@pytest.mark.parametrize("width", [1, 3])
def test_a_text_within_the_cap_is_searched_as_without_it(order, width):
    texts = ["A remarkable, gorgeous film with dreadful music and a boring script.", text_of(60)]
    for text in texts:
        n_eligible = len(eligible(problem(text)))
        runs = [search(problem(text, max_positions=cap), BeamSearch(width=width, order=order))[0]
                for cap in (None, MAX_POSITIONS, n_eligible)]
        assert all(r.positions_cut == 0 for r in runs)
        assert outcome(runs[0]) == outcome(runs[1]) == outcome(runs[2]) and runs[0].ok
    # and the naive driver agrees with the batched one under a cut
    p = [problem(text_of(300), max_positions=20)]
    naive = run_searches_naive(p, BeamSearch(width=width, order=order), LexiconClassifier(WEIGHTS))[0]
    batched, _ = search(problem(text_of(300), max_positions=20), BeamSearch(width=width, order=order))
    assert outcome(naive) == outcome(batched) and naive.positions_cut == batched.positions_cut > 0


def test_the_default_cap_keeps_the_search_results_keys():
    """Keys of stored search results: unchanged at the default cap, another cap is another key."""
    settings = SearchSettings()
    assert "max_positions" not in settings.key("typo")
    assert set(settings.key("typo")) == {"loss", "search", "max_words", "patience", "max_candidates", "seed",
                                         "perturb_field"}
    other = dataclasses.replace(settings, max_positions=64).key("typo")
    assert other == {**settings.key("typo"), "max_positions": 64}
    assert dataclasses.replace(settings, max_positions=None).key("typo")["max_positions"] is None


def test_positions_cut_note():
    assert positions_cut_note([{"status": "perturbed"}] * 3, 512) == ""
    note = positions_cut_note([{"positions_cut": 10}, {}, {"positions_cut": 0}, {"positions_cut": 4}], 512)
    assert note.startswith("2 of 4 searches had more than max_positions = 512 eligible word positions (up to 522)")


def test_the_scope_study_says_how_many_searches_were_cut(tmp_path, caplog):
    """The study's searches use its settings' cap; a cut search's record says by how much, and the
    study logs how many searches were cut."""
    args = ScopeArgs(reference="ref", targets="tgt", capabilities="typo", n=6, trials=1, n_boot=50)
    study = ScopeStudy(args, models=models(), splits=make_splits(), progress=False)
    study.settings = dataclasses.replace(study.settings, max_positions=2)  # the toy texts have 7 words
    with caplog.at_level(logging.WARNING, logger="perturblab.studies.scope.study"):
        result = run(study, tmp_path)
    cut = [r for r in result.perturbations if r.get("positions_cut")]
    assert cut and all(len(r["changes"]) <= 2 for r in result.perturbations)
    assert any(f"{len(cut)} of 6 searches had more than max_positions = 2" in m for m in caplog.messages)
    # at the default cap nothing is cut, nothing is said, and no record carries the field
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="perturblab.studies.scope.study"):
        plain = run(ScopeStudy(args, models=models(), splits=make_splits(), progress=False), tmp_path / "plain")
    assert not any("max_positions" in m for m in caplog.messages)
    assert all("positions_cut" not in r for r in plain.perturbations)


@pytest.mark.parametrize("order", ["best-swap", "saliency", "left-to-right", "random"])
@pytest.mark.parametrize("width", [1, 3])
def test_a_search_says_its_progress_as_it_goes_and_finds_the_same(order, width):
    """A search is one task: it says shares of it as it goes, which add up to one (a search that
    stops early says the rest at its end), at least once per word position it walks; what it finds
    is what it finds with no one listening."""
    from perturblab.core.console import reporting

    for text, cap in (("A remarkable, gorgeous film with dreadful music and a boring script.", MAX_POSITIONS),
                      (text_of(300), 20)):
        for stop_loss in (0.0, -1.0):  # the default stops at a loss of 0; -1 walks every position
            said: list[float] = []
            with reporting(said.append):
                heard, _ = search(problem(text, max_positions=cap), BeamSearch(width, order, stop_loss=stop_loss))
            alone, _ = search(problem(text, max_positions=cap), BeamSearch(width, order, stop_loss=stop_loss))
            assert outcome(heard) == outcome(alone) and heard.ok
            assert sum(said) == pytest.approx(1.0, abs=1e-9) and all(s > 0 for s in said)
            if stop_loss < 0:
                assert len(said) >= min(len(eligible(problem(text))), cap) > 5
    # searches run in lock-step each say their own share
    said = []
    with reporting(said.append):
        results = run_searches([problem(text_of(40 + k)) for k in range(5)], GreedySearch(),
                               LexiconClassifier(WEIGHTS), progress=False)
    assert all(r.ok for r in results) and sum(said) == pytest.approx(5.0, abs=1e-9)
