"""The package's files stay readable: each module under 600 lines and each function under 80
(counted from its first decorator to its last line), so a concept that grows is split into
modules and named steps rather than left to grow."""

from __future__ import annotations

import ast
from pathlib import Path

import perturblab

PACKAGE = Path(perturblab.__file__).parent
MOST_LINES, MOST_FUNCTION_LINES = 600, 80


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_under_600_lines():
    assert _modules(), PACKAGE
    long = {str(p.relative_to(PACKAGE)): n for p in _modules() if (n := p.read_text().count("\n")) > MOST_LINES}
    assert not long, f"split these modules by concept: {long}"


def test_every_function_is_under_80_lines():
    long = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if (n := node.end_lineno - start + 1) > MOST_FUNCTION_LINES:
                    long[f"{p.relative_to(PACKAGE)}:{node.name}"] = n
    assert not long, f"split these functions into named steps: {long}"
