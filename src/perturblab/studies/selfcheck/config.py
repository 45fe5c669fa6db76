"""The options of a self-supervised evaluation (:class:`SelfCheckArgs`, read by its command line, a
study config's entry, its Python function and the study itself), the metrics and what each needs
of a model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...core.options import ExecutorArgs, count_or_all, option
from ...errors import InputError
from ...perturb.selfcheck import NEGATION_RULES
from ..args import Args, ModelList, SeedArgs, corpus_split_option, place
from ..names import items

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


#: each ablated metric's setting name, its values (the paper's ablations) and its headline value
ABLATIONS: dict[str, tuple[str, tuple[int, ...], int]] = {
    "toxicity": ("k", (0, 1, 2, 3, 4, 5, 6, 7), 2),
    "long_range": ("swapped", (1, 2, 3, 4), 2),
    "word_order": ("swaps", (1, 2, 4, 6, 8, 10), 1),
    "tokenization": ("stride", (2, 3, 5, 10, 15, 20), 5),
}
#: the least value of each ablated metric's setting (k=0 triggers is the prompt itself)
ABLATION_LEAST: dict[str, int] = {"toxicity": 0, "long_range": 1, "word_order": 1, "tokenization": 1}


def metric_names(value: Any) -> None:
    """Comma-separated metrics, some of :data:`METRICS` (none given: all of them)."""
    unknown = [m for m in items(value) if m not in METRICS]
    if unknown:
        raise InputError(f"unknown metric(s) {unknown}; choose from {', '.join(METRICS)}")


def sentence_limit(value: Any) -> None:
    """``--max-sentence-words``: a whole number (its bound is the option's ``min``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{value!r}: give a whole number >= 3 (sentences of fewer than 3 words are never used) "
                         "or 'all' (None in Python) for no limit")


@dataclass(kw_only=True)
class SelfCheckArgs(ModelList, SeedArgs, ExecutorArgs, Args):
    """The options of ``perturblab selfcheck`` and :func:`perturblab.selfcheck` (the one schema)."""

    models: str | None = option(required=True, role="language_model", positional=True, many=True, python="Any",
                                help="comma-separated language models: presets (smollm2-135m, smollm2-135m-int8, "
                                     "gemma3-270m), local HF directories, .gguf files or hub ids")
    corpus: str = option("conll2010", data=True, python="str | Corpus",
                         help="oanc, conll2010 (Wikipedia sentences), a .txt/.jsonl/.csv/.parquet file or "
                              "hf:NAME[:SPLIT]")
    benign_corpus: str = option("oanc", data=True, python="str | Corpus | None",
                                help="corpus for the normalised negation score ('none' to leave it out)")
    text_column: str = option("text", help="text column of a JSONL/CSV/Parquet/HF corpus")
    corpus_split: str = corpus_split_option("--corpus, --benign-corpus")
    n: int = option(1000, min=1, help="examples per metric and setting")
    seed = place()
    metrics: str = option(",".join(METRICS), check=metric_names, python="str | Sequence[str]",
                          help=f"comma-separated subset of {', '.join(METRICS)}")
    no_ablations: bool = option(False, flag=True, help="only the headline setting of each metric (much faster)")
    max_new_tokens: int = option(32, min=1, help="generation length of the toxicity metric")
    max_sentence_words: int | None = option(
        64, parse=count_or_all, min=3, check=sentence_limit,
        help="longest sentence drawn, in whitespace-separated words, at least 3 (shorter sentences are never used; "
             "'all': no limit); applies to every metric but long-range context and to the benign corpus")
    negation_rule: str = option(
        "paper", choices=NEGATION_RULES,
        help="where negation puts 'not': 'paper' (first whole-word is/was/were, no negation anywhere; Sec. 4) or "
             "'byod-code' (the authors' released code: first ' is ', else ' was ', ' are ', ' were '; for "
             "comparisons with the published numbers)")
    chunk: int = option(128, min=1, help="examples scored and stored together (smaller: less lost to a crash; "
                                         "the scores do not depend on it)")

    # -- what the study reads -------------------------------------------------------------
    def metric_list(self) -> list[str]:
        """The metrics, once each, in the order given (none given: all of :data:`METRICS`)."""
        return list(dict.fromkeys(items(self.metrics))) if self.metrics else list(METRICS)

    def benign_name(self) -> str | None:
        """The benign corpus of the normalised negation score (None: left out, given as ``none``)."""
        benign = self.benign_corpus
        return None if benign is None or benign.strip().lower() in ("", "none") else benign

    def ablations(self) -> bool:
        """Whether every setting of each metric runs (else only its headline setting)."""
        return not self.no_ablations

    def settings(self, metric: str, values: Sequence[int] | None = None) -> list[tuple[str, bool]]:
        """(setting, is_main) pairs of one metric; only the main one without ablations. ``values``
        replaces the metric's ablation values of :data:`ABLATIONS` (its headline value stays)."""
        if metric == "negation":
            return [("not", True)] + ([("benign", False)] if self.benign_name() else [])
        if metric == "entropy":
            return [("-", True)]
        key, paper, main = ABLATIONS[metric]
        chosen = sorted(set(paper if values is None else values) | {main}) if self.ablations() else [main]
        if metric == "toxicity" and self.ablations():
            chosen = sorted(set(chosen) | {0})
        return [(f"{key}={v}", v == main) for v in chosen]
