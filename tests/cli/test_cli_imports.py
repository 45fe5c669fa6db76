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
