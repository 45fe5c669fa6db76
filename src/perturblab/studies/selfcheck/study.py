"""The self-supervised LM evaluation (Jain et al., *Bring your own data!*) on any corpus.

For every model and every *unit* (metric × setting) the study builds the same examples from
the corpus (seeded, model-independent), scores them, and stores one row per example (the text,
its transformed version and the per-example value) through the study core (run by
:func:`perturblab.core.entry.run`),
under the content it depends on: the model's fingerprint, the unit, the example and its id,
the seed, the generation length for toxicity, the negation rule for negation and, for every metric
but long-range context, the sentence-word limit the examples were drawn under (these two only
when they differ from their defaults, so stores of earlier versions stay valid). Units are
processed in chunks and finished examples are skipped, so an interrupted study resumes where it
stopped and an edited corpus or another model scores exactly what changed. :mod:`.result` turns
the rows into the paper's scores and writes the output files.

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

Scoring one chunk of a unit lives in :mod:`.scoring`.

**What each metric needs from a model** (:data:`METRIC_NEEDS`: the
:class:`~perturblab.models.lm.LanguageModel` methods its scoring calls). Only negation works from
per-token log-probs alone, so it is the one metric a completions API can give (Sec. 4.1: "since we
use perplexity, we can also utilize API models"); toxicity also reads the next-token mass of
profane tokens, and the others compare full next-token distributions. The study checks every
model against the requested metrics when it is created and raises one
:class:`~perturblab.errors.CapabilityError` listing what cannot run. A model without a local
tokenizer is not memoised (the memo keys on token ids) and its texts are checked against the
context window by their UTF-8 bytes, an upper bound on the tokens of a subword tokenizer.
"""

from __future__ import annotations

import gc
import logging
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ...core.boundary import Inputs
from ...core.keys import content_key, model_fingerprint
from ...core.study import Phase, RunContext, Study, Task
from ...data.corpus import Corpus, load_corpus
from ...errors import InputError
from ...models.lm import LanguageModel
from ...models.lm_cache import MemoLanguageModel
from ...models.lm_capabilities import capabilities_of, check_metric_capabilities
from ...perturb.selfcheck import Negate, ReplaceContext, SwapWords
from .compare import SELFCHECK
from ..inputs import given_corpora
from ..remote import RemoteLoad, loaded
from .config import ABLATION_LEAST, ABLATIONS, METRIC_NEEDS, METRICS, SelfCheckArgs
from .result import SelfCheckResult
from .scoring import Scorer, profane_token_ids, seeded_rng, setting_value

__all__ = ["METRICS", "METRIC_NEEDS", "Examples", "Scorer", "SelfCheckStudy", "profane_token_ids"]
log = logging.getLogger(__name__)
#: options keyed only when they differ from these values (their defaults when they were added)
KEYED_UNLESS = {"max_sentence_words": 64, "negation_rule": "paper"}


# ------------------------------------------------------------------ examples (model-independent)
class Examples:
    """The examples of every unit, drawn once from the corpus by the seed."""

    def __init__(self, args: SelfCheckArgs, corpus: Corpus, benign: Corpus | None) -> None:
        self.args, self.full = args, corpus  # passages come from the full corpus: consecutive sentences
        top = args.max_sentence_words
        self.corpus = corpus.filter(min_words=3, max_words=top)  # raises when nothing is left
        order = seeded_rng(args.seed, 0).permutation(len(self.corpus))
        self.pool = [self.corpus.sentences[i] for i in order]
        self.benign = benign.filter(min_words=3, max_words=top) if benign is not None else None
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
        n, neg = self.args.n, Negate(rule=self.args.negation_rule)
        if metric == "negation" and setting == "not":
            what = ("negation (sentences with is/was/were and no negation)" if neg.rule == "paper" else
                    "negation (sentences with ' is ', ' was ', ' are ' or ' were ' not yet followed by ' not ')")
            return self._first(self.pool, neg.applicable, n, what)
        if metric == "negation":
            assert self.benign is not None
            used = set(self.get("negation", "not"))
            order = seeded_rng(self.args.seed, 1).permutation(len(self.benign))
            pool = (self.benign.sentences[i] for i in order)
            return self._first(pool, lambda s: neg.applicable(s) and s not in used, n, "the benign corpus")
        if metric == "word_order":
            return self._first(self.pool, SwapWords.applicable, n, "word order (two different words)")
        if metric == "long_range":
            j = setting_value(setting)
            passages = self.full.sample_passages(n, k=j + 1, seed=self.args.seed)
            if len(passages) < 2:
                raise InputError(f"corpus {self.corpus.name!r} has fewer than 2 passages of {j + 1} sentences; "
                                 "long-range context needs a corpus of consecutive sentences")
            donors = ReplaceContext.pair_passages(passages, seeded_rng(self.args.seed, 2, j))
            return [(p, passages[d]) for p, d in zip(passages, donors)]
        return self._first(self.pool, lambda s: True, n, metric)


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
    if "encode" not in capabilities_of(lm):  # no local tokenizer: UTF-8 bytes bound the tokens
        return all(len(t.encode("utf-8")) + room <= lm.max_length for t in texts)
    return all(len(lm.encode(t)) + room <= lm.max_length for t in texts)


