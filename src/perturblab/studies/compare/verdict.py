"""Verdicts of a comparison: per target and study, its headline estimates (from each study's
``headline.json``) with a plain sentence, the severity of each finding
(:mod:`.severity`), examples of what changed, and the ``--fail-under`` checks.

A sentence ranks nothing that a flag says means nothing (a model predicting one class or at
chance level), and says "within the intervals" where two estimates' 95 % intervals overlap,
rather than ranking them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from ...core.headline import Estimate, Headline
from ...errors import InputError
from .plan import CLASSIFIER, LANGUAGE_MODEL
from .severity import LEVELS, Severity, difference_severity, drop_severity, fail_rate_severity, overlap

#: the headline keys each study of the plan gives (their first part), for checking --fail-under
#: before anything runs
KEYS_OF = {"invariances": ("hard_scope", "soft_scope", "agreement", "accuracy_gap"),
           "lm-invariances": ("hard_scope", "soft_scope", "agreement", "accuracy_gap"),
           "robustness": ("relative_robustness", "accuracy"), "layers": ("linear_cka",),
           "selfcheck": ("negation_sensitivity", "negation_normalised", "negation_benign_abs", "negation_ppl_drops",
                         "toxicity_generation", "toxicity_next_token",
                         "long_range", "word_order", "tokenization", "next_token_entropy", "token_entropy")}


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

    def worst(self) -> Severity | None:
        """The most severe finding (by level, then rate), or None."""
        ranked = [s for s in self.severity if s.level in LEVELS]
        return max(ranked, key=lambda s: (LEVELS.index(s.level), s.rate or 0.0), default=None)


@dataclass
class Check:
    """One ``--fail-under`` check of one target's estimate."""

    target: str
    metric: str
    key: str
    threshold: float
    value: float | None
    used: str  # "estimate" or "lower bound of the 95 % interval"
    passed: bool


def _fmt(e: Estimate) -> str:
    return e.text() + (" ⚑" if e.flags else "")


def _family(study: str) -> str:
    return "layers" if study.startswith("layers") else study


def study_verdicts(study: str, headline: Headline, reference: str, targets: Sequence[str],
                   result: Any = None) -> list[Verdict]:
    """The verdicts of one study's headline for each target; ``result`` (the study's result,
    when at hand) gives examples of the invariances a target does not share."""
    family = _family(study)
    kind = LANGUAGE_MODEL if family in ("lm-invariances", "selfcheck") else CLASSIFIER
    out = []
    for target in targets:
        mine = [e for e in headline.estimates if e.subject == target]
        if family == "layers":
            mine = [e for e in headline.estimates if e.subject.endswith(f" vs {target}")]
        if not mine:
            continue
        theirs = [e for e in headline.estimates if e.subject == reference]
        v = Verdict(target, study, "", mine, theirs, flagged=all(e.flags for e in mine))
        v.severity = _severities(mine, theirs, kind, scores=family == "selfcheck")
        v.sentence = _sentence(family, target, reference, mine, theirs)
        flags = sorted({f for e in mine for f in e.flags})
        if flags:
            v.sentence += (f" ⚑ marks estimates flagged ({', '.join(flags)}): they may mean nothing and are "
                           "not ranked.")
        broken = getattr(result, "broken", None)
        if broken is not None:
            for sev in v.severity:
                if sev.key.startswith("hard_scope:") and sev.level in ("medium", "major"):
                    found = broken(target, sev.key.split(":", 1)[1])
                    if found:
                        v.examples[sev.key] = found
        out.append(v)
    return out


def _severities(mine: list[Estimate], theirs: list[Estimate], kind: str, scores: bool = False) -> list[Severity]:
    """Each estimate's severity: a rate's level, or (``scores``: self-supervised scores, which
    have no rate) whether it differs from the reference's beyond both intervals."""
    by_key = {e.key: e for e in theirs}
    out = []
    for e in mine:
        sev = fail_rate_severity(e, kind)
        if sev is None and e.key in by_key:
            sev = (difference_severity if scores else lambda t, r: drop_severity(t, r, kind))(e, by_key[e.key])
        if sev is not None:
            out.append(sev)
    return out


