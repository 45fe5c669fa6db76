"""The gates of a comparison for CI: ``--fail-under METRIC=VALUE`` (a target's estimate, or with
``--strict`` the lower end of its 95 % interval, must reach VALUE) and ``--equivalent
METRIC=MARGIN`` (the target must be shown within MARGIN of the reference).

**Equivalence** is two one-sided tests (Schuirmann 1987) on the paired difference of target and
reference: the target is *equivalent within m* when its 90 % interval (each one-sided test at
5 %) lies inside (−m, m). For a rate of changed behaviour that is 0 for the reference itself
(1 − Hard-SCoPE, 1 − agreement) only the upper side can fail: equivalent when the interval of the
rate ends below m. It *differs by more than m* when that interval lies wholly outside, and is
*undecided at this n* otherwise. A release that needs every check to pass is an
intersection-union test (Berger 1982): its error rate is that of each test, 5 %, with no
adjustment for their number.

An interval of zero width from a finite sample (a bootstrap of two models that never differed on
its examples) shows no precision, so it is never taken as equivalence.

Every check records the estimate, the number it compared (the estimate, the interval's lower end,
or the interval's end for equivalence), its interval and n. A check that matches no estimate of
a target fails and says so: a gate never passes by finding nothing to check.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ...core.headline import Estimate, defined, key_matches
from .keys import GAPS, SHARES, equivalence_keys
from .severity import equivalence_interval

@dataclass
class Check:
    """One gate of one target's estimate: ``kind`` ``fail-under`` or ``equivalent``; ``value``
    the estimate (for equivalence, the target − reference difference or the rate), ``low`` /
    ``high`` its interval (95 %, or 90 % for equivalence) over ``n`` examples as ``interval``
    says; ``compared``: the number set against ``threshold`` (for equivalence, the margin);
    ``outcome``: ``pass`` / ``FAIL`` or ``equivalent`` / ``differs`` / ``undecided at this n`` /
    ``no estimate``."""

    target: str
    metric: str
    key: str
    threshold: float
    value: float | None
    used: str
    passed: bool
    kind: str = "fail-under"
    low: float | None = None
    high: float | None = None
    n: int | None = None
    interval: str = ""
    compared: float | None = None
    outcome: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """One console line."""
        head = f"{'pass' if self.passed else 'FAIL'}  {self.target}  {self.key or self.metric}"
        if self.outcome == "no estimate":
            return f"{head}: no estimate of {self.metric} for {self.target} in this run"
        n = f", n = {self.n}" if self.n else ""
        ci = (f" [{self.low:.3f}, {self.high:.3f}]" if self.low is not None and self.high is not None else "")
        if self.kind == "equivalent":
            said = {"equivalent": f"equivalent within ±{self.threshold:g}",
                    "differs": f"differs by more than ±{self.threshold:g}"}.get(
                self.outcome, f"{self.outcome} (margin ±{self.threshold:g})")
            value = "n/a" if self.value is None else f"{self.value:+.3f}"
            return f"{head} {value}{ci} (90 %{n}): {said}"
        compared = "n/a" if self.compared is None else f"{self.compared:.3f}"
        sign = ">=" if self.passed else "<"
        return f"{head} {compared} {sign} {self.threshold:g} ({self.used}; estimate " \
               f"{'n/a' if self.value is None else f'{self.value:.3f}'}{ci}{n})"


def run_checks(estimates: dict[str, list[Estimate]], thresholds: Sequence[tuple[str, float]],
               strict: bool) -> list[Check]:
    """Each ``--fail-under`` threshold against each target's matching estimates (``estimates``:
    by target, in the targets' order): ``metric`` names a key (``hard_scope:typo``) or its first
    part (``soft_scope``: every capability); an undefined estimate (or interval, with ``strict``)
    fails, and so does a target with no matching estimate."""
    checks = []
    for metric, limit in thresholds:
        for target, mine in estimates.items():
            found = [e for e in mine if key_matches(e.key, metric)]
            if not found:
                checks.append(Check(target, metric, "", limit, None, "no estimate", False, outcome="no estimate"))
            for e in found:
                value = e.low if strict else e.value
                ok = defined(value) and value >= limit
                checks.append(Check(target, metric, e.key, limit, e.value,
                                    "lower end of the 95 % interval" if strict else "estimate", bool(ok),
                                    low=e.low, high=e.high, n=e.n, interval=e.interval, compared=value,
                                    outcome="pass" if ok else "FAIL"))
    return checks


def run_equivalence(estimates: dict[str, list[Estimate]], references: dict[str, Estimate],
                    margins: Sequence[tuple[str, float]]) -> list[Check]:
    """Each ``--equivalent`` margin against each target's matching paired estimates (see the
    module docstring); ``references``: the reference's own estimates by key, for the scores
    whose difference is taken here."""
    from .severity import score_difference

    checks, paired = [], equivalence_keys()
    for metric, margin in margins:
        for target, mine in estimates.items():
            keys = {e.key for e in mine}
            # a score's paired gap stands for the score where the study gives one
            found = [e for e in mine if e.key.split(":", 1)[0] in paired and
                     (key_matches(e.key, metric) and f"{e.key}_gap" not in keys or e.key == f"{metric}_gap")]
            if not found:
                checks.append(Check(target, metric, "", margin, None, "no estimate", False, kind="equivalent",
                                    outcome="no estimate"))
            for e in found:
                first = e.key.split(":", 1)[0]
                if first in SHARES:
                    lo, hi = equivalence_interval(e)
                    value, low, high = (None if e.value is None else 1 - e.value,
                                        None if hi is None else 1 - hi, None if lo is None else 1 - lo)
                    what = f"rate 1 − {first}"
                elif first in GAPS or first.endswith("_gap"):
                    (low, high), value, what = equivalence_interval(e), e.value, "target − reference"
                else:
                    ref = references.get(e.key)
                    d = score_difference(e, ref) if ref is not None else None
                    value, (low, high) = ((None, (None, None)) if d is None else
                                          (d.rate, equivalence_interval(Estimate(e.subject, e.measure, d.rate, d.low,
                                                                                 d.high, n=e.n, interval=d.interval))))
                    what = "target − reference, the two intervals taken as independent"
                outcome = _equivalence(low, high, margin, exact=e.interval.startswith("exact"))
                checks.append(Check(target, metric, e.key, margin, value, f"90 % interval of the {what}",
                                    outcome == "equivalent", kind="equivalent", low=low, high=high, n=e.n,
                                    interval=e.interval, compared=None, outcome=outcome))
    return checks


def _equivalence(low: float | None, high: float | None, margin: float, *, exact: bool) -> str:
    """``equivalent``, ``differs`` or ``undecided at this n`` for the 90 % interval (``low``,
    ``high``) of a difference and ``margin``; an interval of no width that is not ``exact`` (a
    finite sample's bootstrap of two models that never differed on its examples) shows no
    precision and never shows equivalence."""
    if not (defined(low) and defined(high)):
        return "undecided at this n"
    if -margin < low and high < margin:
        return "equivalent" if low != high or exact else "undecided at this n"
    if low >= margin or high <= -margin:
        return "differs"
    return "undecided at this n"