class SelfCheckStudy(Study):
    """Self-supervised sensitivity scores of language models on any text (*Bring your own data!*;
    the ``selfcheck`` command): negation, toxicity, long-range context, word order, tokenization
    and entropy, with the ablations unless ``no_ablations``.

    ``models`` are language-model specs or :class:`~perturblab.models.lm.LanguageModel` objects;
    ``corpus`` and ``benign_corpus`` corpus names, files or :class:`~perturblab.data.corpus.Corpus`
    objects (``benign_corpus=None`` or ``"none"`` leaves out the normalised negation score).
    Sentences of more than ``max_sentence_words`` whitespace words (``None``: no limit) are left
    out of every metric but long-range context. ``negation_rule`` is ``"paper"`` (Sec. 4's text,
    the default) or ``"byod-code"`` (the authors' released code, for comparisons with the
    published numbers); see :class:`~perturblab.perturb.selfcheck.Negate`.
    ``chunk`` examples are scored and stored together (smaller: less lost to a crash; the scores
    do not depend on it). ``out`` keeps the results store (``None``: a temporary directory).

    Example (the entropy of a tiny random language model on a few sentences)::

        >>> import perturblab as pl, transformers
        >>> from tokenizers import Tokenizer, models, pre_tokenizers
        >>> from perturblab.data.corpus import Corpus
        >>> from perturblab.models.lm import HFCausalLM
        >>> texts = ["the cat sat on the warm mat today .", "a dog ran in the big green park .",
        ...          "she read the old book by the window .", "we walked along the quiet river bank ."]
        >>> vocab = {w: i for i, w in enumerate(["<unk>", *sorted({w for t in texts for w in t.split()})])}
        >>> words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        >>> words.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> tok = transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", pad_token="<unk>")
        >>> config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
        ...                                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
        >>> lm = HFCausalLM(transformers.LlamaForCausalLM(config), tok, name="tiny")
        >>> res = pl.selfcheck([lm], corpus=Corpus(texts, [0, 0, 1, 1], name="tiny"), benign_corpus=None,
        ...                    metrics="entropy", n=4, quiet=True)
        >>> [(r["metric"], r["n"]) for r in res.rows]
        [('next_token_entropy', 4), ('token_entropy', 4)]

    (The study scores every model on every unit through the study core, see the module docstring.
    ``models`` maps names to ready :class:`LanguageModel` objects; names not in it are loaded with
    :func:`~perturblab.models.resolve.load_model` one at a time, each released before the next is
    loaded. ``corpus`` / ``benign`` may be given as :class:`Corpus` objects instead of names.
    ``ablation_values`` replaces the ablation values of some metrics, metric -> values; default the
    paper's, :data:`~.config.ABLATIONS`; each headline value always runs.)
    """

    name = command = "selfcheck"
    help = "self-supervised LM evaluation (five sensitivity scores)"
    Args = SelfCheckArgs
    Result = SelfCheckResult
    part = SELFCHECK
    example = dict(models="smollm2-135m", corpus="conll2010", benign_corpus="none", metrics="negation,entropy", n=2,
                   max_new_tokens=4)

    @classmethod
    def of(cls, args: SelfCheckArgs, inputs: Inputs) -> "SelfCheckStudy":
        corpora = given_corpora(inputs)  # corpus and benign_corpus given as objects
        return cls(args, models=inputs.models, corpus=corpora.get("corpus"), benign=corpora.get("benign_corpus"),
                   progress=not args.quiet)

    def __init__(self, args: SelfCheckArgs, *, models: dict[str, LanguageModel] | None = None,
                 corpus: Corpus | None = None, benign: Corpus | None = None, progress: bool = True,
                 ablation_values: Mapping[str, Sequence[int]] | None = None) -> None:
        self.args, self.model_names, self.metrics = args, args.model_names(), args.metric_list()
        self.ablation_values = _ablation_values(ablation_values or {})
        self.models = dict(models or {})
        self.check_capabilities()
        self.progress = progress
        split, read, benign_name = args.corpus_split, [], args.benign_name()
        if corpus is None:
            corpus = load_corpus(args.corpus, text_column=args.text_column, split=split)
            read.append(f"corpus {args.corpus}: {corpus.reading}")
        if benign is None and benign_name and "negation" in self.metrics:
            benign = load_corpus(benign_name, text_column=args.text_column, split=split)
            read.append(f"benign corpus {benign_name}: {benign.reading}")
            if benign_name == args.corpus:
                log.warning("the benign corpus is the evaluated corpus (%s): the normalised negation score "
                            "uses other sentences of it, but the paper wants text without clear truth "
                            "values (e.g. fiction); pass another --benign-corpus", args.corpus)
        if progress and read:  # one console line per corpus read: how many examples, and how
            log.info("\n".join(read))
        self.examples = Examples(args, corpus, benign if benign_name else None)

    def check_capabilities(self) -> None:
        """Raise one :class:`~perturblab.errors.CapabilityError` listing every model × requested
        metric the model cannot compute (:data:`METRIC_NEEDS`); loads no model, sends no request."""
        from ...models.spec_check import spec_capabilities

        caps = {name: capabilities_of(self.models[name]) if name in self.models
                else spec_capabilities(name) for name in self.model_names}
        check_metric_capabilities(caps, METRIC_NEEDS, self.metrics, study="selfcheck", hint=(
            "Leave those metrics out (--metrics) for those models, or use a local model (a preset, a Hugging "
            "Face directory or a .gguf file): an API model gives per-token log-probs and generations only."))

    def units(self) -> list[tuple[str, str, bool]]:
        """(metric, setting, is_main) of every unit, metric by metric in the order given."""
        return [(m, s, main) for m in self.metrics
                for s, main in self.args.settings(m, self.ablation_values.get(m))]

    def _load(self, name: str) -> LanguageModel:
        if name in self.models:
            return self.models[name]
        from ...models.resolve import load_model

        return load_model(name, "language_model")

    # -- the study protocol --------------------------------------------------------------
    def prepare(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self._units = [(m, s, self.examples.get(m, s)) for m, s, _ in self.units()]

    def identity(self) -> dict[str, Any]:
        return {"options": {k: v for k, v in self.args.study_options().items() if k != "chunk"},
                "examples": content_key([[m, s, ex] for m, s, ex in self._units])}

    def _key(self, fingerprint: str, metric: str, setting: str, i: int, example: Any) -> str:
        args = self.args
        parts: list[Any] = ["selfcheck", fingerprint, metric, setting, i, example, args.seed,
                            args.max_new_tokens if metric == "toxicity" else None]
        options = {}  # options added after the first stored results: keyed only when not the default
        if metric != "long_range" and args.max_sentence_words != KEYED_UNLESS["max_sentence_words"]:
            options["max_sentence_words"] = args.max_sentence_words  # passages are not limited
        if metric == "negation" and args.negation_rule != KEYED_UNLESS["negation_rule"]:
            options["negation_rule"] = args.negation_rule  # the negated text follows it
        return content_key(*parts, *([options] if options else []))

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        """One phase per model (the model loaded before it and released after it), one cell per
        chunk of example ids holding every unit of those examples: a cell scores the original
        texts once for all its units (:class:`_ModelScorer`, made in the cell), so its numbers
        depend on its own inputs only, here or on a Ray worker
        (:class:`~..remote.RemoteLoad`, loaded once per worker)."""
        args = self.args
        self._results: dict[str, dict[tuple[str, str, int], dict | None]] = {}
        for name in self.model_names:
            with ctx.step(f"loading language model {name}"):
                inner = self._load(name)
            fingerprint = model_fingerprint(inner)
            handle = inner if ctx.executor.name == "local" else \
                RemoteLoad(name, "language_model", fingerprint, inner if name in self.models else None)
            tasks = [Task(self._key(fingerprint, metric, setting, i, ex), (metric, setting, i, ex), group=(name, start))
                     for start in range(0, args.n, args.chunk) for metric, setting, examples in self._units
                     for i, ex in enumerate(examples) if start <= i < start + args.chunk]
            phase = Phase("selfcheck.score", tasks, partial(_score_chunk, handle, args),
                          batch_size=max(1, args.chunk * len(self._units)), label=f"selfcheck {name}")
            yield phase
            by_unit = {}
            for t in tasks:
                metric, setting, i, _ = t.payload
                by_unit[(metric, setting, i)] = phase.results[t.key]
            self._results[name] = by_unit
            skipped = sum(1 for r in by_unit.values() if r is None)
            if skipped and phase.computed:
                log.warning("%s: %d examples longer than its context window (%d tokens) were skipped",
                            name, skipped, inner.max_length)
            if phase.computed and getattr(inner, "usage", None) is not None:  # an API model: cost, faults
                log.debug("%s: API usage %s; %d failed attempts (retried or not)", name,
                         inner.usage.as_dict(), len(getattr(inner, "faults", ())))
            if name not in self.models:
                del inner, handle
                gc.collect()

    def finish(self, ctx: RunContext) -> Any:
        from .result import SelfCheckResult

        examples = []
        for name in self.model_names:
            for (metric, setting, i), row in self._results[name].items():
                if row is not None:
                    examples.append({"model": name, "metric": metric, "setting": setting, **row})
        examples.sort(key=lambda r: (r["model"], r["metric"], r["setting"], r["example_id"]))
        return SelfCheckResult(self.args, self.units(), examples, run_id=ctx.run_id)


def _ablation_values(given: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """``ablation_values`` of :class:`SelfCheckStudy` checked: known ablated metrics, each a non-empty
    list of integers no smaller than the setting allows."""
    out = {}
    for metric, values in given.items():
        if metric not in ABLATIONS:
            raise InputError(f"ablation values of {metric!r}: only {', '.join(ABLATIONS)} have ablations")
        least, values = ABLATION_LEAST[metric], list(values)
        if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < least for v in values):
            raise InputError(f"ablation values of {metric} must be a non-empty list of integers >= {least}, "
                             f"got {values}")
        out[metric] = values
    return out


class _ModelScorer:
    """One model's scorer, made on its first chunk: the memo of original-text distributions
    (keyed on token ids, so only with a local tokenizer) and the :class:`Scorer`."""

    def __init__(self, inner: LanguageModel, args: SelfCheckArgs) -> None:
        self.inner, self.args = inner, args
        self.lm: LanguageModel | None = None
        self.scorer: Scorer | None = None

    def get(self) -> tuple[LanguageModel, Scorer]:
        if self.scorer is None:
            inner, args = self.inner, self.args
            self.lm = MemoLanguageModel(inner, max_entries=4 * args.chunk) if "encode" in capabilities_of(inner) \
                else inner
            self.scorer = Scorer(self.lm, args)
        assert self.lm is not None
        return self.lm, self.scorer


def _score_chunk(model: LanguageModel | RemoteLoad, args: SelfCheckArgs, group: tuple[str, int],
                 items: list[tuple[str, str, int, Any]]) -> list[dict[str, Any] | None]:
    """The phase function: every unit of one chunk of (metric, setting, example id, example), unit
    by unit with one memo of the original texts; an example longer than the model's context
    window gets None (skipped)."""
    lm, scorer = _ModelScorer(loaded(model), args).get()
    units: dict[tuple[str, str], list[tuple[int, Any]]] = {}
    for metric, setting, i, ex in items:
        units.setdefault((metric, setting), []).append((i, ex))
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for (metric, setting), examples in units.items():
        fits = [it for it in examples if _fits(lm, metric, it[1], args.max_new_tokens)]
        for r in (scorer(metric, setting, fits) if fits else []):
            rows[(metric, setting, r["example_id"])] = r
    return [rows.get((metric, setting, i)) for metric, setting, i, _ in items]
