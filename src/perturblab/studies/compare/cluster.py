"""Where a comparison's cells run: which studies run theirs on its executor (:func:`on_executor`),
how many times this machine's cores a joined cluster gives them, which sizes the plan for it
(:func:`spread_over`), and the line that says so before the first study (:func:`executor_line`)."""

from __future__ import annotations

from typing import Any

from ..part import studies_of


def listed(names: "list[str] | dict[str, Any]") -> str:
    """Names in words: ``a``, ``a and b``, ``a, b and c``.

    >>> listed(["invariances", "robustness", "layers"])
    'invariances, robustness and layers'
    """
    names = list(names)
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def on_executor(kind: str) -> bool:
    """Whether the study ``kind`` runs its cells on the comparison's executor (its options take
    one: ``--executor``); the others run theirs in the driver's process."""
    from ...core.boundary import takes_executor
    from ..registry import entry

    return takes_executor(entry(kind).options())


def spread_over(cluster: "tuple[str, float]", chosen: list[str], plan: Any) -> dict[str, float]:
    """How many times this machine's cores the studies whose cells run on ``cluster`` (its
    description and CPUs) have: its CPUs over this machine's (at least 1: a local Ray instance
    has this machine's cores), by study; the plan notes it. Their time per sample is divided by
    it, so the budget buys them that much more (their cells run at once there; what they still do
    in the driver, loading models and assembling their outputs, is counted as spread too)."""
    import os

    text, cpus = cluster
    here = os.cpu_count() or 1
    factor = max(1.0, float(cpus) / here)
    registered = studies_of()
    spread = {name: factor for name in chosen if on_executor(registered[name])}
    if factor > 1.0 and spread:
        plan.notes.append(f"on {text}: {listed(spread)} sized for {factor:g} times this machine's {here} "
                          "cores (their cells run there at once)")
    return spread


def executor_line(executor: Any, plan: Any) -> str:
    """What the comparison's executor is and which studies' cells run on it, in one line:
    ``on Ray (3 nodes, 6 CPUs): the cells of invariances and robustness run there; layers here``."""
    there = [p.name for p in plan.studies if on_executor(p.kind)]
    here = [p.name for p in plan.studies if not on_executor(p.kind)]
    where = executor.resources() if hasattr(executor, "resources") else executor.name
    line = f"on {where}: " + (f"the cells of {listed(there)} run there" if there else "no study runs cells there")
    return line + (f"; {', '.join(here)} here" if here else "")
