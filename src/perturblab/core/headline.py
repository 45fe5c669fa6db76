"""What a study's result says first: its headline estimates, each with its interval and its n.

Every study result offers :meth:`~perturblab.core.study.StudyResult.headline`, a
:class:`Headline`: one sentence on how to read the numbers and the few estimates a reader looks
at first (SCoPE's Hard/Soft-SCoPE per target and capability, relative robustness per model and
perturbation, the self-supervised scores per model, ...), each an :class:`Estimate` with its 95 %
interval, what that interval is over, and the number of examples behind it. ``save`` writes it
as ``headline.json``; the HTML report opens each study's section with it.

>>> e = Estimate("minilm-l3", "Soft-SCoPE, typo", 0.83, 0.62, 0.98, n=60,
...              interval="95 % bootstrap over examples", key="soft_scope:typo")
>>> h = Headline("Share of the reference's invariances the target keeps (1 = all).", [e])
>>> Headline.from_json(h.to_json()) == h
True
>>> e.text()
'0.830 [0.620, 0.980]'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

#: the level of every headline interval
LEVEL = 0.95
#: what an interval's description ends with when it was cut to the measure's range (:func:`within`)
CUT = ", cut to "


@dataclass(frozen=True)
class Estimate:
    """One headline number.

    ``subject``: what it is about (a model, or ``a vs b``); ``measure``: what it measures, in
    words (``"Soft-SCoPE, typo"``); ``value``: the estimate (None when undefined); ``low``/``high``:
    its 95 % interval (None when the study has none, and then ``interval`` says why); ``n``: the
    number of examples (or pairs) behind it; ``interval``: what the interval is over;
    ``better``: ``"higher"``, ``"lower"`` or ``""``; ``flags``: why the number may mean nothing
    (a model predicting one class, at chance level); ``key``: a stable machine name
    (``soft_scope:typo``); ``counts``: the counts a paired difference of 0/1 outcomes rests on,
    (gained, lost) of its n (an accuracy gap: the examples only the target, and only the
    reference, gets right), for an interval that needs more than the estimate and n (a confidence
    sequence, :mod:`perturblab.measures.sequences`); empty otherwise."""

    subject: str
    measure: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    interval: str = ""
    better: str = ""
    flags: tuple[str, ...] = ()
    key: str = ""
    counts: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The estimate as plain JSON values (flags as a list; ``counts`` only where it has some)."""
        out = {**asdict(self), "flags": list(self.flags), "counts": list(self.counts)}
        if not self.counts:
            del out["counts"]
        return out

    def text(self, digits: int = 3) -> str:
        """The estimate and its interval as text: ``0.830 [0.620, 0.980]``; ``n/a`` when undefined."""
        if not defined(self.value):
            return "n/a"
        s = f"{self.value:.{digits}f}"
        if defined(self.low) and defined(self.high):
            s += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return s


