"""Options of ``perturblab compare`` and :func:`perturblab.compare` (the one schema)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ...core.options import ExecutorArgs, option
from ...errors import InputError
from ...perturb.search_settings import SynonymSetArgs
from ..args import (Args, HistoryArgs, LabelledDataArgs, SeedArgs, items, max_text_chars_option, nonempty,
                    one_text_option, place)

def threshold(value: str) -> tuple[str, float]:
    """``METRIC=VALUE`` of ``--fail-under`` -> (metric, value); the metric is a headline key
    (``hard_scope:typo``, ``relative_robustness:change_char``) or its first part (``soft_scope``:
    every capability)."""
    m = re.fullmatch(r"\s*([A-Za-z_][\w|.-]*(?::[\w|.* -]+)*)\s*=\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*", value)
    if not m:
        raise InputError(f"{value!r}: expected METRIC=VALUE, e.g. hard_scope:typo=0.9 or soft_scope=0.85")
    return m.group(1).strip(), float(m.group(2))


def thresholds(values: list[str] | None) -> None:
    """Every ``--fail-under`` entry reads as ``METRIC=VALUE`` with VALUE in the metric's range
    (:func:`~.checks.check_range`)."""
    from .keys import check_range

    for v in values or []:
        check_range(*threshold(v))


def margins(values: list[str] | None) -> None:
    """Every ``--equivalent`` entry reads as ``METRIC=MARGIN``, a paired measure with a margin
    above 0 (:func:`~.checks.check_margin`)."""
    from .keys import check_margin

    for v in values or []:
        metric, margin = threshold(v)
        check_margin(metric, margin)


def study_list(value: str | None) -> None:
    """``--studies``: the parts of registered studies (by their own name or the study's registry
    name, :func:`~perturblab.studies.part.part_name`), none twice."""
    from ..part import part_name, studies_of

    if value is None:
        return
    names = items(value)
    if not names:
        raise InputError(f"give at least one study of {', '.join(studies_of())}, or leave --studies out")
    known = studies_of()
    unknown = [n for n in names if n not in known and n not in known.values()]
    if unknown:
        raise InputError(f"unknown stud{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; choose from "
                         + ", ".join(f"{p} ({s})" for p, s in known.items()))
    parts = [part_name(n) for n in names]
    twice = next((n for i, n in enumerate(parts) if n in parts[:i]), None)
    if twice is not None:
        raise InputError(f"names {twice} twice; give each study once")


def duration(value: str) -> float:
    """``90s``, ``10m``, ``1.5h`` or a number of seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(\.\d*)?|\.\d+)\s*(s|sec|m|min|h)?\s*", str(value))
    if not m:
        raise InputError(f"{value!r}: expected a time such as 90s, 10m or 1.5h")
    return float(m.group(1)) * {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}.get(m.group(3) or "s", 1)


