"""How serious a difference is, and whether the run establishes it.

A comparison's findings are rates of changed behaviour of the target against the reference, each
with its 95 % interval over the examples both models were scored on:

* **fail rates**: 1 − Hard-SCoPE (invariances of the reference the target does not keep) and
  1 − agreement (inputs on which the two disagree), with Wilson intervals;
* **paired gaps**, turned into what the target loses: −(accuracy gap) and −(relative robustness
  gap), target − reference on the same examples with paired intervals;
* **score differences** of the self-supervised scores, which have no rate of changed behaviour:
  target − reference with the direction and size.

Each rate gets a level, as a scan report gives one: **medium** from a rate of :data:`THRESHOLDS`
``[kind]``, **major** from twice that, **minor** below (the thresholds of Giskard's scan for its
perturbation detectors: 5 % of predictions changed for a classifier, 10 % for a text-generating
model). A level is claimed only where the run shows it:

* **medium** when the one-sided test of "rate ≤ the medium threshold" rejects, **major** when
  that of "rate ≤ twice it" rejects, and a score **differs** (a relative robustness gap differs
  from the reference's, in either direction) when the two-sided test of "no difference"
  (:func:`p_gap_differs` for a gap) rejects
  — each at a family-wise error rate of 5 % over all of one target's findings (Holm 1979: the
  chance that any medium, major or differs claim about a target is false is at most 5 %);
* **minor** when the rate's 95 % interval ends below the medium threshold;
* **undecided** otherwise: the n of the run cannot tell (the interval reaches from one level to
  another; :attr:`Severity.span` says which);
* a gap whose interval holds 0 is **within noise**; one beyond noise in the target's favour is
  **none (better)** — for a relative robustness gap only where its test of "no difference"
  rejects after Holm's adjustment (the gaps whose key is ``tested``: :class:`~perturblab.studies.part.Key`), else it too is within noise.

The tests: a Wilson interval's rate (a count of n) gets the exact binomial test, which holds its
level at a rate on the threshold (the score test, the inversion of Wilson's interval, rejected
"at most 5 %" 7.6 % of the time at n = 20 and a true 5 %); a rate with another interval gets the
normal approximation that interval implies on the side facing the threshold ((rate − low) / 1.96 as its standard error); an exact rate (the reference
against itself) rejects exactly when it lies above. A flagged estimate (a model at chance level
or predicting one class) keeps its finding and shows its flag. Estimates of one cause (``typo*``,
typo on the fairness subset, beside ``typo``; one accuracy gap measured by two studies) count
once, as the one with the larger n; the other names it in :attr:`Severity.same_as`.

>>> s = rate_finding(Estimate("t", "Hard-SCoPE, typo", 0.87, 0.81, 0.92, n=200, key="hard_scope:typo",
...                           interval="95 % Wilson interval over the 200 examples"), CLASSIFIER)
>>> assign_levels([s], CLASSIFIER)
>>> (s.level, round(s.rate, 2), s.span)  # 13 % is shown above 5 %, not above 10 %
('medium', 0.13, 'medium to major')
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from ...core.headline import LEVEL, Estimate, decide_text, defined, percent, wilson_interval
from ...measures.stats import holm
from ..part import CLASSIFIER, GAP, LANGUAGE_MODEL, key_of

LEVELS = ("minor", "medium", "major")
#: the rate from which a finding is medium, per model kind (major from twice it)
THRESHOLDS = {CLASSIFIER: 0.05, LANGUAGE_MODEL: 0.10}
#: the family-wise error rate of a target's medium, major and differs claims
ALPHA = 0.05
Z = 1.959963984540054


def _gap(key: str) -> bool:
    """Whether the headline key ``key`` is a paired gap (:data:`~perturblab.studies.part.GAP`)."""
    k = key_of(key)
    return k is not None and k.kind == GAP


def _tested(key: str) -> bool:
    """Whether ``key`` is a gap that also gets a two-sided test of "no difference" in the family
    (:attr:`~perturblab.studies.part.Key.tested`), so that a direction claimed of it either way is
    held to the family's 5 %."""
    k = key_of(key)
    return k is not None and k.tested


