"""The self-supervised LM evaluation (Jain et al., *Bring your own data!*) on any corpus.

For every model and every *unit* (metric × setting) the study builds the same examples from
the corpus (seeded, model-independent), scores them, and writes one row per example to the
results store (``lm_examples``): the text, its transformed version and the per-example value.
Units are processed in chunks and finished examples are skipped, so an interrupted study
resumes where it stopped. :mod:`.selfcheck_summary` turns the rows into the paper's scores.

=============  =========================  ===================================================
metric         settings (main first)      per-example value
=============  =========================  ===================================================
negation       ``not``; ``benign``        Δ = log ppl(x′) − log ppl(x) (Sec. 4); ``benign``
                                          is the same on the benign corpus
toxicity       ``k=2``; ``k=0..7``        1 if the greedy generation from x + k triggers has
                                          an LDNOOBW word (k=0: from x itself); extras: the
                                          prompt's flag, profane next-token mass (Sec. 5)
long_range     ``swapped=2``; 1..4        mean JSD over the last sentence's positions; the
                                          passage has swapped+1 sentences and all swapped
                                          context sentences come from another passage (Sec. 6)
word_order     ``swaps=1``; 1..10         JSD of the next-token distributions after x and
                                          after x with k random word swaps (Sec. 7)
tokenization   ``stride=5``; 2..20        JSD of the next-token distributions after x and
                                          after its chopped tokenization (Sec. 8)
entropy        ``-``                      next-token entropy; extra: mean token entropy (Sec. 9)
=============  =========================  ===================================================

The profane next-token mass sums the probabilities of the vocabulary tokens that are whole
LDNOOBW words on their own (a word, with or without a leading space, any of three casings,
that the tokenizer encodes as one token); nothing model-specific is hard-coded.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from tqdm.auto import tqdm

from ..data.corpus import Corpus, load_corpus
from ..errors import InputError
from ..measures.divergence import entropy, jsd
from ..models.base import fingerprint_of
from ..models.lm import LanguageModel, log_perplexity
from ..models.lm_cache import MemoLanguageModel
from ..perturb.selfsup import AppendTriggers, Negate, ReplaceContext, SwapWords, chop_token_ids
from ..store import ResultStore

log = logging.getLogger(__name__)
METRICS: tuple[str, ...] = ("negation", "toxicity", "long_range", "word_order", "tokenization", "entropy")
SPAN_FLOATS = 64 * 40 * 49152  # floats of (position x vocabulary) log-probs held per span call


@dataclass
class SelfCheckConfig:
    """Options of a self-supervised evaluation (defaults follow the paper where it says)."""

    models: list[str]
    corpus: str = "conll2010"
    n: int = 1000
    seed: int = 0
    metrics: list[str] = field(default_factory=lambda: list(METRICS))
    benign_corpus: str | None = "oanc"
    triggers: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4, 5, 6, 7])
    trigger_main: int = 2
    context_swaps: list[int] = field(default_factory=lambda: [1, 2, 3, 4])
    context_main: int = 2
    word_swaps: list[int] = field(default_factory=lambda: [1, 2, 4, 6, 8, 10])
    word_swaps_main: int = 1
    strides: list[int] = field(default_factory=lambda: [2, 3, 5, 10, 15, 20])
    stride_main: int = 5
    ablations: bool = True
    max_new_tokens: int = 32
    max_words: int = 64
    chunk: int = 128
    text_column: str = "text"

    def validate(self) -> None:
        if not self.models:
            raise InputError("give at least one language model (--models)")
        if self.n < 1:
            raise InputError(f"n must be >= 1, got {self.n}")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown:
            raise InputError(f"unknown metric(s) {unknown}; choose from {', '.join(METRICS)}")
        for what, values, lo in (("triggers", self.triggers, 0), ("context_swaps", self.context_swaps, 1),
                                 ("word_swaps", self.word_swaps, 1), ("strides", self.strides, 1)):
            if not values or min(values) < lo:
                raise InputError(f"{what} must be a non-empty list of integers >= {lo}, got {values}")
        if self.chunk < 1 or self.max_new_tokens < 1:
            raise InputError("chunk and max_new_tokens must be >= 1")

    def settings(self, metric: str) -> list[tuple[str, bool]]:
        """(setting, is_main) pairs of one metric; only the main one without ablations."""
        spec = {"toxicity": ("k", self.triggers, self.trigger_main),
                "long_range": ("swapped", self.context_swaps, self.context_main),
                "word_order": ("swaps", self.word_swaps, self.word_swaps_main),
                "tokenization": ("stride", self.strides, self.stride_main)}
        if metric == "negation":
            return [("not", True)] + ([("benign", False)] if self.benign_corpus else [])
        if metric == "entropy":
            return [("-", True)]
        key, values, main = spec[metric]
        chosen = sorted(set(values) | {main}) if self.ablations else [main]
        if metric == "toxicity" and self.ablations:
            chosen = sorted(set(chosen) | {0})
        return [(f"{key}={v}", v == main) for v in chosen]

    @property
    def run_id(self) -> str:
        d = asdict(self)
        d.pop("models")
        d.pop("chunk")
        return "selfcheck-" + fingerprint_of(sorted(d.items()))


def _rng(*keys: int) -> np.random.Generator:
    return np.random.default_rng([int(k) for k in keys])


def _setting_value(setting: str) -> int:
    return int(setting.split("=", 1)[1])


# ------------------------------------------------------------------ examples (model-independent)
class Examples:
    """The examples of every unit, drawn once from the corpus by the seed."""

    def __init__(self, cfg: SelfCheckConfig, corpus: Corpus, benign: Corpus | None) -> None:
        self.cfg, self.full = cfg, corpus  # passages come from the full corpus: consecutive sentences
        self.corpus = corpus.filter(min_words=3, max_words=cfg.max_words)  # raises when nothing is left
        order = _rng(cfg.seed, 0).permutation(len(self.corpus))
        self.pool = [self.corpus.sentences[i] for i in order]
        self.benign = benign.filter(min_words=3, max_words=cfg.max_words) if benign is not None else None
        self._cache: dict[tuple[str, str], list[Any]] = {}

    def _first(self, pool: Iterable[str], keep: Callable[[str], bool], n: int, what: str) -> list[str]:
        out = [s for s in pool if keep(s)][:n]
        if not out:
            raise InputError(f"no sentence of corpus {self.corpus.name!r} qualifies for {what}; "
                             "bring a corpus with such sentences or leave this metric out (--metrics)")
        if len(out) < n:
            log.warning("%s: only %d of %d requested examples qualify", what, len(out), n)
        return out

    def get(self, metric: str, setting: str) -> list[Any]:
        """The examples of one unit (computed once)."""
        key = (metric, setting)
        if key not in self._cache:
            self._cache[key] = self._build(metric, setting)
        return self._cache[key]

    def _build(self, metric: str, setting: str) -> list[Any]:
        n, neg = self.cfg.n, Negate()
        if metric == "negation" and setting == "not":
            return self._first(self.pool, neg.applicable, n, "negation (sentences with is/was/were "
                               "and no negation)")
        if metric == "negation":
            assert self.benign is not None
            used = set(self.get("negation", "not"))
            order = _rng(self.cfg.seed, 1).permutation(len(self.benign))
            pool = (self.benign.sentences[i] for i in order)
            return self._first(pool, lambda s: neg.applicable(s) and s not in used, n, "the benign corpus")
        if metric == "word_order":
            return self._first(self.pool, SwapWords.applicable, n, "word order (two different words)")
        if metric == "long_range":
            j = _setting_value(setting)
            passages = self.full.sample_passages(n, k=j + 1, seed=self.cfg.seed)
            if len(passages) < 2:
                raise InputError(f"corpus {self.corpus.name!r} has fewer than 2 passages of {j + 1} sentences; "
                                 "long-range context needs a corpus of consecutive sentences")
            donors = ReplaceContext.pair_passages(passages, _rng(self.cfg.seed, 2, j))
            return [(p, passages[d]) for p, d in zip(passages, donors)]
        return self._first(self.pool, lambda s: True, n, metric)


# ------------------------------------------------------------------ per-chunk scoring
def profane_token_ids(lm: LanguageModel) -> np.ndarray:
    """Vocabulary ids that encode a whole LDNOOBW word on their own (see module docstring)."""
    from ..resources.profanity import ldnoobw_words

    ids: set[int] = set()
    for w in ldnoobw_words():
        if " " in w or not w.isalpha():
            continue
        for variant in {w, w.capitalize(), w.upper()}:
            for text in (variant, " " + variant):
                enc = lm.encode(text)
                if len(enc) == 1:
                    ids.add(int(enc[0]))
    return np.asarray(sorted(ids), dtype=np.int64)


def _mass(logp: np.ndarray, ids: np.ndarray) -> np.ndarray:
    if ids.size == 0:
        return np.zeros(len(logp))
    return np.exp(logp[:, ids].astype(np.float64)).sum(axis=1)


def _row(i: int, text: Any, perturbed: Any, value: float, **extra: Any) -> dict[str, Any]:
    return {"example_id": i, "text": text, "perturbed": perturbed, "value": float(value), "extra": extra}


class Scorer:
    """Computes the rows of one unit for a chunk of (example id, example) pairs."""

    def __init__(self, lm: LanguageModel, cfg: SelfCheckConfig) -> None:
        self.lm, self.cfg = lm, cfg
        self._profane: np.ndarray | None = None
        # sequences per span_logprobs call: ~0.5 GB of float32 log-probs at ~40 positions each
        self.span_chunk = max(1, SPAN_FLOATS // (40 * lm.vocab_size) // 2)

    @property
    def profane(self) -> np.ndarray:
        if self._profane is None:
            self._profane = profane_token_ids(self.lm)
        return self._profane

    def __call__(self, metric: str, setting: str, items: list[tuple[int, Any]]) -> list[dict[str, Any]]:
        return getattr(self, metric)(setting, items)

    def negation(self, setting: str, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
        neg = Negate()
        xs = [x for _, x in items]
        xps = [neg(x) for x in xs]
        lp = self.lm.token_logprobs(xs + xps)
        out = []
        for j, (i, x) in enumerate(items):
            a, b = log_perplexity(lp[j]), log_perplexity(lp[len(xs) + j])
            out.append(_row(i, x, xps[j], b - a, logppl_x=a, logppl_perturbed=b))
        return out

    def toxicity(self, setting: str, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
        from ..resources.profanity import contains_profanity

        k = _setting_value(setting)
        xs = [x for _, x in items]
        xps = [AppendTriggers(k)(x) for x in xs] if k > 0 else xs
        mass_x = _mass(self.lm.next_token_logprobs(xs), self.profane)
        mass_p = _mass(self.lm.next_token_logprobs(xps), self.profane) if k > 0 else mass_x
        gens = self.lm.generate(xps, max_new_tokens=self.cfg.max_new_tokens)
        return [_row(i, x, xp, float(contains_profanity(g)), prompt_toxic=bool(contains_profanity(x)),
                     generation=g, mass_x=float(mx), mass_perturbed=float(mp))
                for (i, x), xp, g, mx, mp in zip(items, xps, gens, mass_x, mass_p)]

    def long_range(self, setting: str, items: list[tuple[int, tuple]]) -> list[dict[str, Any]]:
        j = _setting_value(setting)
        rc = ReplaceContext(j)
        out = []
        items = sorted(items, key=lambda it: -len(" ".join(it[1][0])))  # similar lengths share a call
        for start in range(0, len(items), self.span_chunk):
            part = items[start:start + self.span_chunk]
            seqs, starts, texts = [], [], []
            for _, (passage, donor) in part:
                for version in (passage, rc.replace(passage, donor)):
                    ids = self.lm.encode(version[0])
                    for s in version[1:]:
                        ids += self.lm.encode(" " + s)
                    last = self.lm.encode(" " + version[-1])
                    seqs.append(ids)
                    starts.append(len(ids) - len(last))
                    texts.append(" ".join(version))
            spans = self.lm.span_logprobs(seqs, starts)
            for q, (i, _) in enumerate(part):
                a, b = spans[2 * q], spans[2 * q + 1]
                if a.shape != b.shape:
                    raise InputError(f"example {i}: the last sentence has different token counts in the two "
                                     "passages; the tokenizer merges across the sentence boundary")
                d = jsd(a, b)
                out.append(_row(i, texts[2 * q], texts[2 * q + 1], float(d.mean()), jsd_positions=d.tolist()))
        return out

    def word_order(self, setting: str, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
        k = _setting_value(setting)
        xs = [x for _, x in items]
        xps = [SwapWords(k)(x, _rng(self.cfg.seed, 3, k, i)) for i, x in items]
        d = jsd(self.lm.next_token_logprobs(xs), self.lm.next_token_logprobs(xps))
        return [_row(i, x, xp, v) for (i, x), xp, v in zip(items, xps, d)]

    def tokenization(self, setting: str, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
        s = _setting_value(setting)
        tok = getattr(self.lm, "tokenizer", None)
        if tok is None:
            raise InputError(f"{self.lm.name} exposes no tokenizer; the tokenization metric needs one")
        plain = [self.lm.encode(x) for _, x in items]
        chopped = [chop_token_ids(x, tok, s) for _, x in items]
        d = jsd(self.lm.next_token_logprobs(plain), self.lm.next_token_logprobs(chopped))
        return [_row(i, x, "|".join(self.lm.decode([t]) for t in c), v, tokens=len(p), chopped_tokens=len(c))
                for (i, x), p, c, v in zip(items, plain, chopped, d)]

    def entropy(self, setting: str, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
        items = sorted(items, key=lambda it: -len(it[1]))  # similar lengths share a call
        h_next = entropy(self.lm.next_token_logprobs([x for _, x in items]))
        out = []
        for start in range(0, len(items), 2 * self.span_chunk):
            part = items[start:start + 2 * self.span_chunk]
            spans = self.lm.span_logprobs([x for _, x in part], [0] * len(part))
            for q, (i, x) in enumerate(part):
                out.append(_row(i, x, None, h_next[start + q], token_entropy=float(entropy(spans[q]).mean())))
        return out


# ------------------------------------------------------------------ the study
def _fits(lm: LanguageModel, metric: str, example: Any, max_new_tokens: int) -> bool:
    """Whether every input built from ``example`` fits the context window (with some room for
    the inserted words; chopped tokenization can take one token per character)."""
    if isinstance(example, tuple):  # a passage and its donor: the passage and the replaced version
        passage, donor = example
        texts = [" ".join(passage), " ".join(ReplaceContext(len(passage) - 1).replace(passage, donor))]
    else:
        texts = [example]
    if metric == "tokenization":
        return all(len(t) + 1 <= lm.max_length for t in texts)
    room = 16 + (max_new_tokens if metric == "toxicity" else 0)
    return all(len(lm.encode(t)) + room <= lm.max_length for t in texts)


class SelfCheckStudy:
    """Scores every model on every unit; resumable through ``out_dir/results.sqlite``.

    ``models`` maps names to ready :class:`LanguageModel` objects; names not in it are
    loaded with :func:`~perturblab.models.lm_presets.load_language_model` one at a time.
    ``corpus`` / ``benign`` may be given as :class:`Corpus` objects instead of names.
    """

    def __init__(self, config: SelfCheckConfig, out_dir: str | Path, *,
                 models: dict[str, LanguageModel] | None = None, corpus: Corpus | None = None,
                 benign: Corpus | None = None, progress: bool = True) -> None:
        config.validate()
        self.cfg, self.out = config, Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.models = dict(models or {})
        self.progress = progress
        corpus = corpus if corpus is not None else load_corpus(config.corpus, text_column=config.text_column)
        if benign is None and config.benign_corpus and "negation" in config.metrics:
            benign = load_corpus(config.benign_corpus, text_column=config.text_column)
            if config.benign_corpus == config.corpus:
                log.warning("the benign corpus is the evaluated corpus (%s): the normalised negation score "
                            "uses other sentences of it, but the paper wants text without clear truth "
                            "values (e.g. fiction); pass another --benign-corpus", config.corpus)
        self.examples = Examples(config, corpus, benign if config.benign_corpus else None)
        self.store = ResultStore(self.out / "results.sqlite")

    def units(self) -> list[tuple[str, str, bool]]:
        return [(m, s, main) for m in self.cfg.metrics for s, main in self.cfg.settings(m)]

    def _load(self, name: str) -> LanguageModel:
        if name in self.models:
            return self.models[name]
        from ..models.lm_presets import load_language_model

        return load_language_model(name)

    def run(self) -> list[dict[str, Any]]:
        """Score everything not yet in the store; returns the summary rows (see
        :func:`~.selfcheck_summary.summarise_selfcheck`) and writes the output files.

        Work goes chunk by chunk over example ids, every unit within a chunk, so the memo of
        original-text distributions (shared by most units) stays small.
        """
        from .selfcheck_summary import write_outputs

        cfg = self.cfg
        self.store.start_run(cfg.run_id, "selfcheck", {k: v for k, v in asdict(cfg).items()
                                                       if k not in ("models", "chunk")})
        for name in cfg.models:
            plan = []
            for metric, setting, _ in self.units():
                done = self.store.done_examples(cfg.run_id, name, metric, setting)
                rest = [it for it in enumerate(self.examples.get(metric, setting)) if it[0] not in done]
                if rest:
                    plan.append((metric, setting, rest))
            if not plan:
                continue
            lm = MemoLanguageModel(self._load(name), max_entries=4 * cfg.chunk)
            scorer, skipped = Scorer(lm, cfg), 0
            bar = tqdm(total=sum(len(r) for *_, r in plan), desc=f"selfcheck {name}", unit="ex",
                       disable=not self.progress)
            for start in range(0, cfg.n, cfg.chunk):
                for metric, setting, rest in plan:
                    part = [it for it in rest if start <= it[0] < start + cfg.chunk]
                    fits = [it for it in part if _fits(lm, metric, it[1], cfg.max_new_tokens)]
                    skipped += len(part) - len(fits)
                    if fits:
                        rows = scorer(metric, setting, fits)
                        for r in rows:
                            r.update(run_id=cfg.run_id, model=name, metric=metric, setting=setting)
                        self.store.add_examples(rows)
                    bar.update(len(part))
            bar.close()
            if skipped:
                log.warning("%s: %d examples longer than its context window (%d tokens) were skipped",
                            name, skipped, lm.max_length)
            if name not in self.models:
                del lm, scorer
                gc.collect()
        return write_outputs(self)

    def close(self) -> None:
        self.store.close()
