"""The eight perturbations of the learnability study (perturblab.perturb.noise)."""

from __future__ import annotations

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.perturb import noise
from perturblab.perturb.catalogue import PERTURBATIONS, apply_perturbation, get_perturbation

NAMES = ["whitespace", "shuffle_word", "duplicate_punctuations", "butter_fingers", "random_upper",
         "insert_abbreviation", "visual_attack_letters", "leet_letters"]
RANDOM = ["whitespace", "shuffle_word", "butter_fingers", "random_upper", "visual_attack_letters",
          "leet_letters"]
LONG = ("The film opens with a long, quiet shot of the harbour at dawn, and for the next two hours "
        "it never quite lets you forget how beautiful and lonely that town really is, because "
        "every scene is framed with such patience and care that the actors seem almost secondary.")

SENTENCES = [
    "This movie was a complete waste of time and money.",
    "I loved every minute of it, especially the soundtrack.",
    "The acting is wooden and the plot makes no sense at all.",
    "A charming little film that will make you smile.",
    "The service at this restaurant was slow, but the food was excellent.",
    "We waited forty minutes for a table and nobody apologized.",
    "Honestly, the best pizza I have had in years!",
    "The hotel room was clean, quiet and surprisingly spacious.",
    "How do I learn to play the guitar without a teacher?",
    "What is the best way to prepare for a job interview?",
    "Why do cats like to sit in cardboard boxes?",
    "The sequel is darker, funnier and much better written than the original.",
    "My kids fell asleep halfway through, and so did I.",
    "The director clearly cares about these characters.",
    "Our waiter recommended the fish, and it was perfectly cooked.",
    "Prices are high for what you get, so I would not come back.",
    "The special effects still hold up remarkably well today.",
    "It is a slow burn, but the ending is worth the wait.",
    "Can someone explain why the sky looks blue during the day?",
    "The staff were friendly and the coffee was strong.",
    "I expected a comedy and got a two-hour lecture instead.",
    "Great performances from the whole cast, especially the lead actress.",
    "The parking lot was full, so we had to walk three blocks.",
    "Is it safe to travel to the mountains in winter?",
    "The dialogue feels forced and the jokes fall flat.",
    "We ordered dessert twice because the chocolate cake was that good.",
    "This is the kind of movie you watch once and forget.",
    "The battery life of this phone is disappointing.",
    "She delivers a quiet, devastating performance in the final act.",
    "The noodles were cold and the soup was far too salty.",
    "What are some good books for learning about economics?",
    "The cinematography alone makes this film worth seeing.",
    "After the renovation, the place feels bright and welcoming.",
    "Nothing happens for the first hour, and then everything happens at once.",
    "Please tell me how to fix a leaking kitchen tap.",
    "The soundtrack is memorable, but the story is thin.",
    "Our flight was delayed, yet the crew kept everyone calm and informed.",
    "I would recommend this place to anyone who loves spicy food.",
    "The second half drags, although the twist at the end is clever.",
    "Where can I find cheap tickets for the concert next weekend?",
]


def run(name: str, text: str, seed: int = 0, **params) -> str:
    return get_perturbation(name, **params)(text, np.random.default_rng(seed))


def test_all_registered_and_fresh_instances():
    assert set(NAMES) <= set(PERTURBATIONS.names())
    for name in NAMES:
        a, b = get_perturbation(name), get_perturbation(name)
        assert a is not b and a.name == name
        assert PERTURBATIONS.describe()[name]  # a one-line description from the docstring


def test_duplicate_punctuations_exact():
    assert run("duplicate_punctuations", "Hi, there!") == "Hi,, there!!"
    assert run("duplicate_punctuations", "Wait\u2026 \u201cwhat\u201d?") == \
        "Wait\u2026\u2026 \u201c\u201cwhat\u201d\u201d??"
    assert run("duplicate_punctuations", "no punctuation here") == "no punctuation here"
    assert get_perturbation("duplicate_punctuations").deterministic
    text = "a,b.c;d:e!f?g-h(i)j" * 5  # 45 punctuation characters
    half = run("duplicate_punctuations", text, prob=0.5)
    assert len(text) < len(half) < len(text) + 45  # some doubled, not all
    assert "".join(dict.fromkeys(half)) == "".join(dict.fromkeys(text))  # nothing else added


def test_insert_abbreviation_exact():
    text = ("Please call me as soon as possible because you are late, by the way. "
            "For your information, people without tickets laughed out loud with thanks.")
    assert run("insert_abbreviation", text) == (
        "Pls call me ASAP bc u r late, BTW. FYI, ppl w/o tickets laughed out loud w/ thx.")
    # whole words only, case-insensitive, across extra whitespace and curly apostrophes
    assert run("insert_abbreviation", "Your youth; ARE you\u2019re  by   the way") == "Ur youth; R ur  BTW"
    assert run("insert_abbreviation", "Nothing to see here.") == "Nothing to see here."
    assert len(noise.ABBREVIATIONS) >= 60


def test_leet_and_upper_exact():
    assert run("leet_letters", "Leet speak is GREAT", prob=1) == "1337 5p34k 15 9R347"
    assert get_perturbation("leet_letters", prob=1).deterministic
    assert not get_perturbation("leet_letters").deterministic
    assert run("random_upper", LONG, prob=1) == LONG.upper()
    assert run("leet_letters", "hummm...", prob=1) == "hummm..."