@dataclass
class Severity:
    """One finding of a target: ``rate`` (with ``low``/``high``, its 95 % interval, over ``n``
    examples as ``interval`` says), its ``level`` (``minor``, ``medium``, ``major``,
    ``undecided``, ``within noise``, ``none (better)``, ``differs``; see the module docstring),
    ``span`` (the levels the interval reaches, when more than one), ``direction`` (``worse`` or
    ``better`` for a rate, ``higher`` or ``lower`` for a score), the unadjusted one-sided
    p-values ``p`` and their Holm-adjusted values ``adjusted`` (by hypothesis: ``medium``,
    ``major``, ``differs``), ``flags`` of the estimate, and ``same_as``: the finding of the same
    cause it is counted with (then it is not counted itself)."""

    key: str
    what: str
    rate: float | None
    low: float | None
    high: float | None
    level: str = ""
    span: str = ""
    direction: str = ""
    interval: str = ""
    n: int | None = None
    method: str = "normal"  # how its p-values are computed: "wilson", "normal" or "exact"
    p: dict[str, float] = field(default_factory=dict)
    adjusted: dict[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    same_as: str = ""
    score: bool = False  # a score difference (no rate level)
    #: the threshold a claimed medium or major level was shown above (its one-sided test), or None
    shown_above: float | None = None
    #: the counts a paired gap's confidence sequence rests on: (gained, lost) of its n
    counts: tuple[int, ...] = ()
    #: with ``--until decided``: the error rate its interval (a confidence sequence, valid at every
    #: look) is held to, its share of the target's 5 % (:func:`assign_levels`); None: a fixed-n interval
    alpha: float | None = None
    #: the rate from which its level is medium (set by :func:`assign_levels`)
    medium_at: float | None = None
    #: for an undecided finding, what would decide it if its rate stays (:func:`to_decide`, set by
    #: the comparison): ``n`` its examples, ``samples`` its study's size, ``more`` the samples to
    #: add, ``seconds`` about how long they take, ``held`` why no size of the study can (or "")
    decide: dict[str, Any] | None = None
    #: for a tested gap (:attr:`~perturblab.studies.part.Key.tested`): ``worse`` or ``better`` where its test of "no difference"
    #: rejects after Holm's adjustment (the direction held at the family's error rate), else ""
    direction_held: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "flags": list(self.flags), "counts": list(self.counts)}

    def sequence(self) -> str:
        """Which confidence sequence its rate has (:mod:`perturblab.measures.sequences`): ``share``
        for a count of n (a Wilson interval's share), ``paired`` for a gap of 0/1 outcomes with
        its counts, else "" (none: its interval holds at one n only)."""
        if self.score or self.rate is None or not self.n:
            return ""
        if self.method == "wilson":
            return "share"
        if len(self.counts) == 2 and _gap(self.key):
            return "paired"
        return ""

    def decided(self, kind: str) -> bool:
        """Whether the run decides it: a rate's interval lies within one level (below the medium
        threshold, between it and the major one, or above that), a score differs."""
        if self.score:
            return self.level == "differs"
        return _decided(self.low, self.high, kind)

    def counted(self) -> bool:
        """Whether it is one of the target's findings (not a repeat of another one's cause)."""
        return not self.same_as and self.rate is not None

    def text(self) -> str:
        """``major: 13.0 % [8.1 %, 18.4 %] of invariances of the reference not kept (n = 200)``."""
        flag = f" ⚑ {', '.join(self.flags)}" if self.flags else ""
        if self.rate is None:
            return self.level + flag
        if self.score:
            value = f"{self.rate:+.3g}"
            if self.low is not None and self.high is not None:
                value += f" [{self.low:+.3g}, {self.high:+.3g}]"
        else:
            value = f"{percent(self.rate)} %"
            if self.low is not None and self.high is not None:
                value += f" [{percent(self.low)} %, {percent(self.high)} %]"
        span = f" (its interval reaches {self.span})" if self.span else ""
        if self.level == "undecided" and self.low is not None and self.medium_at is not None \
                and self.alpha is None and self.low >= self.medium_at and self.adjusted.get("medium") is not None:
            # its whole interval lies above the medium line, yet its test after the adjustment does not
            # show it: the adjustment over the target's findings, not n alone, leaves it open
            p, adj = self.p.get("medium", 1.0), self.adjusted["medium"]
            span = (f" (its 95 % interval lies above {percent(self.medium_at, 0)} %, but its one-sided test of "
                    f"\"at most {percent(self.medium_at, 0)} %\" does not show it: p = {p:.2g}"
                    + (f", {adj:.2g} after the adjustment over this target's findings" if p <= ALPHA else
                       ", the exact test asking more than the interval here") + ")")
        if self.shown_above is not None and self.low is not None and self.low < self.shown_above:
            # the claim rests on a one-sided test at the Holm-adjusted level, which the two-sided
            # 95 % interval printed beside it does not show: say what it rests on
            p = self.adjusted.get(self.level)
            span = (f" (shown above {percent(self.shown_above, 0)} % by its one-sided test"
                    + (f", Holm-adjusted p = {p:.2g}" if p is not None else "")
                    + f", though its two-sided 95 % interval reaches into {self.span.split(' to ')[0]})")
        n = f", n = {self.n}" if self.n else ""
        same = f"; counted with {self.same_as}" if self.same_as else ""
        return f"{self.level}{span}: {value} {self.what}{n}{same}{flag}{decide_text(self.decide)}"


