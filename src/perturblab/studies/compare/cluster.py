"""Where a comparison's cells run: which studies run theirs on its executor (:func:`on_executor`),
how many times this machine's cores a joined cluster gives them, which sizes the plan for it
(:func:`spread_over`), and the line that says so before the first study (:func:`executor_line`)."""

from __future__ import annotations

from typing import Any

from ..part import parts as all_parts, studies_of


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


def spread_over(cluster: "tuple[str, float]", chosen: list[str], plan: Any,
                runs: "dict[str, int] | None" = None) -> dict[str, float]:
    """How many times this machine's cores the studies whose cells run on ``cluster`` (its
    description and CPUs) have, by study; the plan notes it. ``runs``: how many runs of each study
    the plan makes (one per target of a part run per target; default 1). A study gains from the
    cluster's CPUs up to the cells it has at once (:attr:`~..part.Part.cells` times its runs,
    which go at once there; unbounded when it declares none), over this machine's cores (at least
    1: a local Ray instance has this machine's cores). Their time per sample is divided by it, so
    the budget buys them that much more (what they still do in the driver, loading models and
    assembling their outputs, is counted as spread too)."""
    import os

    text, cpus = cluster
    here = os.cpu_count() or 1
    registered, parts = studies_of(), all_parts()
    spread: dict[str, float] = {}
    for name in chosen:
        if not on_executor(registered[name]):
            continue
        cells = parts[name].cells * (runs or {}).get(name, 1)
        spread[name] = max(1.0, min(float(cpus), cells or float(cpus)) / here)
    many = [n for n in spread if not parts[n].cells]
    if many and spread[many[0]] > 1.0:
        plan.notes.append(f"on {text}: {listed(many)} sized for {spread[many[0]]:g} times this machine's {here} "
                          "cores (their cells run there at once)")
    for name in (n for n in spread if parts[n].cells and spread[n] > 1.0):
        count, each = (runs or {}).get(name, 1), parts[name].cells
        plan.notes.append(f"on {text}: {name} sized for {spread[name]:g} times this machine's {here} cores ("
                          + (f"its {count} runs go there at once, " if count > 1 else "")
                          + f"{each} cell{'s' if each > 1 else ''} each)")
    return spread


def at_once(studies: list[Any], executor: Any) -> list[list[Any]]:
    """The plan's ``studies`` in the order they run, grouped: the runs of a part run per target
    (:attr:`~..part.Part.per_target`) whose cells go to an executor elsewhere (a cluster: not
    ``local``) make one group, run at once (each waits on its own cells there); every other study
    is a group of its own.

    >>> from types import SimpleNamespace as S
    >>> plan = [S(name="invariances", kind="scope"), S(name="layers-a", kind="similarity"),
    ...         S(name="layers-b", kind="similarity")]
    >>> [[p.name for p in g] for g in at_once(plan, S(name="ray"))]
    [['invariances'], ['layers-a', 'layers-b']]
    >>> [[p.name for p in g] for g in at_once(plan, S(name="local"))]
    [['invariances'], ['layers-a'], ['layers-b']]
    """
    from ..part import part_of

    groups: list[list[Any]] = []
    elsewhere = executor is not None and executor.name != "local"
    for p in studies:
        part = part_of(p.name)
        joins = (elsewhere and part is not None and part.per_target and on_executor(p.kind) and groups
                 and part_of(groups[-1][0].name) is part)
        if joins:
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def _part_name(folder: str) -> str:
    """The part a plan's study belongs to, by its name (``layers-a``: ``layers``), said once for all
    its targets."""
    from ..part import part_of

    part = part_of(folder)
    return folder if part is None else part.name


def executor_line(executor: Any, plan: Any) -> str:
    """What the comparison's executor is and which studies' cells run on it, in one line:
    ``on Ray (3 nodes, 6 CPUs): the cells of invariances, robustness and layers run there`` (a
    part run per target named once; a study whose cells run in the driver: ``; NAME here``)."""
    there = list(dict.fromkeys(_part_name(p.name) for p in plan.studies if on_executor(p.kind)))
    here = list(dict.fromkeys(_part_name(p.name) for p in plan.studies if not on_executor(p.kind)))
    where = executor.resources() if hasattr(executor, "resources") else executor.name
    line = f"on {where}: " + (f"the cells of {listed(there)} run there" if there else "no study runs cells there")
    return line + (f"; {', '.join(here)} here" if here else "")
