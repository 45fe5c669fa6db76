"""Did a release move away from its baseline beyond noise, and is a slow trend under way?

:func:`check_release` compares each estimate of a release with the same estimate of a baseline
release (the last accepted one, or one named), and tests for a drift over the last releases
(the interval and test of one estimate's change are :func:`~.difference.paired_change` and
:func:`~.difference.unpaired_change`):

* **Paired on the shared examples** wherever both releases stored the per-example terms of the
  estimate (:mod:`.store`): the difference new − baseline over the examples both hold.
  0/1 terms (Hard-SCoPE, agreement, accuracy), and the −1/0/1 terms of the accuracy gap while
  each example's difference is −1, 0 or 1 (the reference the same in both releases), get the
  Jeffreys interval of the discordant examples
  (:func:`~perturblab.measures.stats.discordant_difference_ci`, which keeps a width when none is
  discordant) and McNemar's exact one-sided test (the examples only one release gets right:
  under no change, those the new one loses are Binomial(discordant, ½)). Terms in [0, 1]
  (Soft-SCoPE), or [−1, 1] (a gap otherwise), get the betting confidence interval of the mean
  paired difference and its one-sided betting test (:mod:`~perturblab.measures.betting`, Waudby-Smith
  and Ramdas 2024, on (d + w)/2w for differences d in [−w, w]): it holds for any distribution of
  the differences at every n. Normal-theory intervals do not: on differences most of which are 0
  (3 % of the examples changed), the bootstrap-t interval covered 0.68 of 0.95 at n = 60
  (tests/history/test_check_intervals.py). The price is width at small n (never narrower than
  about ±0.08 on 60 examples). Its bets depend on the order of the examples, which is a random
  order fixed by a seed: the same releases give the same interval on every run.
  Where every difference is 0, the interval of :func:`discordant_difference_ci` with no
  discordant example (a mean of differences in [−1, 1] is at most the share of examples that
  differ, in size).
* **Unpaired** otherwise (the study stores no per-example terms): the normal approximation
  from the two 95 % intervals, se = width / (2 × 1.96), which ignores the positive correlation
  of estimates on shared examples and so is conservative. An estimate of 0 with the interval
  [0, 0] (a gap to the reference on examples none of which differ) is a measured 0 over its n
  examples, not a missing interval: it gets the width :func:`discordant_difference_ci` gives no
  discordant example of n, and two of them (the same target in both releases) are a change of 0
  with that interval, as paired terms that never differ are.
* **One change counted once.** A target's own estimate beside its gap to the reference in the
  same study (``relative_robustness:typo`` and ``relative_robustness_gap:typo``, ``accuracy``
  and ``accuracy_gap``) move together, the reference being the same in every release of a
  setup: the gap is tested, and the estimate is shown as ``counted_with`` it (its own p for
  information, outside the Holm family). So are the keys ``compare`` counts once
  (:func:`~perturblab.studies.compare.severity.one_cause`: ``CAP*`` beside ``CAP``, one key of two
  studies, the one with the larger n tested). The drift test counts them once the same way.
* A **regression** is a change in the worse direction (the estimate's ``better``) whose one-sided
  test rejects at a 5 % family-wise error rate over all of the release's tests (Holm) and that
  is at least ``min_change`` in size (default :data:`MIN_CHANGE`, one point of a share): beyond
  noise and big enough to matter. A change beyond noise but smaller is reported as ``small``
  (the extra condition only removes findings, so the error rate under no change stays at most
  5 %). An estimate with no better direction is reported as moved, never as a regression. A
  change whose own test rejects at 5 % but not after the adjustment is listed apart ("moved, not
  beyond noise after adjustment", with both p values) and never counted.
* **No accepted baseline** (a history's first releases): nothing is compared and the check
  passes (a drift still fails it); ``require_baseline`` refuses it instead.
* ``equivalent`` (``METRIC=MARGIN``): two one-sided tests at 5 % on the difference (its 90 %
  interval inside ±MARGIN), as ``compare --equivalent`` does against the reference.
* **Drift** over the last ``window`` releases of the same setup (the release last): the slope of
  each estimate over the release order, by weighted least squares with weights 1 / se² from each
  release's interval, and a one-sided test of a slope in the worse direction, Holm-adjusted over
  the estimates at 5 %: a z-test where the points scatter about the line no more than their
  intervals say, else the slope's standard error times √(χ²/(m − 2)) and a t-test with m − 2
  degrees of freedom, so that one release's dip amid steady ones is not read as a trend. A run of
  small steps (0.99, 0.98, 0.97, 0.96, 0.95 at n = 600) shows here when no single step does. Estimates of releases
  on shared examples are positively correlated, which the weights ignore: the test is
  conservative.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from ..core.headline import key_matches
from ..errors import InputError
from ..measures.stats import holm
from ..studies.compare.severity import one_cause
from .difference import ALPHA, Z95, paired_change, unpaired_change, worse_sign
from .release import Release
from .store import History

#: releases the drift test looks back over, the release included
WINDOW = 5
#: the smallest change a verdict counts (one point of a share): a change beyond noise but smaller
#: is reported as ``small`` (Soft-SCoPE 0.995 against 1.000, lower on every one of 2,000 examples)
MIN_CHANGE = 0.01


def _num(v: float | None) -> str:
    """``v`` to 3 decimals with a true minus sign (``−0.080``), zero unsigned (``0.000``, never
    ``−0.000``); ``n/a`` for None."""
    if v is None:
        return "n/a"
    text = f"{v:.3f}"
    return "0.000" if float(text) == 0 else text.replace("-", "−")


@dataclass
class Change:
    """One estimate of a release against its baseline: ``diff`` = new − base with its 95 %
    interval over ``n`` (the shared examples when ``paired``), the one-sided ``p`` of a change in
    the worse direction (two-sided where no direction is better) and its Holm-``adjusted`` value,
    and ``verdict``: ``regressed``, ``improved``, ``moved`` (no better direction), ``small``
    (beyond noise but smaller than the smallest change counted), ``same`` (within noise) or
    ``counted_with`` (one change with the estimate ``same_as`` names, which is tested instead:
    its ``p`` is for information, its ``adjusted`` None)."""

    target: str
    study: str
    key: str
    measure: str
    better: str
    base: float | None
    new: float | None
    diff: float | None
    low: float | None
    high: float | None
    n: int | None
    interval: str
    paired: bool
    p: float = 1.0
    adjusted: float | None = 1.0
    verdict: str = "same"
    #: the 90 % interval of the difference, for the equivalence checks
    low90: float | None = None
    high90: float | None = None
    #: the estimate this one is counted with (module docstring), or ""
    same_as: str = ""

    def text(self, tests: int | None = None) -> str:
        """``hard_scope:typo 0.980 → 0.900: −0.080 [−0.140, −0.030] (paired, n = 50; p = 0.002
        Holm)``; with ``tests`` (the number of the release's tests) the p before the adjustment
        too: ``(...; p = 0.016, 0.38 after Holm over 24 tests)``; one counted with another:
        ``(...; p = 0.004 alone, counted with relative_robustness_gap:typo (robustness))``."""
        span = f" [{_num(self.low)}, {_num(self.high)}]" if self.low is not None and self.high is not None else ""
        how = "paired" if self.paired else "unpaired"
        n = f", n = {self.n}" if self.n else ""
        if self.same_as:
            p = f"p = {self.p:.3g} alone, counted with {self.same_as}"
        else:
            p = (f"p = {self.adjusted:.3g} Holm" if tests is None else
                 f"p = {self.p:.3g}, {self.adjusted:.3g} after Holm over {tests} test{'' if tests == 1 else 's'}")
        return (f"{self.key} ({self.study}) {_num(self.base)} → {_num(self.new)}: {_num(self.diff)}{span} "
                f"({how}{n}; {p})")


@dataclass
class Drift:
    """The trend of one estimate over ``releases``: ``slope`` per release with its 95 % interval,
    the one-sided ``p`` of a slope in the worse direction and its Holm-``adjusted`` value;
    ``drifting`` when that rejects at 5 %. ``n``: the last release's; ``same_as``: the estimate
    this one is counted with (module docstring; then it is not tested, ``adjusted`` None)."""

    target: str
    study: str
    key: str
    better: str
    releases: list[str]
    values: list[float]
    slope: float
    low: float
    high: float
    p: float
    adjusted: float | None = 1.0
    drifting: bool = False
    n: int | None = None
    same_as: str = ""

    def text(self) -> str:
        vals = ", ".join(f"{v:.3f}" for v in self.values)
        return (f"{self.key} ({self.study}) over {len(self.releases)} releases ({vals}): slope {self.slope:+.4f} "
                f"[{self.low:+.4f}, {self.high:+.4f}] a release (p = {self.adjusted:.3g} Holm)")


@dataclass
class Equivalence:
    """One ``--equivalent METRIC=MARGIN`` check of a change: passed when its 90 % interval lies
    inside ±margin."""

    target: str
    key: str
    margin: float
    low90: float | None
    high90: float | None
    passed: bool

    def text(self) -> str:
        span = "no interval" if self.low90 is None else f"90 % interval [{self.low90:+.3f}, {self.high90:+.3f}]"
        return (f"{'pass' if self.passed else 'FAIL'} {self.target} {self.key}: {span} "
                f"{'inside' if self.passed else 'not inside'} ±{self.margin:g}")


@dataclass
class HistoryCheck:
    """What :func:`check_release` returns: the ``release`` and ``baseline`` labels (``baseline``
    None: no release of its setup was accepted before it, so nothing was compared), each
    ``change``, each ``drift`` and each ``equivalence`` check."""

    release: str
    baseline: str | None
    changes: list[Change] = field(default_factory=list)
    drifts: list[Drift] = field(default_factory=list)
    equivalence: list[Equivalence] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    min_change: float = MIN_CHANGE

    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "regressed"]

    def drifting(self) -> list[Drift]:
        return [d for d in self.drifts if d.drifting]

    def tests(self) -> int:
        """How many changes were tested (the family the Holm adjustment is over)."""
        return sum(c.diff is not None and not c.same_as for c in self.changes)

    def near(self) -> list[Change]:
        """The changes whose own test rejects at 5 % but not after the Holm adjustment over the
        release's tests: moved, not beyond noise after adjustment (never counted)."""
        return [c for c in self.changes if c.verdict == "same" and c.diff is not None and c.p <= ALPHA]

    def repeated(self) -> list[Change]:
        """The changes counted with another (``counted_with``) whose own test rejects at 5 %:
        shown beside the one tested, never counted."""
        return [c for c in self.changes if c.verdict == "counted_with" and c.p <= ALPHA]

    def failed(self, fail_on_regression: bool = True) -> bool:
        """Whether the check fails: an equivalence check failed, or (with
        ``fail_on_regression``) a regression or a drift was found."""
        return any(not e.passed for e in self.equivalence) or (
            fail_on_regression and bool(self.regressions() or self.drifting()))

    def exit_code(self, fail_on_regression: bool = False) -> int:
        return 1 if self.failed(fail_on_regression) else 0

    def to_json(self) -> dict[str, Any]:
        return {"release": self.release, "baseline": self.baseline, "alpha": ALPHA, "min_change": self.min_change,
                "tests": self.tests(), "changes": [asdict(c) for c in self.changes],
                "drifts": [asdict(d) for d in self.drifts], "equivalence": [asdict(e) for e in self.equivalence],
                "notes": self.notes, "regressions": len(self.regressions()), "drifting": len(self.drifting()),
                "not_beyond_noise_after_adjustment": len(self.near())}

    def console(self) -> str:
        """What the command prints: each change by verdict, the changes that moved but are not
        beyond noise after the adjustment, the drifts, the equivalence checks and the notes."""
        if self.baseline is None:
            lines = [f"release {self.release}: no accepted baseline (no release of its setup was accepted before "
                     "it); nothing to compare"]
        else:
            k = len(self.changes)
            lines = [f"release {self.release} against {self.baseline}: {k} estimate{'' if k == 1 else 's'} compared"]
        moved = [c for c in self.changes if c.verdict not in ("same", "counted_with")]
        heads = {"regressed": "regressed", "improved": "improved", "moved": "moved (no better direction)",
                 "small": f"beyond noise but smaller than {self.min_change:g}, not counted"}
        for verdict, head in heads.items():
            these = [c for c in moved if c.verdict == verdict]
            if these:
                lines.append(f"{head} ({len(these)}):")
                lines += [f"  {c.target}: {c.text()}" for c in these]
        near = sorted(self.near(), key=lambda c: c.p)
        if near:
            lines.append(f"moved, not beyond noise after adjustment ({len(near)}, not counted: p ≤ {ALPHA:g} alone, "
                         "not after Holm):")
            lines += [f"  {c.target}: {c.text(self.tests())}" for c in near]
        repeated = self.repeated()
        if repeated:
            lines.append(f"moved with an estimate tested in its place ({len(repeated)}, one change each, not counted "
                         "again):")
            lines += [f"  {c.target}: {c.text()}" for c in repeated]
        if not moved and self.baseline is not None:
            lines.append(f"no estimate moved beyond noise (5 % family-wise error rate over {self.tests()} "
                         f"test{'' if self.tests() == 1 else 's'}, Holm)")
        if self.drifts:
            d = self.drifting()
            lines.append(f"drift over the last {max(len(x.releases) for x in self.drifts)} releases: "
                         + (f"{len(d)} estimate(s) drifting" if d else "none beyond noise"))
            lines += [f"  {x.target}: {x.text()}" for x in d]
        if self.equivalence:
            lines.append("equivalence (--equivalent, two one-sided tests at 5 %):")
            lines += [f"  {e.text()}" for e in self.equivalence]
        lines += self.notes
        reg = len(self.regressions()) + len(self.drifting())
        if self.baseline is not None or self.drifts:
            lines.append(f"{reg} regression{'' if reg == 1 else 's'} beyond noise" if reg
                         else "no regression beyond noise")
        return "\n".join(lines)


def one_change(items: Sequence[Any]) -> None:
    """Mark (``same_as``) each of ``items`` (changes or drifts) that repeats another's change
    (module docstring): a target's own estimate ``NAME[:REST]`` beside its gap to the reference
    ``NAME_gap[:REST]`` of the same study is counted with the gap, then among the rest of a
    target's, what :func:`~perturblab.studies.compare.severity.one_cause` counts once."""
    by_target: dict[str, list[Any]] = {}
    for c in items:
        by_target.setdefault(c.target, []).append(c)
    for group in by_target.values():
        keys = {(c.study, c.key) for c in group}
        for c in group:
            name, sep, rest = c.key.partition(":")
            gap = f"{name}_gap{sep}{rest}"
            if (c.study, gap) in keys:
                c.same_as = f"{gap} ({c.study})"
        one_cause([c for c in group if not c.same_as])


def compare_releases(history: History, release: Release, baseline: Release, *,
                     min_change: float = MIN_CHANGE) -> list[Change]:
    """Each estimate of ``release`` that ``baseline`` also holds, compared (the module
    docstring), with Holm-adjusted verdicts over those not counted with another
    (:func:`one_change`); a change beyond noise smaller than ``min_change`` is ``small``."""
    base = {(e["target"], e["study"], e["key"]): e for e in baseline.estimates}
    changes = []
    for e in release.estimates:
        b = base.get((e["target"], e["study"], e["key"]))
        if b is None:
            continue
        better = str(e.get("better") or "")
        ids = (e["target"], e["study"], e["key"])
        got = paired_change(history.outcomes(baseline, *ids), history.outcomes(release, *ids), better)
        if got is not None:
            diff, ci, ci90, n, p, what = got
            paired = True
        else:
            un = unpaired_change(b, e, better)
            if un is None:
                changes.append(Change(e["target"], e["study"], e["key"], e["measure"], better, b.get("value"),
                                      e.get("value"), None, None, None, e.get("n"), "no interval to compare", False))
                continue
            diff, ci, ci90, p, what = un
            n, paired = e.get("n"), False
        changes.append(Change(e["target"], e["study"], e["key"], e["measure"], better, b.get("value"), e.get("value"),
                              diff, ci[0], ci[1], n, what, paired, p=p, low90=ci90[0], high90=ci90[1]))
    one_change([c for c in changes if c.diff is not None])
    for c in changes:
        if c.same_as:
            c.verdict, c.adjusted = "counted_with", None
    tested = [c for c in changes if c.diff is not None and not c.same_as]
    for c, adj in zip(tested, holm([c.p for c in tested])):
        c.adjusted = adj
        if adj <= ALPHA:
            worse = worse_sign(c.better)
            if abs(c.diff or 0.0) < min_change:
                c.verdict = "small"
            else:
                c.verdict = "moved" if worse == 0 else ("regressed" if np.sign(c.diff) == worse else "improved")
    return changes


def drift(releases: Sequence[Release], window: int = WINDOW, *, min_change: float = MIN_CHANGE) -> list[Drift]:
    """The drift test (module docstring) of each estimate over the last ``window`` of
    ``releases`` (oldest first, the checked release last) that has a value and an interval in at
    least 3 of them: drifting when the slope is worse beyond noise and the change it makes over
    the window (slope × (releases − 1)) is at least ``min_change``. An exact interval (width 0: a
    target that is the reference itself) counts with the smallest standard error of its
    series. An estimate counted with another (:func:`one_change`) is not tested (``adjusted``
    None, never drifting)."""
    from scipy import stats

    recent = list(releases)[-window:]
    if len(recent) < 3:
        return []
    series: dict[tuple[str, str, str], list[tuple[int, float, float, str]]] = {}
    better: dict[tuple[str, str, str], str] = {}
    sizes: dict[tuple[str, str, str], int | None] = {}
    for i, r in enumerate(recent):
        for e in r.estimates:
            v, lo, hi = e.get("value"), e.get("low"), e.get("high")
            if v is None or lo is None or hi is None:
                continue
            key = (e["target"], e["study"], e["key"])
            series.setdefault(key, []).append((i, float(v), (float(hi) - float(lo)) / (2 * Z95), r.label))
            better[key] = str(e.get("better") or "")
            sizes[key] = e.get("n")
    out = []
    for key, pts in series.items():
        worse = worse_sign(better[key])
        if len(pts) < 3 or worse == 0 or pts[-1][0] != len(recent) - 1:
            continue
        positive = [p[2] for p in pts if p[2] > 0]
        if not positive:
            continue
        floor = min(positive)
        x = np.asarray([p[0] for p in pts], dtype=np.float64)
        y = np.asarray([p[1] for p in pts], dtype=np.float64)
        w = 1.0 / np.asarray([max(p[2], floor) for p in pts]) ** 2
        xm, ym = np.sum(w * x) / np.sum(w), np.sum(w * y) / np.sum(w)
        sxx = float(np.sum(w * (x - xm) ** 2))
        slope = float(np.sum(w * (x - xm) * (y - ym)) / sxx)
        se = math.sqrt(1.0 / sxx)
        # points that scatter about the line more than their intervals say (one release's dip, not a
        # trend) widen the slope's interval: the dispersion χ²/(m − 2) when above 1, with t(m − 2)
        dispersion = float(np.sum(w * (y - (ym + slope * (x - xm))) ** 2)) / (len(pts) - 2)
        dist: Any = stats.norm
        if dispersion > 1.0:
            se, dist = se * math.sqrt(dispersion), stats.t(len(pts) - 2)
        p = float(dist.sf(worse * slope / se))
        crit = float(dist.ppf(0.975))
        out.append(Drift(key[0], key[1], key[2], better[key], [p[3] for p in pts], [p[1] for p in pts], slope,
                         slope - crit * se, slope + crit * se, p, n=sizes[key]))
    one_change(out)
    for d in out:
        if d.same_as:
            d.adjusted = None
    tested = [d for d in out if not d.same_as]
    for d, adj in zip(tested, holm([d.p for d in tested])):
        d.adjusted = adj
        d.drifting = adj <= ALPHA and abs(d.slope) * (len(d.releases) - 1) >= min_change
    return out


def last_accepted(releases: Sequence[Release], release: Release) -> Release | None:
    """The release of ``releases`` last accepted among those of ``release``'s setup stored
    before it, or None."""
    found = [r for r in releases
             if r.accepted is not None and (r.id or 0) < (release.id or 0) and r.identity == release.identity]
    return max(found, key=lambda r: (r.accepted or 0.0, r.id or 0), default=None)


def baseline_of(history: History, release: Release, baseline: str, *, required: bool = True) -> Release | None:
    """The baseline release: ``accepted`` (the last release accepted before ``release`` was
    stored, of its setup) or a label. No accepted one: None, or with ``required`` an
    :class:`InputError`; a label the history does not hold is always an error."""
    if baseline == "accepted":
        found = last_accepted(history.releases(), release)
        if found is None:
            if not required:
                return None
            raise InputError(f"--baseline accepted: no release of the same setup was accepted before {release.label}; "
                             "accept one (perturblab history accept DB LABEL) or give --baseline LABEL")
        return history.release(found.label)
    base = history.release(baseline)
    if base.identity != release.identity:
        raise InputError(f"--baseline {baseline}: was measured on another setup than {release.label} (differs in: "
                         f"{_differs(base, release)}); compare releases of one reference, data and options")
    return base


def _differs(a: Release, b: Release) -> str:
    """What differs between the setups of ``a`` and ``b``: their setup's keys, or the reference."""
    differ = sorted(k for k in set(a.setup) | set(b.setup) if a.setup.get(k) != b.setup.get(k))
    return ", ".join(differ) or "the reference"


def check_release(history: History, release: str, baseline: str = "accepted", *,
                  equivalent: Sequence[tuple[str, float]] = (), window: int = WINDOW,
                  min_change: float = MIN_CHANGE, require_baseline: bool = False) -> HistoryCheck:
    """Compare release ``release`` of ``history`` with ``baseline`` (``"accepted"`` or a label)
    and test the drift over the last ``window`` releases of its setup (module docstring);
    ``equivalent``: (metric, margin) pairs checked by two one-sided tests; ``min_change``: the
    smallest change (or drift over the window) counted as a regression.

    With ``"accepted"`` and no release of the setup accepted before it (a history's first
    releases), nothing is compared: the check's ``baseline`` is None, it has no changes and no
    equivalence checks (it passes unless a drift is found), and a note names any accepted release
    of another setup. ``require_baseline`` makes that an :class:`InputError` instead."""
    if min_change < 0:
        raise InputError(f"--min-change {min_change:g}: give a size of change of 0 or more (0.01 is one point)")
    new = history.release(release)
    base = baseline_of(history, new, baseline, required=require_baseline)
    out = HistoryCheck(new.label, None if base is None else base.label,
                       [] if base is None else compare_releases(history, new, base, min_change=min_change),
                       min_change=min_change)
    same = [r for r in history.releases(estimates=True) if r.identity == new.identity and (r.id or 0) <= (new.id or 0)]
    if window >= 3:
        out.drifts = drift(same, window, min_change=min_change)
    if base is None:
        others = [r for r in history.releases() if r.accepted is not None and r.identity != new.identity]
        if others:  # a setup changed since the last accepted release: say so, lest the check pass unseen
            last = max(others, key=lambda r: (r.accepted or 0.0, r.id or 0))
            out.notes.append(f"release {last.label} is accepted but was measured on another setup (differs in: "
                             f"{_differs(last, new)}), so it is no baseline of {new.label}")
        if equivalent:
            out.notes.append(f"--equivalent: not checked, no baseline to compare {new.label} with")
        return out
    for metric, margin in equivalent:
        found = [c for c in out.changes if key_matches(c.key, metric)]
        if not found:
            out.equivalence.append(Equivalence("", metric, margin, None, None, False))
        for c in found:
            ok = c.low90 is not None and c.high90 is not None and -margin <= c.low90 and c.high90 <= margin
            out.equivalence.append(Equivalence(c.target, c.key, margin, c.low90, c.high90, bool(ok)))
    unpaired = sum(not c.paired for c in out.changes if c.diff is not None)
    if unpaired:
        out.notes.append(f"{unpaired} estimate(s) compared unpaired (their study stores no per-example terms): "
                         "conservative")
    targets_new, targets_base = set(new.targets()), set(base.targets())
    if targets_new - targets_base:
        out.notes.append(f"not in the baseline: {', '.join(sorted(targets_new - targets_base))}")
    return out
