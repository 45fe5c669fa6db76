"""The run contracts of every registered study (as scikit-learn's ``check_estimator`` runs one
contract over every estimator): each study runs its registry ``example`` (options that run it in
seconds on the packaged models) through each entry point, and

a. its command, its Python function (``pl.<study>(..., out=DIR).save(DIR)``) and an entry of a
   study config (``perturblab run``, files in ``OUT/<study>/``) write the same output files with
   the same contents (run ids and times left out, as ``scripts/compare_outputs.py`` leaves them
   out; figures and HTML by presence: :func:`perturblab.testing.normalised`);
b. the command run again into the same ``--out`` computes nothing: no cell is computed, the
   ``cells`` table of ``results.sqlite`` keeps its rows, and the output files are the same;
c. a changed input (a larger sample, one more perturbation, measure or training example)
   computes only its own cells: new cells are added, none of the stored ones is computed again or
   changed, and the unchanged ones are read back;
d. ``result.save(DIR)`` writes all its files or none: a failure at the second file leaves an
   empty directory (no output file, no temporary file);
e. ``headline.json`` names each estimate with its n and its 95 % interval.

The contracts are :class:`perturblab.testing.ExampleRuns` (what
:func:`perturblab.testing.check_study` runs for one study); here each is one test per study.

The command runs once per study and its output directory serves a-c. A study whose example is
empty (it cannot run in seconds without a fine-tune) is skipped with the reason, and the
studies without one are named in :data:`WITHOUT_EXAMPLE`.
"""

from __future__ import annotations

import sys

import pytest

from perturblab.studies.registry import entries
from perturblab.testing import CHANGED_INPUTS, ExampleRuns, changed_input

#: one torch thread: the language models run many times faster on shared cores
pytestmark = pytest.mark.usefixtures("torch_one_thread")

#: studies that have no example: what each would need to run (``compare``: named before it is
#: registered)
WITHOUT_EXAMPLE = {
    "checkpoints": "needs classifier checkpoint directories of one training run, or --finetune (a fine-tune)",
    "compare": "runs several studies to a time budget; it is checked by tests/studies/compare/test_compare_runs.py",
    "demo": "a compare with its own defaults (three minutes); tests/end_to_end/test_slow_packaged.py runs it",
}

#: studies whose example takes longest (about a minute for the four contracts; their cases run with
#: ``pytest -m slow``)
SLOW = {"scope-lm", "selfcheck", "generation", "finetuning", "grounding", "learnability", "demo"}


def _case(e):
    marks = [pytest.mark.slow] if e.name in SLOW else []
    if not e.example:
        marks.append(pytest.mark.skip(reason=f"{e.name} has no example: {WITHOUT_EXAMPLE.get(e.name, 'not given')}"))
    return pytest.param(e, id=e.name, marks=marks)


CASES = [_case(e) for e in entries()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(entry)``: the study's :class:`~perturblab.testing.ExampleRuns`, made at its first use
    in this module (its command runs once, for contracts a-e)."""
    made: dict[str, ExampleRuns] = {}

    def get(entry) -> ExampleRuns:
        if entry.name not in made:
            made[entry.name] = ExampleRuns(entry, tmp_path_factory.mktemp(entry.name))
        return made[entry.name]

    yield get
    for name, run in made.items():  # with -s: the time each entry point took
        print(f"\n{name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items()), file=sys.stderr)


# -- the contracts --------------------------------------------------------------------------
def test_studies_without_an_example_are_the_known_ones():
    """Every study but those named in :data:`WITHOUT_EXAMPLE` has an example (a new study is
    checked by the contracts once its registry line gives one), and each of those is registered;
    each example has a changed input for contract c."""
    names = {e.name for e in entries()}
    assert {e.name for e in entries() if not e.example} == set(WITHOUT_EXAMPLE) & names
    assert "checkpoints" in names
    assert set(CHANGED_INPUTS) <= names and SLOW <= names
    assert len([e for e in entries() if e.example and e.name not in SLOW]) >= 4
    for e in entries():
        if e.example:
            assert changed_input(e) is not None, f"name the changed input of {e.name} in CHANGED_INPUTS"


@pytest.mark.parametrize("entry", CASES)
def test_a_the_command_the_function_and_a_config_write_the_same_files(entry, runs, tmp_path):
    runs(entry).check_same_files(tmp_path)


@pytest.mark.parametrize("entry", CASES)
def test_b_a_rerun_computes_nothing(entry, runs):
    runs(entry).check_rerun_computes_nothing()


@pytest.mark.parametrize("entry", CASES)
def test_c_a_changed_input_computes_only_its_cells(entry, runs, tmp_path):
    runs(entry).check_changed_input_computes_only_its_cells(tmp_path)


@pytest.mark.parametrize("entry", CASES)
def test_d_save_writes_all_files_or_none(entry, runs, tmp_path):
    runs(entry).check_save_all_or_nothing(tmp_path)


@pytest.mark.parametrize("entry", CASES)
def test_e_the_headline_names_each_estimate_with_its_interval_and_n(entry, runs):
    runs(entry).check_headline()
