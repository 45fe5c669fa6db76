"""The eight textual perturbations of the learnability study (Zhang, Pan, Tan & Kan,
"Interpreting the Robustness of Neural NLP Models to Textual Perturbations", Sec. 4.1, Fig. 2),
as seeded :class:`~.transformations.Transformation`\\ s registered in the catalogue.

The paper takes six of them from NL-Augmenter (Dhole et al. 2021; its ``whitespace_perturbation``,
``butter_fingers_perturbation``, ``random_upper_transformation``, ``insert_abbreviation``,
``visual_attack_letters`` and ``leet_letters`` transformations) and designs two itself
(``shuffle_word`` and ``duplicate_punctuations``: NL-Augmenter has no transformation of either
name). Defaults follow NL-Augmenter's:

==========================  ==============================================================
``whitespace``              remove (``remove_prob=0.1``) / add (``add_prob=0.05``) spaces
                            (as NL-Augmenter)
``shuffle_word``            random permutation of the whitespace-separated tokens (paper's own)
``duplicate_punctuations``  ``","`` -> ``",,"`` after each punctuation (``prob=1.0``; paper's own)
``butter_fingers``          letter -> a QWERTY neighbour key (``prob=0.05``, NL-Augmenter's
                            nominal rate; see :class:`ButterFingers` for how its draw differs)
``random_upper``            ``int(0.1 * len(text))`` positions upper-cased
                            (``corrupt_proportion=0.1``, as NL-Augmenter; ``prob=0.1`` per
                            lower-case letter was our earlier rule)
``insert_abbreviation``     known word/phrase -> abbreviation (every match, as NL-Augmenter;
                            our own, smaller table)
``visual_attack_letters``   letter -> visually similar character (``prob=0.5`` per letter, as
                            NL-Augmenter's ``perturb_pct``; 0.3 was our earlier default; our
                            own, smaller look-alike table)
``leet_letters``            ``int(0.5 * len(text))`` draws, with replacement, of the positions
                            that have a leet digit in NL-Augmenter's table (``max_leet=0.5``,
                            ``table="nlaugmenter"``); ``prob=0.3, table="classic"`` gives our
                            earlier rule (0.3 per letter of :data:`LEET`)
==========================  ==============================================================

Probabilities are per character (per match for ``insert_abbreviation``); the paper's own
"perturbation probability" (the share of perturbed examples) is applied outside, e.g. by
the learnability estimator. Implementations are our own; every random choice
uses the ``numpy.random.Generator`` passed in, and texts nothing applies to come back
unchanged. Importing this module registers the classes themselves as the factories
(keyword parameters with the defaults above; each call gives a new instance).
"""

from __future__ import annotations

import math
import re
import string
from numbers import Real

import numpy as np

from ..errors import InputError
from .perturbations import register_perturbation
from .transformations import Transformation

__all__ = ["PUNCTUATION", "QWERTY_NEIGHBOURS", "ABBREVIATIONS", "HOMOGLYPHS", "LEET",
           "WhitespaceNoise", "ShuffleWords", "DuplicatePunctuation", "ButterFingers",
           "RandomUpper", "InsertAbbreviation", "VisualAttackLetters", "LeetLetters", "LEET_NLAUGMENTER",
           "LEET_TABLES"]

#: Characters :class:`DuplicatePunctuation` doubles: ASCII punctuation plus common unicode
#: quotes, dashes, ellipsis and Spanish marks.
PUNCTUATION: frozenset[str] = frozenset(string.punctuation + "\u2018\u2019\u201a\u201c\u201d\u201e"
                                        "\u00ab\u00bb\u2039\u203a\u2013\u2014\u2026\u00a1\u00bf")

