"""One contract for every registered study (as scikit-learn's ``check_estimator`` runs one contract
over every estimator), made from the registry and each study's options by the public check
:mod:`perturblab.testing` (:func:`~perturblab.testing.check_study` runs it all for one study; here
its pieces run one test each, so a new study is checked by adding its registry line):

* ``perturblab <name> --help`` renders, every study function is made by the one entry (it checks
  its values), its options class has the package's base (model and data options checked without
  loading), and its keywords are its options;
* every option's declared rule (``min``, ``above``, ``below``, ``max``, ``choices``) refuses a
  value just outside it the same way from the command line (exit 2, one ``error:`` line naming the
  option, no traceback, nothing written), from a study config (``perturblab run --check``) and
  from the Python function (an :class:`~perturblab.errors.InputError` before anything runs);
* ``--out ""`` is refused.
"""

from __future__ import annotations

import pytest

from perturblab import testing
from perturblab.cli import main
from perturblab.studies.registry import entries


def _required(entry) -> dict[str, str]:
    values, why = testing.required_values(entry)
    assert values is not None, why
    return values


#: studies whose rules cannot be checked (a required option with no value to give): the reason
UNRULED = {e.name: testing.required_values(e)[1] for e in entries() if testing.required_values(e)[0] is None}

CASES = [pytest.param(c, id=c.id) for e in entries() if e.name not in UNRULED for c in testing.rule_cases(e)]


def test_every_study_declares_rules():
    """Counts, sizes and bootstrap resamples have rules on every study that has them."""
    ruled = {(p.values[0].entry.name, p.values[0].name) for p in CASES}
    for e in entries():
        if e.name in UNRULED:
            continue
        names = {f.name for f, _ in e.options().fields()}
        for counted in ("n_boot", "trials", "n_train", "n_eval", "seed", "epochs", "max_words", "chunk_size"):
            if counted in names:
                assert (e.name, counted) in ruled, f"{e.name} --{counted} declares no rule"
    assert len([p for p in CASES if p.values[0].kind == "bound"]) >= 60


@pytest.mark.parametrize("case", CASES)
def test_rule_refused_by_the_command(case, tmp_path):
    testing.check_rule_by_command(case, tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_rule_refused_by_the_python_function(case, tmp_path):
    testing.check_rule_by_function(case, tmp_path)


def test_rules_refused_by_a_config_check(tmp_path):
    """``perturblab run --check`` reports each study's broken rules, one line each (one config for
    every study that may be a config entry)."""
    cases = [p.values[0] for p in CASES if p.values[0].entry.config]
    assert len({c.entry.name for c in cases}) >= 10
    testing.check_rules_by_config(cases, tmp_path)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.name)
def test_one_entry(entry):
    """The study's ``--help`` renders, its function checks its values (made by the one entry), its
    options class has the package's base, so its model and data options are checked without
    loading, and its keywords are its options."""
    testing.check_help(entry)
    testing.check_one_entry(entry)
    testing.check_signature(entry)


@pytest.mark.parametrize("entry", [e for e in entries() if e.name in ("scope", "selfcheck", "similarity")],
                         ids=lambda e: e.name)
def test_empty_out_refused(entry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(testing.command_line(entry.name, _required(entry), "")) == 2
    assert "--out is empty" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_core_and_model_list_examples_run():
    """The one entry's, the model names' and the public check's docstring examples (hand-written
    values) hold."""
    import doctest

    import perturblab.core.boundary
    import perturblab.core.entry
    import perturblab.core.options
    import perturblab.studies.names
    import perturblab.testing.contract

    for module in (perturblab.core.boundary, perturblab.core.entry, perturblab.core.options, perturblab.studies.names,
                   perturblab.testing.contract):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


@pytest.mark.parametrize("study,argv", [
    ("robustness", ["--models", "tfidf-lr,tfidf-lr"]),
    ("selfcheck", ["--models", "smollm2-135m,smollm2-135m"]),
])
def test_a_model_given_twice_is_refused(study, argv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([study, *argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "twice" in err[0] and "NAME=SOURCE" in err[0], err
    assert not out.exists()


def test_learnability_refuses_a_sample_larger_than_the_data(tmp_path, capsys):
    """60 rows split 45/15: --n-train 5000 is refused with the size there is, not cut to 45."""
    rows = ["text,label"] + [f"{'good' if i % 2 else 'bad'} film number {i},{i % 2}" for i in range(60)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    argv = ["learnability", "--models", "tfidf-lr", "--data", str(tmp_path / "d.csv"), "--perturbations",
            "leet_letters", "--trials", "1", "--ps", "0.1,1", "--n-eval", "10", "--out", str(out), "--quiet"]
    assert main([*argv, "--n-train", "5000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --n-train 5000 asks for more training examples (the training split's size) than the 45 "
                   "there are; use --n-train 45, or give more data"], err
    assert not out.exists()