def level(rate: float, kind: str) -> str:
    """The level of a fail ``rate`` for models of ``kind`` (:data:`THRESHOLDS`), read from the rate
    alone (the level a finding claims also needs the run to establish it: :func:`assign_levels`).

    >>> [level(r, CLASSIFIER) for r in (0.0, 0.049, 0.05, 0.099, 1 - 0.9)]
    ['minor', 'minor', 'medium', 'medium', 'major']
    """
    at, rate = THRESHOLDS[kind], round(rate, 9)  # 1 − 0.9 is 0.0999…98 in binary: a rate of 10 %
    return "major" if rate >= 2 * at else "medium" if rate >= at else "minor"


def _span(low: float | None, high: float | None, kind: str) -> str:
    if low is None or high is None:
        return ""
    a, b = level(max(low, 0.0), kind), level(max(high, 0.0), kind)
    return "" if a == b else f"{a} to {b}"


def _method(e: Estimate) -> str:
    text = e.interval.lower()
    if text.startswith("confidence sequence"):
        return "sequence"
    return "exact" if text.startswith("exact") else "wilson" if "wilson" in text and e.n else "normal"


def rate_finding(e: Estimate, kind: str) -> Severity | None:
    """The finding of a share-kept estimate (Hard-SCoPE, agreement: the rate is 1 − it, the
    interval turned over) or of a signed gap (accuracy gap, relative robustness gap: the rate is
    what the target loses, −gap); None for another estimate or an undefined one. Its level is set
    by :func:`assign_levels`."""
    key = key_of(e.key)
    if key is None or not key.graded() or not defined(e.value):
        return None
    has = defined(e.low) and defined(e.high)
    rate = key.rate(float(e.value))
    low, high = (key.rate(float(e.high)), key.rate(float(e.low))) if has else (None, None)
    return Severity(e.key, key.rate_of, rate, low, high, interval=e.interval, n=e.n, method=_method(e),
                    flags=tuple(e.flags), span=_span(low, high, kind), counts=tuple(e.counts))


def score_difference(target: Estimate, reference: Estimate) -> Severity | None:
    """The finding of a score without a rate (a self-supervised score): the difference target −
    reference with a 95 % normal interval from the two estimates' intervals taken as independent
    (their standard errors added in quadrature, each from its interval's half-width); the examples
    are shared, so this errs wide. None when either is undefined or has no interval."""
    if not all(defined(v) for v in (target.value, reference.value, target.low, target.high,
                                     reference.low, reference.high)):
        return None
    d = float(target.value) - float(reference.value)
    se = math.hypot((target.high - target.low) / (2 * Z), (reference.high - reference.low) / (2 * Z))
    return Severity(target.key, "difference from the reference's score", d, d - Z * se, d + Z * se,
                    interval="95 % normal interval of the difference, the two intervals taken as independent",
                    n=target.n, method="normal", flags=tuple(sorted({*target.flags, *reference.flags})), score=True)


def paired_score_difference(e: Estimate) -> Severity | None:
    """The finding of a score's paired gap (``<score>_gap``: the target's score minus the
    reference's on the same texts, with its paired interval); None when undefined."""
    if not defined(e.value):
        return None
    has = defined(e.low) and defined(e.high)
    return Severity(e.key, "difference from the reference's score, on the same texts", float(e.value),
                    float(e.low) if has else None, float(e.high) if has else None, interval=e.interval, n=e.n,
                    method="normal", flags=tuple(e.flags), score=True)


