"""Verdicts of a comparison: per target and study, its headline estimates (from each study's
``headline.json``) with a plain sentence, its findings against the reference with their levels
(:mod:`.severity`) and examples of what changed.

Targets are matched to the studies' estimates by the one name every study reports: a spec's
``NAME=`` or else its source (``l3=minilm-l3`` is ``l3``; ``models/ft[batch_size=8]`` is
``models/ft``), :func:`perturblab.studies.names.display_name`.

A finding of the target against the reference is a paired difference wherever both are scored
on the same examples (Hard-SCoPE and agreement are already paired; the accuracy and robustness
gaps have paired intervals); the levels of all of one target's findings, across the studies, are
held to a family-wise error rate of 5 % (:func:`grade`). A sentence states a direction only where
the interval does, and shows flags (a model predicting one class or at chance level) beside the
number they concern, never in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ...core.headline import Estimate, Headline
from ..part import CLASSIFIER, GAP, key_of, listed, part_of
from .keys import gap_of
from .severity import (LEVELS, Severity, assign_levels, family_note, one_cause, paired_score_difference,
                       rate_finding, score_difference)


@dataclass
class Verdict:
    """What one study says of one target: a ``sentence``, the target's ``estimates`` (with the
    reference's own, where the study measures both, in ``reference``), the ``severity`` of each
    finding and ``examples`` of it (by estimate key: the inputs on which the target changed its
    prediction where the reference kept its own)."""

    target: str
    study: str
    sentence: str
    estimates: list[Estimate] = field(default_factory=list)
    reference: list[Estimate] = field(default_factory=list)
    flagged: bool = False
    severity: list[Severity] = field(default_factory=list)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    kind: str = CLASSIFIER
    reference_name: str = ""
    #: the study's result, when at hand: it gives examples of the invariances not shared
    result: Any = field(default=None, repr=False, compare=False)

    def worst(self) -> Severity | None:
        """The most severe counted finding (by level, then rate), or None."""
        ranked = [s for s in self.severity if s.level in LEVELS and s.counted()]
        return max(ranked, key=lambda s: (LEVELS.index(s.level), s.rate or 0.0), default=None)


def pool_flags(headlines: dict[str, Headline], reference: str) -> dict[tuple[str, str], str]:
    """Let a model's quality flags rest on all the evidence of the run: a chance-level or
    one-class flag a study set from its own few examples (SCoPE's base samples) is lifted where
    the clean test examples of a part that shows each model's quality
    (:attr:`~perturblab.studies.part.Part.quality`: the robustness study's ``accuracy``), more of
    them, show the model above chance and predicting more than one class (its estimate unflagged;
    the chance test there is the two-standard-error rule of :mod:`perturblab.measures.quality`,
    which at n = 300 and a majority rate of 0.5 finds an accuracy 0.08 above it with 80 % power).
    Changes ``headlines`` in place; returns (study, target) -> the note to add to that verdict's
    sentence."""
    import dataclasses

    judge = next((s for s in headlines if (p := part_of(s)) is not None and p.quality), None)
    if judge is None:
        return {}
    quality = part_of(judge).quality
    clean = {e.subject: e for e in headlines[judge].estimates if e.key == quality and e.n}
    notes: dict[tuple[str, str], str] = {}
    for study, h in headlines.items():
        if study == judge:
            continue
        for i, e in enumerate(h.estimates):
            kept = []
            for f in e.flags:
                who = reference if f.startswith("reference ") else e.subject if f.startswith("target ") else None
                wider = clean.get(who) if who is not None else None
                if wider is not None and not wider.flags and (e.n or 0) < wider.n:
                    notes[(study, e.subject)] = (
                        f"The {f} flag of these {e.n} examples is lifted: on the "
                        f"{judge} study's {wider.n} test examples {who}'s clean accuracy is {wider.text()}, above chance.")
                    continue
                kept.append(f)
            if tuple(kept) != e.flags:
                h.estimates[i] = dataclasses.replace(e, flags=tuple(kept))
    return notes


def study_verdicts(study: str, headline: Headline, reference: str, targets: Sequence[str],
                   result: Any = None) -> list[Verdict]:
    """The verdicts of one study's headline for each target (display names,
    :func:`~perturblab.studies.names.display_name`),
    graded within the study (:func:`grade` grades a target's findings of every study together);
    ``result`` (the study's result, when at hand) gives examples of the invariances a target does
    not share."""
    part = part_of(study)
    kind = part.kind() if part is not None else CLASSIFIER
    out = []
    for target in targets:
        mine = [e for e in headline.estimates if e.subject == target]
        if part is not None and part.per_target:  # its estimates are of "reference vs target"
            mine = [e for e in headline.estimates if e.subject.endswith(f" vs {target}")]
        if not mine:
            continue
        theirs = [e for e in headline.estimates if e.subject == reference]
        v = Verdict(target, study, "", mine, theirs, flagged=all(e.flags for e in mine), kind=kind,
                    reference_name=reference, result=result)
        v.severity = _findings(part is not None and part.scores, mine, theirs, kind)
        out.append(v)
    grade(out)
    return out


def _findings(scores: bool, mine: list[Estimate], theirs: list[Estimate], kind: str) -> list[Severity]:
    """Each estimate's finding against the reference: a rate (share kept, paired gap) or, for a
    study of ``scores`` (the self-supervised scores), the paired difference from the reference's
    score (its paired gap estimate, the key's declared :attr:`~perturblab.studies.part.Key.gap`;
    without one, from the two scores' intervals taken as independent)."""
    by_key = {e.key: e for e in theirs}
    keys = {e.key for e in mine}
    out = []
    for e in mine:
        found = rate_finding(e, kind)
        if found is None and scores:
            declared = key_of(e.key)
            if declared is not None and declared.kind == GAP:
                found = paired_score_difference(e)
            elif e.key in by_key and gap_of(e.key) not in keys:
                found = score_difference(e, by_key[e.key])
        if found is not None:
            out.append(found)
    return out


def grade(verdicts: Sequence[Verdict], anytime: bool = False) -> None:
    """Set the levels of each target's findings over all its ``verdicts`` (one family per target,
    :func:`~.severity.assign_levels`; repeats of one cause counted once; ``anytime``: with
    confidence sequences, for a run that stops when its findings are decided), then each
    verdict's sentence and examples."""
    for target in dict.fromkeys(v.target for v in verdicts):
        mine = [v for v in verdicts if v.target == target]
        found = [s for v in mine for s in v.severity]
        for s in found:
            s.same_as = ""
        one_cause(found)
        assign_levels(found, mine[0].kind, anytime=anytime)
        for v in mine:
            part = part_of(v.study)
            v.sentence = part.sentence(v) if part is not None else listed(v)
            v.examples = {}
            broken = getattr(v.result, "broken", None)
            if broken is not None:
                for sev in v.severity:
                    key = key_of(sev.key)
                    if (key is not None and key.examples and ":" in sev.key
                            and sev.level in ("medium", "major", "undecided")):
                        shown = broken(target, sev.key.split(":", 1)[1])
                        if shown:
                            v.examples[sev.key] = shown


#: the levels a target's findings and summary count, worst first
SUMMARY_LEVELS = ("major", "medium", "differs", "undecided")


def counted_by_level(verdicts: Sequence[Verdict], target: str) -> dict[str, list[tuple[str, Severity]]]:
    """The counted findings of ``target`` at each of :data:`SUMMARY_LEVELS`, each with the
    measure it is of (its estimate's words), in the verdicts' order."""
    out: dict[str, list[tuple[str, Severity]]] = {lv: [] for lv in SUMMARY_LEVELS}
    for v in (v for v in verdicts if v.target == target):
        measures = {e.key: e.measure for e in v.estimates}
        for sev in v.severity:
            if sev.level in out and sev.counted():
                out[sev.level].append((measures.get(sev.key, sev.key), sev))
    return out


def findings(verdicts: Sequence[Verdict], target: str) -> str:
    """``Findings: 1 major (…), 1 medium (…), 2 undecided (…), 3 scores differ (…); levels held to
    …``: the counted findings of ``target`` at each level, or that none is medium or major."""
    by_level = {lv: [name + (f" ⚑ {', '.join(sev.flags)}" if sev.flags else "") for name, sev in these]
                for lv, these in counted_by_level(verdicts, target).items()}
    found = [sev for v in verdicts if v.target == target for sev in v.severity]
    parts = [f"{len(x)} {lv} ({'; '.join(x)})" for lv, x in by_level.items() if x and lv in ("major", "medium")]
    if by_level["differs"]:
        n = len(by_level["differs"])
        parts.append(f"{n} score{'s' if n > 1 else ''} differ{'' if n > 1 else 's'} ({'; '.join(by_level['differs'])})")
    text = ", ".join(parts) if parts else "none medium or major"
    if by_level["undecided"]:
        text += f"; {len(by_level['undecided'])} undecided at this n ({'; '.join(by_level['undecided'])})"
    decided = [sev for sev in found if sev.counted() and sev.alpha is not None]
    if decided:
        text += f"; {sum(sev.level != 'undecided' for sev in decided)} of {len(decided)} decided at every look"
    note = f"; {family_note(found)}" if any(s.counted() for s in found) else ""
    return f"Findings: {text}{note}."


def summary(verdicts: Sequence[Verdict], checks: Sequence[Any], targets: Sequence[str]) -> list[dict[str, Any]]:
    """One line per target, worst first: its counted findings at each level (major, medium,
    scores that differ, undecided at this n) and the checks it failed, by name, so the first
    screen says which target needs a look and why. Worst: most major findings, then medium,
    differing scores, failed checks, undecided (the targets' order on a tie).

    >>> from .checks import Check
    >>> sev = [Severity("agreement", "disagreement", 0.28, 0.18, 0.42, "major")]
    >>> v = [Verdict("l3", "invariances", "", severity=sev), Verdict("int8", "invariances", "")]
    >>> fail = Check("l3", "agreement", "agreement", 0.95, 0.72, "estimate", False, outcome="FAIL", study="invariances")
    >>> apart = Check("l3", "agreement", "agreement", 0.05, 0.28, "", False, kind="equivalent", outcome="differs")
    >>> [s["line"] for s in summary(v, [fail, apart], ["int8", "l3"])]  # doctest: +NORMALIZE_WHITESPACE
    ['l3: 1 major (agreement); failed 2 of 2 checks: agreement below the threshold; agreement (differs) not shown
      equivalent', 'int8: none medium or major']
    """
    rows = []
    for i, target in enumerate(targets):
        found = {lv: [name for name, _ in x] for lv, x in counted_by_level(verdicts, target).items()}
        mine = [c for c in checks if c.target == target]
        failed = [c for c in mine if not c.passed]
        said = [f"{len(found[lv])} {lv if lv != 'differs' else 'scores differ'} ({'; '.join(found[lv])})"
                for lv in ("major", "medium", "differs") if found[lv]]
        line = f"{target}: " + (", ".join(said) if said else "none medium or major")
        if found["undecided"]:
            line += f"; {len(found['undecided'])} undecided at this n"
        if failed:
            under = [c for c in failed if c.kind != "equivalent"]
            apart = [c for c in failed if c.kind == "equivalent"]
            said = ([", ".join(dict.fromkeys(c.key or c.metric for c in under)) + " below the threshold"]
                    if under else []) + ([", ".join(f"{c.key or c.metric} ({c.outcome.replace(' at this n', '')})"
                                                   for c in apart) + " not shown equivalent"] if apart else [])
            line += f"; failed {len(failed)} of {len(mine)} checks: " + "; ".join(said)
        elif mine:
            line += f"; passed all {len(mine)} checks"
        rank = (len(found["major"]), len(found["medium"]), len(found["differs"]), len(failed), len(found["undecided"]))
        rows.append((rank, -i, {"target": target, **{lv: len(x) for lv, x in found.items()},
                                "failed": [c.key or c.metric for c in failed], "checks": len(mine), "line": line}))
    return [row for _, _, row in sorted(rows, key=lambda r: (r[0], r[1]), reverse=True)]


def to_json(verdicts: Sequence[Verdict], checks: Sequence[Any]) -> dict[str, Any]:
    """``compare.json``'s verdicts, each target's findings (:func:`findings`) and the checks as
    plain JSON values."""
    return {"verdicts": [{"target": v.target, "study": v.study, "sentence": v.sentence, "flagged": v.flagged,
                          "estimates": [e.to_json() for e in v.estimates],
                          "reference": [e.to_json() for e in v.reference],
                          "severity": [s.to_json() for s in v.severity],
                          "examples": v.examples}
                         for v in verdicts],
            "findings": {t: findings(verdicts, t) for t in dict.fromkeys(v.target for v in verdicts)},
            "summary": summary(verdicts, checks, list(dict.fromkeys(
                [*(v.target for v in verdicts), *(c.target for c in checks)]))),
            "checks": [c.to_json() for c in checks], "passed": all(c.passed for c in checks)}
