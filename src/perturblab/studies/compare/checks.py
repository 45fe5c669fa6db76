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
from ..part import GAP, SHARE, key_of
from .keys import equivalence_keys, gap_of
from .severity import equivalence_interval, least_n_where

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
    #: the study whose estimate was checked (with the others that give the same key, after it)
    study: str = ""
    #: why an undecided or failed check came out so, when the run can tell (too few examples,
    #: no change seen at this n)
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        """One console line."""
        head = (f"{'pass' if self.passed else 'FAIL'}  {self.target}  {self.key or self.metric}"
                + (f" ({self.study})" if self.study else ""))
        why = f" — {self.reason}" if self.reason else ""
        if self.outcome == "no estimate":
            return f"{head}: no estimate of {self.metric} for {self.target} in this run"
        n = f", n = {self.n}" if self.n else ""
        ci = (f" [{self.low:.3f}, {self.high:.3f}]" if self.low is not None and self.high is not None else "")
        if self.kind == "equivalent":
            said = {"equivalent": f"equivalent within ±{self.threshold:g}",
                    "differs": f"differs by more than ±{self.threshold:g}"}.get(
                self.outcome, f"{self.outcome} (margin ±{self.threshold:g})")
            value = "n/a" if self.value is None else f"{self.value:+.3f}"
            return f"{head} {value}{ci} (90 %{n}): {said}{why}"
        compared = "n/a" if self.compared is None else f"{self.compared:.3f}"
        sign = ">=" if self.passed else "<"
        return f"{head} {compared} {sign} {self.threshold:g} ({self.used}; estimate " \
               f"{'n/a' if self.value is None else f'{self.value:.3f}'}{ci}{n}){why}"


#: a target's estimates with the study that gave each, in the plan's order (a bare estimate: no study named)
Found = Sequence["tuple[str, Estimate] | Estimate"]


def _pairs(mine: Found) -> list[tuple[str, Estimate]]:
    return [x if isinstance(x, tuple) else ("", x) for x in mine]


def _once(found: Found) -> list[tuple[str, Estimate]]:
    """Each key once: a key two studies give (the accuracy gap of invariances and of robustness)
    is checked on the estimate over the most examples (the first study's on a tie), and names the
    other studies after its own."""
    best: dict[str, tuple[str, Estimate]] = {}
    others: dict[str, list[str]] = {}
    for study, e in found:
        if e.key not in best:
            best[e.key], others[e.key] = (study, e), []
        elif (e.n or 0) > (best[e.key][1].n or 0):
            others[e.key].append(best[e.key][0])
            best[e.key] = (study, e)
        else:
            others[e.key].append(study)
    return [(study + (f"; also in {', '.join(others[k])}" if others[k] else ""), e)
            for k, (study, e) in best.items()]


def run_checks(estimates: "dict[str, Found]", thresholds: Sequence[tuple[str, float]], strict: bool) -> list[Check]:
    """Each ``--fail-under`` threshold against each target's matching estimates (``estimates``:
    by target, in the targets' order, each with its study): ``metric`` names a key
    (``hard_scope:typo``) or its first part (``soft_scope``: every capability); a key several
    studies give is checked once (:func:`_once`); an undefined estimate (or interval, with
    ``strict``) fails, and so does a target with no matching estimate. A strict check that fails
    says so when even no change at all could not pass at its n (:func:`best_case`)."""
    checks = []
    for metric, limit in thresholds:
        for target, mine in estimates.items():
            found = _once([(s, e) for s, e in _pairs(mine) if key_matches(e.key, metric)])
            if not found:
                checks.append(Check(target, metric, "", limit, None, "no estimate", False, outcome="no estimate"))
            for study, e in found:
                value = e.low if strict else e.value
                ok = defined(value) and value >= limit
                reason = "" if ok or not strict else _too_few("fail-under", e, limit, strict)
                shown = ("lower end of the 95 % confidence sequence" if e.interval.startswith("confidence sequence")
                         else "lower end of the 95 % interval")
                checks.append(Check(target, metric, e.key, limit, e.value, shown if strict else "estimate", bool(ok),
                                    low=e.low, high=e.high, n=e.n, interval=e.interval, compared=value,
                                    outcome="pass" if ok else "FAIL", study=study, reason=reason))
    return checks


def run_equivalence(estimates: "dict[str, Found]", references: dict[str, Estimate],
                    margins: Sequence[tuple[str, float]]) -> list[Check]:
    """Each ``--equivalent`` margin against each target's matching paired estimates (see the
    module docstring), each key once (:func:`_once`); ``references``: the reference's own
    estimates by key, for the scores whose difference is taken here. An undecided check says why
    (:func:`undecided_reason`)."""
    checks, paired = [], equivalence_keys()
    for metric, margin in margins:
        for target, mine in estimates.items():
            pairs = _pairs(mine)
            keys = {e.key for _, e in pairs}
            found = _once([(s, e) for s, e in pairs if _equivalence_of(e, metric, keys, paired)])
            if not found:
                checks.append(Check(target, metric, "", margin, None, "no estimate", False, kind="equivalent",
                                    outcome="no estimate"))
            for study, e in found:
                value, low, high, what = _difference(e, references.get(e.key))
                outcome = _equivalence(low, high, margin, exact=e.interval.startswith("exact"))
                reason = "" if outcome != "undecided at this n" else undecided_reason(e, low, high, margin)
                shown = ("95 % confidence sequence" if e.interval.startswith("confidence sequence")
                         else "90 % interval")
                checks.append(Check(target, metric, e.key, margin, value, f"{shown} of the {what}",
                                    outcome == "equivalent", kind="equivalent", low=low, high=high, n=e.n,
                                    interval=e.interval, compared=None, outcome=outcome, study=study, reason=reason))
    return checks