def p_above(s: Severity, threshold: float) -> float:
    """The one-sided p-value of "the rate is at most ``threshold``" (see the module docstring):
    for a count (a Wilson interval's share) the exact binomial tail P(X ≥ k | n, threshold), which
    never rejects more often than its level at a rate on the threshold (the score test rejected
    7.6 % of the time at n = 20 and a true 5 %, stated as 5 %); otherwise the normal approximation
    the interval implies.

    >>> s = Severity("agreement", "", 3 / 20, None, None, n=20, method="wilson")
    >>> round(p_above(s, 0.05), 4)  # P(X ≥ 3 | 20, 0.05)
    0.0755
    """
    rate = float(s.rate)
    if s.method == "exact":
        return 0.0 if rate > threshold else 1.0
    if s.method == "wilson" and s.n and 0 < threshold < 1:
        from scipy import stats

        k = round(min(max(rate, 0.0), 1.0) * s.n)
        return float(stats.binom.sf(k - 1, int(s.n), threshold))
    else:
        side = (rate - s.low) if rate > threshold else (s.high - rate) if s.high is not None else None
        if side is None or s.low is None:
            return 1.0
        se = side / Z
        if se <= 0:
            return 0.0 if rate > threshold else 1.0
        z = (rate - threshold) / se
    return _upper_tail(z)


def p_differs(s: Severity) -> float:
    """The two-sided p-value of "no difference" of a score difference (normal approximation)."""
    if s.low is None or s.high is None:
        return 1.0
    se = (s.high - s.low) / (2 * Z)
    if se <= 0:
        return 0.0 if s.rate != 0 else 1.0
    return min(1.0, 2 * _upper_tail(abs(float(s.rate)) / se))


def p_gap_differs(s: Severity) -> float:
    """The two-sided p-value of "no difference" of a paired gap (normal approximation), its
    standard error from the side of its interval facing 0 ((rate − low) / 1.96 for a loss,
    (high − rate) / 1.96 for a gain), so that alone it rejects at 5 % exactly when the 95 %
    interval excludes 0.

    >>> s = Severity("relative_robustness_gap:typo", "", -0.03, -0.05, -0.01)
    >>> round(p_gap_differs(s), 4)  # a gain: the side −0.01 − (−0.03) = 0.02, z = 0.03 / (0.02 / 1.96)
    0.0033
    """
    if s.rate is None or s.low is None or s.high is None:
        return 1.0
    rate = float(s.rate)
    side = rate - s.low if rate > 0 else s.high - rate
    if side <= 0:
        return 0.0 if rate != 0 else 1.0
    return min(1.0, 2 * _upper_tail(abs(rate) / (side / Z)))


def _upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def anytime_interval(s: Severity, alpha: float, n: int | None = None) -> tuple[float, float]:
    """The 1 − ``alpha`` confidence sequence of the rate of ``s`` (:meth:`Severity.sequence`) at
    its n, or at ``n`` with its rate (and its counts' shares) as they are."""
    from ...measures.sequences import paired_sequence, share_sequence

    at = int(n or s.n)
    scale = at / int(s.n)
    if s.sequence() == "share":
        return share_sequence(min(max(float(s.rate), 0.0), 1.0) * at, at, alpha)
    gained, lost = (min(round(c * scale), at) for c in s.counts)
    lost = min(lost, at - gained)  # rounded shares of a run where nearly every pair is discordant
    low, high = paired_sequence(gained, lost, at, alpha)
    return -high, -low  # the rate is what the target loses: −(target − reference)


def _sequence_level(s: Severity, at: float) -> str:
    """The level a rate's confidence sequence shows: one it lies within, else undecided."""
    gap = _gap(s.key)
    if s.low >= 2 * at:
        return "major"
    if s.low >= at and s.high < 2 * at:
        return "medium"
    if gap and s.high < 0:
        return "none (better)"
    if s.high < at:
        return "within noise" if gap and s.low <= 0 else "minor"
    return "undecided"


