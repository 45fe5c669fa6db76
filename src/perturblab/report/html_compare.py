"""The top of a comparison's report: a verdict per target, from ``compare.json``.

Per target: the studies' sentences, one table of every headline estimate beside the reference's
(with n and the severity of each finding), examples of the invariances the target does not
share, then the ``--fail-under`` checks of all targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from ..core.headline import Estimate, Headline
from .html_tables import Table, load_json


#: a comparison's verdicts (``perturblab compare``), at the top of its output directory
COMPARE_FILE = "compare.json"


@dataclass
class TargetVerdict:
    """One target's part of the verdicts: its ``title``, the studies' ``sentences``, the
    estimates ``table`` and the ``examples`` table (None when there are none)."""

    title: str
    findings: str = ""
    sentences: list[str] = field(default_factory=list)
    table: Table | None = None
    examples: Table | None = None


@dataclass
class Verdicts:
    """What the report shows above the studies: one :class:`TargetVerdict` per target, the
    checks table, and the plan's study order (the order of the sections below)."""

    targets: list[TargetVerdict] = field(default_factory=list)
    checks: Table | None = None
    order: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.targets or self.checks)


def read_verdicts(root: Path) -> Verdicts:
    """The verdicts of ``root/compare.json`` (empty when there is none or it is not an object)."""
    path = root / COMPARE_FILE
    if not path.is_file():
        return Verdicts()
    obj = load_json(path, "run the comparison again")
    if not isinstance(obj, dict):
        return Verdicts()
    ref = str(obj.get("reference") or "the reference")
    verdicts = [v for v in obj.get("verdicts") or [] if isinstance(v, dict)]
    out = Verdicts(order=[str(p.get("name")) for p in obj.get("plan") or [] if isinstance(p, dict)])
    found = obj.get("findings") if isinstance(obj.get("findings"), dict) else {}
    for target in obj.get("targets") or []:
        mine = [v for v in verdicts if v.get("target") == target]
        out.targets.append(TargetVerdict(f"{target} against {ref}", str(found.get(target) or ""),
                                         [str(v.get("sentence", "")) for v in mine],
                                         _estimates_table(mine, str(target), ref), _examples_table(mine, ref, target)))
    out.checks = _checks_table(obj)
    return out


def _estimates(v: dict[str, Any], which: str) -> list[Estimate]:
    return Headline.from_json({"estimates": v.get(which) or []}).estimates


def _severity_cell(s: dict[str, Any] | None) -> Any:
    if not s:
        return ""
    level = str(s.get("level", ""))
    rate = s.get("rate")
    text = level if rate is None else f"{level} · {100 * rate:.1f} %"
    if s.get("low") is not None and s.get("high") is not None:
        text += f" [{100 * s['low']:.1f}, {100 * s['high']:.1f}]"
    span = f" (interval: {s['span']})" if s.get("span") else ""
    css = level.replace(" ", "-")
    return Markup(f'<span class="sev sev-{escape(css)}" title="{escape(str(s.get("what", "")))}">'
                  f"{escape(text)}{escape(span)}</span>")


def _estimates_table(mine: list[dict[str, Any]], target: str, ref: str) -> Table:
    rows = []
    for v in mine:
        theirs = {e.key: e for e in _estimates(v, "reference")}
        sev = {s.get("key"): s for s in v.get("severity") or [] if isinstance(s, dict)}
        for e in _estimates(v, "estimates"):
            other = theirs.get(e.key)
            rows.append([str(v.get("study", "")), e.measure, e.text() + (" ⚑" if e.flags else ""),
                         "" if other is None else other.text() + (" ⚑" if other.flags else ""),
                         "" if e.n is None else str(e.n), _severity_cell(sev.get(e.key))])
    return Table(header=["study", "measure", target, ref, "n", "severity"], rows=rows,
                 numeric=[False, False, True, True, True, False],
                 note="The estimate [its 95 % interval]; n: the examples behind it. Severity: the share of changed "
                      "behaviour (invariances of the reference not kept, inputs on which the two disagree, robustness "
                      "lost beyond the reference's) — medium from 5 % (10 % for language models), major from twice "
                      "that; differs: a score without a rate outside the reference's interval; ⚑: flagged, means nothing.")


def _examples_table(mine: list[dict[str, Any]], ref: str, target: str) -> Table | None:
    rows = []
    for v in mine:
        for key, found in (v.get("examples") or {}).items():
            for ex in found:
                before, after = (list(ex.get("target") or []) + ["", ""])[:2]
                rows.append([key.split(":", 1)[-1], str(ex.get("original", "")), str(ex.get("perturbed", "")),
                             str(ex.get("reference", "")), f"{before} → {after}"])
    if not rows:
        return None
    return Table(header=["capability", "original", "perturbed", ref, target], rows=rows,
                 numeric=[False] * 5, title=f"Where {target} changes its prediction and {ref} keeps its own",
                 note="The first examples (by sample) of each medium or major invariance finding; changed words in "
                      "[[ ]]. A language model's prediction is its top-1 next token after the text. A classifier "
                      "study's perturbed_examples.csv holds every search with each model's predictions.")


def _checks_table(obj: dict[str, Any]) -> Table | None:
    checks = [c for c in obj.get("checks") or [] if isinstance(c, dict)]
    if not checks:
        return None
    used = "lower ends of the 95 % intervals" if obj.get("strict") else "estimates"
    rows = [[("pass" if c.get("passed") else "FAIL"), str(c.get("target", "")), str(c.get("key", "")),
             "n/a" if c.get("value") is None else f"{c['value']:.3f}", f"{c.get('threshold', 0):g}"]
            for c in checks]
    failed = sum(not c.get("passed") for c in checks)
    return Table(header=["result", "target", "estimate", "value", "at least"], rows=rows,
                 numeric=[False, False, False, True, True], title="Checks",
                 note=f"{len(checks) - failed} of {len(checks)} checks passed ({used}).")
