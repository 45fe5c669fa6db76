"""A comparison loads each model once for its timing and all its studies, and its bars and
progress lines name the study they belong to."""

from __future__ import annotations

import pytest

import perturblab as pl
from perturblab.core.console import bar_name, named_by
from perturblab.models import resolve


def test_bars_and_lines_are_named_by_their_study():
    assert bar_name("searches") == "searches"
    with named_by("robustness"):
        assert bar_name("predictions") == "robustness: predictions"
        with named_by("invariances"):
            assert bar_name("searches") == "invariances: searches"
        assert bar_name("predictions") == "robustness: predictions"
    assert bar_name("predictions") == "predictions"


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_a_comparison_of_three_studies_loads_each_model_once(tmp_path, monkeypatch):
    loads: list[tuple[str, str]] = []
    real = resolve._load

    def counted(ms, role, *a, **kw):
        loads.append((ms.name, role))
        return real(ms, role, *a, **kw)

    monkeypatch.setattr(resolve, "_load", counted)
    res = pl.compare("minilm-l3", "twin=minilm-l3", studies="invariances,robustness,layers", out=str(tmp_path / "c"),
                     quiet=True)
    assert {v.study for v in res.verdicts} >= {"invariances", "robustness", "layers"}
    # timing (the encoder), invariances and robustness (the classifier), layers (the encoder): one load
    # of each model in each role, though three studies and the plan's timing use them; the meaning
    # check's MiniLM-L6 is loaded for its timing too unless a timing of it is kept from an earlier plan
    assert len(loads) == len(set(loads)), loads
    assert set(loads) - {("minilm-l6", "encoder")} == {("minilm-l3", "encoder"), ("minilm-l3", "classifier"),
                                                       ("twin", "encoder"), ("twin", "classifier")}, loads
    # outside a comparison nothing is shared
    assert resolve._SHARED.get() is None
