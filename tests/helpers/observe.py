"""What a run did: the calls a method got, and the cells a results store holds."""

from __future__ import annotations


def record_calls(monkeypatch, owner: type, method: str) -> list:
    """The first argument (after ``self``) of each call of ``owner.method`` while the test runs,
    in order; the method still does its work."""
    calls: list = []
    original = getattr(owner, method)

    def spy(self, first, *a, **kw):
        calls.append(first)
        return original(self, first, *a, **kw)

    monkeypatch.setattr(owner, method, spy)
    return calls


def count_cells(out, study: str) -> int:
    """How many cells of ``study`` (a namespace such as ``"scope.search"``) the results store
    ``out/results.sqlite`` holds."""
    from perturblab.testing import cells

    return sum(1 for (namespace, _key) in cells(out) if namespace == study)