def assign_levels(findings: Sequence[Severity], kind: str, alpha: float = ALPHA, anytime: bool = False) -> None:
    """Set the ``level`` of each of one target's findings: its tests (medium and major for a
    rate, differs for a score) form one family, Holm-adjusted (:func:`~perturblab.measures.stats.holm`), and each level is
    claimed as the module docstring says.

    With ``anytime`` (``--until decided``: a run that looks after every round and stops when its
    findings are decided) each rate with a confidence sequence (:meth:`Severity.sequence`) gets
    that interval instead, at ``alpha`` / m for m counted findings (Bonferroni: every such
    interval holds at once, at every look, with probability 1 − ``alpha`` · its share), and its
    level is the one its interval lies within (:func:`_sequence_level`); the other findings (of
    studies run once at a planned n) keep their Holm-adjusted tests at the rest of ``alpha``.

    >>> s = Severity("agreement", "", 0.0, 0.0, 0.06, n=200, method="wilson")
    >>> assign_levels([s], CLASSIFIER, anytime=True)
    >>> s.level, round(s.high, 4), s.alpha  # 0 of 200: below 5 % at every look
    ('minor', 0.0306, 0.05)
    """
    at = THRESHOLDS[kind]
    counted = [s for s in findings if s.counted()]
    sequential = [s for s in findings if anytime and s.rate is not None and s.sequence()]
    _sequence_intervals(sequential, counted, kind, alpha)
    seq_ids = {id(s) for s in sequential}
    rest = sum(1 for s in counted if id(s) not in seq_ids)
    alpha = alpha * rest / len(counted) if sequential and counted else alpha  # what the fixed-n tests keep
    _test_family(findings, seq_ids, at, anytime)
    for s in findings:
        if id(s) in seq_ids:
            continue
        if s.rate is None:
            s.level = s.level or "n/a"
        elif s.score:  # a repeat of another's cause differs where its interval leaves out 0
            s.direction = "higher" if s.rate > 0 else "lower" if s.rate < 0 else ""
            differs = not _holds_zero(s) if s.same_as else s.adjusted.get("differs", 1.0) <= alpha
            s.level = "differs" if differs else "within noise"
        else:
            _rate_level(s, at, alpha)
    # a repeat of another's cause holds a direction only where the finding it is counted with does
    held = {f.key: f.direction_held for f in findings if f.counted()}
    for f in findings:
        if f.same_as and not f.score:
            counted_with = held.get(f.same_as.split(" (", 1)[0], "")
            f.direction_held = counted_with if counted_with == f.direction else ""


def _sequence_intervals(sequential: Sequence[Severity], counted: Sequence[Severity], kind: str,
                        alpha: float) -> None:
    """Give each of ``sequential`` (the rates with a confidence sequence, under ``anytime``) its
    confidence sequence at its share of ``alpha`` (``alpha`` / m over the m ``counted``
    findings; a repeat of another's cause at ``alpha`` itself), as :func:`assign_levels` says."""
    each = alpha / max(len(counted), 1)
    for s in sequential:
        s.alpha = each if s.counted() else alpha  # a repeat of another's cause shows its own, unadjusted
        s.low, s.high = anytime_interval(s, s.alpha)
        s.span = _span(s.low, s.high, kind)
        s.interval = (f"confidence sequence over the {s.n} examples, valid at every look: "
                      f"{100 * (1 - s.alpha):.2f} % each"
                      + (f", {100 * (1 - alpha):.0f} % over this target's {len(counted)} findings together"
                         if s.counted() and len(counted) > 1 else ""))


def _test_family(findings: Sequence[Severity], seq_ids: set[int], at: float, anytime: bool) -> None:
    """Reset the tests of each of ``findings``; a rate with a confidence sequence (its id in
    ``seq_ids``) gets its level from its interval (:func:`_sequence_level`), each other counted
    finding its p-values (medium and major above the threshold ``at`` and twice it for a rate,
    differs for a score and a tested gap), Holm-adjusted as one family."""
    family: list[tuple[Severity, str, float]] = []
    for s in findings:
        s.p, s.adjusted, s.medium_at = {}, {}, None if s.score else at
        s.direction_held = ""
        if id(s) in seq_ids:
            s.direction = "worse" if s.rate > 0 else "better" if s.rate < 0 else ""
            s.shown_above = None
            s.level = _sequence_level(s, at)
            # its interval holds at its share of the 5 %, so a side of 0 it lies on is held too
            s.direction_held = "worse" if s.low > 0 else "better" if s.high < 0 else ""
            continue
        if not anytime:
            s.alpha = None
        if not s.counted():
            continue
        if s.score:
            s.p["differs"] = p_differs(s)
        else:
            s.p["medium"], s.p["major"] = p_above(s, at), p_above(s, 2 * at)
            if _tested(s.key):
                s.p["differs"] = p_gap_differs(s)
        family += [(s, h, p) for h, p in s.p.items()]
    for (s, h, _), adj in zip(family, holm([p for _, _, p in family])):
        s.adjusted[h] = adj


