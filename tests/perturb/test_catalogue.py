"""The perturbation catalogue: seeded, per-text generators, unchanged texts reported."""

from __future__ import annotations

import pytest

from perturblab.errors import InputError, UnknownNameError
from perturblab.perturb.catalogue import PERTURBATIONS, apply_perturbation, get_perturbation
from perturblab.perturb.text import WordText

TEXTS = ["The performances were wonderful and the photography is gorgeous.",
         "A tedious, overlong story about nothing.", "Wow", "It was a dark and stormy night."]


def test_registered_names():
    assert {"random_typo", "random_synonym", "swap_words", "negate"} <= set(PERTURBATIONS.names())
    with pytest.raises(UnknownNameError):
        get_perturbation("no_such_thing")
    with pytest.raises(InputError, match="fraction"):
        get_perturbation("random_typo", fraction=0)


def test_random_typo_changes_eligible_words_only():
    out = apply_perturbation(get_perturbation("random_typo", fraction=0.5), TEXTS, seed=1)
    assert out.changed.tolist() == [True, True, False, True]  # "Wow" has no eligible word
    a, b = WordText.from_text(TEXTS[0]), WordText.from_text(out.texts[0])
    changed = [(o, n) for o, n in zip(a.words, b.words) if o != n]
    assert len(changed) == 2  # half of the 5 eligible words, rounded
    for o, n in changed:
        assert sorted(o) == sorted(n) and o[0] == n[0] and o[-1] == n[-1]
    assert apply_perturbation("random_typo", TEXTS, seed=1).texts == apply_perturbation(
        "random_typo", TEXTS, seed=1).texts
    # one text's result does not depend on the others
    assert apply_perturbation("random_typo", TEXTS[1:], seed=1).texts[0] != TEXTS[1]


def test_negate_and_swap_words():
    neg = apply_perturbation("negate", TEXTS)
    assert neg.texts[3] == "It was not a dark and stormy night."
    assert neg.changed.tolist() == [True, False, False, True]
    sw = apply_perturbation("swap_words", TEXTS, seed=0)
    assert sw.changed.tolist() == [True, True, False, True]
    assert sorted(sw.texts[3].rstrip(".").split()) == sorted(TEXTS[3].rstrip(".").split())
    assert sw.change_rate == pytest.approx(0.75)