def test_butter_fingers_neighbours_only():
    q = noise.QWERTY_NEIGHBOURS
    assert sorted(q) == list("abcdefghijklmnopqrstuvwxyz")
    assert all(a in q[b] and a != b for a in q for b in q[a])  # symmetric, irreflexive
    out = run("butter_fingers", LONG, prob=0.5)
    assert len(out) == len(LONG) and out != LONG
    for o, n in zip(LONG, out):
        if o != n:
            assert o.isalpha() and n.lower() in q[o.lower()] and o.isupper() == n.isupper()
    caps = run("butter_fingers", "ABC def", prob=1)
    assert caps[:3].isupper() and caps[4:].islower() and caps[3] == " "


def test_whitespace_only_spaces():
    for seed in range(5):
        out = run("whitespace", LONG, seed=seed)
        assert out != LONG and out.replace(" ", "") == LONG.replace(" ", "")
    assert run("whitespace", "a b c", remove_prob=1, add_prob=0) == "abc"
    assert run("whitespace", "ab c", remove_prob=0, add_prob=1) == "a b  c "


def test_shuffle_word_permutes_tokens():
    for seed in range(10):
        out = run("shuffle_word", "Hi, there! How are you?", seed=seed)
        assert out != "Hi, there! How are you?"
        assert sorted(out.split(" ")) == sorted("Hi, there! How are you?".split(" "))
    assert run("shuffle_word", "a  b\nc", seed=1).count("\n") == 1  # whitespace stays put
    assert run("shuffle_word", "same same same") == "same same same"
    assert run("shuffle_word", "Hello.") == "Hello."
    assert run("shuffle_word", "") == ""


def test_visual_attack_changes_letters_to_table_entries():
    for k, v in noise.HOMOGLYPHS.items():
        assert len(v) >= 1 and k not in v and len(set(v)) == len(v)
    assert set(noise.HOMOGLYPHS) == set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    out = run("visual_attack_letters", LONG)
    assert len(out) == len(LONG) and out != LONG
    for o, n in zip(LONG, out):
        if o != n:
            assert n in noise.HOMOGLYPHS[o]
    full = run("visual_attack_letters", "abcxyz ABC", prob=1)
    assert all(o != n for o, n in zip("abcxyzABC", full.replace(" ", "")))
    assert "\u0430" in {run("visual_attack_letters", "a", seed=s, prob=1) for s in range(50)}


@pytest.mark.parametrize("name", RANDOM + ["insert_abbreviation", "duplicate_punctuations"])
def test_seeding(name):
    params = {"prob": 0.5} if name in ("insert_abbreviation", "duplicate_punctuations") else {}
    text = LONG if name != "insert_abbreviation" else " ".join(["you are with people"] * 8)
    a, b = run(name, text, 3, **params), run(name, text, 3, **params)
    assert a == b
    assert run(name, text, 4, **params) != a


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("shuffle_word", "whitespace")])
def test_prob_zero_is_identity_and_bad_params(name):
    assert run(name, LONG, prob=0) == LONG
    assert get_perturbation(name, prob=0).deterministic
    for bad in (-0.1, 1.5, float("nan"), "0.5", True, None):
        with pytest.raises(InputError, match="prob"):
            get_perturbation(name, prob=bad)


def test_whitespace_and_shuffle_params():
    assert run("whitespace", LONG, remove_prob=0, add_prob=0) == LONG
    with pytest.raises(InputError, match="remove_prob"):
        get_perturbation("whitespace", remove_prob=2)
    with pytest.raises(InputError, match="add_prob"):
        get_perturbation("whitespace", add_prob=-1)
    with pytest.raises(TypeError):
        get_perturbation("shuffle_word", prob=0.5)
    with pytest.raises(InputError, match="table"):
        noise.InsertAbbreviation(table={})


@pytest.mark.parametrize("name", NAMES)
def test_empty_and_inapplicable_texts_unchanged(name):
    assert run(name, "") == ""
    assert run(name, "12345") == "12345" or name == "whitespace"


@pytest.mark.parametrize("name", NAMES)
def test_detectability_with_defaults(name):
    assert len(SENTENCES) == 40
    rate = apply_perturbation(name, SENTENCES, seed=0).change_rate
    # butter_fingers at 0.05 per letter changes a sentence of n letters with probability
    # 1 - 0.95**n, on average 0.897 over these (34-62 letters), so 0.9 cannot be demanded
    floor = {"insert_abbreviation": 0.3, "butter_fingers": 0.8}.get(name, 0.9)
    assert rate >= floor, f"{name}: change rate {rate:.3f} < {floor} on {len(SENTENCES)} sentences"


def test_butter_fingers_rate_matches_per_letter_probability():
    n = np.array([sum(c.isascii() and c.isalpha() for c in s) for s in SENTENCES])
    expected = float(np.mean(1 - 0.95 ** n))
    rates = [apply_perturbation("butter_fingers", SENTENCES, seed=s).change_rate for s in range(5)]
    assert abs(np.mean(rates) - expected) < 0.05, (rates, expected)