#: Keys touching each letter key on a US QWERTY keyboard (symmetric relation).
QWERTY_NEIGHBOURS: dict[str, str] = {
    "q": "wa", "w": "qeasd", "e": "wrsdf", "r": "etdfg", "t": "ryfgh", "y": "tughj",
    "u": "yihjk", "i": "uojkl", "o": "ipkl", "p": "ol",
    "a": "qwsz", "s": "weadzx", "d": "wersfxc", "f": "ertdgcv", "g": "rtyfhvb",
    "h": "tyugjbn", "j": "yuihknm", "k": "uiojlm", "l": "iokp",
    "z": "asx", "x": "zsdc", "c": "xdfv", "v": "cfgb", "b": "vghn", "n": "bhjm", "m": "njk",
}

#: Words and phrases (lower case, single spaces) -> abbreviation. Lower-case abbreviations
#: take a capital when the matched text starts with one ("Please" -> "Pls").
ABBREVIATIONS: dict[str, str] = {
    # phrases
    "as soon as possible": "ASAP", "by the way": "BTW", "for your information": "FYI",
    "laugh out loud": "LOL", "laughing out loud": "LOL", "in my opinion": "IMO",
    "in my humble opinion": "IMHO", "to be honest": "TBH", "oh my god": "OMG",
    "talk to you later": "TTYL", "be right back": "BRB", "i don't know": "IDK",
    "i do not know": "IDK", "as far as i know": "AFAIK", "in real life": "IRL",
    "for what it's worth": "FWIW", "never mind": "nvm", "got to go": "G2G",
    "thank you": "ty", "thank you very much": "TYVM", "let me know": "LMK",
    "in other words": "IOW", "on the other hand": "OTOH", "best friends forever": "BFF",
    "frequently asked questions": "FAQ", "do it yourself": "DIY", "for example": "e.g.",
    "and so on": "etc.", "at the moment": "atm", "right now": "rn", "no problem": "np",
    "see you later": "cya", "just kidding": "jk", "hope this helps": "HTH",
    "not gonna lie": "NGL", "on my way": "OMW", "to be determined": "TBD",
    "if i recall correctly": "IIRC", "too much information": "TMI", "with respect to": "w.r.t.",
    "end of day": "EOD", "rolling on the floor laughing": "ROFL",
    # words
    "you": "u", "your": "ur", "you're": "ur", "are": "r", "because": "bc", "tomorrow": "tmrw",
    "today": "2day", "tonight": "2nite", "please": "pls", "people": "ppl", "without": "w/o",
    "with": "w/", "thanks": "thx", "between": "btwn", "information": "info", "before": "b4",
    "great": "gr8", "later": "l8r", "message": "msg", "messages": "msgs", "really": "rly",
    "okay": "ok", "something": "smth", "everyone": "every1", "anyone": "any1",
    "someone": "some1", "though": "tho", "through": "thru", "about": "abt", "minute": "min",
    "minutes": "mins", "weekend": "wknd", "favorite": "fav", "favourite": "fav",
    "definitely": "def", "whatever": "w/e", "love": "luv", "night": "nite",
    "birthday": "bday", "government": "govt", "department": "dept", "approximately": "approx",
    "versus": "vs", "especially": "esp", "picture": "pic", "pictures": "pics",
    "problem": "prob", "probably": "prob", "conversation": "convo", "document": "doc",
    "documents": "docs", "application": "app", "television": "TV", "year": "yr",
    "years": "yrs", "hour": "hr", "hours": "hrs", "friend": "frnd", "friends": "frnds",
    "seriously": "srsly", "obviously": "obv", "congratulations": "congrats",
}