@dataclass(kw_only=True)
class CompareArgs(HistoryArgs, LabelledDataArgs, SynonymSetArgs, SeedArgs, ExecutorArgs, Args):
    """The options of ``perturblab compare`` and :func:`perturblab.compare`."""

    reference: str | None = option(required=True, role="model", positional=True, python="str", help="the model you trust: a classifier (minilm-l6, a fine-tuned "
                                                        "HF directory, ...) or a language model (smollm2-135m, ...)")
    targets: str | None = option(required=True, role="model", check=nonempty, positional=True,
                                 python="str | Sequence[str]",
                                 help="comma list of the models to compare with it, of the same kind")
    data = place(python="str | DataFrame | Dataset")
    corpus: str = option("oanc", help="unlabelled text for language models: a packaged corpus or a text file")
    text_column: str | None = option(None, help="text column of a --data or --corpus file (default: 'text')")
    text_fields = place()
    label_column = place()
    benign_corpus: str = option("oanc", data=True, help="language models: the corpus of selfcheck's normalised "
                                                        "negation score ('none' to leave it out)")
    studies: str | None = option(None, check=study_list,
                                 help="comma list of the studies to run, by their folder name or their command: "
                                      "invariances (scope), robustness, layers (similarity), lm-invariances "
                                      "(scope-lm), selfcheck, and those of installed packages; default: those the "
                                      "models' kind supports")
    budget: str = option("10m", check=duration, help="about how long the studies may take (90s, 10m, 1.5h); "
                                                     "sample sizes are chosen to fit it")
    retime: bool = option(False, flag=True, runner=True, in_config=True,
                          help="time every model again before planning instead of reading back its speed kept from an "
                               "earlier plan (kept up to 30 days; a figure measured while other work shared the "
                               "machine is not kept)")
    fail_under: list[str] | None = option(None, repeat=True, check=thresholds, metavar="METRIC=VALUE",
                                   help="exit with 1 when a target's estimate is below VALUE (repeatable), e.g. "
                                        "hard_scope:typo=0.9, agreement=0.95, accuracy_gap=-0.02, "
                                        "relative_robustness_gap:change_char=-0.05")
    strict: bool = option(False, flag=True, help="check the lower end of each estimate's 95% interval "
                                                 "instead of the estimate")
    equivalent: list[str] | None = option(None, repeat=True, check=margins, metavar="METRIC=MARGIN",
                                          help="exit with 1 unless each target is shown within MARGIN of the "
                                               "reference (repeatable): two one-sided tests at 5% on the paired "
                                               "difference, e.g. agreement=0.05 (at most 5% of inputs disagree), "
                                               "accuracy_gap=0.02, relative_robustness_gap=0.05")
    until: str | None = option(None, choices=("decided",),
                               help="'decided': run in rounds, the invariances growing where findings are still open, "
                                    "and stop once every finding's interval lies within one level (or --budget is "
                                    "spent); its intervals are confidence sequences, valid however often the run "
                                    "looks (docs/compare.md); default: one round at the budget's sizes")
    undecided: str = option("pass", choices=("pass", "fail"),
                            help="with --until decided: the exit status when the budget ends with findings still "
                                 "undecided: 'pass' (0 unless a check fails) or 'fail' (1)")
    detect: float | None = option(None, above=0, below=1,
                                  help="size each study to detect a difference of this size (e.g. 0.02) with 80% "
                                       "power at 5%, or say that the budget cannot; default: sizes from the budget")
    synonyms = place("meaning")
    seed = place()
    max_text_chars: int | None = max_text_chars_option("a sample of the invariances")
    mlflow: str | None = option(None, runner=True, in_config=True, metavar="URI",
                                help="also log this comparison as an MLflow run at this tracking URI "
                                     "(sqlite:///mlflow.db, http://host:5000): parameters, each estimate and its "
                                     "interval as metrics, compare.json and the report as artifacts")

    # -- what the compare reads -------------------------------------------------------------
    def target_names(self) -> list[str]:
        """The targets, in the order given."""
        return items(self.targets or "")

    def budget_seconds(self) -> float:
        """``budget`` in seconds."""
        return duration(self.budget)

    def threshold_list(self) -> list[tuple[str, float]]:
        """``fail_under`` as (metric, value) pairs."""
        return [threshold(v) for v in self.fail_under or []]

    def margin_list(self) -> list[tuple[str, float]]:
        """``equivalent`` as (metric, margin) pairs."""
        return [threshold(v) for v in self.equivalent or []]

    def reference_name(self) -> str:
        """The name the studies report for the reference (its ``NAME=``, else its source)."""
        from ..names import display_name

        return display_name(self.reference or "")

    def target_labels(self) -> list[str]:
        """The names the studies report for the targets, in the order given (:meth:`target_names`
        are the specs as given)."""
        from ..names import display_name

        return [display_name(t) for t in self.target_names()]

    #: one name per model: two specs the studies would report under one name are refused before any work
    shown_together: ClassVar[tuple[str, ...]] = ("reference", "targets")

    def relations(self) -> list[tuple[str, str]]:
        """``--text-fields`` replaces ``--text-column`` (not both). The reference is not among the
        targets: every study would compare it with itself, and those that take one list of models
        (robustness) would be given it twice. A copy under a name of its own (``copy=SOURCE``) is a
        second model, compared as any other."""
        found = one_text_option(self) + self.history_relations()
        if self.undecided != "pass" and self.until is None:
            found.append(("undecided", "applies to a run with --until decided; give --until decided too, or leave "
                                       "--undecided out"))
        if self.until is not None and self.detect is not None:
            found.append(("until", "--detect sizes each study once, --until decided grows it until its findings "
                                   "are decided; give one of them"))
        if self.reference is None or self.reference not in self.target_names():
            return found
        from ...models.spec import ModelSpec

        ms = ModelSpec.parse(self.reference)
        source = self.reference.partition("=")[2].strip() if ms.name != ms.source else self.reference
        return found + [("targets", f"names the reference {self.reference!r} itself; drop it from --targets (the reference is "
                            f"compared with every target already), or give a copy a name of its own to compare two "
                            f"loads of it (e.g. --targets copy={source})")]

    def study_names(self) -> list[str] | None:
        """The parts ``studies`` names (registry names read as their parts' names), or None:
        those the models support."""
        from ..part import part_name

        return [part_name(n) for n in items(self.studies)] if self.studies else None
