"""``compare --until decided``: the rounds. After every study ran once (the growing ones from
their first size), each study whose part :attr:`~perturblab.studies.part.Part.grows` runs again at a larger size
while one of its findings is still open and the budget has seconds left; its draws nest, so a
round computes only its new samples, and the verdicts are judged anew after each round with
confidence sequences (:mod:`perturblab.measures.sequences`), which hold at every look."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)

def anytime_estimate(e: Any, alpha: float = 0.05) -> Any:
    """``e`` with its 95 % interval replaced by its confidence sequence where it has one (a share
    with a Wilson interval, a paired gap with its counts; :mod:`perturblab.measures.sequences`),
    for the checks of a run that stops when it is decided; else ``e`` as it is."""
    from ...core.headline import defined
    from ...measures.sequences import paired_sequence, share_sequence
    from ..part import GAP, SHARE, key_of

    key = key_of(e.key)
    if key is None or not defined(e.value) or not e.n or e.interval.startswith("exact"):
        return e
    if key.kind == SHARE and "wilson" in e.interval.lower():
        low, high = share_sequence(float(e.value) * e.n, int(e.n), alpha)
    elif key.kind == GAP and len(e.counts) == 2:
        low, high = paired_sequence(*e.counts, int(e.n), alpha)
    else:
        return e
    return replace(e, low=low, high=high, interval=f"confidence sequence over the {e.n} examples, valid at every "
                                                    f"look: {100 * (1 - alpha):.0f} %")


#: the least a round grows a study by (its size times this), so that each round's fixed work pays
GROWTH = 1.5


def open_findings(result: Any, name: str) -> list[Any]:
    """The counted findings of study ``name`` that its size can still decide: undecided, with a
    confidence sequence (:attr:`~.severity.Severity.alpha`) and a size that would decide them
    (:attr:`~.severity.Severity.decide` names one within the study's largest)."""
    return [s for v in result.verdicts if v.study == name for s in v.severity
            if s.counted() and s.alpha is not None and not s.decided(v.kind)
            and s.decide is not None and "samples" in s.decide and "held" not in s.decide]


def next_size(result: Any, p: Any, left: float) -> tuple[int, str]:
    """The size of the next round of the growing study ``p`` and why: the least that would
    decide one of its open findings if its rate stays (:func:`what_would_decide`), at least
    :data:`GROWTH` times its size, within its largest and what ``left`` seconds buy at the pace it
    ran; ``p.count`` (no round) when none is open or the budget buys no more."""
    found = open_findings(result, p.name)
    if not found:
        return p.count, "decided"
    want = max(min(s.decide["samples"] for s in found), math.ceil(GROWTH * p.count))
    want = min(want, p.most) if p.most else want
    # seconds a sample: as planned, times how much slower or faster than planned the study ran so far
    pace = p.per_sample * (result.seconds.get(p.name, p.seconds) / p.seconds if p.seconds else 1.0)
    affordable = p.count + math.floor(max(left, 0.0) / pace) if pace > 0 else want
    size = min(want, affordable)
    if size <= p.count:
        return p.count, "budget"
    return size, ""


def run_rounds(result: Any, planned: dict[str, Any], started: float, run: Callable[..., None],
               judge: Callable[[Any], None]) -> None:
    """``--until decided``: after the first round (every study at its planned size, the growing
    ones from their first size), grow each study that :attr:`~perturblab.studies.part.Part.grows` while it has open
    findings (:func:`open_findings`) and the budget has seconds left, one round at a time: its draws
    nest, so a round computes only its new samples; the verdicts are judged anew after each round
    (their confidence sequences hold at every look). Each round is recorded in ``result.rounds``
    and said on the console. ``run(result, p, options, planned_seconds)`` runs a planned study and
    ``judge(result)`` sets the verdicts and checks (the comparison's own)."""
    from ..part import part_of
    from .plan import _minutes

    args = result.args
    budget = args.budget_seconds()

    def record(sizes: dict[str, int], seconds: float, why: str = "") -> None:
        counted = [(v, s) for v in result.verdicts for s in v.severity if s.counted()]
        decided = sum(s.decided(v.kind) for v, s in counted)
        result.rounds.append({"round": len(result.rounds) + 1, "sizes": sizes, "seconds": round(seconds, 1),
                              "decided": decided, "findings": len(counted), "stopped": why})
        if not args.quiet:
            log.info(f"round {len(result.rounds)}: {decided} of {len(counted)} findings decided ("
                     + ", ".join(f"{n} n = {k}" for n, k in sizes.items()) + f"; {_minutes(seconds)} of --budget "
                     f"{_minutes(budget)})" + (f"; {why}" if why else ""))

    growing = [p for p in result.plan.studies if getattr(part_of(p.name), "grows", False)]
    if not growing:  # the plan said so: it ran once
        record({}, time.time() - started, "no study of this plan grows in rounds; it ran once")
        return
    record({p.name: p.count for p in growing}, time.time() - started)
    while True:
        left = budget - (time.time() - started)
        steps = {p.name: next_size(result, p, left) for p in growing}
        grown = {p.name: steps[p.name][0] for p in growing if steps[p.name][0] > p.count}
        if not grown:
            names = {p.name for p in growing}
            still = [f"{v.target}: {s.key}" for v in result.verdicts if v.study in names for s in v.severity
                     if s.counted() and not s.decided(v.kind)]
            why = ("every finding decided" if not still else
                   f"the budget is spent; {len(still)} still open" if any(w == "budget" for _, w in steps.values())
                   else f"{len(still)} still open, each beyond what the study can take (its largest useful size, "
                        "or what the data holds) at its present rate")
            if result.rounds:
                result.rounds[-1]["stopped"] = why
                if not args.quiet:
                    log.info(f"stopped: {result.rounds[-1]['stopped']}")
            return
        for p in growing:
            if p.name in grown:
                added = (grown[p.name] - p.count) * p.per_sample  # the round's new samples, as planned
                grow(p, grown[p.name])
                planned[p.name] = p.study_args(Path(result.out) / p.name, args.quiet)
                planned[p.name].check()
                run(result, p, planned[p.name], added)
        judge(result)
        record({p.name: p.count for p in growing}, time.time() - started)


def grow(p: Any, size: int) -> None:
    """Set the planned study ``p`` to ``size`` (its options, count and the words of its size);
    its planned seconds grow by what a sample was planned to cost."""
    p.seconds += (size - p.count) * p.per_sample
    p.options = {**p.options, p.size_key: size}
    p.count = size
    p.size = f"{p.size_key.replace('_', '-')} = {size}"
