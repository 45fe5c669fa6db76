"""The public Python API: one function per study whose keywords are the command's long options,
with docstring examples that run."""

from __future__ import annotations

import doctest
import inspect

import pytest

import perturblab as pl
from perturblab import functions
from perturblab.cli import build_parser

#: commands whose study runs through the study core, by function name
CORE_COMMANDS = {"scope": "scope", "scope-lm": "scope_lm", "checkpoints": "checkpoints", "robustness": "robustness", "learnability": "learnability", "selfcheck": "selfcheck", "similarity": "similarity",
                 "finetuning": "finetuning", "layer-probes": "layer_probes", "grounding": "grounding",
                 "generation": "generation"}


def long_options(command: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    parser = sub.choices[command]
    return {opt[2:].replace("-", "_") for a in parser._actions for opt in a.option_strings
            if opt.startswith("--") and opt != "--help"}


@pytest.mark.parametrize("command,function", sorted(CORE_COMMANDS.items()))
def test_keywords_are_the_commands_long_options(command, function):
    fn = getattr(pl, function)
    params = set(inspect.signature(fn).parameters)
    missing = long_options(command) - params
    assert not missing, f"pl.{function} lacks the options {sorted(missing)} of `perturblab {command}`"
    assert fn.__doc__ and ">>>" in fn.__doc__, "each function's docstring has a runnable example"


@pytest.mark.parametrize("module", sorted({functions.study_function(k).__module__ for k in functions.STUDY_FUNCTIONS}))
def test_docstring_examples_run(module):
    """Every study function's example runs (each module holding one is tested as a whole)."""
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_import_is_lazy_and_exports_the_functions():
    assert "scope" in dir(pl) and "scope" in pl.__all__
    import subprocess
    import sys

    code = "import sys, perturblab; print('perturblab.functions' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]  # importing the package does no work


def test_model_objects_without_a_fingerprint_are_refused():
    from perturblab.errors import InputError

    with pytest.raises(InputError, match="fingerprint"):
        pl.scope(object(), ["tfidf-lr"])
