"""A comparison re-run in the same ``--out`` with other options never shows a result of the old
ones: changed synonym sets are computed anew, and sizes growing then shrinking read back exactly
the samples the new size holds, each run's estimates those of a fresh run of its options."""

from __future__ import annotations

import dataclasses

import pytest

import perturblab as pl
from perturblab.studies.compare import plan as plan_module

COMMON = dict(reference="tfidf-lr", targets="candidate=tfidf-lr", studies="invariances", quiet=True)
COST_OF = plan_module.cost_of


def _sized(monkeypatch, n):
    """Every study of the plan at exactly ``n`` (its least and largest useful size)."""
    monkeypatch.setattr(plan_module, "cost_of", lambda name, kind, args=None: dataclasses.replace(
        COST_OF(name, kind, args), least=n, most=n))


def _estimates(result):
    return {(v.target, v.study, e.key): (e.value, e.low, e.high, e.n) for v in result.verdicts for e in v.estimates}


@pytest.mark.usefixtures("torch_one_thread")
def test_sizes_growing_then_shrinking_in_one_out_give_a_fresh_runs_estimates(tmp_path, monkeypatch):
    shared, seen = tmp_path / "shared", {}
    for n in (6, 10, 6):
        _sized(monkeypatch, n)
        res = pl.compare(**COMMON, synonyms="wordnet", out=str(shared))
        assert res.plan.studies[0].count == n
        seen.setdefault(n, []).append(_estimates(res))
    for n in (6, 10):
        _sized(monkeypatch, n)
        fresh = _estimates(pl.compare(**COMMON, synonyms="wordnet", out=str(tmp_path / f"fresh{n}")))
        assert all(run == fresh for run in seen[n]), n  # nothing of another size shows
    assert {e[3] for e in seen[10][0].values()} != {e[3] for e in seen[6][0].values()}  # the sizes differ


@pytest.mark.usefixtures("torch_one_thread")
def test_another_synonym_set_in_one_out_is_computed_anew(tmp_path, monkeypatch, capsys):
    _sized(monkeypatch, 8)
    shared = tmp_path / "shared"
    first = _estimates(pl.compare(**COMMON, synonyms="wordnet", out=str(shared)))
    second = pl.compare(**{**COMMON, "quiet": False}, synonyms="meaning", out=str(shared))
    err = capsys.readouterr().err
    assert "invariances: results of other options are stored; what they share is read back" in err
    fresh = _estimates(pl.compare(**COMMON, synonyms="meaning", out=str(tmp_path / "fresh")))
    assert fresh != first  # the two synonym sets give other numbers, so a stale result would show
    assert _estimates(second) == fresh
    # and back: the first options' results, as they were
    assert _estimates(pl.compare(**COMMON, synonyms="wordnet", out=str(shared))) == first