def _equivalence_of(e: Estimate, metric: str, keys: set[str], paired: Sequence[str]) -> bool:
    """Whether ``--equivalent metric`` checks ``e``: a paired measure (one of ``paired``, the
    :func:`~.keys.equivalence_keys`; a score's paired gap stands for the score where the study
    gives one; ``keys``: the target's keys)."""
    if e.key.split(":", 1)[0] not in paired:
        return False
    return (key_matches(e.key, metric) and gap_of(e.key) not in keys) or e.key == gap_of(metric)


def _difference(e: Estimate, ref: Estimate | None) -> tuple[float | None, float | None, float | None, str]:
    """(value, low, high, what it is) of the difference --equivalent tests for ``e``: the rate
    1 − share, a paired gap, or a score's difference from the reference's ``ref``, with its 90 %
    interval."""
    from .severity import score_difference

    first = e.key.split(":", 1)[0]
    key = key_of(first)
    kind = key.kind if key is not None else None
    if kind == SHARE:
        lo, hi = equivalence_interval(e)
        return (None if e.value is None else 1 - e.value, None if hi is None else 1 - hi,
                None if lo is None else 1 - lo, f"rate 1 − {first}")
    if kind == GAP:
        low, high = equivalence_interval(e)
        return e.value, low, high, "target − reference"
    d = score_difference(e, ref) if ref is not None else None
    if d is None:
        return None, None, None, "target − reference, the two intervals taken as independent"
    low, high = equivalence_interval(Estimate(e.subject, e.measure, d.rate, d.low, d.high, n=e.n, interval=d.interval))
    return d.rate, low, high, "target − reference, the two intervals taken as independent"


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


# -- what the best outcome at an n gives: gates that cannot pass, and why -------------------------
#: the largest n searched for the one a gate needs
MOST_N = 1_000_000


def best_case(key: str, n: int) -> Estimate | None:
    """The estimate of ``key`` when the target does exactly what the reference does on all ``n``
    examples, with the interval the studies give it: a share kept of n of n (Wilson), a paired
    accuracy gap of 0 with no discordant example (Jeffreys); None for a measure whose best
    outcome has no interval known before the run (a score, a ratio of accuracies)."""
    from ...core.headline import wilson_interval
    from ...measures.stats import discordant_difference_ci

    k = key_of(key)
    sequence = k.sequence if k is not None else ""
    if sequence == "share":
        low, high = wilson_interval(n, n)
        return Estimate("best case", key, 1.0, low, high, n=n, interval=f"95 % Wilson interval over the {n} examples",
                        key=key)
    if sequence == "paired":
        low, high = discordant_difference_ci(0, 0, n, seed=0)
        return Estimate("best case", key, 0.0, low, high, n=n,
                        interval=f"95 % Jeffreys interval of the paired difference over the {n} examples (0 + 0 "
                        "discordant)", key=key)
    return None


def passes_at_best(kind: str, key: str, n: int, limit: float, strict: bool) -> bool | None:
    """Whether a gate (``kind`` ``fail-under`` with ``limit``, or ``equivalent`` with the margin
    ``limit``) on ``key`` passes when the target does what the reference does on all ``n``
    examples; None when that is not known before the run (:func:`best_case`)."""
    e = best_case(key, n)
    if e is None:
        return None
    if kind == "fail-under":
        value = e.low if strict else e.value
        return defined(value) and value >= limit
    _, low, high, _ = _difference(e, None)
    return _equivalence(low, high, limit, exact=False) == "equivalent"


def least_n(kind: str, key: str, limit: float, strict: bool, start: int = 1) -> int | None:
    """The least n (from ``start``) at which the gate passes in the best case
    (:func:`passes_at_best`), or None when it never does up to :data:`MOST_N` or is not known."""
    return least_n_where(lambda n: passes_at_best(kind, key, n, limit, strict), start, MOST_N)


def _too_few(kind: str, e: Estimate, limit: float, strict: bool) -> str:
    """Why a gate on ``e`` cannot pass when even no change at its n could not (else "")."""
    if not e.n or passes_at_best(kind, e.key, int(e.n), limit, strict) is not False:
        return ""
    need = least_n(kind, e.key, limit, strict, start=int(e.n))
    return (f"too few examples: even with no disagreement, n = {e.n} cannot pass"
            + (f" (it needs n ≥ {need})" if need else ""))


def undecided_reason(e: Estimate, low: float | None, high: float | None, margin: float) -> str:
    """Why an equivalence check is undecided: no interval, no change seen at this n (an interval
    of no width from a finite sample shows no precision), too few examples for any outcome to
    pass, or an interval that still reaches past the margin."""
    if not (defined(low) and defined(high)):
        return "no interval at this n"
    if low == high:
        return (f"no change seen on these {e.n} examples: an interval of no width shows no precision, so it cannot "
                "show equivalence; more examples, or perturbations that change some of them, can")
    too_few = _too_few("equivalent", e, margin, False)
    if too_few:
        return too_few
    return f"its 90 % interval reaches past ±{margin:g}: more examples narrow it"