def _sentence(family: str, target: str, reference: str, mine: list[Estimate], theirs: list[Estimate]) -> str:
    if family in ("invariances", "lm-invariances"):
        hard = [e for e in mine if e.key.startswith("hard_scope:")]
        parts = [f"{e.key.split(':', 1)[1]} {_fmt(e)}" for e in hard]
        what = "top-1 next token" if family == "lm-invariances" else "prediction"
        s = f"{target} keeps its {what} where {reference} keeps its own (Hard-SCoPE): " + "; ".join(parts) + "."
        ranked = [e for e in hard if not e.flags and e.value is not None]
        if len(ranked) > 1:
            lo, hi = min(ranked, key=lambda e: e.value), max(ranked, key=lambda e: e.value)
            if overlap(lo, hi):
                s += " The capabilities do not differ beyond their intervals."
            else:
                s += (f" It shares fewer of {reference}'s {lo.key.split(':', 1)[1]} invariances than of its "
                      f"{hi.key.split(':', 1)[1]} ones, beyond both intervals.")
        agree = next((e for e in mine if e.key == "agreement"), None)
        gap = next((e for e in mine if e.key == "accuracy_gap"), None)
        said = []
        if agree is not None:
            said.append(f"it agrees with {reference} on {_fmt(agree)} of them" if family == "invariances" else
                        f"its top-1 next token is {reference}'s after {_fmt(agree)} of them")
        if gap is not None and gap.value is not None:
            side = ("" if gap.low is None or gap.high is None else " (no difference beyond the interval)"
                    if gap.low <= 0 <= gap.high else " (lower, beyond the interval)" if gap.high < 0
                    else " (higher, beyond the interval)")
            said.append(f"its {'token ' if family == 'lm-invariances' else ''}accuracy minus {reference}'s is "
                        f"{_fmt(gap)}{side}")
        if said:
            s += " On the unperturbed inputs " + "; ".join(said) + "."
        return s
    if family == "robustness":
        by_key = {e.key: e for e in theirs}
        pairs = [(e, by_key.get(e.key)) for e in mine if e.key.startswith("relative_robustness")]
        worse = [(e, r) for e, r in pairs if r is not None and e.value is not None and r.value is not None
                 and not (e.flags or r.flags) and not overlap(e, r) and e.value < r.value]
        acc = next((e for e in mine if e.key == "accuracy"), None)
        s = f"{target}: clean accuracy {_fmt(acc)}" + (
            f" against {reference}'s {_fmt(by_key['accuracy'])}" if acc and "accuracy" in by_key else "") + ". " \
            if acc else ""
        if worse:
            names = ", ".join(f"{e.key.split(':', 1)[1]} ({_fmt(e)} against {_fmt(r)})" for e, r in worse)
            return s + f"Less robust than {reference}, beyond both intervals, to: {names}."
        return s + f"Its relative robustness is within the intervals of {reference}'s (or above) under every perturbation."
    if family == "layers":
        return f"Layer similarity with {reference}: " + "; ".join(f"{e.measure} {_fmt(e)}" for e in mine) + "."
    if family == "selfcheck":
        by_key = {e.key: e for e in theirs}
        differ = [f"{e.measure} ({_fmt(e)} against {_fmt(by_key[e.key])})" for e in mine
                  if e.key in by_key and not (e.flags or by_key[e.key].flags) and not overlap(e, by_key[e.key])]
        if differ:
            return f"{target} differs from {reference}, beyond both intervals, on: " + "; ".join(differ) + "."
        return f"{target}'s self-supervised scores are within the intervals of {reference}'s on every score."
    return "; ".join(f"{e.measure} {_fmt(e)}" for e in mine)


def findings(verdicts: Sequence[Verdict], target: str) -> str:
    """``Findings: 2 major (…), 1 medium (…), 3 scores beyond the reference's intervals (…).``: the
    measures of ``target`` at each level, or that none is medium or major."""
    by_level: dict[str, list[str]] = {"major": [], "medium": [], "differs": []}
    for v in (v for v in verdicts if v.target == target):
        measures = {e.key: e.measure for e in v.estimates}
        for sev in v.severity:
            if sev.level in by_level:
                by_level[sev.level].append(measures.get(sev.key, sev.key))
    parts = [f"{len(found)} {lv} ({'; '.join(found)})" for lv, found in by_level.items() if found and lv != "differs"]
    if by_level["differs"]:
        parts.append(f"{len(by_level['differs'])} score{'s' if len(by_level['differs']) > 1 else ''} beyond the "
                     f"reference's intervals ({'; '.join(by_level['differs'])})")
    return "Findings: " + (", ".join(parts) if parts else "none medium or major") + "."


def check_metrics(metrics: Sequence[str], studies: Sequence[str]) -> None:
    """Refuse a ``--fail-under`` metric that no planned study gives, naming those they give."""
    known = {k for s in studies for k in KEYS_OF.get(_family(s), ())}
    for m in metrics:
        if m.split(":", 1)[0] not in known:
            raise InputError(f"--fail-under {m}: no study of this comparison gives {m.split(':', 1)[0]!r}; "
                             f"give one of {', '.join(sorted(known))} (with :CAPABILITY or :PERTURBATION to "
                             "check one)")


def run_checks(verdicts: Sequence[Verdict], thresholds: Sequence[tuple[str, float]], strict: bool) -> list[Check]:
    """Each threshold against each target's matching estimates: ``metric`` names a key
    (``hard_scope:typo``) or its first part (``soft_scope``: every capability); an undefined
    estimate (or interval, with ``strict``) fails."""
    checks = []
    for metric, limit in thresholds:
        for v in verdicts:
            for e in v.estimates:
                if not (e.key == metric or e.key.split(":", 1)[0] == metric):
                    continue
                value = e.low if strict else e.value
                checks.append(Check(v.target, metric, e.key, limit, value,
                                    "lower bound of the 95 % interval" if strict else "estimate",
                                    value is not None and value >= limit))
    return checks


def to_json(verdicts: Sequence[Verdict], checks: Sequence[Check]) -> dict[str, Any]:
    """``compare.json``'s verdicts, each target's findings (:func:`findings`) and the checks as
    plain JSON values."""
    return {"verdicts": [{"target": v.target, "study": v.study, "sentence": v.sentence, "flagged": v.flagged,
                          "estimates": [e.to_json() for e in v.estimates],
                          "reference": [e.to_json() for e in v.reference],
                          "severity": [s.to_json() for s in v.severity], "examples": v.examples}
                         for v in verdicts],
            "findings": {t: findings(verdicts, t) for t in dict.fromkeys(v.target for v in verdicts)},
            "checks": [asdict(c) for c in checks], "passed": all(c.passed for c in checks)}
