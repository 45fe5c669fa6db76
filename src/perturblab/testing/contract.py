"""The whole contract of one study: :func:`check_study`."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .common import StudyReport
from .entry import check_compare_options, check_help, check_one_entry, check_part_keys, check_signature
from .rules import check_rule_by_command, check_rule_by_function, check_rules_by_config, required_values, rule_cases
from .runs import ExampleRuns

if TYPE_CHECKING:  # pragma: no cover
    from ..core.study import Study
    from ..studies.registry import StudyEntry


_GAP = "the example has one model, and a gap is a target's against the reference"
#: the headline keys of their parts in ``compare`` that the packaged studies' examples do not
#: give, each with why (a study not named here: its example gives every key of its part)
KEYS_NOT_IN_EXAMPLE: dict[str, dict[str, str]] = {
    "robustness": dict.fromkeys(("relative_robustness_gap", "accuracy_gap"), _GAP),
    "selfcheck": {
        **dict.fromkeys(("negation_normalised", "negation_benign_abs"), "the example has no benign corpus"),
        **dict.fromkeys(("toxicity_generation", "toxicity_next_token", "long_range", "word_order", "tokenization"),
                        "the example's metrics are negation and entropy"),
        **dict.fromkeys([f"{k}_gap" for k in ("negation_sensitivity", "negation_normalised", "negation_benign_abs",
                                              "negation_ppl_drops", "toxicity_generation", "toxicity_next_token",
                                              "long_range", "word_order", "tokenization", "next_token_entropy",
                                              "token_entropy")], _GAP)},
}


@contextlib.contextmanager
def _registered(entry: "StudyEntry") -> Iterator[None]:
    """``entry`` registered while the block runs (it is already, or it is for the block)."""
    from ..studies.registry import is_registered, register_study, unregister_study
    from ..studies.registry import entry as registered

    key = entry.name.strip().lower()
    if is_registered(key):
        if registered(key) != entry:
            raise ValueError(f"another study is registered as {entry.name!r}; unregister it or rename this one")
        yield
        return
    register_study(entry.study)
    try:
        yield
    finally:
        unregister_study(key)


def check_study(study: "str | type[Study] | StudyEntry", *, out: str | Path | None = None, runs: bool = True,
                rules: bool = True, changed: Mapping[str, Any] | None = None,
                keys_not_in_example: Mapping[str, str] | None = None) -> StudyReport:
    """Check that ``study`` (a registered name, or a study class,
    :class:`~perturblab.core.study.Study`, registered for the check when it is not; a different
    study registered under its name is a ValueError)
    keeps the study contract (see the module docstring); raises :class:`AssertionError` naming
    the study and the broken contract.

    ``out``: where the check writes (default: a temporary directory, removed afterwards);
    ``runs``: also run the example through contracts a-e (seconds to minutes); ``rules``: check
    each declared rule from the command, a config and the function; ``changed``: the changed input
    of contract c (default: :data:`~.runs.CHANGED_INPUTS`, else the example's sample size two larger);
    ``keys_not_in_example``: the headline keys of the study's part in ``compare`` that its example
    does not give, each with why (default: :data:`KEYS_NOT_IN_EXAMPLE`'s, else none).
    Returns a :class:`StudyReport` of what was checked and what was skipped, and why.

    Example::

        >>> from perturblab.testing import check_study
        >>> report = check_study("similarity", runs=False)
        >>> report.checked[:3]
        ['--help renders', 'one entry', 'keywords are the options']
        >>> report.skipped
        [("its compare part's keys are the example's", 'runs=False'), ('run contracts a-e', 'runs=False')]
    """
    from ..studies.registry import StudyEntry, _study_class
    from ..studies.registry import entry as registered

    entry = study if isinstance(study, StudyEntry) else registered(study) if isinstance(study, str) \
        else StudyEntry(_study_class(study))
    report = StudyReport(entry.name)
    with contextlib.ExitStack() as stack:
        root = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix=f"check-{entry.name}-")))
        root.mkdir(parents=True, exist_ok=True)
        stack.enter_context(_registered(entry))
        check_help(entry)
        report.checked.append("--help renders")
        check_one_entry(entry)
        report.checked.append("one entry")
        check_signature(entry)
        report.checked.append("keywords are the options")
        if not rules:
            report.skipped.append(("declared rules", "rules=False"))
        else:
            _check_rules(entry, root / "rules", report)
        if entry.compare:
            kinds = check_compare_options(entry)
            if kinds:
                report.checked.append(f"its compare part builds options the study takes ({', '.join(kinds)})")
            else:
                report.skipped.append(("its compare part builds options the study takes",
                                       "the part's fit leaves out the stand-in models of every kind it serves"))
        keys = "its compare part's keys are the example's"
        if not runs:
            report.skipped += [(keys, "runs=False")] if entry.compare else []
            report.skipped.append(("run contracts a-e", "runs=False"))
        elif not entry.example:
            report.skipped += [(keys, "the entry has no example to run")] if entry.compare else []
            report.skipped.append(("run contracts a-e", "the entry has no example to run"))
        else:
            example = ExampleRuns(entry, root / "runs", changed=changed)
            if entry.compare:  # on the function's run, which contracts a, d and e read again
                left_out = KEYS_NOT_IN_EXAMPLE.get(entry.name) if keys_not_in_example is None else keys_not_in_example
                check_part_keys(entry, [e.key for e in example.result.headline().estimates], left_out)
                report.checked.append(keys)
            example.check_all(root / "contracts", report)
    return report


def _check_rules(entry: "StudyEntry", where: Path, report: StudyReport) -> None:
    values, why = required_values(entry)
    cases = rule_cases(entry)
    if values is None:
        report.skipped.append(("declared rules", why))
        return
    if not cases:
        report.skipped.append(("declared rules", "no option declares a rule"))
        return
    for i, case in enumerate(cases):
        check_rule_by_command(case, where / f"command-{i}")
        check_rule_by_function(case, where / f"function-{i}")
    if entry.config:
        check_rules_by_config(cases, where / "config")
    else:
        report.skipped.append(("rules refused by a config check", "the study is not a config entry"))
    ruled = ", ".join(c.id.split(":", 1)[1] for c in cases)
    report.checked.append(f"declared rules refused by the command, {'a config, ' if entry.config else ''}"
                          f"the function ({ruled})")
