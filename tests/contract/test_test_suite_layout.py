"""The tests share code one way: fixtures and hooks in ``tests/conftest.py``, which no module
imports, and everything else in the package ``tests/helpers/``; no helper module lies loose at the
top of tests/, and no fixture is written twice with the same body. Test workers sharing the cores
size their libraries' thread pools to their share."""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from helpers import TESTS


#: an import of conftest, at any indentation
IMPORTS_CONFTEST = re.compile(r"^\s*(?:import conftest\b|from conftest import)", re.M)


def is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def test_no_test_module_imports_conftest():
    importers = [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("*.py"))
                 if IMPORTS_CONFTEST.search(p.read_text(encoding="utf-8"))]
    assert importers == []


def test_the_top_of_tests_holds_only_conftest_and_the_helpers_package():
    loose = sorted(p.name for p in TESTS.glob("*.py") if p.name != "conftest.py")
    assert loose == []
    assert (TESTS / "helpers" / "__init__.py").is_file()


def test_conftest_holds_only_fixtures_and_hooks():
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert functions, "conftest.py defines no fixture"
    others = [n.name for n in functions if not is_fixture(n) and not n.name.startswith("pytest_")]
    assert others == []
    assert [n.name for n in tree.body if isinstance(n, ast.ClassDef)] == []


def test_no_fixture_is_written_twice_with_the_same_body():
    """Two fixtures with the same arguments and statements (docstrings aside), whatever their
    names, are one fixture written twice."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and is_fixture(node):
                body = node.body
                if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    body = body[1:]
                key = (ast.unparse(node.args), "\n".join(ast.unparse(s) for s in body))
                seen[key].append(f"{path.relative_to(TESTS)}::{node.name}")
    assert [where for where in seen.values() if len(where) > 1] == []


def test_test_workers_share_the_cores_and_keep_what_the_environment_sets():
    from helpers.threads import THREAD_VARIABLES, share_cores

    environ: dict[str, str] = {}
    share_cores(environ, workers=2, cores=2)  # the CI machine: one thread each
    assert environ == {**{name: "1" for name in THREAD_VARIABLES}, "OMP_WAIT_POLICY": "PASSIVE"}
    environ = {"OMP_NUM_THREADS": "3", "OMP_WAIT_POLICY": "ACTIVE"}
    share_cores(environ, workers=4, cores=16)
    assert environ == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "4",
                       "OMP_WAIT_POLICY": "ACTIVE"}
    environ = {}
    share_cores(environ, workers=3, cores=2)  # more workers than cores: still one thread each
    assert environ["OMP_NUM_THREADS"] == "1"
    environ = {}
    share_cores(environ, workers=0, cores=2)  # no xdist: the libraries' defaults
    assert environ == {}
