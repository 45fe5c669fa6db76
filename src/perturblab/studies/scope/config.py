"""The options of the SCoPE studies (defaults follow the SCoPE paper): one dataclass per command,
read by its command line, a study config's entry and its Python function, and by the study itself
(:meth:`~ScopeArgs.search_settings`, :meth:`~ScopeArgs.capability_plan`, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from ...core.options import TEXT_FIELDS_HELP, ExecutorArgs, count_or_all, csv_list, option
from ...measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE
from ...perturb.search import ORDERS, SYNONYM_SETS, SearchSettings
from ..args import (MAX_SECONDS_HELP, Args, HistoryArgs, capability_names, corpus_split_option, fraction_list,
                    max_text_chars_option, n_boot_option, nonempty, one_text_option, soft_decay, some_of)
from ..given import items

#: the capabilities run on the samples fairness qualifies (App. C)
STAR_OF_FAIRNESS = ("synonym*", "typo*")
#: ``perturb_field`` of the search studies -> the index of the text of a pair they change (None: both)
SEARCH_FIELDS: dict[str, int | None] = {"a": 0, "b": 1, "both": None}
#: the comparisons of the checkpoint study (App. D): against the final checkpoint, against the previous one
COMPARISONS = ("vs_final", "vs_previous")


def capability_plan(capabilities: Any) -> list[str]:
    """The capabilities (a comma list or a list) in the order they run: fairness first, then its
    starred companions (SCoPE App. C: compared on the same base samples)."""
    caps = list(dict.fromkeys(items(capabilities)))
    if "fairness" in caps:
        caps = ["fairness"] + [c for c in caps if c != "fairness"]
        caps += [c for c in STAR_OF_FAIRNESS if c not in caps]
    return caps


def _search_settings(args: Any, **more: Any) -> SearchSettings:
    """The :class:`~perturblab.perturb.search.SearchSettings` of a study's limits (``args``, a
    :class:`SearchLimitArgs`) and ``more``."""
    return SearchSettings(max_words=args.max_words, patience=args.patience, max_candidates=args.max_candidates,
                          alphabetic_only=not args.allow_non_alphabetic,
                          synonyms=args.synonyms, synonym_min_similarity=args.synonym_min_similarity,
                          reinflect_synonyms=args.reinflect_synonyms, seed=args.seed, **more)


# The options the SCoPE studies share, each declared once; ``what`` the base inputs are called
# (samples of a data set, sentences of a corpus).
def _n_option(default: int, what: str, all_is: str = "") -> Any:
    return option(default, parse=count_or_all, min=1, help=f"base {what} per trial (a number, or 'all'{all_is})")


def _trials_option(what: str) -> Any:
    return option(3, min=1, help=f"trials (independent draws of base {what})")


def _seed_option(what: str) -> Any:
    return option(0, min=0, help=f"seed of the base {what} and of every random choice of the search")


def _tolerance_option() -> Any:
    return option(None, min=0, help="Soft-SCoPE decay: full weight up to this distance (default 0)")


def _cutoff_option(largest: str) -> Any:
    """``--cutoff``, whose default 2 is the largest ``largest``."""
    return option(None, above=0, help=f"Soft-SCoPE decay: zero weight from this distance (default 2, the largest "
                                      f"{largest})")


def _decay(args: Any, cutoff: float) -> tuple[float, float]:
    """Soft-SCoPE's (tolerance, cutoff) of ``args``, each its default when not given."""
    return (DEFAULT_TOLERANCE if args.tolerance is None else float(args.tolerance),
            cutoff if args.cutoff is None else float(args.cutoff))


@dataclass(kw_only=True)
class SearchDataArgs:
    """``--data``, its columns and ``--perturb-field``: the labelled data of the studies that search
    perturbations (scope, checkpoints)."""

    data: str = option("rotten_tomatoes", data=True, python="str | Dataset | tuple[Dataset, Dataset]",
                       help="data set name (rotten_tomatoes, tweets), a CSV/JSONL/Parquet file, hf:NAME[:SPLIT], "
                            "glue:TASK or next:CORPUS")
    text_column: str | None = option(None, help="text column of a data file")
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", python="str | Sequence[str]",
                                    help=TEXT_FIELDS_HELP)
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
    synonyms: str = option("wordnet", choices=SYNONYM_SETS,
                           help="synonym swaps: 'wordnet' takes every WordNet synonym of the word's part of speech (the "
                                "SCoPE paper's); 'meaning' keeps the meaning: synonyms of the word's most frequent sense, "
                                "re-inflected, of the same part of speech in the perturbed text and close to the word "
                                "in context (docs/synonym_swaps.md)")
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
    search_order: str = option("best-swap", choices=ORDERS,
                               help="the order the search walks the words in: best-swap (every candidate of every "
                                    "word scored on the original first; the first change is the best one-word "
                                    "change), saliency (words by leave-one-out deletion, least salient first: "
                                    "0.6-0.75 of the time, other perturbations with a higher loss), left-to-right or "
                                    "random")


