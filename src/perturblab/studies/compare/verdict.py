"""Verdicts of a comparison: per target and study, its headline estimates (from each study's
``headline.json``) with a plain sentence, its findings against the reference with their levels
(:mod:`.severity`) and examples of what changed.

Targets are matched to the studies' estimates by the one name every study reports: a spec's
``NAME=`` or else its source (``l3=minilm-l3`` is ``l3``; ``models/ft[batch_size=8]`` is
``models/ft``), :func:`perturblab.studies.models.display_name`.

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
from .keys import CLASSIFIER, LANGUAGE_MODEL, family
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
    the robustness study's clean test examples, more of them, show the model above chance and
    predicting more than one class (its ``accuracy`` estimate unflagged; the chance test there is
    the two-standard-error rule of :mod:`perturblab.measures.quality`, which at n = 300 and a
    majority rate of 0.5 finds an accuracy 0.08 above it with 80 % power). Changes ``headlines``
    in place; returns (study, target) -> the note to add to that verdict's sentence."""
    import dataclasses

    rob = headlines.get("robustness")
    if rob is None:
        return {}
    clean = {e.subject: e for e in rob.estimates if e.key == "accuracy" and e.n}
    notes: dict[tuple[str, str], str] = {}
    for study, h in headlines.items():
        if study == "robustness":
            continue
        for i, e in enumerate(h.estimates):
            kept = []
            for f in e.flags:
                who = reference if f.startswith("reference ") else e.subject if f.startswith("target ") else None
                wider = clean.get(who) if who is not None else None
                if wider is not None and not wider.flags and (e.n or 0) < wider.n:
                    notes[(study, e.subject)] = (
                        f"The {f} flag of these {e.n} examples is lifted: on the robustness "
                        f"study's {wider.n} test examples {who}'s clean accuracy is {wider.text()}, above chance.")
                    continue
                kept.append(f)
            if tuple(kept) != e.flags:
                h.estimates[i] = dataclasses.replace(e, flags=tuple(kept))
    return notes


def _fmt(e: Estimate) -> str:
    return e.text() + (f" ⚑ {', '.join(e.flags)}" if e.flags else "")


def study_verdicts(study: str, headline: Headline, reference: str, targets: Sequence[str],
                   result: Any = None) -> list[Verdict]:
    """The verdicts of one study's headline for each target (display names,
    :func:`~perturblab.studies.models.display_name`),
    graded within the study (:func:`grade` grades a target's findings of every study together);
    ``result`` (the study's result, when at hand) gives examples of the invariances a target does
    not share."""
    fam = family(study)
    kind = LANGUAGE_MODEL if fam in ("lm-invariances", "selfcheck") else CLASSIFIER
    out = []
    for target in targets:
        mine = [e for e in headline.estimates if e.subject == target]
        if fam == "layers":
            mine = [e for e in headline.estimates if e.subject.endswith(f" vs {target}")]
        if not mine:
            continue
        theirs = [e for e in headline.estimates if e.subject == reference]
        v = Verdict(target, study, "", mine, theirs, flagged=all(e.flags for e in mine), kind=kind,
                    reference_name=reference, result=result)
        v.severity = _findings(fam, mine, theirs, kind)
        out.append(v)
    grade(out)
    return out


def _findings(fam: str, mine: list[Estimate], theirs: list[Estimate], kind: str) -> list[Severity]:
    """Each estimate's finding against the reference: a rate (share kept, paired gap) or, for the
    self-supervised scores, the paired difference from the reference's score (its ``_gap``
    estimate; without one, from the two scores' intervals taken as independent)."""
    by_key = {e.key: e for e in theirs}
    gaps = {e.key for e in mine if e.key.endswith("_gap")}
    out = []
    for e in mine:
        found = rate_finding(e, kind)
        if found is None and fam == "selfcheck":
            if e.key in gaps:
                found = paired_score_difference(e)
            elif e.key in by_key and f"{e.key}_gap" not in gaps:
                found = score_difference(e, by_key[e.key])
        if found is not None:
            out.append(found)
    return out


def grade(verdicts: Sequence[Verdict]) -> None:
    """Set the levels of each target's findings over all its ``verdicts`` (one family per target,
    :func:`~.severity.assign_levels`; repeats of one cause counted once), then each verdict's
    sentence and examples."""
    for target in dict.fromkeys(v.target for v in verdicts):
        mine = [v for v in verdicts if v.target == target]
        found = [s for v in mine for s in v.severity]
        for s in found:
            s.same_as = ""
        one_cause(found)
        assign_levels(found, mine[0].kind)
        for v in mine:
            v.sentence = _sentence(family(v.study), v)
            v.examples = {}
            broken = getattr(v.result, "broken", None)
            if broken is not None:
                for sev in v.severity:
                    if sev.key.startswith("hard_scope:") and sev.level in ("medium", "major", "undecided"):
                        shown = broken(target, sev.key.split(":", 1)[1])
                        if shown:
                            v.examples[sev.key] = shown


def _level_text(s: Severity | None) -> str:
    return "" if s is None else f" ({s.level}{', interval ' + s.span if s.span and s.level == 'undecided' else ''})"


