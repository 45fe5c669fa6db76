"""What the compare tests share: options without a run, estimates made by hand, and sizes made
tiny so that the command runs in seconds on the packaged models (the ``tiny_costs`` fixture)."""

from __future__ import annotations

import dataclasses

from perturblab.core.headline import Estimate, wilson_interval
from perturblab.studies.compare import plan as plan_module
from perturblab.studies.compare.config import CompareArgs


def args_of(**kw) -> CompareArgs:
    """Compare options (no directory is written)."""
    return CompareArgs(**{"out": "/tmp/unused", **kw})


def estimate(subject, key, value, low, high, flags=(), n=50, interval="i"):
    """An estimate of ``key`` with the interval given."""
    return Estimate(subject, key, value, low, high, n=n, interval=interval, key=key, flags=tuple(flags))


def share(subject, key, kept, n, flags=()):
    """A share with its Wilson interval, as the studies give it."""
    low, high = wilson_interval(kept, n)
    return Estimate(subject, key, kept / n, low, high, n=n, interval=f"95 % Wilson interval over the {n} examples",
                    key=key, flags=tuple(flags))


def make_costs_tiny(monkeypatch) -> None:
    """Make every study's least and most sizes 8 (through ``monkeypatch``, a pytest.MonkeyPatch),
    so that the command runs in seconds on the packaged models."""
    monkeypatch.setattr(plan_module, "cost_of",
                        lambda name, kind, args=None, cost=plan_module.cost_of:
                        dataclasses.replace(cost(name, kind, args), least=8, most=8))
