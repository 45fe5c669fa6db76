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
    # our earlier table: every letter of a e i o s t l g b z, either case
    assert run("leet_letters", "Leet speak is GREAT", prob=1, table="classic") == "1337 5p34k 15 9R347"
    assert run("leet_letters", "hummm...", prob=1, table="classic") == "hummm..."
    # NL-Augmenter's table is case-sensitive: L E G A T but not lower-case t s p a k i
    assert run("leet_letters", "Leet speak is GREAT", prob=1) == "733t sp3ak is 6R347"
    assert run("leet_letters", "hummm...", prob=1) == "4u333..."
    assert get_perturbation("leet_letters", prob=1).deterministic
    assert not get_perturbation("leet_letters").deterministic
    assert get_perturbation("leet_letters", max_leet=0).deterministic
    assert run("random_upper", LONG, prob=1) == LONG.upper()


def test_leet_default_draws_half_the_length_with_replacement():
    # int(0.5 * len) draws among the eligible positions: with one eligible character it is
    # always hit once the text has 2+ characters; a 1-character text gets int(0.5) = 0 draws
    assert run("leet_letters", "xxxxxxxxxo") == "xxxxxxxxx0"
    assert run("leet_letters", "o") == "o"
    # "ho": one draw, so exactly one of h -> 4, o -> 0; both occur over seeds
    outs = {run("leet_letters", "ho", seed=s) for s in range(40)}
    assert outs == {"4o", "h0"}
    # "eeee eeee" (9 characters): 4 draws among 8 positions, so 1 to 4 distinct positions change
    counts = [run("leet_letters", "eeee eeee", seed=s).count("3") for s in range(200)]
    assert min(counts) >= 1 and max(counts) == 4
    # with replacement: the expected number of distinct positions hit by k draws among n is
    # n * (1 - (1 - 1/n)**k) = 8 * (1 - (7/8)**4) = 3.3105; without replacement it would be 4.
    # Exactly, P(1, 2, 3, 4 distinct) = (8, 392, 2016, 1680) / 8**4, so the count's s.d. is
    # 0.646 and the mean of 200 has s.d. 0.046; 0.2 is over 4 s.d.
    assert abs(np.mean(counts) - 8 * (1 - (7 / 8) ** 4)) < 0.2
    # every change is a table entry at an eligible position; no more than int(0.5*len) of them
    out = run("leet_letters", LONG, seed=5)
    changed = [(o, n) for o, n in zip(LONG, out) if o != n]
    assert len(out) == len(LONG) and 0 < len(changed) <= len(LONG) // 2
    assert all(noise.LEET_NLAUGMENTER[o] == n for o, n in changed)


def test_leet_and_upper_params():
    with pytest.raises(InputError, match="max_leet"):
        get_perturbation("leet_letters", max_leet=-1)
    with pytest.raises(InputError, match="table"):
        get_perturbation("leet_letters", table="nonesuch")
    with pytest.raises(InputError, match="table"):
        get_perturbation("leet_letters", table={"ab": "4"})
    assert run("leet_letters", "abc", prob=1, table={"b": "8"}) == "a8c"
    with pytest.raises(InputError, match="corrupt_proportion"):
        get_perturbation("random_upper", corrupt_proportion=1.5)


def test_random_upper_default_is_a_fixed_count_of_positions():
    # int(0.1 * len) distinct positions upper-cased: 5 of 50 lower-case letters, exactly
    for seed in range(5):
        assert sum(c.isupper() for c in run("random_upper", "a" * 50, seed=seed)) == 5
    assert run("random_upper", "abcdefghi") == "abcdefghi"  # int(0.9) = 0 positions
    # positions that are spaces or capitals are drawn too and stay as they are: at most
    # int(0.1 * len) letters change, and only lower -> upper
    out = run("random_upper", LONG, seed=2)
    changed = [(o, n) for o, n in zip(LONG, out) if o != n]
    assert 0 < len(changed) <= len(LONG) // 10 and all(n == o.upper() for o, n in changed)


def test_visual_attack_default_rate_is_one_half():
    # NL-Augmenter's perturb_pct = 0.5: over M eligible letters the changed share is
    # Binomial(M, 0.5) / M with s.d. 0.5 / sqrt(M) (every look-alike differs from its letter)
    letters = sum(c in noise.HOMOGLYPHS for c in LONG)
    changed = sum(o != n for s in range(10) for o, n in zip(LONG, run("visual_attack_letters", LONG, seed=s)))
    m = 10 * letters
    assert m > 2000
    assert abs(changed / m - 0.5) < 4 * 0.5 / np.sqrt(m)  # 4 s.d., about 0.044
    old = sum(o != n for s in range(10) for o, n in zip(LONG, run("visual_attack_letters", LONG, seed=s, prob=0.3)))
    assert abs(old / m - 0.3) < 4 * np.sqrt(0.3 * 0.7 / m)


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
    bads = (-0.1, 1.5, float("nan"), "0.5", True)
    if name not in ("leet_letters", "random_upper"):  # there prob=None is NL-Augmenter's count rule
        bads += (None,)
    for bad in bads:
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
