"""An option's old name is its one way of being renamed: the command line, a config and a Python
call refuse an option given by two of its names with the same error, and an old name alone is an
old-name warning once the options are valid (one ``note:`` line on the command line)."""

from __future__ import annotations

import warnings

import pytest

import perturblab as pl
from perturblab.cli import main
from perturblab.core.readers import OldNameWarning
from perturblab.errors import InputError
from perturblab.runs.config import ConfigError, load_config
from perturblab.studies.learnability.config import LearnabilityArgs
from perturblab.studies.robustness.config import RobustnessArgs

BOTH = [
    # study, its options, the option's two names with a value each, the expected error
    ("robustness", RobustnessArgs, [("trials", "1"), ("seeds", "2")],
     "--trials and --seeds are both given, but --seeds is the old name of --trials; give --trials only"),
    ("learnability", LearnabilityArgs, [("n_test", "30"), ("n_eval", "40")],
     "--n-eval and --n-test are both given, but --n-test is the old name of --n-eval; give --n-eval only"),
]


@pytest.mark.parametrize("study,args,given,expected", BOTH, ids=[b[0] for b in BOTH])
def test_an_option_given_by_two_names_is_refused_alike_everywhere(study, args, given, expected, tmp_path, capsys):
    """The same error, whatever the order of the names and whatever the values (the new name at
    its default too), before anything is written."""
    function = getattr(pl, study)
    with pytest.raises(InputError) as python:
        function("tfidf-lr", **{name: int(value) for name, value in given})
    new = args.names()[given[0][0]]
    default = args.python_defaults()[new]
    with pytest.raises(InputError) as python_default:  # the new name at its default is given too
        function("tfidf-lr", **{name: (default if name == new else int(value)) for name, value in given})
    out = tmp_path / "out"
    argv = [study, "--models", "tfidf-lr", "--out", str(out), "--quiet"]
    for name, value in given:
        argv += ["--" + name.replace("_", "-"), value]
    assert main(argv) == 2
    command_line = capsys.readouterr().err.splitlines()
    assert not out.exists()
    with pytest.raises(InputError) as config:
        args.from_config({"models": "tfidf-lr", **{name.replace("_", "-"): int(value) for name, value in given}})
    yaml = tmp_path / "both.yaml"
    yaml.write_text(f"studies:\n  - kind: {study}\n    models: [tfidf-lr]\n"
                    + "".join(f"    {name}: {value}\n" for name, value in given))
    with pytest.raises(ConfigError) as run:
        load_config(yaml)
    assert str(python.value) == str(python_default.value) == str(config.value) == expected
    assert command_line == [f"error: {expected}"]
    assert str(run.value) == f"{yaml}:5: studies.0.{given[1][0]}: {expected}"


def test_one_name_given_twice_in_a_config_is_refused():
    with pytest.raises(InputError, match="^--n-boot is given twice; give it once$"):
        RobustnessArgs.from_config({"models": "tfidf-lr", "n-boot": 100, "n_boot": 200})


def test_an_old_name_is_a_future_warning_once_the_options_are_valid():
    """The warning names the user's line, a refused value warns nothing, and a caller may make
    the warning an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert RobustnessArgs.from_python({"models": "tfidf-lr", "seeds": 0}).problems() != []
        assert caught == []
        options = RobustnessArgs.from_python({"models": "tfidf-lr", "seeds": 2, "n_test": 30})
        assert (options.trials, options.n_eval) == (2, 30)
        assert options.problems() == []
    assert [(w.category, str(w.message), w.filename) for w in caught] == [
        (OldNameWarning, "seeds= is the old name of trials=; it still works, but give trials=", __file__),
        (OldNameWarning, "n_test= is the old name of n_eval=; it still works, but give n_eval=", __file__)]
    assert issubclass(OldNameWarning, FutureWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OldNameWarning)
        with pytest.raises(OldNameWarning):
            RobustnessArgs.from_python({"models": "tfidf-lr", "seeds": 2}).check()


def test_a_checked_config_says_an_old_name_once(tmp_path, capsys):
    yaml = tmp_path / "old.yaml"
    yaml.write_text("studies:\n  - kind: robustness\n    models: [tfidf-lr]\n    seeds: 2\n"
                    "  - kind: robustness\n    name: again\n    models: [tfidf-lr]\n    seeds: 3\n")
    assert main(["run", "--check", str(yaml)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ["note: seeds: is the old name of trials:; it still works, but give trials:"]
