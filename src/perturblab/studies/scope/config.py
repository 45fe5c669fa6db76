"""The options of the SCoPE studies (defaults follow the SCoPE paper): one dataclass per command,
read by its command line, a study config's entry and its Python function, and by the study itself
(:meth:`~ScopeArgs.search_settings`, :meth:`~ScopeArgs.capability_plan`, ...). The search options
are the groups of :mod:`perturblab.perturb.search_settings`, the data's those of
:mod:`perturblab.studies.args`."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from ...core.options import ExecutorArgs, count_or_all, option
from ...measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE
from ...measures.scope_lm import LM_METRICS
from ...perturb.search_settings import SearchGoalArgs, SearchLimitArgs, SynonymArgs
from ..args import (MAX_SECONDS_HELP, Args, BootstrapArgs, Group, HistoryArgs, LabelledDataArgs, PerturbFieldArgs,
                    SeedArgs, capability_names, corpus_split_option, fraction_list, max_text_chars_option, nonempty,
                    one_text_option, place, soft_decay, some_of)
from ..names import items

#: the model capabilities each quantity of the LM study (scope-lm) calls, every model's (the
#: reference's search too); ``encode``: the shared-vocabulary check
_DIST = frozenset({"next_token_logprobs", "encode"})
METRIC_NEEDS: dict[str, frozenset[str]] = {
    "gap_iid_acc": frozenset({"span_logprobs", "encode"}),  # teacher-forced top-1 accuracy
    **{m: _DIST for m in LM_METRICS if m != "gap_iid_acc"}}
#: the lengths of the corpus sentences the LM study takes as base sentences (words, both ends included)
SENTENCE_WORDS = (5, 40)

#: the capabilities run on the samples fairness qualifies (App. C)
STAR_OF_FAIRNESS = ("synonym*", "typo*")
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


# The options the SCoPE studies share, each declared once; ``what`` the base inputs are called
# (samples of a data set, sentences of a corpus).
def _n_option(default: int, what: str, all_is: str = "") -> Any:
    return option(default, parse=count_or_all, min=1, help=f"base {what} per trial (a number, or 'all'{all_is})")


def _trials_option(what: str) -> Any:
    return option(3, min=1, help=f"trials (independent draws of base {what})")


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
class SearchDataArgs(LabelledDataArgs, PerturbFieldArgs, Group):
    """``--data``, its columns and ``--perturb-field``: the labelled data of the studies that search
    perturbations (scope, checkpoints)."""

    data = place()
    text_column: str | None = option(None, help="text column of a data file")
    text_fields = place()
    label_column = place()
    perturb_field = place("a")


@dataclass(kw_only=True)
class ScopeArgs(SearchGoalArgs, SynonymArgs, SearchLimitArgs, SearchDataArgs, SeedArgs, BootstrapArgs, ExecutorArgs,
                Args):
    """The options of ``perturblab scope`` and :func:`perturblab.scope` (the one schema)."""

    reference: str | None = option(required=True, role="classifier", positional=True, python="Any",
                                   help="reference model m1: a preset name (see `perturblab models`) or HF path/id")
    targets: str | None = option(required=True, role="classifier", many=True, check=nonempty, positional=True,
                                 python="Any",
                                 help="comma-separated target models m2")
    capabilities: str = option("synonym,typo", check=capability_names, python="str | Sequence[str]",
                               help="comma-separated capabilities (see `perturblab capabilities`)")
    n: int | None = _n_option(500, "samples", ": the whole test split")
    trials: int = _trials_option("samples")
    seed = place()
    tolerance: float | None = _tolerance_option()
    cutoff: float | None = _cutoff_option("distance of two argmax-invariant changes in a binary task")
    n_boot = place()
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


@dataclass(kw_only=True)
class LMScopeArgs(SearchGoalArgs, SynonymArgs, SearchLimitArgs, SeedArgs, BootstrapArgs, ExecutorArgs, Args):
    """The options of ``perturblab scope-lm`` and :func:`perturblab.scope_lm` (the one schema)."""

    reference: str | None = option(required=True, role="language_model", positional=True, python="Any",
                                   help="reference language model (e.g. smollm2-135m)")
    targets: str | None = option(required=True, role="language_model", many=True, positional=True, python="Any",
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
    seed = place()
    tolerance: float | None = _tolerance_option()
    cutoff: float | None = _cutoff_option("L1 distance of two distributions")
    n_boot = place()
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


@dataclass(kw_only=True)
class CheckpointsArgs(HistoryArgs, SynonymArgs, SearchLimitArgs, SearchDataArgs, SeedArgs, Args):
    """The options of ``perturblab checkpoints`` and :func:`perturblab.checkpoints` (the one schema):
    ``--checkpoints`` or ``--finetune``, exactly one."""

    checkpoints: str | None = option(None, one_of="source", role="classifier", many=True, positional=True,
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
    seed = place()

    def relations(self) -> list[tuple[str, str]]:
        return one_text_option(self) + self.history_relations()

    # -- what the study reads -------------------------------------------------------------
    #: the test split of the data, as SCoPE's default (the SCoPE studies of the checkpoints take it)
    test_size: ClassVar[float] = ScopeArgs.test_size

    def comparison_list(self) -> list[str]:
        """The comparisons, once each, in the order :data:`COMPARISONS` gives them."""
        given = items(self.comparisons)
        return [c for c in COMPARISONS if c in given]

    def scope_args(self, reference: str, targets: Sequence[str]) -> ScopeArgs:
        """The options of the SCoPE study of one reference and its targets (the checkpoints are
        given to it as objects under these names): every option of the study these options have
        too (the data, the samples, the search), the others at SCoPE's defaults."""
        shared = {f.name: copy.copy(getattr(self, f.name)) for f, o in ScopeArgs.fields()
                  if not o.runner and hasattr(self, f.name)}
        return ScopeArgs(**{**shared, "reference": reference, "targets": ",".join(targets)})
