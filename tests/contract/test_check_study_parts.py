""":func:`perturblab.testing.check_study` on a study's part in ``compare``: the options the part
builds at its least size must be the study's, with values its check takes, and every headline key
the part declares must be one the study's example gives; and the registry's paths are full
``module:name`` paths, the guide's line among them."""

from __future__ import annotations

import argparse

import pytest

from perturblab.cli import build_parser
from perturblab.studies.part import CLASSIFIER, Cost, Part
from perturblab.studies.registry import OTHER_COMMANDS, StudyEntry, entries
from perturblab.studies.scope.compare import KEYS, sentence
from perturblab.testing import KEYS_NOT_IN_EXAMPLE, check_compare_options, check_part_keys, check_study


def scope_options(args, size, plan, target=None, **changed):
    """The options of SCoPE on typos in a comparison, with ``changed`` ones."""
    return {"reference": args.reference, "targets": ",".join(args.target_names()), "data": args.data, "n": size,
            "trials": 1, "capabilities": "typo", "seed": args.seed, "n_boot": 20, **changed}


def _part(options=scope_options, keys=KEYS) -> Part:
    return Part("typos", (CLASSIFIER,), {CLASSIFIER: Cost("n", per_unit=0.5, fixed=5.0, share=0.1, least=6, most=6)},
                keys, options, sentence, rates=True)


GOOD = _part()
MISNAMED = _part(lambda *a, **k: {**scope_options(*a, **k), "trails": 1})  # trials, misspelt
OLD_NAME = _part(lambda args, size, plan, target=None: {"models": args.reference, "n_test": size})  # n_eval's
BAD_VALUE = _part(lambda *a, **k: scope_options(*a, **k, n_boot=0))
NOT_A_NUMBER = _part(lambda *a, **k: scope_options(*a, **k, n="six"))
UNKNOWN_KEY = _part(keys=(*KEYS, "kept_typos"))


def _entry(part: str) -> StudyEntry:
    """A study of SCoPE on typos (or, for ``OLD_NAME``, of robustness) whose part is ``part``."""
    from perturblab.studies.robustness.study import RobustnessStudy
    from perturblab.studies.scope.study import ScopeStudy

    if part == "OLD_NAME":  # robustness, whose --n-eval had the old name --n-test
        return StudyEntry(type("TypoRobustness", (RobustnessStudy,), dict(
            command="typo-scope", function="typo_scope", help="robustness", part=globals()[part], example={})))
    return StudyEntry(type("TypoScope", (ScopeStudy,), dict(
        command="typo-scope", function="typo_scope", help="SCoPE under typos", part=globals()[part],
        example=dict(reference="tfidf-lr", targets="minilm-l3", capabilities="typo", n=6, trials=1, n_boot=20))))


def test_the_options_of_a_part_are_checked_for_each_kind_it_serves_at_its_least_size():
    assert check_compare_options(_entry("GOOD")) == [CLASSIFIER]
    report = check_study(_entry("GOOD"), runs=False, rules=False)
    assert "its compare part builds options the study takes (classifier)" in report.checked


@pytest.mark.parametrize("part,said", [
    ("MISNAMED", "part 'typos' (classifiers, n = 6) gives the option 'trails': not an option of typo-scope; "
                 "did you mean 'trials'?"),
    ("OLD_NAME", "gives the option 'n_test': an old name of --n-eval; compare needs the field's name, 'n_eval'"),
    ("BAD_VALUE", "part 'typos' (classifiers, n = 6): --n-boot: must be at least 1, got 0"),
    ("NOT_A_NUMBER", "part 'typos' (classifiers, n = 6): --n: 'six' is not a valid"),
])
def test_a_part_that_builds_a_wrong_option_fails_the_check_naming_the_part_and_the_option(part, said):
    with pytest.raises(AssertionError) as e:
        check_study(_entry(part), runs=False, rules=False)
    assert "study 'typo-scope' breaks the contract 'its compare part builds options the study takes'" in str(e.value)
    assert said in str(e.value)


