"""Options of a shared-invariance study (defaults follow the SCoPE paper)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from ...core.options import TEXT_FIELDS_HELP, ExecutorArgs, count_or_all, csv_list, option
from ..args import (Args, capability_names, corpus_split_option, fraction_list, nonempty, one_text_option,
                    soft_decay)
from ...errors import InputError
from ...measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE
from ...perturb.capabilities import CAPABILITIES
from ...perturb.goals import InvarianceGoal
from ...perturb.search import SearchOptions, SynonymOptions

#: the capabilities run on the samples fairness qualifies (App. C)
STAR_OF_FAIRNESS = ("synonym*", "typo*")


@dataclass
class ScopeOptions(SearchOptions, SynonymOptions):
    """Options of a shared-invariance study other than its models (defaults follow the SCoPE
    paper); the checkpoint study shares them."""

    capabilities: list[str] = field(default_factory=lambda: ["synonym", "typo"])
    data: str = "rotten_tomatoes"
    n: int | None = 500  # base samples per trial; None: the whole test split
    trials: int = 3
    seed: int = 0
    tolerance: float = DEFAULT_TOLERANCE
    cutoff: float = DEFAULT_CUTOFF
    test_size: float = 0.25
    perturb_field: int | None = 0  # the text of a pair the search changes: 0, 1, or None for both
    n_boot: int = 1000

    def search_options(self) -> dict[str, Any]:
        """The options a search result depends on (part of its content key)."""
        opts = {"loss": self.loss, "search": self.search, "max_words": self.max_words, "patience": self.patience,
                "max_candidates": self.max_candidates, "perturb_field": self.perturb_field, "seed": self.seed}
        if self.search == "beam":
            opts["beam_width"] = self.beam_width
        if not self.alphabetic_only:  # only when off, so the default keeps earlier results' keys
            opts["alphabetic_only"] = False
        return opts

    def capability_plan(self) -> list[str]:
        """The capabilities in the order they run: fairness first, then its starred companions
        (SCoPE App. C: compared on the same base samples)."""
        caps = list(dict.fromkeys(self.capabilities))
        if "fairness" in caps:
            caps = ["fairness"] + [c for c in caps if c != "fairness"]
            caps += [c for c in STAR_OF_FAIRNESS if c not in caps]
        return caps


@dataclass(kw_only=True)
class ScopeConfig(ScopeOptions):
    """Options of a shared-invariance study: the reference m1, the targets m2 and the
    :class:`ScopeOptions`."""

    reference: str
    targets: list[str]

    def validate(self) -> None:
        if not self.targets:
            raise InputError("give at least one target model (--targets)")
        if (self.n is not None and self.n < 1) or self.trials < 1:
            raise InputError(f"n and trials must be >= 1, got n={self.n}, trials={self.trials}")
        for c in self.capabilities:
            base = c.rstrip("*")
            if base not in CAPABILITIES:
                CAPABILITIES.get(c)  # raises UnknownNameError listing the known ones
        InvarianceGoal(self.loss)
        self.check_synonym_options()

    def options(self) -> dict[str, Any]:
        """The options as a JSON-able dict."""
        return asdict(self)


@dataclass(kw_only=True)
class SearchDataArgs:
    """``--data``, its columns and ``--perturb-field``: the labelled data of the studies that search
    perturbations (scope, checkpoints)."""

    data: str = option("rotten_tomatoes", data=True,
                       help="data set name (rotten_tomatoes, tweets), a CSV/JSONL/Parquet file, hf:NAME[:SPLIT], "
                            "glue:TASK or next:CORPUS")
    text_column: str | None = option(None, help="text column of a data file")
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", help=TEXT_FIELDS_HELP)
    label_column: str | None = option(None, help="label column of a data file (default: 'label')")
    perturb_field: str = option("a", choices=("a", "b", "both"),
                                help="for text pairs: search perturbations of the first text (default), the second, "
                                     "or the words of both")


@dataclass(kw_only=True)
class SearchLimitArgs:
    """The limits of a perturbation search (every SCoPE study: scope, scope-lm, checkpoints)."""

    max_words: int | None = option(None, min=1, help="largest number of changed words")
    patience: int | None = option(None, min=1, help="stop a search after this many words in a row bring no improvement "
                                             "(faster)")
    max_candidates: int | None = option(None, min=1, help="cap on candidates per word")
    allow_non_alphabetic: bool = option(False, flag=True,
                                        help="let words with digits or symbols change too (drops our alphabetic-only "
                                             "word constraint; SCoPE Sec. 3.2 excludes only stopwords, words shorter "
                                             "than four and words already changed)")
    synonym_min_similarity: float | None = option(
        None, min=-1, max=1, help="synonym swaps: keep only perturbed texts whose MiniLM-L6 sentence embedding has at least this "
                   "cosine with the original's, e.g. 0.85 (default: off, as in the SCoPE paper)")
    reinflect_synonyms: bool = option(False, flag=True,
                                      help="synonym swaps: give each WordNet synonym the inflection of the word it "
                                           "replaces (felt -> sensed, not sense; default: off, as in the SCoPE paper)")


@dataclass(kw_only=True)
class SearchGoalArgs:
    """The goal objective and the search method (scope and scope-lm)."""

    loss: str = option("l1", choices=("l1", "kl"), help="goal objective L (Eq. 1 / App. I)")
    search: str = option("greedy", choices=("greedy", "beam"), help="search method")
    beam_width: int = option(3, min=1, help="beam width of --search beam")


@dataclass(kw_only=True)
class ScopeArgs(SearchGoalArgs, SearchLimitArgs, SearchDataArgs, ExecutorArgs, Args):
    """The options of ``perturblab scope`` and :func:`perturblab.scope` (the one schema)."""

    python_only: ClassVar[tuple[str, ...]] = ("models",)

    reference: str | None = option(required=True, role="classifier",
                                   help="reference model m1: a preset name (see `perturblab models`) or HF path/id")
    targets: str | None = option(required=True, role="classifier", check=nonempty, help="comma-separated target models m2")
    capabilities: str = option("synonym,typo", check=capability_names, help="comma-separated capabilities (see `perturblab capabilities`)")
    n: int | None = option(500, parse=count_or_all, min=1, help="base samples per trial (a number, or 'all': the whole test "
                                                         "split)")
    trials: int = option(3, min=1, help="trials (independent draws of base samples)")
    seed: int = option(0, min=0, help="seed of the base samples and of every random choice of the search")
    tolerance: float | None = option(None, min=0, help="Soft-SCoPE decay: full weight up to this distance (default 0)")
    cutoff: float | None = option(None, above=0, help="Soft-SCoPE decay: zero weight from this distance (default 2, the "
                                             "largest distance of two argmax-invariant changes in a binary task)")
    n_boot: int = option(1000, min=1, help="bootstrap resamples of the intervals")
    test_size: float = option(0.25, above=0, below=1, help="share of the data held out as the test split (a fraction in (0, 1))")

    def relations(self) -> list[tuple[str, str]]:
        return soft_decay(self) + one_text_option(self)


@dataclass(kw_only=True)
class LMScopeArgs(SearchGoalArgs, SearchLimitArgs, Args):
    """The options of ``perturblab scope-lm`` and :func:`perturblab.scope_lm` (the one schema)."""

    python_only: ClassVar[tuple[str, ...]] = ("sentences",)

    reference: str | None = option(required=True, role="language_model",
                                   help="reference language model (e.g. smollm2-135m)")
    targets: str | None = option(required=True, role="language_model",
                                 check=nonempty, help="comma-separated target language models sharing the reference's vocabulary "
                                      "(e.g. smollm2-135m-int8)")
    capabilities: str = option("synonym,typo", check=capability_names, help="comma-separated capabilities")
    corpus: str = option("oanc", data=True, help="corpus of base sentences (as for selfcheck)")
    corpus_split: str = corpus_split_option("--corpus")
    n: int | None = option(100, parse=count_or_all, min=1, help="base sentences per trial (a number, or 'all')")
    trials: int = option(3, min=1, help="trials (independent draws of base sentences)")
    seed: int = option(0, min=0, help="seed of the base sentences and of every random choice of the search")
    tolerance: float | None = option(None, min=0, help="Soft-SCoPE decay: full weight up to this distance (default 0)")
    cutoff: float | None = option(None, above=0, help="Soft-SCoPE decay: zero weight from this distance (default 2, the "
                                             "largest L1 distance of two distributions)")
    n_boot: int = option(1000, min=1, help="bootstrap resamples of the SCoPE intervals")
    chunk_size: int = option(8, min=1, help="base sentences searched and scored together in one work cell (smaller: less "
                                     "lost to a crash)")
    max_batch: int = option(256, min=1, help="about this many texts scored at once (candidates per search round, texts per "
                                      "model call; smaller: less memory)")

    def relations(self) -> list[tuple[str, str]]:
        return soft_decay(self)


@dataclass(kw_only=True)
class CheckpointsArgs(SearchLimitArgs, SearchDataArgs, Args):
    """The options of ``perturblab checkpoints`` and :func:`perturblab.checkpoints` (the one schema):
    ``--checkpoints`` or ``--finetune``, exactly one."""

    checkpoints: str | None = option(None, one_of="source", role="classifier",
                                     help="comma-separated classifier directories in training order (the last is "
                                          "the final model), or one fine-tune directory holding checkpoint-* "
                                          "subdirectories")
    finetune: str | None = option(None, one_of="source", role="encoder", metavar="BASE",
                                  help="fine-tune this encoder (preset such as minilm-l3, or a local directory) here, "
                                       "saving checkpoints at --fractions (cached under the data home)")
    fractions: str = option("0,0.2,0.4,0.6,0.8,1",
                            check=fraction_list, help="with --finetune: checkpoints as fractions of the training steps (0 = initialised "
                                 "model)")
    epochs: int = option(1, min=1, help="with --finetune: training epochs")
    max_seconds: float = option(300.0, above=0, help="with --finetune: training time budget, seconds of wall time")
    lr: float = option(5e-5, above=0, help="with --finetune: learning rate")
    n_train: int | None = option(None, min=1, help="with --finetune: training examples (seeded sample of the training "
                                            "split; default all)")
    capabilities: str = option("synonym,typo", check=capability_names, help="comma-separated capabilities")
    comparisons: str = option("vs_final,vs_previous",
                              help="vs_final (reference: the final checkpoint), vs_previous (reference: m_{t-1}), or "
                                   "both")
    n: int | None = option(200, parse=count_or_all, min=1, help="base samples per trial (a number, or 'all')")
    trials: int = option(3, min=1, help="trials (independent draws of base samples)")
    seed: int = option(0, min=0, help="seed of the data split, of the fine-tune and its training sample, of the base samples "
                               "and of every random choice of the search")

    def relations(self) -> list[tuple[str, str]]:
        return one_text_option(self)
