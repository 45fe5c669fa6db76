"""One schema per study: its options dataclass generates the command's options and reads a
config's entry, and its Python function has exactly the same keywords with the same defaults."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass

import pytest

from perturblab.cli import build_parser, parse_args
from perturblab.core.options import StudyArgs, csv_list, option
from perturblab.errors import InputError
from perturblab.studies.registry import entries, entry

STUDIES = [e.name for e in entries()]


def subparser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def normal(value):
    """A default as the user would write it: lists and tuples as comma strings."""
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return value


@pytest.mark.parametrize("name", STUDIES)
def test_the_function_has_the_options_keywords_and_defaults(name):
    study = entry(name)
    args, fn = study.options(), study.load_function()
    params = inspect.signature(fn).parameters
    keywords = {k for k, p in params.items() if p.kind is not p.VAR_KEYWORD}
    fields = {f.name for f, _ in args.fields()}
    aliases = {a.replace("-", "_") for _, o in args.fields() for a in o.aliases}
    assert fields <= keywords, f"pl.{fn.__name__} lacks {sorted(fields - keywords)}"
    extra = keywords - fields - aliases - set(args.python_only)
    assert not extra, f"pl.{fn.__name__} has keywords without an option: {sorted(extra)}"
    for f, opt in args.fields():
        p = params[f.name]
        if opt.required:
            continue  # the command requires it; Python may take it positionally or default it to None
        assert p.default is not p.empty, f"{f.name}: the option has a default, the function none"
        if name != "demo":
            assert normal(p.default) == normal(args.defaults()[f.name]), f"{name} {f.name}: function default " \
                f"{p.default!r}, option default {args.defaults()[f.name]!r}"


@pytest.mark.parametrize("name", STUDIES)
def test_the_command_has_one_option_per_field_and_alias(name):
    args = entry(name).options()
    parser = subparser(name)
    dests = {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}
    assert set(dests) == {f.name for f, _ in args.fields()}
    for f, opt in args.fields():
        names = {f"--{n.replace('_', '-')}" for n in (f.name, *opt.aliases)}
        assert set(dests[f.name].option_strings) == names
        assert dests[f.name].help == opt.help.replace("%", "%%") and opt.help, f"{f.name} needs a help text"


def test_demo_is_scope_with_its_own_defaults():
    ns = parse_args(["demo"])
    assert (ns.reference, ns.targets, ns.n, ns.out) == ("minilm-l6", "minilm-l6-int8,minilm-l3,tfidf-lr", 60, "out/demo")
    assert parse_args(["scope", "--reference", "a", "--targets", "b", "--out", "o"]).n == 500
    with pytest.raises(SystemExit):
        parse_args(["scope", "--targets", "b", "--out", "o"])  # the reference is required there


@dataclass(kw_only=True)
class ToyArgs(StudyArgs):
    models: str | None = option(required=True, role="classifier", help="models")
    trials: int = option(3, aliases=("seeds",), help="repetitions")
    fields_: list[str] = option([], parse=csv_list, help="columns")
    mode: str = option("a", choices=("a", "b"), help="mode")
    flag: bool = option(False, flag=True, help="a switch")


def test_a_config_entry_reads_values_as_the_command_line_reads_text():
    args = ToyArgs.from_config({"models": ["x", "y"], "seeds": "2", "fields-": ["p", "q"], "flag": True})
    ns = argparse.Namespace(models="x,y", trials=2, fields_=["p", "q"], mode="a", flag=True, out=None, quiet=False)
    assert args == ToyArgs.from_cli(ns)
    assert args.kwargs() == {"models": "x,y", "trials": 2, "fields_": ["p", "q"], "mode": "a", "flag": True,
                             "out": None, "quiet": False}


@pytest.mark.parametrize("entry_,message", [
    ({"trials": 2}, "needs models"),
    ({"models": "x", "trails": 2}, "did you mean 'trials'"),
    ({"models": "x", "trials": "two"}, "'two' is not a valid int"),
    ({"models": "x", "mode": "c"}, "'c' is not one of a, b"),
    ({"models": "x", "flag": "yes"}, "expected true or false"),
    ({"models": {"a": 1}}, "not a mapping"),
])
def test_a_bad_config_entry_says_what_is_allowed(entry_, message):
    with pytest.raises(InputError, match=message):
        ToyArgs.from_config(entry_, "toy")


def test_a_new_study_gets_a_command_from_its_options_alone():
    parser = argparse.ArgumentParser()
    ToyArgs.add_arguments(parser)
    ns = parser.parse_args(["--models", "m", "--seeds", "4", "--fields-", "a,b", "--out", "o"])
    assert ToyArgs.from_cli(ns).kwargs() == {"models": "m", "trials": 4, "fields_": ["a", "b"], "mode": "a",
                                             "flag": False, "out": "o", "quiet": False}
    with pytest.raises(SystemExit):
        parser.parse_args(["--out", "o"])  # --models is required


@dataclass(kw_only=True)
class EitherArgs(StudyArgs):
    given: str | None = option(None, one_of="source", help="given models")
    train: str | None = option(None, one_of="source", help="train one")


def test_options_of_one_group_exclude_each_other_and_one_is_needed():
    parser = argparse.ArgumentParser()
    EitherArgs.add_arguments(parser)
    assert parser.parse_args(["--given", "a", "--out", "o"]).given == "a"
    for argv in (["--out", "o"], ["--given", "a", "--train", "b", "--out", "o"]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
    assert EitherArgs.from_config({"train": "b"}).train == "b"
    for bad in ({}, {"given": "a", "train": "b"}):
        with pytest.raises(InputError, match="exactly one of given, train"):
            EitherArgs.from_config(bad)


def test_an_optional_number_takes_none_from_a_config_and_the_command_line():
    from perturblab.studies.grounding.config import GroundingArgs

    assert GroundingArgs.value("max_seconds", None) is None  # YAML null: no time budget
    assert GroundingArgs.value("max_seconds", "none") is None
    assert GroundingArgs.value("max_seconds", 12) == 12.0
    with pytest.raises(InputError):
        GroundingArgs.value("n_eval", None)  # a plain number has no "none"
    parser = argparse.ArgumentParser()
    GroundingArgs.add_arguments(parser, GroundingArgs.cli_defaults())
    assert parser.parse_args(["--max-seconds", "none", "--out", "o"]).max_seconds is None


@dataclass(kw_only=True)
class PositiveToyArgs(ToyArgs):
    trials: int = option(3, aliases=("seeds",), min=1, help="repetitions")


def test_an_old_name_works_and_is_named_once_per_process(capsys, monkeypatch):
    """``--seeds``, ``seeds:`` and ``seeds=`` set ``trials``; once the options are checked and
    valid, each surface says once (on stderr) which name to give instead, never again in the same
    process; the new name says nothing, and a refused value is its one error line alone."""
    from perturblab.core import options

    monkeypatch.setattr(options, "_OLD_NAMES_SAID", set())
    monkeypatch.setattr(options, "_OLD_NAMES_PENDING", {})
    parser = argparse.ArgumentParser()
    PositiveToyArgs.add_arguments(parser)
    bad = PositiveToyArgs.from_cli(parser.parse_args(["--models", "x", "--seeds", "0", "--out", "o"]))
    with pytest.raises(InputError, match="^--trials: must be at least 1, got 0$"):
        bad.check()
    assert capsys.readouterr().err == ""  # refused: the error alone, no note
    for _ in range(2):
        ns = parser.parse_args(["--models", "x", "--seeds", "5", "--out", "o"])
        assert ns.trials == 5 and PositiveToyArgs.from_cli(ns).problems() == []
        assert PositiveToyArgs.from_config({"models": "x", "seeds": 4}).problems() == []
        assert PositiveToyArgs.from_python({"models": "x", "seeds": 2}).trials == 2
        assert PositiveToyArgs.from_python({"models": "x", "seeds": 2}).problems() == []
    assert PositiveToyArgs.from_config({"models": "x", "trials": 7}).problems() == []
    said = capsys.readouterr().err.splitlines()
    assert said == ["note: --seeds is the old name of --trials; it still works, but give --trials",
                    "note: seeds: is the old name of trials:; it still works, but give trials:",
                    "note: seeds= is the old name of trials=; it still works, but give trials="]


def test_help_texts_are_plain_text_and_every_help_renders():
    """A help text is written as it is shown (``95% interval``): argparse's ``%`` escapes are the
    schema's to add, so a bare ``%`` never breaks ``--help`` and ``%%`` never shows."""

    @dataclass(kw_only=True)
    class PercentArgs(StudyArgs):
        level: float = option(0.95, help="the 95% interval's level (5% either side: 2.5%)")

    parser = argparse.ArgumentParser()
    PercentArgs.add_arguments(parser)
    text = parser.format_help()
    assert "the 95% interval's level (5% either side: 2.5%)" in " ".join(text.split())
    for name in STUDIES:
        rendered = subparser(name).format_help()
        assert "%%" not in rendered and "%(" not in rendered, name
    for e in entries():
        for f, opt in e.options().fields():
            assert "%%" not in opt.help, f"{e.name} --{f.name}: write % plainly"
