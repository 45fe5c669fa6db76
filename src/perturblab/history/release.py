"""A release of a history: its label, setup, models, estimates and per-example outcomes, and the
rule every release label follows.

A release label is 1 to :data:`LABEL_CHARS` characters with no control character (a newline, a
tab) and no line separator, on every database (:func:`label_problem`).
"""

from __future__ import annotations

import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ..core.keys import content_key
from ..errors import InputError

#: the longest release label, in characters (the ``releases.label`` column is VARCHAR(200))
LABEL_CHARS = 200
#: the Unicode categories a label may not hold: control characters (newline, tab), line and
#: paragraph separators, and lone surrogates (bytes that are not text)
_NOT_IN_LABELS = ("Cc", "Cs", "Zl", "Zp")


@dataclass
class Release:
    """One release of a history: ``label``; ``created`` (Unix time); ``kind``; ``reference``
    (its name); ``setup`` (what must match for two releases to be compared); ``models`` (label
    -> ``{"spec", "fingerprint"}``); ``report`` (its report's path, or None); ``estimates``
    (dicts: target, study, key, measure, value, low, high, n, interval, better, level, flags);
    ``outcomes`` ((target, study, key) -> example id -> term); ``accepted`` (Unix time it was
    accepted as a baseline, or None); ``id`` (its row, once stored)."""

    label: str
    reference: str
    setup: dict[str, Any]
    models: dict[str, dict[str, Any]]
    estimates: list[dict[str, Any]]
    outcomes: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    kind: str = "compare"
    created: float = field(default_factory=time.time)
    report: str | None = None
    accepted: float | None = None
    id: int | None = None

    @property
    def identity(self) -> str:
        """The digest of :attr:`setup`: two releases of one identity are comparable."""
        return content_key(self.setup)[:16]

    def targets(self) -> list[str]:
        """The targets of its estimates, in order of first appearance."""
        return list(dict.fromkeys(e["target"] for e in self.estimates))

    def models_of(self) -> dict[str, str]:
        """Target label -> its spec."""
        return {k: str(v.get("spec", "")) for k, v in self.models.items()}


def label_problem(label: Any) -> str | None:
    """What is wrong with ``label`` as a release label, or None: a label is 1 to
    :data:`LABEL_CHARS` characters, none of them a control character (a newline, a tab), a line
    or paragraph separator or a lone surrogate. One rule for SQLite and PostgreSQL, so a label one
    history takes, another takes too, and ``history list`` shows one release a line.

    >>> label_problem("v1.2 (2025-06-01)") is None
    True
    >>> label_problem("v" * 201)
    'has 201 characters; give a label of at most 200'
    """
    if not isinstance(label, str) or not label:
        return "is empty; give a label (a version, a date, a commit)"
    if len(label) > LABEL_CHARS:
        return f"has {len(label):,} characters; give a label of at most {LABEL_CHARS}"
    bad = next((c for c in label if unicodedata.category(c) in _NOT_IN_LABELS), None)
    if bad is not None:
        return (f"holds the control character {bad!r}; give a label of one line with no control characters"
                if unicodedata.category(bad) == "Cc" else
                f"holds the character {ascii(bad)}; give a label of one line of text with no separators")
    return None


def check_label(label: Any, option: str = "--release") -> None:
    """:class:`InputError` naming ``option`` when ``label`` breaks the rule of :func:`label_problem`."""
    problem = label_problem(label)
    if problem is not None:
        text = str(label)
        shown = ascii(text if len(text) <= 60 else text[:40] + "...")
        raise InputError(f"{option} {shown}: {problem}")
