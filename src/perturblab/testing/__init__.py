"""The study contract, as a public check (as scikit-learn's ``check_estimator``).

:func:`check_study` puts one study (a registered name or a study class,
:class:`~perturblab.core.study.Study`) through every contract a study of this package
keeps, and raises :class:`AssertionError` naming the study and the contract it broke:

* ``perturblab <name> --help`` renders;
* the Python function is generated from the study's class
  (:func:`~perturblab.core.entry.function_of`) and the options class is a dataclass subclassing :class:`~perturblab.studies.args.Args`;
* the function's keywords are the ones generated from the options: their names, with the
  options' defaults;
* a study with a part in ``compare``: for each model kind the part serves, the options it builds
  at its least size for a comparison of the example's models name only the study's options and
  pass their check, as ``compare`` gives them (:func:`check_compare_options`); with ``runs=True``,
  every headline key the part declares is one the example's headline gives, or is named with why
  it does not (:func:`check_part_keys`, :data:`KEYS_NOT_IN_EXAMPLE`);
* every option's declared rule (``min``, ``above``, ``below``, ``max``, ``choices``) is refused
  alike by the command (exit status 2, one ``error:`` line naming the option, nothing written), by
  a study config (``perturblab run --check``: exit status 2, one error per broken rule) and by the
  Python function (an :class:`~perturblab.errors.InputError` before anything runs);
* with ``runs=True`` and an ``example`` in the entry, the run contracts (:class:`ExampleRuns`):
  a. the command, the Python function and a config entry write the same files;
  b. the command run again computes nothing;
  c. a changed input computes only its own cells;
  d. ``result.save(DIR)`` writes all its files or none;
  e. ``headline.json`` names each estimate with its interval and its n.

What cannot be checked (no example to run, a required option with no value to give it) is skipped
and named, with the reason, in the returned :class:`StudyReport`. The pieces are public too, so a
test suite can run them one test each (``tests/contract/test_conformance.py``,
``tests/contract/test_conformance_runs.py`` do).

The package imports neither pytest nor any model library at import time; the patches the run
contracts need (a spy on the results store, a failing file writer) are context managers that undo
themselves. :func:`normalised` (an output file's text without run ids and times, in
:mod:`.outputs`, standard library only) is also what ``scripts/compare_outputs.py`` compares.
"""

from .common import StudyReport, command_line
from .contract import KEYS_NOT_IN_EXAMPLE, check_study
from .entry import check_compare_options, check_help, check_one_entry, check_part_keys, check_signature
from .outputs import VOLATILE, cells, contents, normalised, outputs
from .rules import (ROLE_VALUES, RuleCase, check_rule_by_command, check_rule_by_function, check_rules_by_config,
                    required_values, rule_cases)
from .runs import CHANGED_INPUTS, ExampleRuns, StoreSpy, changed_input, failing_writer, spy_on_store

__all__ = [
    "check_study", "StudyReport", "ExampleRuns", "RuleCase", "ROLE_VALUES", "CHANGED_INPUTS",
    "check_help", "check_one_entry", "check_signature", "check_compare_options", "check_part_keys",
    "KEYS_NOT_IN_EXAMPLE", "required_values", "rule_cases",
    "check_rule_by_command", "check_rule_by_function", "check_rules_by_config", "command_line", "changed_input",
    "normalised", "VOLATILE", "outputs", "contents", "cells", "spy_on_store", "StoreSpy", "failing_writer",
]
