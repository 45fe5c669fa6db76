"""The command modules sit above the parser they share: ``perturblab history`` builds and parses
its commands without importing the module of the whole command line."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
import perturblab.cli_history as history
from perturblab.core.arguments import Parser

parser = Parser(prog="perturblab")
history.add_parsers(parser.add_subparsers(dest="command"))
ns = parser.parse_args(["history", "check", "h.sqlite", "--release", "r", "--equivalent", "agreement=0.02"])
assert ns.equivalent == [("agreement", 0.02)], ns.equivalent
print(sorted(m for m in sys.modules if m.startswith("perturblab.cli")))
"""


def test_the_history_command_does_not_import_the_command_line_module():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['perturblab.cli_history', 'perturblab.cli_report']"


HELP = """
import sys
from perturblab.cli import build_parser
from perturblab.studies.registry import entries

build_parser().format_help()
print(len(entries()), sorted(m for m in ("torch", "transformers", "sklearn", "pandas") if m in sys.modules))
"""


def test_the_command_list_loads_every_study_class_but_no_model_library():
    """``perturblab --help`` builds a command from each study class: every class's module is
    imported, none of them imports torch, transformers, scikit-learn or pandas at import time."""
    done = subprocess.run([sys.executable, "-c", HELP], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, heavy = done.stdout.split(" ", 1)
    assert int(count) >= 13 and heavy.strip() == "[]", done.stdout
