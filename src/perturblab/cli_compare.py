"""CLI command ``perturblab compare``: how targets differ from a reference model, with verdicts
and ``--fail-under`` thresholds for CI (registered by :mod:`perturblab.cli`). Exit status 0 when
every check passed, 1 when one failed, 2 for bad input."""

from __future__ import annotations

import argparse
from typing import Callable


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add the ``compare`` command to ``sub``."""
    from .studies.compare.config import CompareArgs

    p = sub.add_parser("compare", help="how models differ from the one you trust: the studies their kind supports, "
                                       "verdicts with intervals, and thresholds for CI")
    CompareArgs.add_arguments(p)


def cmd_compare(args: argparse.Namespace) -> int:
    """Run the comparison, print the verdicts and checks; 1 when a check failed."""
    from .studies.compare.config import CompareArgs
    from .studies.compare.function import COMPARE_FILE, run_compare

    options = CompareArgs.from_cli(args)
    options.check()
    result = run_compare(options)
    print(result.console())
    print(f"\nverdicts in {options.out}/{COMPARE_FILE}; report in {options.out}/report.html")
    return 0 if result.passed else 1


COMMANDS: dict[str, Callable] = {"compare": cmd_compare}