@dataclass(kw_only=True)
class ScopeArgs(SearchGoalArgs, SearchLimitArgs, SearchDataArgs, ExecutorArgs, Args):
    """The options of ``perturblab scope`` and :func:`perturblab.scope` (the one schema)."""

    reference: str | None = option(required=True, role="classifier", positional=True, python="Any",
                                   help="reference model m1: a preset name (see `perturblab models`) or HF path/id")
    targets: str | None = option(required=True, role="classifier", check=nonempty, positional=True, python="Any",
                                 help="comma-separated target models m2")
    capabilities: str = option("synonym,typo", check=capability_names, python="str | Sequence[str]",
                               help="comma-separated capabilities (see `perturblab capabilities`)")
    n: int | None = _n_option(500, "samples", ": the whole test split")
    trials: int = _trials_option("samples")
    seed: int = _seed_option("samples")
    tolerance: float | None = _tolerance_option()
    cutoff: float | None = _cutoff_option("distance of two argmax-invariant changes in a binary task")
    n_boot: int = n_boot_option(1000)
    test_size: float = option(0.25, above=0, below=1, help="share of the data held out as the test split (a fraction in (0, 1))")
    max_text_chars: int | None = max_text_chars_option("a sample")
    models: Mapping[str, Any] | None = option(None, python_only=True,
                                              help="ready classifier objects by the names the specs give them")
    #: the reference and the targets share the tables: one name per model
    shown_together: ClassVar[tuple[str, ...]] = ("reference", "targets")

    def relations(self) -> list[tuple[str, str]]:
        return soft_decay(self) + one_text_option(self)

    # -- what the study reads -------------------------------------------------------------
    def target_names(self) -> list[str]:
        """The targets' names (in order, once each)."""
        return list(dict.fromkeys(items(self.targets)))

    def capability_plan(self) -> list[str]:
        """The capabilities in the order they run (:func:`capability_plan`)."""
        return capability_plan(self.capabilities)

    def decay(self) -> tuple[float, float]:
        """Soft-SCoPE's (tolerance, cutoff) (Eq. 3), the paper's values when not given."""
        return _decay(self, DEFAULT_CUTOFF)

    def search_settings(self) -> SearchSettings:
        """What a search cell needs of these options."""
        return _search_settings(self, loss=self.loss, search=self.search, beam_width=self.beam_width,
                                order=self.search_order, perturb_field=SEARCH_FIELDS[self.perturb_field])


@dataclass(kw_only=True)
class LMScopeArgs(SearchGoalArgs, SearchLimitArgs, Args):
    """The options of ``perturblab scope-lm`` and :func:`perturblab.scope_lm` (the one schema)."""

    reference: str | None = option(required=True, role="language_model", positional=True, python="Any",
                                   help="reference language model (e.g. smollm2-135m)")
    targets: str | None = option(required=True, role="language_model", positional=True, python="Any",
                                 check=nonempty, help="comma-separated target language models sharing the reference's vocabulary "
                                      "(e.g. smollm2-135m-int8)")
    capabilities: str = option("synonym,typo", check=capability_names, python="str | Sequence[str]",
                               help="comma-separated capabilities")
    corpus: str = option("oanc", data=True, help="corpus of base sentences (as for selfcheck)")
    text_column: str = option("text", help="text column of a JSONL/CSV/Parquet/HF corpus")
    corpus_split: str = corpus_split_option("--corpus")
    sentences: list[str] | None = option(None, python_only=True, python="Sequence[str] | None",
                                         help="the base sentences, given instead of the corpus's")
    n: int | None = _n_option(100, "sentences")
    trials: int = _trials_option("sentences")
    seed: int = _seed_option("sentences")
    tolerance: float | None = _tolerance_option()
    cutoff: float | None = _cutoff_option("L1 distance of two distributions")
    n_boot: int = n_boot_option(1000)
    chunk_size: int = option(8, min=1, help="base sentences searched and scored together in one work cell (smaller: less "
                                     "lost to a crash)")
    max_batch: int = option(256, min=1, help="about this many texts scored at once (candidates per search round, texts per "
                                      "model call; smaller: less memory)")
    #: the reference and the targets share the tables: one name per model
    shown_together: ClassVar[tuple[str, ...]] = ("reference", "targets")

    def relations(self) -> list[tuple[str, str]]:
        return soft_decay(self)

    # -- what the study reads -------------------------------------------------------------
    def target_names(self) -> list[str]:
        """The targets' names (in order, once each)."""
        return list(dict.fromkeys(items(self.targets)))

    def capability_list(self) -> list[str]:
        """The capabilities, once each, in the order given."""
        return list(dict.fromkeys(items(self.capabilities)))

    def decay(self) -> tuple[float, float]:
        """Soft-SCoPE's (tolerance, cutoff) for next-token distributions, the defaults when not given."""
        from ...measures.scope_lm import DEFAULT_LM_CUTOFF

        return _decay(self, DEFAULT_LM_CUTOFF)

    def search_settings(self) -> SearchSettings:
        """What a search cell needs of these options (sentences are single texts)."""
        return _search_settings(self, loss=self.loss, search=self.search, beam_width=self.beam_width,
                                order=self.search_order)