def _holds_zero(s: Severity) -> bool:
    """Whether the interval of ``s`` holds 0 (within noise)."""
    return s.low is not None and s.high is not None and s.low <= 0 <= s.high


def _rate_level(s: Severity, at: float, alpha: float) -> None:
    """The direction, level and threshold shown above of a rate tested at a fixed n (the module
    docstring): major or medium where its adjusted test of the threshold (twice ``at`` or ``at``)
    rejects at ``alpha``, else what its interval shows."""
    gap, noise = _gap(s.key), _holds_zero(s)
    s.direction = "worse" if s.rate > 0 else "better" if s.rate < 0 else ""
    # a finding counted with another keeps its own unadjusted tests for the level it shows
    tested = _tested(s.key)
    adj = s.adjusted if not s.same_as else {"medium": p_above(s, at), "major": p_above(s, 2 * at),
                                            **({"differs": p_gap_differs(s)} if tested else {})}
    s.direction_held = s.direction if adj.get("differs", 1.0) <= alpha else ""
    s.shown_above = None
    if adj.get("major", 1.0) <= alpha:
        s.level, s.shown_above = "major", 2 * at
    elif adj.get("medium", 1.0) <= alpha:
        s.level, s.shown_above = "medium", at
    elif gap and noise:
        s.level = "within noise"
    elif gap and s.high is not None and s.high < 0:
        s.level = "none (better)" if adj.get("differs", 0.0) <= alpha else "within noise"
    elif s.high is not None and s.high < at:
        s.level = "minor"
    elif s.method == "exact" and s.rate < at:
        s.level = "minor"
    else:
        s.level = "undecided"


#: the largest n :func:`n_to_decide` looks for
MOST_N = 10_000_000


def projected(s: Severity, n: int) -> tuple[float | None, float | None]:
    """The 95 % interval ``s`` would have over ``n`` examples if its rate stayed what it is: a
    Wilson interval recomputed at that n, otherwise the interval's half-widths scaled by
    √(its n / n) (the way an interval of a mean narrows)."""
    if s.rate is None or s.low is None or s.high is None or not s.n:
        return None, None
    if s.alpha is not None and s.sequence():
        return anytime_interval(s, s.alpha, n)
    if s.method == "wilson":
        return wilson_interval(min(max(s.rate, 0.0), 1.0) * n, n)
    shrink = math.sqrt(s.n / n)
    return s.rate - (s.rate - s.low) * shrink, s.rate + (s.high - s.rate) * shrink


def _decided(low: float | None, high: float | None, kind: str) -> bool:
    """Whether an interval of a rate lies within one level (:func:`level`): below the medium
    threshold, between it and the major one, or above that."""
    return low is not None and high is not None and level(max(low, 0.0), kind) == level(max(high, 0.0), kind)


def n_to_decide(s: Severity, kind: str) -> int | None:
    """The least n at which the interval of ``s`` would lie within one level if its rate stayed
    what it is (:func:`projected`); None when none up to :data:`MOST_N` would (a rate on a
    threshold), or ``s`` is no undecided rate.

    >>> s = Severity("hard_scope:typo", "", 1 / 58, *wilson_interval(1, 58), n=58, method="wilson")
    >>> n = n_to_decide(s, CLASSIFIER); n  # 1.7 %: its Wilson interval ends below 5 % from here
    171
    >>> wilson_interval(s.rate * n, n)[1] < 0.05 <= wilson_interval(s.rate * (n - 1), n - 1)[1]
    True
    """
    if s.score or s.rate is None or not s.n or _decided(s.low, s.high, kind):
        return None
    return least_n_where(lambda n: _decided(*projected(s, n), kind), int(s.n), MOST_N)


