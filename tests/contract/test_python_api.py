"""The public Python API: one function per study whose keywords are the command's long options,
with docstring examples that run."""

from __future__ import annotations

import doctest

import pytest

import perturblab as pl
from perturblab.studies.registry import entries

@pytest.mark.parametrize("study", [e for e in entries() if e.name != "demo"], ids=lambda e: e.name)
def test_each_study_is_one_exported_function_named_like_its_command(study):
    """``pl.<command with - as _>`` is the registry's function (its keywords are checked against
    the study's options in test_study_schema.py)."""
    fn = getattr(pl, study.name.replace("-", "_"))
    assert fn is study.load_function()
    assert study.name.replace("-", "_") in pl.__all__
    assert fn.__doc__ and ">>>" in fn.__doc__, "each function's docstring has a runnable example"


@pytest.mark.parametrize("module", sorted({e.load_function().__module__ for e in entries()}))
def test_docstring_examples_run(module):
    """Every study function's example runs (each module holding one is tested as a whole)."""
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_import_is_lazy_and_exports_the_functions():
    assert "scope" in dir(pl) and "scope" in pl.__all__
    import subprocess
    import sys

    code = "import sys, perturblab; print('perturblab.studies.scope.study' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]  # importing the package does no work


def test_model_objects_without_a_fingerprint_are_refused():
    from perturblab.errors import InputError

    with pytest.raises(InputError, match="fingerprint"):
        pl.scope(object(), ["tfidf-lr"])
