"""Options of the robustness paper's studies of classifiers and regressors (``perturblab robustness``)
and of generation (``perturblab generation``): the one schema of each command, its config entry and
its Python function (:func:`perturblab.robustness`, :func:`perturblab.generation`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ...core.options import ExecutorArgs, option
from ...errors import InputError
from ..args import (Args, BootstrapArgs, LabelledDataArgs, ModelList, PerturbationList, PerturbFieldArgs, SeedArgs,
                    items, known_perturbations, nonempty, place, some_of)

# With "Summary:" and no line break SmolLM2-Instruct ended half of its answers at once; with this
# prompt none of 16 (and ROUGE-L against the lead sentence rose from 0.14 to 0.32).
DEFAULT_PROMPT = "Summarize the text in one sentence.\n\nText: {source}\n\nOne-sentence summary:\n"

PERTURBATIONS_HELP = ("'robustness' (the robustness paper's eight, default), 'all' (the learnability paper's eight), "
                      "'every', or a comma list")


#: the ROUGE variants the generation study scores with
ROUGE = ("rouge1", "rouge2", "rougeL")


def prompt_template(value: str) -> None:
    """A generation prompt with the ``{source}`` placeholder."""
    if "{source}" not in str(value):
        raise InputError("the prompt must contain {source} where the (perturbed) source text goes")


def task_metrics(value: str) -> None:
    """Registered task metrics (:data:`~perturblab.measures.task_metrics.TASK_METRICS`), at least one."""
    from ...measures.task_metrics import get_task_metric

    names = items(value)
    if not names:
        raise InputError("give at least one metric (or leave the option out for the task's own)")
    for m in names:
        get_task_metric(m)


def label_maps(values: Sequence[str] | None) -> dict[str, dict[str, str]]:
    """``[MODEL:]model_label=data_label,...`` entries (``--label-map``) -> {model or "*": {model
    label: data label}}.

    Example::

        >>> label_maps(["NEGATIVE=neg,POSITIVE=pos", "m1:0=neg,1=pos"])
        {'*': {'NEGATIVE': 'neg', 'POSITIVE': 'pos'}, 'm1': {'0': 'neg', '1': 'pos'}}
    """
    maps: dict[str, dict[str, str]] = {}
    for v in values or []:
        spec, _, mapping = v.rpartition(":")
        pairs = [x.split("=", 1) for x in items(mapping)]
        if not pairs or any(len(p) != 2 or not p[0].strip() or not p[1].strip() for p in pairs):
            raise InputError(f"--label-map {v!r}: expected [MODEL:]model_label=data_label,... "
                             "(e.g. NEGATIVE=neg,POSITIVE=pos)")
        maps[spec.strip() or "*"] = {a.strip(): b.strip() for a, b in pairs}
    return maps


def label_map_entries(maps: Mapping[str, Mapping[str, str]]) -> list[str]:
    """{model or "*": {model label: data label}} as ``--label-map`` entries (what :func:`label_maps`
    reads back); a mapping those entries cannot spell (a label with ``,``, ``=`` or ``:``) is refused.

    Example::

        >>> label_map_entries({"*": {"NEGATIVE": "neg"}, "m1": {"0": "neg", "1": "pos"}})
        ['NEGATIVE=neg', 'm1:0=neg,1=pos']
    """
    entries = [("" if model == "*" else f"{model}:") + ",".join(f"{a}={b}" for a, b in mapping.items())
               for model, mapping in maps.items()]
    wanted = {str(k).strip() or "*": {str(a).strip(): str(b).strip() for a, b in v.items()} for k, v in maps.items()}
    if label_maps(entries) != wanted:
        raise InputError(f"label_map {dict(maps)!r}: labels may not contain ',', '=' or ':'; give them as the model "
                         "and the data name them without those")
    return entries


@dataclass(kw_only=True)
class RobustnessArgs(ModelList, PerturbationList, LabelledDataArgs, PerturbFieldArgs, BootstrapArgs, ExecutorArgs,
                     Args):
    """The options of ``perturblab robustness`` and :func:`perturblab.robustness` (the one schema)."""

    models: str | None = option(required=True, role="classifier", check=nonempty, positional=True, python="Any",
                                many=True,
                                help="comma list of classifiers: presets (minilm-l6, minilm-l3, tfidf-lr, ...), "
                                     "trainable models (textrnn, minilm-probe, hf-finetune) or fine-tuned HF "
                                     "sequence classifiers (local directory or hub id); on a regression task encoder "
                                     "presets get a ridge head, tfidf-ridge, or one-output HF models; NAME=SOURCE "
                                     "gives a short name, SOURCE[batch_size=8,max_length=128] an HF model's "
                                     "backend options")
    perturbations: str = option("robustness", check=known_perturbations, python="str | Sequence[str]",
                                help=PERTURBATIONS_HELP)
    data = place()
    text_fields = place()
    label_column = place()
    task: str | None = option(None, choices=("classification", "regression"),
                              help="classification (class labels) or regression (numeric targets, scored by pearson/"
                                   "spearman); default: classification for files, the task's own for glue:NAME")
    metrics: str | None = option(None, check=task_metrics, python="str | Sequence[str] | None",
                                 help="comma list of accuracy, mcc, f1 (classification; default accuracy,mcc) "
                                      "or pearson, spearman (regression; default both)")
    trials: int = option(3, aliases=("seeds",),
                         min=1, help="repetitions: draws of each random perturbation (--seeds is the old name)")
    n_train: int = option(2000, min=1, help="training split for presets and trainable models")
    n_eval: int = option(1000, aliases=("n_test",), min=1, help="evaluation examples (--n-test is the old name)")
    perturb_field = place()
    label_map: list[str] | None = option(None, repeat=True, metavar="[MODEL:]LABEL=DATA_LABEL,...",
                                         python="Sequence[str] | Mapping[str, Mapping[str, str]] | None",
                                         read_python=label_map_entries,
                                         help="map a model's output labels to the data's labels (repeatable; "
                                              "without MODEL: for every model that has these labels); needed only "
                                              "when names do not match")
    n_boot = place()
    train_seed: int = option(0, min=0, help="seed of training the preset heads and trainable models, and of the bootstrap "
                                     "resamples")

    def relations(self) -> list[tuple[str, str]]:
        """A ``--label-map`` for one model names one of ``--models`` (as given there; models given
        to the Python function as objects are named by it, and the study checks the names)."""
        if self.models is None:
            return []
        models = items(self.models)
        for v in self.label_map or []:
            spec = v.rpartition(":")[0].strip()
            if spec and spec not in models:
                return [("label_map", f"{v!r} names the model {spec!r}, which is not one of --models "
                                      f"({', '.join(models)}); give MODEL as in --models, or leave it out to map "
                                      "every model's labels")]
        return []

    # -- what the study reads -------------------------------------------------------------
    def metric_list(self) -> list[str] | None:
        """The metrics given, or None: the task's own (accuracy and MCC, or Pearson and Spearman)."""
        return items(self.metrics) if self.metrics else None

    def label_maps(self) -> dict[str, dict[str, str]]:
        """``--label-map`` as {model or "*": {model label: data label}} (:func:`label_maps`)."""
        return label_maps(self.label_map)