def test_every_packaged_part_builds_options_its_study_takes():
    """For each kind a built-in part serves (``layers``: both), its options at its least size pass."""
    checked = {e.name: check_compare_options(e) for e in entries() if e.compare}
    assert checked == {"scope": [CLASSIFIER], "scope-lm": ["language model"], "selfcheck": ["language model"],
                       "robustness": [CLASSIFIER], "similarity": [CLASSIFIER, "language model"]}


def test_part_keys_are_those_the_example_gives_or_named_with_why():
    entry = _entry("UNKNOWN_KEY")
    given = ["hard_scope:typo", "soft_scope:typo", "agreement", "accuracy_gap"]  # what the example's headline has
    check_part_keys(_entry("GOOD"), given)
    with pytest.raises(AssertionError, match=r"declares \['kept_typos'\], which the example's headline does not "
                                             r"give \(it gives \['accuracy_gap', 'agreement', 'hard_scope', "
                                             r"'soft_scope'\]\)"):
        check_part_keys(entry, given)
    check_part_keys(entry, given, {"kept_typos": "the example has no second capability"})
    with pytest.raises(AssertionError, match=r"not the part's: \['kep_typos'\]"):
        check_part_keys(entry, given, {"kep_typos": "a key the part does not declare"})


def test_check_study_fails_a_part_key_the_example_never_gives(tmp_path):
    """The example runs (the function, on 6 reviews) and its headline lacks the part's
    ``kept_typos``: the check fails before the run contracts a-e."""
    with pytest.raises(AssertionError, match=r"breaks the contract 'its compare part's keys are the example's': "
                                             r"part 'typos' declares \['kept_typos'\]"):
        check_study(_entry("UNKNOWN_KEY"), out=tmp_path, rules=False)
    assert not (tmp_path / "runs" / "cli").exists()  # the command of contracts a-c never ran


@pytest.mark.parametrize("name", [pytest.param(e.name, marks=[pytest.mark.slow] if e.name in ("scope-lm", "selfcheck")
                                               else []) for e in entries() if e.compare and e.example])
def test_the_packaged_examples_give_their_parts_keys(name, tmp_path):
    """Each built-in part's keys are given by its study's example, but for those
    :data:`~perturblab.testing.KEYS_NOT_IN_EXAMPLE` names (and those it names are not given)."""
    entry = next(e for e in entries() if e.name == name)
    result = entry.load_function()(**entry.example, out=tmp_path, quiet=True)
    given = [e.key for e in result.headline().estimates]
    left_out = KEYS_NOT_IN_EXAMPLE.get(name, {})
    check_part_keys(entry, given, left_out)
    assert not {k.split(":", 1)[0] for k in given} & set(left_out)


def test_the_commands_that_are_not_studies_are_the_parsers_other_commands():
    """:data:`~perturblab.studies.registry.OTHER_COMMANDS` is what a plugin study may not be named:
    every command of the parser, aliases included, that is no registered study."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert OTHER_COMMANDS == set(sub.choices) - {e.name for e in entries()}


def test_the_built_in_studies_are_read_through_the_packages_entry_point():
    """This package's studies are the classes its own entry point of ``perturblab.studies`` names
    (:data:`perturblab.studies.builtin.STUDIES`), first in the command list, in that order."""
    from importlib.metadata import entry_points

    from perturblab.studies.builtin import STUDIES

    own = [p for p in entry_points(group="perturblab.studies") if p.dist is not None and p.dist.name == "perturblab"]
    assert [p.value for p in own] == ["perturblab.studies.builtin:STUDIES"] and own[0].load() is STUDIES
    assert [e.name for e in entries()][:len(STUDIES)] == [s.command for s in STUDIES]
    assert [e.study for e in entries()][:len(STUDIES)] == STUDIES