def _sentence(fam: str, v: Verdict) -> str:
    target, reference, mine = v.target, v.reference_name, v.estimates
    sev = {s.key: s for s in v.severity}
    if fam in ("invariances", "lm-invariances"):
        hard = [e for e in mine if e.key.startswith("hard_scope:")]
        parts = [f"{e.key.split(':', 1)[1]} {_fmt(e)}{_level_text(sev.get(e.key))}" for e in hard]
        what = "top-1 next token" if fam == "lm-invariances" else "prediction"
        s = f"{target} keeps its {what} where {reference} keeps its own (Hard-SCoPE): " + "; ".join(parts) + "."
        ranked = [e for e in hard if e.value is not None and e.low is not None and "*" not in e.key and not e.flags]
        if len(ranked) > 1:
            lo, hi = min(ranked, key=lambda e: e.value), max(ranked, key=lambda e: e.value)
            if lo.high < hi.low:  # separate sets of examples: the capabilities are compared unpaired
                s += (f" It shares fewer of {reference}'s {lo.key.split(':', 1)[1]} invariances than of its "
                      f"{hi.key.split(':', 1)[1]} ones, beyond both intervals.")
            else:
                s += " The capabilities do not differ beyond their intervals."
        agree = next((e for e in mine if e.key == "agreement"), None)
        gap = next((e for e in mine if e.key == "accuracy_gap"), None)
        said = []
        if agree is not None:
            said.append((f"it agrees with {reference} on {_fmt(agree)} of them" if fam == "invariances" else
                         f"its top-1 next token is {reference}'s after {_fmt(agree)} of them")
                        + _level_text(sev.get("agreement")))
        if gap is not None and gap.value is not None:
            said.append(f"its {'token ' if fam == 'lm-invariances' else ''}accuracy minus {reference}'s is "
                        f"{_fmt(gap)}{_side(gap)}")
        if said:
            s += " On the unperturbed inputs " + "; ".join(said) + "."
        return s
    if fam == "robustness":
        by_key = {e.key: e for e in v.reference}
        acc = next((e for e in mine if e.key == "accuracy"), None)
        s = (f"{target}: clean accuracy {_fmt(acc)}" + (f" against {reference}'s {_fmt(by_key['accuracy'])}"
                                                        if "accuracy" in by_key else "") + ". ") if acc else ""
        gap = next((e for e in mine if e.key == "accuracy_gap"), None)
        if gap is not None and gap.value is not None:
            s += f"Its accuracy minus {reference}'s, on the same examples: {_fmt(gap)}{_side(gap)}. "
        gaps = [e for e in mine if e.key.startswith("relative_robustness_gap:")]
        less = [e for e in gaps if e.high is not None and e.high < 0]
        more = [e for e in gaps if e.low is not None and e.low > 0]
        name = (lambda e: e.key.split(":", 1)[1])
        if less:
            s += (f"Less robust than {reference}, beyond the paired interval, to: "
                  + ", ".join(f"{name(e)} ({_fmt(e)}{_level_text(sev.get(e.key))})" for e in less) + ". ")
        if more:
            s += (f"More robust than {reference}, beyond the paired interval, to: "
                  + ", ".join(f"{name(e)} ({_fmt(e)})" for e in more) + ". ")
        if gaps and not less and not more:
            s += f"Its relative robustness minus {reference}'s is within noise under every perturbation. "
        return (s + ("Gaps are target − reference, with paired 95 % intervals." if gaps else "")).strip()
    if fam == "layers":
        return f"Layer similarity with {reference}: " + "; ".join(f"{e.measure} {_fmt(e)}" for e in mine) + "."
    if fam == "selfcheck":
        differ = [s for s in v.severity if s.score and s.level == "differs"]
        if differ:
            return (f"{target} differs from {reference}, after the multiplicity adjustment, on: "
                    + "; ".join(f"{s.key.removesuffix('_gap')} ({s.direction} by {abs(s.rate):.3g} "
                                f"[{s.low:+.3g}, {s.high:+.3g}])" for s in differ) + ".")
        return f"{target}'s self-supervised scores do not differ from {reference}'s beyond noise on any score."
    return "; ".join(f"{e.measure} {_fmt(e)}" for e in mine)


def _side(gap: Estimate) -> str:
    if gap.low is None or gap.high is None:
        return ""
    return (" (no difference beyond the interval)" if gap.low <= 0 <= gap.high else
            " (lower, beyond the interval)" if gap.high < 0 else " (higher, beyond the interval)")


def findings(verdicts: Sequence[Verdict], target: str) -> str:
    """``Findings: 1 major (…), 1 medium (…), 2 undecided (…), 3 scores differ (…); levels held to
    …``: the counted findings of ``target`` at each level, or that none is medium or major."""
    by_level: dict[str, list[str]] = {"major": [], "medium": [], "differs": [], "undecided": []}
    found = []
    for v in (v for v in verdicts if v.target == target):
        measures = {e.key: e.measure for e in v.estimates}
        for sev in v.severity:
            found.append(sev)
            if sev.level in by_level and sev.counted():
                flag = f" ⚑ {', '.join(sev.flags)}" if sev.flags else ""
                by_level[sev.level].append(measures.get(sev.key, sev.key) + flag)
    parts = [f"{len(x)} {lv} ({'; '.join(x)})" for lv, x in by_level.items() if x and lv in ("major", "medium")]
    if by_level["differs"]:
        n = len(by_level["differs"])
        parts.append(f"{n} score{'s' if n > 1 else ''} differ{'' if n > 1 else 's'} ({'; '.join(by_level['differs'])})")
    text = ", ".join(parts) if parts else "none medium or major"
    if by_level["undecided"]:
        text += f"; {len(by_level['undecided'])} undecided at this n ({'; '.join(by_level['undecided'])})"
    note = f"; {family_note(found)}" if any(s.counted() for s in found) else ""
    return f"Findings: {text}{note}."


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
            "checks": [c.to_json() for c in checks], "passed": all(c.passed for c in checks)}