@dataclass(kw_only=True)
class GenerationArgs(ModelList, PerturbationList, SeedArgs, BootstrapArgs, Args):
    """The options of ``perturblab generation`` and :func:`perturblab.generation` (the one schema)."""

    models: str | None = option(required=True, role="language_model", check=nonempty, positional=True, python="Any",
                                many=True,
                                help="comma list of language models: presets (smollm2-135m, smollm2-135m-int8), "
                                     "local HF directories, .gguf files, hub ids or api:MODEL@URL")
    data: str = option("lead:conll2010", data=True,
                       help="lead:<corpus> (first sentences of a packaged corpus's documents as references; see "
                            "docs) or a CSV/JSONL file of source/reference pairs")
    source_column: str = option("source", help="source column of a data file")
    reference_column: str = option("reference", help="reference column of a data file")
    perturbations: str = option("robustness", check=known_perturbations, python="str | Sequence[str]",
                                help=PERTURBATIONS_HELP)
    metrics: str = option("rouge1,rouge2,rougeL", check=some_of(ROUGE), python="str | Sequence[str]", help="comma list of rouge1, rouge2, rougeL")
    n: int = option(100, min=1, help="examples (a seeded sample of the data)")
    trials: int = option(3, aliases=("seeds",),
                         min=1, help="repetitions: draws of each random perturbation (--seeds is the old name)")
    max_new_tokens: int = option(40, min=1, help="generation length (greedy)")
    prompt: str = option(DEFAULT_PROMPT, check=prompt_template, python="str | None", help="prompt template with {source}")
    seed = place()
    n_boot = place()

    # -- what the study reads -------------------------------------------------------------
    def metric_list(self) -> list[str]:
        """The ROUGE variants scored, in the order given."""
        return items(self.metrics)

    def prompt_template(self) -> str:
        """The prompt template: ``--prompt``, or the study's (:data:`DEFAULT_PROMPT`) when None."""
        return DEFAULT_PROMPT if self.prompt is None else self.prompt
