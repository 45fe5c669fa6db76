"""Perturbations of the robustness study (drop nouns/verbs/first/last, change char, add text,
gender swap): exact outputs on hand-written sentences, seeding, parameters, detectability."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from perturblab.errors import AssetMissingError, InputError
from perturblab.perturb import robustness as rb
from perturblab.perturb.catalogue import PERTURBATIONS, apply_perturbation, get_perturbation
from perturblab.perturb.text import WORD_RE
from perturblab.resources import pos

NAMES = ("drop_nouns", "drop_verbs", "drop_first", "drop_last", "change_char", "add_text", "gender_swap")

needs_tagger = pytest.mark.skipif(
    not pos.tagger_available(),
    reason=f"perturblab.resources.pos reports no spaCy tagger ({pos.MODEL_PACKAGE} not installed)")

# (sentence, contains a gendered word)
SENTENCES = [
    ("The cat chased the mouse across the kitchen floor.", False),
    ("She gave her book to him after the lecture.", True),
    ("My brother bought a new car last week.", True),
    ("The weather was cold and rainy all morning.", False),
    ("He told his wife that the meeting had been cancelled.", True),
    ("We walked along the river until sunset.", False),
    ("The children played football in the park.", False),
    ("Her father works as a doctor in a small town.", True),
    ("This restaurant serves the best pizza in the city.", False),
    ("The king and the queen visited the old castle.", True),
    ("I forgot my umbrella at the office yesterday.", False),
    ("The committee approved the budget for next year.", False),
    ("The boy asked his mother for a glass of water.", True),
    ("Scientists discovered a new species of frog in the forest.", False),
    ("The train arrived ten minutes late.", False),
    ("My aunt sent me a postcard from Italy.", True),
    ("The students finished their homework before dinner.", False),
    ("A man in a blue coat was waiting at the station.", True),
    ("The company announced record profits this quarter.", False),
    ("The film tells the story of a young girl and her dog.", True),
    ("Rain fell steadily on the quiet village.", False),
    ("They painted the fence white over the weekend.", False),
    ("The waiter brought us the menu and some bread.", True),
    ("Our neighbours planted tomatoes in their garden.", False),
    ("The president spoke to reporters on Monday.", False),
    ("The old woman fed the pigeons in the square.", True),
    ("The museum opens at nine every morning.", False),
    ("The teacher explained the lesson twice.", False),
    ("His sister studies chemistry at the university.", True),
    ("The package was delivered to the wrong address.", False),
    ("The engine made a strange noise on the highway.", False),
    ("I saw her at the concert last night.", True),
    ("The dog slept under the table during the storm.", False),
    ("We need more chairs for the guests.", False),
    ("The actress won an award for her performance.", True),
    ("The plane landed safely despite the strong wind.", False),
    ("The farmers harvested the wheat in August.", False),
    ("Mr. Smith repaired the roof of his house.", True),
    ("The library closes early on Sundays.", False),
    ("The soup tastes better with a little salt.", False),
]
TEXTS = [s for s, _ in SENTENCES]


def run(name: str, text: str, seed: int = 0, **params) -> str:
    return get_perturbation(name, **params)(text, np.random.default_rng(seed))


def test_all_registered_and_swap_words_not_redefined():
    assert set(NAMES) <= set(PERTURBATIONS.names())
    assert "swap_words" in PERTURBATIONS.names()
    assert set(rb.POS_PERTURBATIONS) == {"drop_nouns", "drop_verbs", "gender_swap"}
    assert get_perturbation("change_char").prob == 0.10
    assert get_perturbation("add_text").fraction == 0.10
    assert get_perturbation("drop_nouns").max_fraction == 1.0


@pytest.mark.parametrize("name, params", [
    ("change_char", {"prob": 0}), ("change_char", {"prob": 1.5}), ("change_char", {"prob": "0.1"}),
    ("add_text", {"fraction": 0}), ("add_text", {"fraction": -1}), ("add_text", {"fraction": math.nan}),
    ("drop_nouns", {"max_fraction": 0}), ("drop_verbs", {"max_fraction": 2.0}),
    ("drop_nouns", {"max_fraction": True}),
])
def test_bad_parameters(name, params):
    with pytest.raises(InputError):
        get_perturbation(name, **params)


def test_drop_first_and_last():
    assert run("drop_first", "Hello there, friend.") == "there, friend."
    assert run("drop_last", "Hello there, friend.") == "Hello there."
    assert run("drop_last", "The cat chased the mouse.") == "The cat chased the."
    assert run("drop_first", "  (Well) it is done!") == "it is done!"
    for name in ("drop_first", "drop_last"):
        assert run(name, "Hello!") == "Hello!"
        assert run(name, "...") == "..."
    out = apply_perturbation("drop_first", ["Wow", "Two words"])
    assert out.texts == ["Wow", "words"] and out.changed.tolist() == [False, True]


@needs_tagger
def test_drop_nouns_and_verbs_exact():
    assert run("drop_nouns", "The cat chased the mouse.") == "The chased the."
    assert run("drop_nouns", "Mary met John in Paris.") == "met in."
    assert run("drop_nouns", "Mary met John in Paris.", proper=False) == "Mary met John in Paris."
    assert run("drop_nouns", "Cats.") == "Cats."  # nothing would remain: unchanged
    assert run("drop_verbs", "The cat chased the mouse.") == "The cat the mouse."
    assert run("drop_verbs", "The book is on the table.") == "The book is on the table."  # AUX kept
    paper = '" He may not have been there , " the defence official said on Thursday.'
    assert run("drop_verbs", paper) == '" He may not have been there , " the defence official on Thursday.'
    # the paper's Table 5 "no verbs" example: auxiliaries go too, the modal stays
    assert run("drop_verbs", paper, include_aux=True) == \
        '" He may not there , " the defence official on Thursday.'


@needs_tagger
def test_drop_pos_fraction_and_batch_prepare():
    text = "The cat chased the mouse across the kitchen floor."
    half = get_perturbation("drop_nouns", max_fraction=0.5)
    outs = {half(text, np.random.default_rng(s)) for s in range(10)}
    assert all(len(WORD_RE.findall(o)) == 9 - 2 for o in outs) and len(outs) > 1
    assert half(text, np.random.default_rng(3)) == half(text, np.random.default_rng(3))
    t = get_perturbation("drop_nouns")
    t.prepare(TEXTS)
    assert [t(x) for x in TEXTS] == apply_perturbation("drop_nouns", TEXTS).texts


@needs_tagger
@pytest.mark.parametrize("text, expected", [
    ("She gave her book to him.", "He gave his book to her."),
    ("I saw her yesterday.", "I saw him yesterday."),
    ("The book is his.", "The book is hers."),
    ("The book is hers.", "The book is his."),
    ("His car is red and hers is blue.", "Her car is red and his is blue."),
    ("HE said Mr. Smith's son-in-law is a GENTLEMAN.", "SHE said Mrs. Smith's daughter-in-law is a LADY."),
    ("He's the king; she's the queen.", "She's the queen; he's the king."),
    ("Her mother loved her.", "His father loved him."),
    ("The cat sat on the mat.", "The cat sat on the mat."),
])
def test_gender_swap_exact(text, expected):
    assert run("gender_swap", text) == expected


@needs_tagger
def test_gender_swap_twice_is_identity_for_unambiguous_words():
    text = "My brother and his wife met the king, the queen and their nephews. He laughed; she smiled."
    once = run("gender_swap", text)
    assert once == ("My sister and her husband met the queen, the king and their nieces. "
                    "She laughed; he smiled.")
    assert run("gender_swap", once) == text
    for m, f in rb.GENDER_PAIRS:
        assert rb.GENDER_MAP[rb.GENDER_MAP[m]] == m and rb.GENDER_MAP[rb.GENDER_MAP[f]] == f
    assert len(rb.GENDER_PAIRS) >= 40


def test_pos_perturbations_raise_without_tagger(monkeypatch):
    monkeypatch.setattr(pos, "load_tagger", lambda: None)
    for name in rb.POS_PERTURBATIONS:
        with pytest.raises(AssetMissingError, match="setup.sh"):
            run(name, "The cat chased the mouse.")


def test_change_char_rate_length_and_case():
    rng = np.random.default_rng(7)
    letters = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), 2000))
    text = " ".join(letters[i:i + 8] for i in range(0, 2000, 8)) + " 123!"
    out = run("change_char", text, seed=1)
    assert len(out) == len(text)
    diff = [(a, b) for a, b in zip(text, out) if a != b]
    assert 0.05 <= len(diff) / 2000 <= 0.15, len(diff)
    assert all(a.isalpha() and b.isalpha() and a.isupper() == b.isupper() for a, b in diff)
    assert [c.isupper() for c in out] == [c.isupper() for c in text]
    assert re.sub(r"[A-Za-z]", "x", out) == re.sub(r"[A-Za-z]", "x", text)
    # at least one change, even on a short text where no letter is drawn
    for s in range(20):
        assert run("change_char", "Hi", seed=s) != "Hi"
    assert run("change_char", "123 ...") == "123 ..."
    assert run("change_char", text, seed=5) == run("change_char", text, seed=5)


def test_add_text_counts_and_list():
    assert len(rb.NEUTRAL_WORDS) >= 180 and len(set(rb.NEUTRAL_WORDS)) == len(rb.NEUTRAL_WORDS)
    assert not set(rb.NEUTRAL_WORDS) & set(rb.GENDER_MAP)
    text = " ".join(["word"] * 25) + "."
    for fraction, n in ((0.1, 3), (0.2, 5), (0.01, 1), (1.0, 25)):  # round(2.5) -> 3, half up
        out = run("add_text", text, fraction=fraction)
        assert out.startswith(text + " ")
        added = out[len(text) + 1:].split(" ")
        assert len(added) == n and set(added) <= set(rb.NEUTRAL_WORDS)
    assert len(run("add_text", "Hi!").split()) == 2
    assert run("add_text", text, seed=4) == run("add_text", text, seed=4)
    assert len({run("add_text", text, seed=s) for s in range(5)}) > 1


def test_same_seed_same_output():
    for name in ("change_char", "add_text", "drop_first", "drop_last"):
        assert apply_perturbation(name, TEXTS, seed=3).texts == apply_perturbation(name, TEXTS, seed=3).texts


@pytest.mark.parametrize("name", ["drop_first", "drop_last", "change_char", "add_text",
                                  pytest.param("drop_nouns", marks=needs_tagger)])
def test_detectable(name):
    rate = apply_perturbation(name, TEXTS).change_rate
    assert rate >= 0.9, f"{name} changed {rate:.3f} of the texts"


@needs_tagger
def test_detectable_pos():
    rate = apply_perturbation("drop_verbs", TEXTS).change_rate
    assert rate >= 0.5, f"drop_verbs changed {rate:.3f} of the texts"
    out = apply_perturbation("gender_swap", TEXTS)
    gendered = np.array([g for _, g in SENTENCES])
    assert out.changed.tolist() == gendered.tolist()
    assert out.change_rate == pytest.approx(gendered.mean()), f"gender_swap rate {out.change_rate:.3f}"


def test_drop_words_tidies_punctuation():
    from perturblab.perturb.text import WordText

    wt = WordText.from_text("A cat (grey) sat , here ; then left.")
    assert rb.drop_words(wt, [2]) == "A cat sat , here ; then left."  # untouched spacing stays
    assert rb.drop_words(wt, [4]) == "A cat (grey) sat; then left."
    assert rb.drop_words(wt, [3, 4]) == "A cat (grey); then left."
    assert rb.drop_words(wt, [0, 1]) == "(grey) sat , here ; then left."
    assert rb.drop_words(wt, [6]) == "A cat (grey) sat , here ; then."
    assert rb.drop_words(wt, []) == wt.text