@dataclass(kw_only=True)
class CheckpointsArgs(HistoryArgs, SearchLimitArgs, SearchDataArgs, Args):
    """The options of ``perturblab checkpoints`` and :func:`perturblab.checkpoints` (the one schema):
    ``--checkpoints`` or ``--finetune``, exactly one."""

    checkpoints: str | None = option(None, one_of="source", role="classifier", positional=True,
                                     python="str | Sequence[str | Checkpoint] | None",
                                     help="comma-separated classifier directories in training order (the last is "
                                          "the final model), or one fine-tune directory holding checkpoint-* "
                                          "subdirectories")
    finetune: str | None = option(None, one_of="source", role="encoder", metavar="BASE",
                                  help="fine-tune this encoder (preset such as minilm-l3, or a local directory) here, "
                                       "saving checkpoints at --fractions (cached under the data home)")
    fractions: str = option("0,0.2,0.4,0.6,0.8,1", python="str | Sequence[float]",
                            check=fraction_list, help="with --finetune: checkpoints as fractions of the training steps (0 = initialised "
                                 "model)")
    epochs: int = option(1, min=1, help="with --finetune: training epochs")
    max_seconds: float | None = option(300.0, above=0, help="with --finetune: " + MAX_SECONDS_HELP)
    lr: float = option(5e-5, above=0, help="with --finetune: learning rate")
    n_train: int | None = option(None, min=1, help="with --finetune: training examples (seeded sample of the training "
                                            "split; default all)")
    capabilities: str = option("synonym,typo", check=capability_names, python="str | Sequence[str]",
                               help="comma-separated capabilities")
    comparisons: str = option("vs_final,vs_previous", check=some_of(COMPARISONS), python="str | Sequence[str]",
                              help="vs_final (reference: the final checkpoint), vs_previous (reference: m_{t-1}), or "
                                   "both")
    n: int | None = _n_option(200, "samples")
    trials: int = _trials_option("samples")
    seed: int = option(0, min=0, help="seed of the data split, of the fine-tune and its training sample, of the base samples "
                               "and of every random choice of the search")

    def relations(self) -> list[tuple[str, str]]:
        return one_text_option(self) + self.history_relations()

    # -- what the study reads -------------------------------------------------------------
    #: what the checkpoint study shares with SCoPE's defaults (its SCoPE studies use them)
    test_size: ClassVar[float] = 0.25
    n_boot: ClassVar[int] = 1000

    def comparison_list(self) -> list[str]:
        """The comparisons, once each, in the order :data:`COMPARISONS` gives them."""
        given = items(self.comparisons)
        return [c for c in COMPARISONS if c in given]

    def scope_args(self, reference: str, targets: Sequence[str]) -> ScopeArgs:
        """The options of the SCoPE study of one reference and its targets (the checkpoints are
        given to it as objects under these names)."""
        return ScopeArgs(reference=reference, targets=",".join(targets), capabilities=self.capabilities,
                         data=self.data, text_column=self.text_column, text_fields=list(self.text_fields),
                         label_column=self.label_column, perturb_field=self.perturb_field, n=self.n,
                         trials=self.trials, seed=self.seed, max_words=self.max_words, patience=self.patience,
                         max_candidates=self.max_candidates, allow_non_alphabetic=self.allow_non_alphabetic,
                         synonyms=self.synonyms, synonym_min_similarity=self.synonym_min_similarity,
                         reinflect_synonyms=self.reinflect_synonyms, n_boot=self.n_boot, test_size=self.test_size)
