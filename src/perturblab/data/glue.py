"""The GLUE benchmark tasks (Wang et al., 2018) through the Hugging Face data set ``nyu-mll/glue``.

:data:`GLUE_TASKS` says, for each task, which columns hold the text (one or two), the class
names as in the Hugging Face ``ClassLabel`` feature (none for the STS-B regression task),
the metric the robustness paper reports (Sec. 3.4: Matthews correlation for CoLA, Pearson
correlation for STS-B, accuracy for the others), the split to evaluate on and which text of a
pair to perturb. :func:`load_glue` reads a task; ``load_dataset("glue:mrpc")`` and
``load_dataset("glue:stsb:validation")`` go through it. Reading needs the optional
``datasets`` package (``pip install perturblab[hf]``) and the hub or its local cache.

========  ====================  ==========================  ========  ==================
task      text fields (a, b)    classes (label 0, 1, ...)   metric    eval split
========  ====================  ==========================  ========  ==================
``cola``  sentence              unacceptable, acceptable    mcc       validation
``sst2``  sentence              negative, positive          accuracy  validation
``mrpc``  sentence1, sentence2  not_equivalent, equivalent  accuracy  validation
``qqp``   question1, question2  not_duplicate, duplicate    accuracy  validation
``stsb``  sentence1, sentence2  (regression, scores 0-5)    pearson   validation
``mnli``  premise, hypothesis   entailment, neutral,        accuracy  validation_matched
                                contradiction
``qnli``  question, sentence    entailment, not_entailment  accuracy  validation
``rte``   sentence1, sentence2  entailment, not_entailment  accuracy  validation
``wnli``  sentence1, sentence2  not_entailment, entailment  accuracy  validation
========  ====================  ==========================  ========  ==================

Every task perturbs ``both`` texts of a pair by default (the paper perturbs the whole input).
GLUE test splits are unlabelled (label ``-1``) and refused; MNLI's other labelled evaluation
split is ``validation_mismatched``. The diagnostic set AX has only a test split and is not listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, UnknownNameError
from .examples import Dataset
from .files import Task
from .hub import load_hf

HF_NAME = "nyu-mll/glue"  # the hub id of the GLUE data set (formerly "glue")

__all__ = ["GLUE_TASKS", "GlueTask", "glue_task", "load_glue"]


@dataclass(frozen=True)
class GlueTask:
    """One GLUE task: its Hugging Face config ``name`` and how to read and score it."""

    name: str
    text_column: str
    text_b_column: str | None
    label_names: tuple[str, ...]  # empty for regression
    task: Task
    metric: str  # a name in perturblab.measures.task_metrics.TASK_METRICS
    eval_split: str = "validation"
    perturb_field: str = "both"  # for pairs: "a", "b" or "both"
    splits: tuple[str, ...] = ("train", "validation", "test")

    @property
    def is_pair(self) -> bool:
        """Whether the task's inputs are text pairs."""
        return self.text_b_column is not None


_NLI = ("entailment", "not_entailment")
GLUE_TASKS: dict[str, GlueTask] = {t.name: t for t in (
    GlueTask("cola", "sentence", None, ("unacceptable", "acceptable"), "classification", "mcc"),
    GlueTask("sst2", "sentence", None, ("negative", "positive"), "classification", "accuracy"),
    GlueTask("mrpc", "sentence1", "sentence2", ("not_equivalent", "equivalent"), "classification",
             "accuracy"),
    GlueTask("qqp", "question1", "question2", ("not_duplicate", "duplicate"), "classification",
             "accuracy"),
    GlueTask("stsb", "sentence1", "sentence2", (), "regression", "pearson"),
    GlueTask("mnli", "premise", "hypothesis", ("entailment", "neutral", "contradiction"),
             "classification", "accuracy", eval_split="validation_matched",
             splits=("train", "validation_matched", "validation_mismatched", "test_matched",
                     "test_mismatched")),
    GlueTask("qnli", "question", "sentence", _NLI, "classification", "accuracy"),
    GlueTask("rte", "sentence1", "sentence2", _NLI, "classification", "accuracy"),
    GlueTask("wnli", "sentence1", "sentence2", ("not_entailment", "entailment"), "classification",
             "accuracy"),
)}


