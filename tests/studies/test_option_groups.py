"""The options several studies share are declared once, in a group each study composes
(:mod:`perturblab.studies.args`, :mod:`perturblab.perturb.search_settings`): every study that has
one of them has the group's declaration (help, choices, how its text is read, its bounds), with its
own default where it keeps one, and the order of its options stays the order of its class body."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from dataclasses import dataclass

import pytest

from perturblab.core.options import option
from perturblab.measures.grounding import GROUNDING_N_BOOT, grounding_benchmark, rank_correlations
from perturblab.measures.selfcheck import median_estimate
from perturblab.measures.stats import N_BOOT, bootstrap_ci, bounded_mean_ci
from perturblab.measures.task_metrics import bootstrap_confusions
from perturblab.perturb.search_settings import SearchGoalArgs, SearchLimitArgs, SynonymArgs, SynonymSetArgs
from perturblab.studies.args import (Args, BootstrapArgs, EncoderArgs, LabelledDataArgs, PerturbFieldArgs, SeedArgs,
                                     TextFieldsArgs, option_order, place)
from perturblab.studies.registry import entries

GROUPS = (TextFieldsArgs, LabelledDataArgs, PerturbFieldArgs, EncoderArgs, BootstrapArgs, SeedArgs, SearchLimitArgs,
          SynonymSetArgs, SynonymArgs, SearchGoalArgs)
#: each shared option -> its group's declaration
DECLARED = {f.name: f.metadata["option"] for g in GROUPS for f in dataclasses.fields(g)}
#: options of those names that are another option in one study: generation's data are source/reference
#: pairs, similarity's are texts of a data set or a corpus (no labels)
OTHER = {("generation", "data"), ("similarity", "data")}


def _shared(name):
    args = next(e for e in entries() if e.name == name).options()
    return args, [(f, o) for f, o in args.python_fields() if f.name in DECLARED and (name, f.name) not in OTHER]


@pytest.mark.parametrize("name", [e.name for e in entries()])
def test_every_study_has_the_groups_declaration_of_a_shared_option(name):
    args, shared = _shared(name)
    for f, opt in shared:
        # the group's declaration but for the study's annotation of its Python keyword
        assert dataclasses.replace(opt, python=DECLARED[f.name].python) == DECLARED[f.name], (name, f.name)
        assert issubclass(args, next(g for g in GROUPS if f.name in {x.name for x in dataclasses.fields(g)}))


def test_the_shared_options_are_where_the_studies_have_them():
    """Each shared option of the groups is had by the studies listed (a study left out would declare
    it anew; one added would gain an option)."""
    having = {}
    for e in entries():
        for f, _ in _shared(e.name)[1]:
            having.setdefault(f.name, set()).add(e.name)
    assert having["text_fields"] == {"compare", "demo", "scope", "checkpoints", "learnability", "robustness",
                                     "finetuning", "layer-probes", "similarity", "grounding"}
    assert having["label_column"] == having["text_fields"] - {"similarity"} == having["data"]
    assert having["pooling"] == {"finetuning", "layer-probes", "similarity", "grounding"}
    assert having["n_boot"] == {"scope", "scope-lm", "learnability", "robustness", "generation", "grounding"}
    assert having["synonyms"] == {"compare", "demo", "scope", "scope-lm", "checkpoints"}
    assert having["perturb_field"] == {"scope", "checkpoints", "learnability", "robustness", "layer-probes"}
    assert "robustness" not in having["seed"]  # its seed is --train-seed
    assert having["seed"] == {e.name for e in entries()} - {"robustness", "learnability"}


def test_each_study_keeps_its_own_default():
    defaults = {e.name: e.options().defaults() for e in entries()}
    assert {n: d["n_boot"] for n, d in defaults.items() if "n_boot" in d} == {
        "scope": N_BOOT, "scope-lm": N_BOOT, "robustness": N_BOOT, "generation": N_BOOT,
        "learnability": 2000, "grounding": GROUNDING_N_BOOT}
    assert N_BOOT == 1000 and GROUNDING_N_BOOT == 2000
    assert {n: d["synonyms"] for n, d in defaults.items() if "synonyms" in d} == {
        "compare": "meaning", "demo": "meaning", "scope": "wordnet", "scope-lm": "wordnet", "checkpoints": "wordnet"}
    assert {n: d["perturb_field"] for n, d in defaults.items() if "perturb_field" in d} == {
        "scope": "a", "checkpoints": "a", "learnability": "both", "robustness": "both", "layer-probes": "both"}
    assert all(d["seed"] == 0 for d in defaults.values() if "seed" in d)


def test_the_measures_resample_as_often_as_the_option_says_by_default():
    """One default number of bootstrap resamples: the measures' and ``--n-boot``'s; the grounding
    benchmark's is the paper's 2000, as the grounding study's."""
    def default(fn):
        return inspect.signature(fn).parameters["n_boot"].default

    assert {default(f) for f in (bootstrap_ci, bounded_mean_ci, median_estimate, bootstrap_confusions)} == {N_BOOT}
    assert BootstrapArgs().n_boot == N_BOOT
    assert default(rank_correlations) == default(grounding_benchmark) == GROUNDING_N_BOOT


@dataclass(kw_only=True)
class ToyArgs(LabelledDataArgs, BootstrapArgs, SeedArgs, Args):
    models: str = option("tfidf-lr", help="comma list of classifiers")
    seed = place()
    data = place(python="str")
    trials: int = option(3, min=1, help="repetitions")
    n_boot = place(200)


@dataclass(kw_only=True)
class MoreToyArgs(ToyArgs):
    top: int = option(1, min=1, help="layers reported")


def test_placed_options_are_in_the_order_of_the_class_body():
    """A placed option sits where the body places it, with the study's default and annotation;
    the group's options the body does not place come first, in the group's order; a subclass keeps
    the order and adds its own after."""
    order = ["text_fields", "label_column", "models", "seed", "data", "trials", "n_boot"]
    runner = ["out", "quiet", "device", "dtype"]
    assert [f.name for f, _ in ToyArgs.fields()] == order + runner
    assert [f.name for f, _ in MoreToyArgs.fields()] == order + ["top"] + runner
    assert list(option_order(ToyArgs)) == runner + order
    assert ToyArgs().n_boot == 200 and BootstrapArgs().n_boot == N_BOOT  # the group keeps its own default
    assert ToyArgs().text_fields == [] and ToyArgs().text_fields is not ToyArgs().text_fields
    opts = {f.name: o for f, o in ToyArgs.fields()}
    assert opts["data"].python == "str" and opts["data"].help == DECLARED["data"].help
    assert opts["n_boot"].min == 1  # the group's rules hold for the placed option
    assert ToyArgs(n_boot=0).problems() == [("n_boot", "must be at least 1, got 0")]

    parser = argparse.ArgumentParser()
    ToyArgs.add_arguments(parser)
    listed = [a.dest for a in parser._actions if a.dest != "help"]
    assert listed == order + runner
    assert parser.parse_args(["--out", "o"]).n_boot == 200
    assert ToyArgs.from_config({"n-boot": 5, "text-fields": "a,b"}).kwargs()["text_fields"] == ["a", "b"]


def test_placing_an_option_no_group_declares_is_refused():
    with pytest.raises(TypeError, match="n_boot = place.. names no option"):
        @dataclass(kw_only=True)
        class Wrong(SeedArgs, Args):
            n_boot = place(200)
