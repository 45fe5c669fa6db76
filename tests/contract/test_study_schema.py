"""One schema per study: its options dataclass generates the command's options and reads a
config's entry, and its Python function has exactly the same keywords with the same defaults."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass

import pytest

from perturblab.cli import build_parser, parse_args
from perturblab.core.entry import function_of
from perturblab.core.options import StudyArgs, csv_list, option
from perturblab.core.readers import OldNameWarning
from perturblab.errors import InputError
from perturblab.studies.args import Args
from perturblab.core.study import Study, StudyResult
from perturblab.studies.registry import STUDIES as REGISTERED
from perturblab.studies.registry import StudyEntry, entries, entry, register_study
from perturblab.testing import check_one_entry, check_signature, check_study

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
    """Each study's signature is generated from its options: exactly the options' names, the
    Python-only fields' and the old names, each with its option's default, the positional ones
    first; its docstring ends in the generated Options section."""
    study = entry(name)
    args, fn = study.options(), study.load_function()
    params = inspect.signature(fn).parameters
    keywords = {k for k, p in params.items() if p.kind is not p.VAR_KEYWORD}
    fields = {f.name for f, _ in args.fields()}
    python_only = {f.name for f, o in args.python_fields() if o.python_only}
    assert keywords == fields | python_only | set(args.old_names()), f"pl.{fn.__name__}: {sorted(keywords)}"
    for f, opt in args.python_fields():
        p = params[f.name]
        if opt.required:
            continue  # the command requires it; Python may take it positionally or default it to None
        assert p.default is not p.empty, f"{f.name}: the option has a default, the function none"
        if name != "demo":
            assert normal(p.default) == normal(args.defaults().get(f.name, p.default)), f"{name} {f.name}: " \
                f"function default {p.default!r}, option default {args.defaults().get(f.name)!r}"
    positional = [k for k, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert all(params[k].kind is p.KEYWORD_ONLY for k in keywords - set(positional))
    assert "Options (generated from" in fn.__doc__ and ">>>" in fn.__doc__.split("Options (generated from")[0]
    for k in keywords - set(args.old_names()):
        assert f"\n    {k} " in fn.__doc__ or f"\n    {k}\n" in fn.__doc__, f"{name}: {k} not in the Options section"
    for k in args.old_names():
        assert f"{k}=" in " ".join(fn.__doc__.split()), f"{name}: the old name {k} not in the Options section"
    for f, opt in args.python_fields():
        if opt.python_only:  # never an option of the command or a config's key
            with pytest.raises(InputError, match="not an option"):
                args.key_of(f.name)


#: today's positional parameters of each study function (they are part of the Python API)
POSITIONAL = {"compare": ["reference", "targets"], "scope": ["reference", "targets"], "demo": ["reference", "targets"],
              "scope-lm": ["reference", "targets"], "checkpoints": ["checkpoints"], "learnability": ["models"],
              "selfcheck": ["models"], "robustness": ["models"], "generation": ["models"], "finetuning": ["base"],
              "layer-probes": ["model"], "similarity": ["a", "b"], "grounding": ["variants"]}


@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_the_positional_parameters_stay(name):
    params = inspect.signature(entry(name).load_function()).parameters
    assert [k for k, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD] == POSITIONAL[name]


@dataclass(kw_only=True)
class HandArgs(Args):
    models: str | None = option(required=True, positional=True, help="models")
    n: int = option(8, min=1, help="examples")
    trials: int = option(3, aliases=("seeds",), min=1, help="repetitions")


class Hand(Study):
    """A study of the tests: its call returns what it was given."""

    command, Args, Result = "hand", HandArgs, StudyResult

    @classmethod
    def call(cls, args, inputs):
        return args.n, args.trials, args.models


def test_a_study_class_keeps_the_contract():
    """The one form of a study: a class declaring its options; its function is generated from
    them, with the same keywords, and its call is checked."""
    study = StudyEntry(Hand)
    check_one_entry(study)
    check_signature(study)
    fn = study.load_function()
    assert fn is study.load_function() and fn.__name__ == "hand" and fn.__doc__.startswith("A study of the tests")
    with pytest.warns(OldNameWarning, match="seeds= is the old name of trials="):
        assert fn(["a", "b"], seeds=2) == (8, 2, "a,b")
    assert str(inspect.signature(fn)).startswith("(models: 'str | None', *, n: 'int' = 8, trials: 'int' = 3")
    assert inspect.signature(fn).return_annotation == "StudyResult"
    with pytest.raises(InputError, match="--n: must be at least 1"):
        fn("m", n=0)


def test_a_class_that_declares_no_command_or_options_is_refused_naming_what():
    """A class that is no study, or declares no command or no options, is refused when it is
    registered and by the contract, naming what it lacks."""
    class NoArgs(Study):
        command = "no-args"

    class NoCommand(Study):
        Args = HandArgs

    with pytest.raises(TypeError, match="the study class NoArgs declares no Args"):
        register_study(NoArgs)
    with pytest.raises(TypeError, match="the study class NoCommand declares no command"):
        register_study(NoCommand)
    with pytest.raises(TypeError, match="expected a Study class"):
        register_study(HandArgs)
    with pytest.raises(TypeError, match="the study class NoArgs declares no Args"):
        check_study(NoArgs, runs=False, rules=False)
    assert "no-args" not in REGISTERED and "no-args" not in [e.name for e in entries()]


def test_the_call_is_read_once_into_checked_options_and_ready_objects():
    """The framework owns the Python boundary: a model option takes specs and objects (the
    options hold each object's name, the study gets the object in ``inputs.models``), a data
    option a data object (``inputs.data``), a Python-only keyword is set on the options as
    given, and the plain values are checked before the study is built."""
    @dataclass(kw_only=True)
    class BodyArgs(StudyArgs):
        models: str | None = option(required=True, positional=True, role="classifier", many=True,
                                    python="str | Sequence[Any]", help="models")
        data: str = option("rotten_tomatoes", data=True, python="str | Dataset", help="data")
        base: str | None = option(None, role="classifier", python="Any", help="one more model")
        fields_: list[str] = option([], parse=csv_list, help="columns")
        trials: int = option(3, aliases=("seeds",), min=1, help="repetitions")
        hooks: dict | None = option(None, python_only=True, help="callables by name")

    seen = []

    class Toy(Study):
        """Toy."""

        command, Args, Result = "toy", BodyArgs, StudyResult

        @classmethod
        def call(cls, args, inputs):
            seen.append((args, inputs))
            return "done"

    class Model:
        fingerprint = "toy-model-v1"

    class Named(Model):
        name = "mine"

    class Data:
        name = "frame"

    toy = function_of(Toy)
    model, named, data = Model(), Named(), Data()
    assert toy(["tfidf-lr", model, named], data=data, fields_=("a", "b"), seeds=2, hooks={"h": len}) == "done"
    args, inputs = seen[-1]
    assert args.models == "tfidf-lr,model1,mine" and inputs.models == {"model1": model, "mine": named}
    assert inputs.model("model1") is model and inputs.model("tfidf-lr") is None
    assert args.data == "frame" and inputs.data == {"data": data}
    assert args.fields_ == ["a", "b"] and args.trials == 2 and args.hooks == {"h": len} and inputs.out is None
    assert toy("tfidf-lr", out="o") == "done" and seen[-1][0].models == "tfidf-lr" and seen[-1][1].models == {}
    assert seen[-1][1].out == "o" and seen[-1][0].data == "rotten_tomatoes" and seen[-1][1].data == {}
    with pytest.raises(InputError, match=r"^--models: item 1 \(object\) is not a classifier: give a spec"):
        toy(["tfidf-lr", object()])
    with pytest.raises(InputError, match="two different models are named 'mine'"):
        toy([named, Named()])
    with pytest.raises(InputError, match="--models gives 'mine' twice"):
        toy([named, named])
    with pytest.raises(InputError, match="a model object is named 'mine', as a spec given beside it"):
        toy("mine", base=named)  # the study would take the object for the spec
    assert toy("tfidf-lr", base=model) == "done" and seen[-1][0].base == "base"
    assert seen[-1][1].models == {"base": model}
    assert "hooks" not in {f.name for f, _ in BodyArgs.fields()} and "hooks" not in BodyArgs.names()
    parser = argparse.ArgumentParser()
    BodyArgs.add_arguments(parser)
    assert "--hooks" not in parser.format_help()
    assert "hooks = None" in toy.__doc__ and "(Python only)" in toy.__doc__ and "(also seeds=" in toy.__doc__
    n = len(seen)
    with pytest.raises(InputError, match="--trials: must be at least 1"):
        toy("m", trials=0)
    with pytest.raises(TypeError):
        toy("m", "extra")
    assert len(seen) == n  # neither reached the study


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


def test_demo_is_compare_with_its_own_defaults():
    ns = parse_args(["demo"])
    assert (ns.reference, ns.targets, ns.budget, ns.until, ns.out) == ("minilm-l6", "minilm-l6-int8,minilm-l3", "5m",
                                                                 "decided", "out/demo")
    assert parse_args(["compare", "--reference", "a", "--targets", "b", "--out", "o"]).budget == "10m"
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


def test_an_old_name_works_and_the_command_line_names_it_once(capsys):
    """``--seeds``, ``seeds:`` and ``seeds=`` set ``trials``; once the options are checked and
    valid, each is an old-name warning, which the command line says once (on stderr) with the name
    to give instead; the new name says nothing, and a refused value is its one error line alone."""
    from perturblab.core.console import warnings_as_lines

    parser = argparse.ArgumentParser()
    PositiveToyArgs.add_arguments(parser)
    with warnings_as_lines():
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