#: Visually similar characters per letter: Cyrillic/Greek look-alikes first, then
#: accented or dotted forms (all single code points, none equal to the letter).
HOMOGLYPHS: dict[str, str] = {
    "a": "\u0430\u0251àáâäå", "b": "\u044c\u0185ḃḅ", "c": "\u0441\u03f2çćčĉċ",
    "d": "\u0501ďḋḍ", "e": "\u0435èéêëēėę", "f": "ḟƒ", "g": "\u0261ġğǧģ",
    "h": "\u04bbĥḣḥ", "i": "\u0456\u0269íìîïīį", "j": "\u0458ĵǰ", "k": "\u03baķḳḱ",
    "l": "\u04cfĺļľḷ", "m": "ṁṃḿ", "n": "ńňñņṅ", "o": "\u043e\u03bfòóôöõō",
    "p": "\u0440\u03c1ṗ", "q": "\u051b\u024b", "r": "ŕřŗṙ", "s": "\u0455śšşŝ", "t": "ťţṫṭ",
    "u": "\u03c5ùúûüūů", "v": "\u03bd\u0475ṽ", "w": "\u051dŵẁẃẅ", "x": "\u0445\u03c7ẋ",
    "y": "\u0443ýÿŷ", "z": "źżžẓ",
    "A": "\u0410\u0391ÀÁÂÄÅ", "B": "\u0412\u0392Ḃ", "C": "\u0421\u03f9ÇĆČ", "D": "ĎḊḌ",
    "E": "\u0415\u0395ÈÉÊË", "F": "Ḟ\u03dc", "G": "ĜĞĠĢ", "H": "\u041d\u0397ĤḢ",
    "I": "\u0406\u0399ÍÌÎÏ", "J": "\u0408Ĵ", "K": "\u041a\u039aĶ", "L": "ĹĻĽḶ",
    "M": "\u041c\u039cṀ", "N": "\u039dÑŃŇ", "O": "\u041e\u039fÓÒÔÖ", "P": "\u0420\u03a1Ṗ",
    "Q": "\u051a", "R": "ŔŘŖṘ", "S": "\u0405ŚŠŞ", "T": "\u0422\u03a4ŤŢ", "U": "ÙÚÛÜŪ",
    "V": "\u0474Ṽ", "W": "\u051cŴẀẂ", "X": "\u0425\u03a7Ẋ", "Y": "\u04ae\u03a5ÝŸ",
    "Z": "\u0396ŹŻŽ",
}

#: Leet digit per letter (applied to both cases): our earlier table, ``table="classic"``.
LEET: dict[str, str] = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7", "l": "1",
                        "g": "9", "b": "8", "z": "2"}

#: NL-Augmenter's ``leet_letters`` table (after simple.wikipedia.org/wiki/Leet), case-sensitive:
#: lower-case a, i, l, s, t have no entry there, upper-case ones do. Its two-character key
#: ``"∩∩"`` is left out: NL-Augmenter looks characters up one at a time, so it never applies.
LEET_NLAUGMENTER: dict[str, str] = {
    "!": "1", "7": "1", "|": "1",
    "A": "4", "B": "8", "C": "0", "D": "0", "E": "3", "G": "6", "I": "1", "J": "9", "L": "7",
    "N": "11", "O": "0", "S": "5", "T": "7", "X": "8", "Z": "2",
    "b": "6", "e": "3", "g": "9", "h": "4", "j": "7", "m": "3", "o": "0", "w": "3", "y": "4",
    "\u0398": "0", "\u03b5": "3", "\u03c9": "3", "\u2208": "3",
}

#: Named leet tables for :class:`LeetLetters` (``classic`` maps both cases of each letter).
LEET_TABLES: dict[str, dict[str, str]] = {
    "nlaugmenter": LEET_NLAUGMENTER,
    "classic": {**LEET, **{k.upper(): v for k, v in LEET.items()}},
}


