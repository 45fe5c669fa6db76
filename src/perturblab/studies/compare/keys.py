"""The vocabulary of a comparison, shared by its plan, verdicts and checks: the headline keys each
study of the plan gives and what each means, as the study's part declares it
(:class:`~perturblab.studies.part.Key`: a share kept, a paired gap or a score, its range), read
here for the gates' values. Nothing here names a study: a key of an installed package's study is
checked exactly as a built-in one."""

from __future__ import annotations

import math
from typing import Sequence

from ...errors import InputError
from ..part import SCORE, all_keys, key_of, part_of, parts

__all__ = ["PAST_TOP", "keys_of", "equivalence_keys", "sequence_keys", "gap_of",
           "check_range", "check_margin", "check_metrics"]


def keys_of(study: str) -> tuple[str, ...]:
    """The headline keys (their first parts) the plan's study ``study`` gives: its part's
    (``layers-<target>`` is the ``layers`` part's); none for a folder no part owns."""
    part = part_of(study)
    return part.key_names if part is not None else ()


#: how far past the top of its range a --fail-under value is still taken (a gate meant to fail)
PAST_TOP = 0.05


def equivalence_keys() -> tuple[str, ...]:
    """The measures --equivalent takes: target against reference, on the same examples (the
    shares kept, the paired gaps, and the scores of the parts whose findings are paired score
    differences)."""
    scored = {k.name for p in parts().values() if p.scores for k in p.keys if k.kind == SCORE}
    return tuple(name for name, k in all_keys().items() if k.paired() or name in scored)


def sequence_keys() -> tuple[str, ...]:
    """The keys whose estimates have a confidence sequence (valid at every look of a run that
    stops when it is decided)."""
    return tuple(name for name, k in all_keys().items() if k.sequence)


def gap_of(metric: str) -> str | None:
    """The paired gap of a target's own score, ``relative_robustness_gap:change_char`` for
    ``relative_robustness:change_char`` (the key with ``_gap`` after its first part, when a
    study gives it), else None: the key is a comparison with the reference already.

    >>> gap_of("relative_robustness:change_char"), gap_of("accuracy"), gap_of("agreement")
    ('relative_robustness_gap:change_char', 'accuracy_gap', None)
    """
    first, sep, rest = metric.partition(":")
    key = key_of(first)
    return key.gap + sep + rest if key is not None and key.gap else None


def check_range(metric: str, value: float, option: str = "--fail-under") -> str:
    """Refuse a threshold outside ``metric``'s range (a percentage for a share, most often);
    a value up to :data:`PAST_TOP` past the top is taken, with a note returned. A ``--fail-under``
    threshold of a target's own score that has a paired gap (:func:`gap_of`) is taken with a note
    naming the gap: the reference itself has such a score (MiniLM-L6 keeps 0.855 of its accuracy
    under changed characters), so a threshold above it fails even a perfect copy of the
    reference. Else returns "". The error starts with ``METRIC=VALUE``; the options' check puts
    the option name before it."""
    first = metric.split(":", 1)[0]
    key = key_of(first)
    low, high = (key.low, key.high) if key is not None else (-math.inf, math.inf)
    if low <= value <= high:
        gap = gap_of(metric) if option == "--fail-under" else None
        return (f"note: --fail-under {metric}={value:g} checks the target's own {first}, which the reference has "
                f"too: a threshold above the reference's own fails even a perfect copy of it; {gap} checks the "
                "difference from the reference (0 for a perfect copy)") if gap else ""
    if option == "--fail-under" and high < value <= high + PAST_TOP:
        return (f"note: --fail-under {metric}={value:g} is above the largest {first} ({high:g}): every check of it "
                "fails")
    hint = f"; for {value:g} % give {value / 100:g}" if high == 1.0 and 1 < value <= 100 else ""
    raise InputError(f"{metric}={value:g}: {first} lies in [{low:g}, {high:g}]{hint}")


def check_margin(metric: str, margin: float) -> None:
    """Refuse an ``--equivalent`` metric that is no paired difference, or a margin that is not
    in (0, 1] for a share or a gap of shares. The error starts with ``METRIC=MARGIN``; the
    options' check puts the option name before it."""
    first = metric.split(":", 1)[0]
    known = equivalence_keys()
    if first not in known:
        gap = gap_of(metric)
        raise InputError(f"{metric}={margin:g}: equivalence is of a target against the reference; "
                         + (f"give its paired gap, {gap}, or one of " if gap else "give one of ") + ", ".join(known))
    if not margin > 0:
        raise InputError(f"{metric}={margin:g}: the margin must be above 0")
    key = key_of(first)
    largest = key.largest_margin() if key is not None else math.inf
    if margin > largest:
        hint = f"; for {margin:g} points give {margin / 100:g}" if largest == 1 and margin <= 100 else ""
        what = "a share" if largest == 1 else first
        raise InputError(f"{metric}={margin:g}: a margin of {what} lies in (0, {largest:g}]{hint}")


def check_metrics(metrics: Sequence[str], studies: Sequence[str], option: str = "--fail-under") -> None:
    """Refuse a gate's metric that no planned study gives, naming those they give."""
    known = {k for s in studies for k in keys_of(s)}
    for m in metrics:
        if m.split(":", 1)[0] not in known:
            raise InputError(f"{option} {m}: no study of this comparison gives {m.split(':', 1)[0]!r}; "
                             f"give one of {', '.join(sorted(known))} (with :CAPABILITY or :PERTURBATION to "
                             "check one)")