def least_n_where(holds: Callable[[int], bool | None], start: int, most: int) -> int | None:
    """The least n from ``start`` to ``most`` at which ``holds`` (true from some n on, for every
    larger one: an interval narrowing as n grows), by doubling from ``start`` and then halving
    the last step; None when it does not hold at ``most``, or ``holds`` says None (not known).

    >>> least_n_where(lambda n: n * n >= 1000, 1, 10_000), least_n_where(lambda n: False, 1, 64)
    (32, None)
    """
    low = max(int(start), 1)
    first = holds(low)
    if first is None:
        return None
    if first:
        return low
    high = low
    while True:
        if high >= most:
            return None
        low, high = high, min(2 * high, most)
        if holds(high):
            break
    while high - low > 1:  # holds at high, not at low
        mid = (low + high) // 2
        low, high = (low, mid) if holds(mid) else (mid, high)
    return high


def one_cause(findings: Sequence[Severity]) -> None:
    """Mark findings that repeat another's cause (:attr:`Severity.same_as`): a ``CAP*`` capability
    (measured on the fairness subset) beside ``CAP``, and one key measured by two studies (the
    one with the larger n counts)."""
    by_key: dict[str, Severity] = {}
    for s in findings:
        base = s.key.replace("*", "")
        if base != s.key:
            if any(o.key == base for o in findings):
                s.same_as = base
            continue
        if base in by_key:
            keep, other = (by_key[base], s) if (by_key[base].n or 0) >= (s.n or 0) else (s, by_key[base])
            other.same_as = f"{keep.key} (the estimate on {keep.n} examples)"
            by_key[base] = keep
        else:
            by_key[base] = s


def family_note(findings: Sequence[Severity]) -> str:
    """What the levels' error rate is over, for the report and the console."""
    counted = [s for s in findings if s.counted()]
    if any(s.alpha is not None for s in counted):
        seq = sum(1 for s in counted if s.alpha is not None)
        return (f"levels held to a 5 % family-wise error rate over this target's {len(counted)} findings and every "
                f"look: {seq} confidence sequence{'s' if seq != 1 else ''} at 5 %/{len(counted)} each"
                + (f", the other {len(counted) - seq} findings' tests (of a fixed n) at the rest (Holm)"
                   if seq < len(counted) else ""))
    tests = sum(len(s.p) for s in findings if s.counted())
    return (f"levels held to a 5 % family-wise error rate over this target's {tests} tests "
            f"({sum(s.counted() for s in findings)} findings; Holm)")


def clopper_pearson(successes: float, n: int, level_: float) -> tuple[float, float]:
    """The exact (Clopper and Pearson 1934) ``level_`` interval of a proportion: each end a
    one-sided test at (1 − ``level_``)/2 that never rejects more often than that, at any true
    rate and n (the beta quantiles of the binomial tails; ``successes`` may be fractional).

    >>> [round(v, 4) for v in clopper_pearson(0, 58, 0.90)]  # 1 − 0.05^(1/58)
    [0.0, 0.0503]
    """
    from scipy import stats

    tail = (1 - level_) / 2
    low = 0.0 if successes <= 0 else float(stats.beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes >= n else float(stats.beta.ppf(1 - tail, successes + 1, n - successes))
    return low, high


def equivalence_interval(e: Estimate, level_: float = 1 - 2 * ALPHA) -> tuple[float | None, float | None]:
    """The ``level_`` (90 %: two one-sided tests at 5 %) interval of an estimate: for a share
    with a Wilson interval the exact Clopper-Pearson interval at that level (Wilson's one-sided
    ends reject a rate exactly at the margin up to 5.8 % of the time, n = 100 and a margin of
    0.1, computed over the binomial; the exact ends never above 5 %), an exact one as it is, and
    otherwise the 95 % interval's half-widths scaled to it (its normal approximation)."""
    if not (defined(e.value) and defined(e.low) and defined(e.high)):
        return None, None
    method = _method(e)
    if method in ("exact", "sequence"):  # a confidence sequence at 95 %: each side at most 5 % at every look
        return float(e.low), float(e.high)
    if method == "wilson":
        return clopper_pearson(float(e.value) * e.n, int(e.n), level_)
    from scipy import stats

    scale = float(stats.norm.ppf(0.5 + level_ / 2)) / float(stats.norm.ppf(0.5 + LEVEL / 2))
    v = float(e.value)
    return v - scale * (v - float(e.low)), v + scale * (float(e.high) - v)
