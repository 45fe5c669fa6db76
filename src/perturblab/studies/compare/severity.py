"""How serious a difference is: a severity level from a fail rate and its interval.

A comparison's findings are rates of changed behaviour: the share of the reference's invariances
the target does not keep (1 − Hard-SCoPE), the share of inputs on which the two disagree
(1 − agreement), and how much more a perturbation costs the target than the reference (the
reference's relative robustness minus the target's). Each gets a level, as a scan report gives
one: **medium** from a rate of :data:`THRESHOLDS` ``[kind]``, **major** from twice that,
**minor** below. The thresholds are those of Giskard's scan for its perturbation detectors
(5 % of predictions changed for a classifier, 10 % for a text-generating model; major from twice
the threshold); ours are rates measured against a reference model, with intervals. Where the 95 %
interval of the rate spans more than one level, :attr:`Severity.span` says which (``"minor to
major"``), so a level read from a small sample says how settled it is.

>>> s = fail_rate_severity(Estimate("t", "Hard-SCoPE, typo", 0.87, 0.81, 0.92, key="hard_scope:typo"), CLASSIFIER)
>>> (s.level, round(s.rate, 2), s.span)
('major', 0.13, 'medium to major')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...core.headline import Estimate, defined
from .plan import CLASSIFIER, LANGUAGE_MODEL

LEVELS = ("minor", "medium", "major")
#: the rate from which a finding is medium, per model kind (major from twice it)
THRESHOLDS = {CLASSIFIER: 0.05, LANGUAGE_MODEL: 0.10}
#: what each rate is, by the first part of the estimate's key
RATE_OF = {"hard_scope": "invariances of the reference not kept", "agreement": "inputs on which the two disagree",
           "relative_robustness": "robustness lost beyond the reference's"}


@dataclass(frozen=True)
class Severity:
    """The level of one finding: ``rate`` (with ``low``/``high``, its 95 % interval, when there is
    one), ``level`` (``minor``, ``medium`` or ``major``; ``flagged`` when the estimate is flagged
    and means nothing; ``within noise`` when a difference of two estimates is within their
    intervals; ``none (more robust)`` when the target is the more robust beyond them;
    ``differs`` when a score without a rate differs beyond both intervals), ``span`` (the levels the interval reaches, when more than one) and ``what`` the
    rate is."""

    key: str
    what: str
    rate: float | None
    low: float | None
    high: float | None
    level: str
    span: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """``major: 13.0 % [8.0 %, 19.0 %] of invariances of the reference not kept``."""
        if self.rate is None:
            return self.level
        rate = f"{100 * self.rate:.1f} %"
        if self.low is not None and self.high is not None:
            rate += f" [{100 * self.low:.1f} %, {100 * self.high:.1f} %]"
        span = f" (its interval reaches {self.span})" if self.span else ""
        return f"{self.level}{span}: {rate} of {self.what}"


def level(rate: float, kind: str) -> str:
    """The level of a fail ``rate`` for models of ``kind`` (:data:`THRESHOLDS`).

    >>> [level(r, CLASSIFIER) for r in (0.0, 0.049, 0.05, 0.099, 1 - 0.9)]
    ['minor', 'minor', 'medium', 'medium', 'major']
    """
    at, rate = THRESHOLDS[kind], round(rate, 9)  # 1 − 0.9 is 0.0999…98 in binary: a rate of 10 %
    return "major" if rate >= 2 * at else "medium" if rate >= at else "minor"


def _span(low: float | None, high: float | None, kind: str) -> str:
    if low is None or high is None:
        return ""
    a, b = level(low, kind), level(high, kind)
    return "" if a == b else f"{a} to {b}"


def fail_rate_severity(e: Estimate, kind: str) -> Severity | None:
    """The severity of a share-kept estimate (Hard-SCoPE, agreement): its fail rate is 1 − the
    estimate, and the interval turns over (None for another kind of estimate)."""
    first = e.key.split(":", 1)[0]
    if first not in ("hard_scope", "agreement"):
        return None
    if e.flags:
        return Severity(e.key, RATE_OF[first], None, None, None, "flagged")
    if not defined(e.value):
        return None
    rate = 1.0 - float(e.value)
    low, high = (1.0 - float(e.high), 1.0 - float(e.low)) if defined(e.low) and defined(e.high) else (None, None)
    return Severity(e.key, RATE_OF[first], rate, low, high, level(rate, kind), _span(low, high, kind))


def drop_severity(target: Estimate, reference: Estimate, kind: str) -> Severity | None:
    """The severity of a relative-robustness estimate against the reference's on the same
    perturbation: the rate is the reference's minus the target's (how much more the perturbation
    costs the target); ``within noise`` when the two intervals overlap (with the rate only when
    it is above 0), ``none (more robust)`` when the target is the more robust beyond them;
    ``flagged`` when either is."""
    if not target.key.startswith("relative_robustness"):
        return None
    what = RATE_OF["relative_robustness"]
    if target.flags or reference.flags:
        return Severity(target.key, what, None, None, None, "flagged")
    if not (defined(target.value) and defined(reference.value)):
        return None
    rate = float(reference.value) - float(target.value)
    if overlap(target, reference):
        return Severity(target.key, what, rate if rate > 0 else None, None, None, "within noise")
    if rate <= 0:
        return Severity(target.key, what, None, None, None, "none (more robust)")
    return Severity(target.key, what, rate, None, None, level(rate, kind))


def difference_severity(target: Estimate, reference: Estimate) -> Severity | None:
    """A score with no rate of changed behaviour (a self-supervised score): ``differs`` when the
    target's and the reference's intervals do not overlap, ``flagged`` when either is flagged,
    None otherwise."""
    if target.flags or reference.flags:
        return Severity(target.key, "differs from the reference's", None, None, None, "flagged")
    if defined(target.value) and defined(reference.value) and not overlap(target, reference):
        return Severity(target.key, "differs from the reference's, beyond both intervals", None, None, None, "differs")
    return None


def overlap(a: Estimate, b: Estimate) -> bool:
    """Whether the 95 % intervals of ``a`` and ``b`` overlap (no interval: they are taken to)."""
    if not all(defined(v) for v in (a.low, a.high, b.low, b.high)):
        return True
    return not (a.high < b.low or b.high < a.low)