def _check_prob(owner: str, param: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        raise InputError(f"{owner} {param}={value!r}: give a probability between 0 and 1")
    return float(value)


def _check_rate(owner: str, param: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
        raise InputError(f"{owner} {param}={value!r}: give a finite number >= 0 (a share of the text length)")
    return float(value)


class _CharNoise(Transformation):
    """Each eligible character independently replaced with probability ``prob``."""

    #: whether at ``prob == 1`` the output is fixed (the replacement draws nothing)
    exact: bool = False

    def __init__(self, prob: float):
        self.prob = _check_prob(type(self).__name__, "prob", prob)
        self.deterministic = self.prob == 0 or (self.prob == 1 and self.exact)

    def _eligible(self, c: str) -> bool: ...  # whether ``c`` may be replaced

    def _replace(self, c: str, rng: np.random.Generator) -> str: ...  # its replacement

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        if self.prob == 0 or not text:
            return text
        draws = rng.random(len(text)) if self.prob < 1 else np.zeros(len(text))
        return "".join(self._replace(c, rng) if self._eligible(c) and u < self.prob else c
                       for c, u in zip(text, draws))


@register_perturbation("whitespace")
class WhitespaceNoise(Transformation):
    """Randomly remove or add spaces ("whitespace_perturbation", Sec. 4.1).

    Per character: a space is deleted with probability ``remove_prob`` (default 0.1); after
    a non-space character a space is inserted with probability ``add_prob`` (default 0.05).
    Only ``" "`` is touched, so ``text.replace(" ", "")`` never changes. NL-Augmenter's
    ``whitespace_perturbation`` has the same rates and one draw per character; it treats every
    whitespace character (tabs, newlines) as a space, which makes no difference on one-line text.
    """

    name = "whitespace"

    def __init__(self, remove_prob: float = 0.1, add_prob: float = 0.05):
        self.remove_prob = _check_prob("WhitespaceNoise", "remove_prob", remove_prob)
        self.add_prob = _check_prob("WhitespaceNoise", "add_prob", add_prob)
        self.deterministic = self.remove_prob in (0.0, 1.0) and self.add_prob in (0.0, 1.0)

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        if not text or (self.remove_prob == 0 and self.add_prob == 0):
            return text
        out = []
        for c, u in zip(text, rng.random(len(text))):
            if c != " ":
                out.append(c + " " if u < self.add_prob else c)
            elif u >= self.remove_prob:
                out.append(c)
        return "".join(out)


@register_perturbation("shuffle_word")
class ShuffleWords(Transformation):
    """Random permutation of the word order ("shuffle_word", Sec. 4.1; Moradi & Samwald 2021).

    Tokens are the whitespace-separated pieces (punctuation stays attached to its word);
    the whitespace between them stays in place. With at least two distinct tokens the
    permutation is redrawn (up to 100 times, then two distinct tokens are exchanged) until
    the text differs; other texts come back unchanged.
    """

    name = "shuffle_word"
    deterministic = False

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        parts = re.split(r"(\s+)", text)
        idx = [i for i in range(0, len(parts), 2) if parts[i]]  # odd parts are whitespace
        tokens = [parts[i] for i in idx]
        if len(set(tokens)) < 2:
            return text
        for _ in range(100):
            new = [tokens[j] for j in rng.permutation(len(tokens))]
            if new != tokens:
                break
        else:  # practically unreachable (P <= 2**-100): exchange the first distinct pair
            j = next(k for k in range(1, len(new)) if new[k] != new[0])
            new[0], new[j] = new[j], new[0]
        for i, w in zip(idx, new):
            parts[i] = w
        return "".join(parts)


@register_perturbation("duplicate_punctuations")
class DuplicatePunctuation(_CharNoise):
    """Append a copy after punctuation characters ("duplicate_punctuations", Sec. 4.1).

    Each character of :data:`PUNCTUATION` is doubled with probability ``prob`` (default
    1.0: every one, ``"Hi, there!"`` -> ``"Hi,, there!!"``).
    """

    name = "duplicate_punctuations"
    exact = True

    def __init__(self, prob: float = 1.0):
        super().__init__(prob)

    def _eligible(self, c):
        return c in PUNCTUATION

    def _replace(self, c, rng):
        return c + c


@register_perturbation("butter_fingers")
class ButterFingers(_CharNoise):
    """Keyboard typos ("butter_fingers_perturbation", Sec. 4.1).

    Each ASCII letter is, with probability ``prob`` (default 0.05), replaced by a random
    key of :data:`QWERTY_NEIGHBOURS`, keeping its case; the length never changes.
    NL-Augmenter's ``butter_fingers_perturbation`` passes the same 0.05 but draws
    ``randint(0..99) <= 5`` (6 in 100) and picks from per-key lists that contain the key itself
    and keys two rows away, so about one in ten of its draws leaves the letter as it was (an
    actual change rate of roughly 0.055 per letter); we keep ``prob`` as the change rate and
    only touching keys.
    """

    name = "butter_fingers"

    def __init__(self, prob: float = 0.05):
        super().__init__(prob)

    def _eligible(self, c):
        return c.lower() in QWERTY_NEIGHBOURS

    def _replace(self, c, rng):
        keys = QWERTY_NEIGHBOURS[c.lower()]
        k = keys[int(rng.integers(len(keys)))]
        return k.upper() if c.isupper() else k


@register_perturbation("random_upper")
class RandomUpper(_CharNoise):
    """Random upper-case letters ("random_upper_transformation", Sec. 4.1; Wei & Zou 2019).

    Default, as NL-Augmenter's ``RandomUpperPerturbation`` (``corrupt_proportion=0.1``):
    ``int(corrupt_proportion * len(text))`` distinct positions are drawn uniformly from the
    whole text and upper-cased, so spaces, digits, punctuation and capitals drawn stay as they
    are (on English prose about three in four draws hit a lower-case letter).

    With ``prob`` given, each lower-case letter is instead upper-cased independently with
    probability ``prob`` (``prob=0.1`` was our earlier default; ``prob=1`` gives
    ``text.upper()``).
    """

    name = "random_upper"
    exact = True

    def __init__(self, corrupt_proportion: float = 0.1, prob: float | None = None):
        self.corrupt_proportion = _check_prob("RandomUpper", "corrupt_proportion", corrupt_proportion)
        if prob is not None:
            super().__init__(prob)
        else:
            self.prob = None
            self.deterministic = self.corrupt_proportion == 0

    def _eligible(self, c):
        return c.islower()

    def _replace(self, c, rng):
        return c.upper()

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        if self.prob is not None:
            return super().__call__(text, rng)
        k = int(self.corrupt_proportion * len(text))
        if k == 0:
            return text
        chars = list(text)
        for i in rng.choice(len(text), size=k, replace=False):
            chars[i] = chars[i].upper()
        return "".join(chars)


@register_perturbation("insert_abbreviation")
class InsertAbbreviation(Transformation):
    """Replace known words and phrases by abbreviations ("insert_abbreviation", Sec. 4.1).

    Entries of ``table`` (default :data:`ABBREVIATIONS`) match as whole words,
    case-insensitively, across any whitespace, ``'`` also matching ``’``; at each position
    the longest phrase wins. Each match is replaced with probability ``prob`` (default 1.0;
    a match left alone is not searched again for shorter entries inside it). Lower-case
    abbreviations are capitalised when the match starts with a capital. NL-Augmenter's
    ``insert_abbreviation`` (English rules) likewise replaces every match, from a rule file of
    about 1,860 distinct entries (country codes, chat slang); :data:`ABBREVIATIONS` is our own,
    smaller table (about 100 entries).
    """

    name = "insert_abbreviation"

    def __init__(self, prob: float = 1.0, table: dict[str, str] | None = None):
        self.prob = _check_prob("InsertAbbreviation", "prob", prob)
        self.deterministic = self.prob in (0.0, 1.0)
        table = ABBREVIATIONS if table is None else table
        if not isinstance(table, dict) or not table:
            raise InputError("InsertAbbreviation table: give a non-empty dict phrase -> abbreviation")
        self.table: dict[str, str] = {}
        for k, v in table.items():
            key = " ".join(str(k).lower().replace("\u2019", "'").split())
            if not key or not isinstance(v, str) or not v:
                raise InputError(f"InsertAbbreviation table entry {k!r}: {v!r}: give non-empty strings")
            self.table[key] = v
        alts = [r"\s+".join(re.escape(w).replace("'", "['\u2019]") for w in key.split())
                for key in sorted(self.table, key=lambda s: (-len(s), s))]
        self._pattern = re.compile(r"(?<![\w'\u2019])(?:" + "|".join(alts) + r")(?![\w'\u2019])",
                                   re.IGNORECASE)

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        if self.prob == 0:
            return text

        def sub(m: re.Match[str]) -> str:
            if self.prob < 1 and rng.random() >= self.prob:
                return m.group()
            abbr = self.table[" ".join(m.group().lower().replace("\u2019", "'").split())]
            if abbr == abbr.lower() and m.group()[0].isupper():
                abbr = abbr[0].upper() + abbr[1:]
            return abbr

        return self._pattern.sub(sub, text)


@register_perturbation("visual_attack_letters")
class VisualAttackLetters(_CharNoise):
    """Look-alike letters ("visual_attack_letters", Sec. 4.1; Eger et al. 2019).

    Each letter of :data:`HOMOGLYPHS` (a-z, A-Z) is, with probability ``prob`` (default 0.5,
    NL-Augmenter's ``perturb_pct``; 0.3 was our earlier default), replaced by one of its
    look-alikes chosen uniformly (Cyrillic/Greek or accented forms; 1 to 8 per letter).
    NL-Augmenter draws from a larger hand-picked table (2 to 58 look-alikes per letter, a few
    digits and symbols among them) and also attacks the look-alikes themselves; on ASCII text
    the same characters are eligible.
    """

    name = "visual_attack_letters"

    def __init__(self, prob: float = 0.5):
        super().__init__(prob)

    def _eligible(self, c):
        return c in HOMOGLYPHS

    def _replace(self, c, rng):
        opts = HOMOGLYPHS[c]
        return opts[int(rng.integers(len(opts)))]


@register_perturbation("leet_letters")
class LeetLetters(_CharNoise):
    """Leet speak ("leet_letters", Sec. 4.1; Eger et al. 2019).

    Default, as NL-Augmenter's ``LeetLetters`` (``max_leet=0.5``): ``int(max_leet * len(text))``
    positions are drawn uniformly *with replacement* among the characters that have an entry
    in ``table`` (default ``"nlaugmenter"``, :data:`LEET_NLAUGMENTER`), and each position drawn
    becomes its leet string, so between 1 and that many distinct characters change (fewer when
    a position is drawn twice). A text with no such character, or shorter than 2 characters at
    ``max_leet=0.5``, comes back unchanged (NL-Augmenter raises an error on the former).

    With ``prob`` given, each character of ``table`` instead becomes its leet string
    independently with probability ``prob``; ``prob=0.3, table="classic"`` is our earlier rule
    (:data:`LEET` on both cases: ``prob=1`` turns ``"Leet speak"`` into ``"1337 5p34k"``).
    ``table`` is a name of :data:`LEET_TABLES` or a dict character -> replacement.
    """

    name = "leet_letters"
    exact = True

    def __init__(self, max_leet: float = 0.5, prob: float | None = None,
                 table: str | dict[str, str] = "nlaugmenter"):
        self.max_leet = _check_rate("LeetLetters", "max_leet", max_leet)
        if isinstance(table, str):
            if table not in LEET_TABLES:
                raise InputError(f"LeetLetters table={table!r}: give one of {', '.join(LEET_TABLES)} "
                                 "or a dict character -> replacement")
            table = LEET_TABLES[table]
        if not isinstance(table, dict) or not table or not all(
                isinstance(k, str) and len(k) == 1 and isinstance(v, str) and v for k, v in table.items()):
            raise InputError("LeetLetters table: give a non-empty dict of single characters -> non-empty strings")
        self.table: dict[str, str] = dict(table)
        if prob is not None:
            super().__init__(prob)
        else:
            self.prob = None
            self.deterministic = self.max_leet == 0

    def _eligible(self, c):
        return c in self.table

    def _replace(self, c, rng):
        return self.table[c]

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        if self.prob is not None:
            return super().__call__(text, rng)
        k = int(self.max_leet * len(text))
        candidates = [i for i, c in enumerate(text) if c in self.table]
        if k == 0 or not candidates:
            return text
        chars = list(text)
        for j in rng.integers(len(candidates), size=k):
            i = candidates[j]
            chars[i] = self.table[text[i]]
        return "".join(chars)
