"""The settings of a search are made from a study's options by one function
(:func:`~perturblab.perturb.search_settings.search_settings`), with the options' own defaults, and
the module that declares them imports nothing of the studies."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from perturblab.perturb.search_settings import (SEARCH_FIELDS, SearchGoalArgs, SearchLimitArgs, SearchOptions,
                                                SearchSettings, SynonymArgs, search_settings)
from perturblab.studies.scope.config import CheckpointsArgs, LMScopeArgs, ScopeArgs

GROUPS = (SearchLimitArgs, SynonymArgs, SearchGoalArgs)
#: an option of the search groups -> (the setting it makes, a value other than the default, that setting's value)
OTHER = {"max_words": ("max_words", 2, 2), "patience": ("patience", 1, 1), "max_candidates": ("max_candidates", 4, 4),
         "allow_non_alphabetic": ("alphabetic_only", True, False), "synonyms": ("synonyms", "meaning", "meaning"),
         "synonym_min_similarity": ("synonym_min_similarity", 0.8, 0.8),
         "reinflect_synonyms": ("reinflect_synonyms", True, True), "loss": ("loss", "kl", "kl"),
         "search": ("search", "beam", "beam"), "beam_width": ("beam_width", 5, 5),
         "search_order": ("order", "saliency", "saliency")}


def test_every_search_option_is_read_into_the_settings():
    assert set(OTHER) == {f.name for g in GROUPS for f in dataclasses.fields(g)}
    base = search_settings(ScopeArgs(reference="a", targets="b"))
    assert base == SearchSettings()  # the options' defaults are the settings' defaults
    for name, (setting, value, made) in OTHER.items():
        settings = search_settings(ScopeArgs(reference="a", targets="b", **{name: value}))
        assert dataclasses.replace(settings, **{setting: getattr(base, setting)}) == base, name  # that one only
        assert getattr(settings, setting) == made != getattr(base, setting), name


def test_the_seed_and_the_text_of_a_pair_come_from_the_study():
    for field, index in SEARCH_FIELDS.items():
        made = ScopeArgs(reference="a", targets="b", seed=7, perturb_field=field).search_settings()
        assert (made.seed, made.perturb_field) == (7, index)
    assert SEARCH_FIELDS == {"a": 0, "b": 1, "both": None}
    # sentences are single texts: the first (and only) one changes
    assert LMScopeArgs(reference="a", targets="b", seed=3).search_settings().perturb_field == 0
    # the checkpoint study has the limits and synonyms, not the goal: its SCoPE studies search as SCoPE's default
    ckpt = CheckpointsArgs(checkpoints="x,y", max_words=3, synonyms="meaning", seed=4)
    assert ckpt.scope_args("x", ["y"]).search_settings() == dataclasses.replace(
        SearchSettings(), max_words=3, synonyms="meaning", seed=4)
    assert search_settings(ScopeArgs(reference="a", targets="b"), max_positions=9).max_positions == 9


def test_the_settings_defaults_are_the_options_defaults():
    options = {f.name: f.default for g in GROUPS for f in dataclasses.fields(g)}
    plain = SearchOptions()
    assert (plain.loss, plain.search, plain.beam_width, plain.order) == \
        (options["loss"], options["search"], options["beam_width"], options["search_order"]) == \
        ("l1", "greedy", 3, "best-swap")
    assert plain.alphabetic_only is (not options["allow_non_alphabetic"]) is True
    assert (plain.max_words, plain.patience, plain.max_candidates) == (None, None, None)
    # the text-space STIR key is made of these names: they stay as they were
    assert sorted(vars(plain)) == ["alphabetic_only", "beam_width", "loss", "max_candidates", "max_positions",
                                   "max_words", "order", "patience", "search"]


@pytest.mark.parametrize("module", ["perturblab.perturb.search_settings", "perturblab.perturb.search"])
def test_the_search_modules_import_no_study(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('perturblab.studies')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