def glue_task(task: str) -> GlueTask:
    """The :class:`GlueTask` named ``task`` (case-insensitive; ``sst-2`` / ``sts-b`` work too)."""
    key = str(task).strip().lower().replace("-", "")
    if key not in GLUE_TASKS:
        raise UnknownNameError("GLUE task", str(task), list(GLUE_TASKS))
    return GLUE_TASKS[key]


def _check_split(spec: GlueTask, split: str) -> None:
    """Refuse unlabelled test splits and split names the task does not have."""
    parts = re.findall(r"[A-Za-z_]+", split)  # "train[:100]", "train+validation" allowed
    if not parts:
        raise InputError(f"GLUE {spec.name}: empty split name {split!r}; give e.g. train or "
                         f"{spec.eval_split}")
    for part in parts:
        if part.startswith("test"):
            raise InputError(f"GLUE {spec.name} split {split!r} is unlabelled (label -1 in the "
                             f"public release); evaluate on glue:{spec.name}:{spec.eval_split}")
        if part not in spec.splits:
            raise InputError(f"GLUE {spec.name} has no split {part!r}; its labelled splits are "
                             f"{', '.join(s for s in spec.splits if not s.startswith('test'))}")


def _unavailable(spec: GlueTask, split: str, why: str) -> str:
    return (f"cannot read GLUE task {spec.name!r} (split {split!r}): {why}. Reading GLUE needs "
            "the 'datasets' package (pip install perturblab[hf]) and network access to the "
            "Hugging Face hub (or its local cache); offline, export the task to CSV/JSONL and "
            f"load that file with --text-fields {','.join(_columns(spec))}"
            + (" --task regression" if spec.task == "regression" else ""))


def _columns(spec: GlueTask) -> list[str]:
    return [c for c in (spec.text_column, spec.text_b_column) if c is not None]


def load_glue(task: str, split: str | None = None, *, limit: int | None = None,
              **kw: Any) -> Dataset:
    """The GLUE task ``task`` (a key of :data:`GLUE_TASKS`), split ``split`` (default ``train``).

    Columns, class names and task type come from the table; keyword arguments of
    :func:`~perturblab.data.hub.load_hf` in ``kw`` (``text_column``, ``drop_empty``,
    ``cache_dir``, ...) override or extend them; a ``text_column`` given without a
    ``text_b_column`` reads one text per example. ``limit`` keeps the first ``limit`` rows.
    ``uid`` is GLUE's ``idx``. The data set is named ``glue:<task>``.
    """
    spec = glue_task(task)
    split = "train" if split is None else str(split).strip()
    _check_split(spec, split)
    try:
        import datasets  # noqa: F401  (optional dependency; load_hf imports it again)
    except ImportError as e:
        why = "the 'datasets' package is not installed"
        raise InputError(_unavailable(spec, split, why)) from e
    params: dict[str, Any] = {
        "text_column": spec.text_column, "text_b_column": spec.text_b_column,
        "label_column": "label", "label_names": list(spec.label_names) or None,
        "task": spec.task, "id_column": "idx"}
    if "text_column" in kw and "text_b_column" not in kw:
        params["text_b_column"] = None  # one text field named: a single-text task
    params.update(kw)
    try:
        ds = load_hf(HF_NAME, split, config=spec.name, limit=limit, **params)
    except InputError as e:
        # load_hf chains the library's own error (network, cache) to its InputError; errors
        # about the rows themselves (empty texts, bad labels) have no such cause
        if e.__cause__ is None or isinstance(e.__cause__, InputError):
            raise
        raise InputError(_unavailable(spec, split, str(e.__cause__))) from e.__cause__
    ds.name = f"glue:{spec.name}"
    return ds
