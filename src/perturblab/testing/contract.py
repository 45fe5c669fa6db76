"""The whole contract of one study: :func:`check_study`."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .common import StudyReport
from .entry import check_help, check_one_entry, check_signature
from .rules import check_rule_by_command, check_rule_by_function, check_rules_by_config, required_values, rule_cases
from .runs import ExampleRuns

if TYPE_CHECKING:  # pragma: no cover
    from ..studies.registry import StudyEntry


@contextlib.contextmanager
def _registered(entry: "StudyEntry") -> Iterator[None]:
    """``entry`` registered while the block runs (it is already, or it is for the block)."""
    from ..studies.registry import STUDIES, register_study, unregister_study
    from ..studies.registry import entry as registered

    key = entry.name.strip().lower()
    if key in STUDIES:
        if registered(key) != entry:
            raise ValueError(f"another study is registered as {entry.name!r}; unregister it or rename this one")
        yield
        return
    register_study(entry)
    try:
        yield
    finally:
        unregister_study(key)


def check_study(study: "str | StudyEntry", *, out: str | Path | None = None, runs: bool = True,
                rules: bool = True, changed: Mapping[str, Any] | None = None) -> StudyReport:
    """Check that ``study`` (a registered name, or a
    :class:`~perturblab.studies.registry.StudyEntry`, registered for the check when it is not; a
    different study registered under its name is a ValueError)
    keeps the study contract (see the module docstring); raises :class:`AssertionError` naming
    the study and the broken contract.

    ``out``: where the check writes (default: a temporary directory, removed afterwards);
    ``runs``: also run the example through contracts a-e (seconds to minutes); ``rules``: check
    each declared rule from the command, a config and the function; ``changed``: the changed input
    of contract c (default: :data:`~.runs.CHANGED_INPUTS`, else the example's sample size two larger).
    Returns a :class:`StudyReport` of what was checked and what was skipped, and why.

    Example::

        >>> from perturblab.testing import check_study
        >>> report = check_study("similarity", runs=False)
        >>> report.checked[:3]
        ['--help renders', 'one entry', 'keywords are the options']
        >>> report.skipped
        [('run contracts a-e', 'runs=False')]
    """
    from ..studies.registry import StudyEntry
    from ..studies.registry import entry as registered

    entry = study if isinstance(study, StudyEntry) else registered(study)
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
        if not runs:
            report.skipped.append(("run contracts a-e", "runs=False"))
        elif not entry.example:
            report.skipped.append(("run contracts a-e", "the entry has no example to run"))
        else:
            ExampleRuns(entry, root / "runs", changed=changed).check_all(root / "contracts", report)
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
