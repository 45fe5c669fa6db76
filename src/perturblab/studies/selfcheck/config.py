"""The options of a self-supervised evaluation: the metrics, what each needs of a model, and
:class:`SelfCheckConfig`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ...core.options import count_or_all, option
from ..args import Args, corpus_split_option
from ...errors import InputError
from ...models.base import fingerprint_of
from ...perturb.selfcheck import NEGATION_RULES

METRICS: tuple[str, ...] = ("negation", "toxicity", "long_range", "word_order", "tokenization", "entropy")
#: The model capabilities each metric's scoring calls (see the module docstring).
METRIC_NEEDS: dict[str, frozenset[str]] = {
    "negation": frozenset({"token_logprobs"}),
    "toxicity": frozenset({"generate", "next_token_logprobs", "encode"}),  # encode: profane token ids
    "long_range": frozenset({"encode", "span_logprobs"}),
    "word_order": frozenset({"next_token_logprobs"}),
    "tokenization": frozenset({"tokenizer", "encode", "decode", "next_token_logprobs"}),
    "entropy": frozenset({"next_token_logprobs", "span_logprobs"}),
}


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
    #: longest sentence (whitespace words) of every metric but long_range, and of the benign corpus; None: no limit
    max_sentence_words: int | None = 64
    chunk: int = 128
    text_column: str = "text"
    corpus_split: str = "auto"  # how a corpus file is read (:data:`~perturblab.data.corpus.SPLITS`)
    #: where negation puts "not": "paper" or "byod-code" (:class:`~perturblab.perturb.selfcheck.Negate`)
    negation_rule: str = "paper"

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
        top = self.max_sentence_words
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 3):
            raise InputError(f"max_sentence_words={top!r}: give a whole number >= 3 (sentences of fewer than 3 "
                             "words are never used) or 'all' (None in Python) for no limit")
        if self.negation_rule not in NEGATION_RULES:
            raise InputError(f"negation_rule={self.negation_rule!r}: choose one of {', '.join(NEGATION_RULES)}")

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


@dataclass(kw_only=True)
class SelfCheckArgs(Args):
    """The options of ``perturblab selfcheck`` and :func:`perturblab.selfcheck` (the one schema)."""

    models: str | None = option(required=True, role="language_model",
                                help="comma-separated language models: presets (smollm2-135m, smollm2-135m-int8, "
                                     "gemma3-270m), local HF directories, .gguf files or hub ids")
    corpus: str = option("conll2010", data=True,
                         help="oanc, conll2010 (Wikipedia sentences), a .txt/.jsonl/.csv/.parquet file or "
                              "hf:NAME[:SPLIT]")
    benign_corpus: str = option("oanc", data=True,
                                help="corpus for the normalised negation score ('none' to leave it out)")
    text_column: str = option("text", help="text column of a JSONL/CSV/Parquet/HF corpus")
    corpus_split: str = corpus_split_option("--corpus, --benign-corpus")
    n: int = option(1000, min=1, help="examples per metric and setting")
    seed: int = option(0, min=0, help="seed of the examples drawn from the corpus and of every random perturbation")
    metrics: str = option(",".join(METRICS), help=f"comma-separated subset of {', '.join(METRICS)}")
    no_ablations: bool = option(False, flag=True, help="only the headline setting of each metric (much faster)")
    max_new_tokens: int = option(32, min=1, help="generation length of the toxicity metric")
    max_sentence_words: int | None = option(
        64, parse=count_or_all, min=1, help="longest sentence drawn, in whitespace-separated words ('all': no limit); "
                                     "applies to every metric but long-range context and to the benign corpus")
    negation_rule: str = option(
        "paper", choices=NEGATION_RULES,
        help="where negation puts 'not': 'paper' (first whole-word is/was/were, no negation anywhere; Sec. 4) or "
             "'byod-code' (the authors' released code: first ' is ', else ' was ', ' are ', ' were '; for "
             "comparisons with the published numbers)")
    chunk: int = option(128, min=1, help="examples scored and stored together (smaller: less lost to a crash; the scores "
                                  "do not depend on it)")