@dataclass
class Headline:
    """A study's headline: ``sentence`` (how to read the estimates) and ``estimates``."""

    sentence: str
    estimates: list[Estimate] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The headline as plain JSON values (``headline.json``)."""
        return {"sentence": self.sentence, "level": LEVEL,
                "estimates": [e.to_json() for e in self.estimates]}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Headline":
        """The headline written by :meth:`to_json` (unknown keys ignored)."""
        names = set(Estimate.__dataclass_fields__)
        ests = [Estimate(**{**{k: v for k, v in e.items() if k in names}, "flags": tuple(e.get("flags") or ()),
                            "counts": tuple(int(c) for c in e.get("counts") or ())})
                for e in obj.get("estimates") or [] if isinstance(e, dict)]
        return cls(str(obj.get("sentence") or ""), ests)


def key_matches(key: str, metric: str) -> bool:
    """Whether an estimate's ``key`` is what a check names by ``metric``: the key itself
    (``hard_scope:typo``) or its first part (``soft_scope`` names every capability).

    >>> key_matches("soft_scope:typo", "soft_scope"), key_matches("soft_scope:typo", "soft")
    (True, False)
    """
    return key == metric or key.split(":", 1)[0] == metric


def defined(v: Any) -> bool:
    """Whether ``v`` is a finite real number, numpy's included (not None, NaN or a bool).

    >>> import numpy as np
    >>> defined(np.int64(58)), defined(np.float32(0.5)), defined(np.nan), defined(True), defined(np.bool_(True))
    (True, True, False, False, False)
    """
    import numbers

    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)  # numpy's bool is no Real


def decide_text(decide: dict[str, Any] | None) -> str:
    """What would decide an undecided finding, as its text ends: ``; about 114 more samples
    (~2.0 min) would decide it, if its rate stays``, or why no size can (``decide["held"]``).

    >>> decide_text({"more": 114, "seconds": 120.0}), decide_text(None)
    ('; about 114 more samples (~2.0 min) would decide it, if its rate stays', '')
    """
    if not decide:
        return ""
    if decide.get("held"):
        return f"; {decide['held']}"
    seconds = decide.get("seconds")
    took = "" if seconds is None else f" (~{seconds:.0f} s)" if seconds < 90 else f" (~{seconds / 60:.1f} min)"
    return f"; about {decide['more']} more samples{took} would decide it, if its rate stays"


def percent(v: float, digits: int = 1) -> str:
    """The number of ``v`` as a percentage, to ``digits`` decimals; one that rounds to zero
    prints unsigned.

    >>> percent(0.1234), percent(-0.0004), percent(-0.0), percent(-0.012)
    ('12.3', '0.0', '0.0', '-1.2')
    """
    text = f"{100 * v:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def over_trials(values: Sequence[float | None], single_ci: Sequence[float | None] | None = None,
                *, what: str = "trials", single: str = "95 % bootstrap over examples",
                bounds: tuple[float, float] | None = None) -> tuple[float | None, float | None, float | None, str]:
    """(mean, low, high, what the interval is over) of one estimate repeated over ``values``
    (one per trial, seed or draw; undefined ones left out): with one value, its own interval
    ``single_ci`` (described by ``single``); with k > 1, the 95 % Student-t interval of the mean
    over the k values (mean ± t(0.975, k−1) · s.d. / √k), cut to ``bounds`` (the measure's range)
    when it reaches past them, and then saying so.

    >>> over_trials([0.9, 1.0, 1.0], bounds=(0.0, 1.0))[2:]
    (1.0, '95 % t-interval over 3 trials, cut to [0, 1]')
    """
    vals = [float(v) for v in values if defined(v)]
    if not vals:
        return None, None, None, ""
    if len(vals) == 1:
        lo, hi = (single_ci or (None, None))[:2] if single_ci else (None, None)
        if defined(lo) and defined(hi):
            return vals[0], float(lo), float(hi), single
        return vals[0], None, None, f"no interval (one {what[:-1] if what.endswith('s') else what})"
    mean = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
    low, high = t_interval(mean, sd / math.sqrt(len(vals)), len(vals))
    low, high, cut = within(low, high, bounds)
    return mean, low, high, f"95 % t-interval over {len(vals)} {what}" + cut


def within(low: float | None, high: float | None, bounds: tuple[float, float] | None
           ) -> tuple[float | None, float | None, str]:
    """(low, high) cut to ``bounds``, and ``", cut to [a, b]"`` when that changed either (else "")."""
    if bounds is None or low is None or high is None:
        return low, high, ""
    a, b = bounds
    cut_low, cut_high = max(low, a), min(high, b)
    return cut_low, cut_high, (f"{CUT}[{a:g}, {b:g}]" if (cut_low, cut_high) != (low, high) else "")


def t_interval(mean: Any, se: Any, k: int) -> tuple[float | None, float | None]:
    """The 95 % Student-t interval ``mean`` ± t(0.975, k−1) ``se`` of a mean over k > 1 values
    (None, None when k < 2 or either number is undefined)."""
    if k < 2 or not (defined(mean) and defined(se)):
        return None, None
    from scipy import stats

    half = float(stats.t.ppf(0.5 + LEVEL / 2, k - 1)) * float(se)
    return float(mean) - half, float(mean) + half


def wilson_interval(successes: Any, n: Any, level: float = LEVEL) -> tuple[float | None, float | None]:
    """The Wilson score interval (Wilson 1927) of a proportion ``successes`` / ``n``: the
    proportions p whose score test |p̂ − p| / √(p (1 − p) / n) stays within z (z = 1.96 at 95 %).
    It stays inside [0, 1] without being cut, and is not of zero width at p̂ = 0 or 1 (where a
    percentile bootstrap and the normal interval collapse to a point): 58 of 58 gives
    [0.938, 1]. (None, None) when n < 1. ``successes`` may be fractional (a mean of 0/1 terms
    times n).

    >>> [round(v, 3) for v in wilson_interval(58, 58)]
    [0.938, 1.0]
    >>> [round(v, 3) for v in wilson_interval(19, 20)]
    [0.764, 0.991]
    """
    if not (defined(successes) and defined(n)) or n < 1:
        return None, None
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + level / 2))
    n, p = float(n), min(max(float(successes) / float(n), 0.0), 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = max(centre - half, 0.0), min(centre + half, 1.0)
    # at p̂ = 0 or 1 the interval's end is that bound exactly (the rounding of the formula aside)
    return (0.0 if p == 0 else low), (1.0 if p == 1 else high)


def normal_interval(value: Any, se: Any, bounds: tuple[float, float] | None = None
                    ) -> tuple[float | None, float | None]:
    """``value`` ± 1.96 ``se`` (None, None when either is undefined), cut to ``bounds`` (the
    measure's range) when given."""
    if not (defined(value) and defined(se)):
        return None, None
    from scipy import stats

    half = float(stats.norm.ppf(0.5 + LEVEL / 2)) * float(se)
    return within(float(value) - half, float(value) + half, bounds)[:2]


__all__ = ["CUT", "Estimate", "Headline", "LEVEL", "over_trials", "normal_interval", "t_interval", "wilson_interval",
           "within"]
