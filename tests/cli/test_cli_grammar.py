"""One command-line grammar: --version, defaults in --help, "did you mean", --n checked against
the data."""

from __future__ import annotations

import argparse
import json

import pytest

from perturblab import __version__
from perturblab.cli import build_parser, main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"perturblab {__version__}"


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["scope", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for shown in ("base samples per trial (a number, or 'all': the whole test split) (default: 500)",
                  "(default: 3)", "perturbations and searches (default: 0)", "(default: rotten_tomatoes)"):
        assert shown in text


def test_every_option_with_a_default_shows_it():
    """Across every command, an option with a value default says so in its help."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    missing = []
    for name, parser in sub.choices.items():
        formatter = parser._get_formatter()
        for a in parser._actions:
            if (not a.option_strings or a.default is None or a.default is False or a.default in ([], (), "")
                    or a.default == argparse.SUPPRESS or a.required):
                continue
            text = formatter._expand_help(a) if a.help else ""
            if str(a.default) not in text and "default" not in text.lower():
                missing.append(f"{name} {a.option_strings[-1]}")
    assert not missing, missing


def test_did_you_mean(capsys):
    with pytest.raises(SystemExit) as e:
        main(["scop"])
    assert e.value.code == 2 and "did you mean 'scope'?" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["scope", "--reference", "a", "--targets", "b", "--out", "o", "--trails", "2"])
    assert e.value.code == 2 and "--trails: did you mean --trials?" in capsys.readouterr().err


def test_n_larger_than_the_data_is_an_error_and_all_takes_everything(tmp_path, capsys):
    from helpers.tiny_classifier import tiny_model_dir

    model = tiny_model_dir(tmp_path / "m", 0)
    rows = ["text,label"] + [f"the good film number {i} .,{i % 2}" for i in range(20)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    argv = ["scope", "--reference", model, "--targets", model, "--capabilities", "typo", "--data",
            str(tmp_path / "d.csv"), "--trials", "1", "--quiet"]
    assert main([*argv, "--n", "6", "--out", str(tmp_path / "big")]) == 2
    err = capsys.readouterr().err
    assert "--n 6 asks for more base samples" in err and "than the 5 there are" in err and "--n all" in err
    assert not (tmp_path / "big" / "results.json").exists()
    assert main([*argv, "--n", "all", "--out", str(tmp_path / "all")]) == 0
    out = capsys.readouterr().out
    assert "1 trial(s) of n=5" in out
    assert json.loads((tmp_path / "all" / "results.json").read_text())[0]["n"] == 5
    assert main([*argv, "--n", "0", "--out", str(tmp_path / "zero")]) == 2  # the option's rule, one line
    assert capsys.readouterr().err.strip() == "error: --n: must be at least 1, got 0"
    assert not (tmp_path / "zero").exists()


REPETITIONS = {"scope": "trials", "scope-lm": "trials", "checkpoints": "trials", "learnability": "trials",
               "robustness": "trials", "generation": "trials"}


def test_one_name_for_repetitions_and_evaluation_sizes_with_the_old_names_kept():
    """Repetitions are --trials and a held-out split's size --n-eval on every command; the old
    names (--seeds, --n-test) parse to the same option."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        opts = {o for a in parser._actions for o in a.option_strings}
        assert "--n-test" not in opts or "--n-eval" in opts, name
        assert "--seeds" not in opts or "--trials" in opts, name
        if name in REPETITIONS:
            assert "--trials" in opts, name
    common = ["--models", "tfidf-lr", "--out", "o"]
    for cmd in ("robustness", "learnability"):
        old = parser_of(cmd).parse_args([*common, "--seeds", "2", "--n-test", "30"])
        new = parser_of(cmd).parse_args([*common, "--trials", "2", "--n-eval", "30"])
        assert (old.trials, old.n_eval) == (new.trials, new.n_eval) == (2, 30)


def parser_of(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def test_old_option_names_work_in_configs_and_in_python(tmp_path):
    import perturblab as pl
    from perturblab.errors import InputError
    from perturblab.runs.config import ConfigError, load_config

    entry = "studies:\n  - kind: robustness\n    models: [tfidf-lr]\n    {}\n"
    old = load_config(_write(tmp_path / "old.yaml", entry.format("seeds: 2\n    n_test: 30")))
    new = load_config(_write(tmp_path / "new.yaml", entry.format("trials: 2\n    n_eval: 30")))
    assert old.studies[0].options == new.studies[0].options
    assert old.studies[0].options["trials"] == 2 and old.studies[0].options["n_eval"] == 30
    with pytest.raises(ConfigError, match="--seeds is the old name of --trials; give --trials only"):
        load_config(_write(tmp_path / "both.yaml", entry.format("seeds: 2\n    trials: 3")))
    with pytest.raises(InputError, match="--seeds is the old name of --trials; give --trials only"):
        pl.robustness("tfidf-lr", trials=2, seeds=3)


def _write(path, text):
    path.write_text(text)
    return path


def test_every_result_names_the_n_it_was_computed_on():
    from perturblab.core.study import StudyResult

    assert StudyResult([{"n": 40}, {"n": 40}]).sizes() == "computed on n = 40"
    assert StudyResult([{"n": 38}, {"n": 40}]).sizes() == "computed on n = 38 to 40"
    res = StudyResult([{"value": 1.0}])
    assert res.sizes() == ""
    res.split_sizes = {"train": 30, "eval": 12}
    assert res.sizes() == "computed on n_train = 30, n_eval = 12"
