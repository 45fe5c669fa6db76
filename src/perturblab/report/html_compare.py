"""The top of a comparison's report: a verdict per target, from ``compare.json``.

First one line per target, worst first (its major and medium findings, the checks it failed),
each a link to its part; then per target, in that order: the studies' sentences, one table of every headline estimate beside the reference's
(with n and the severity of each finding), examples of the invariances the target does not
share, then the ``--fail-under`` checks of all targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from ..core.headline import Estimate, Headline, decide_text, percent
from .html_tables import Table, load_json


#: a comparison's verdicts (``perturblab compare``), at the top of its output directory
COMPARE_FILE = "compare.json"


@dataclass
class TargetVerdict:
    """One target's part of the verdicts: its ``title``, the studies' ``sentences``, the
    estimates ``table`` and the ``examples`` table (None when there are none)."""

    title: str
    findings: str = ""
    #: its anchor in the page (the summary's links)
    anchor: str = ""
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
    #: one (line, anchor) per target, worst first: the first screen (``compare.json``'s summary)
    summary: list[tuple[str, str]] = field(default_factory=list)
    #: with ``--until decided``: the rounds in one line (their sizes, findings decided, why it stopped)
    rounds: str = ""

    def __bool__(self) -> bool:
        return bool(self.targets or self.checks)


def read_verdicts(root: Path, obj: Any = None) -> Verdicts:
    """The verdicts of ``root/compare.json``, or of ``obj`` (its contents, when given) (empty
    when there is none or it is not an object)."""
    path = root / COMPARE_FILE
    if obj is None and not path.is_file():
        return Verdicts()
    obj = load_json(path, "run the comparison again") if obj is None else obj
    if not isinstance(obj, dict):
        return Verdicts()
    ref = str(obj.get("reference") or "the reference")
    verdicts = [v for v in obj.get("verdicts") or [] if isinstance(v, dict)]
    out = Verdicts(order=[str(p.get("name")) for p in obj.get("plan") or [] if isinstance(p, dict)])
    found = obj.get("findings") if isinstance(obj.get("findings"), dict) else {}
    targets = [str(t) for t in obj.get("targets") or []]
    anchors = {t: f"target-{i + 1}" for i, t in enumerate(targets)}
    lines = [s for s in obj.get("summary") or [] if isinstance(s, dict) and str(s.get("target")) in anchors]
    worst = [str(s["target"]) for s in lines]
    for target in worst + [t for t in targets if t not in worst]:  # the details in the summary's order
        mine = [v for v in verdicts if v.get("target") == target]
        out.targets.append(TargetVerdict(f"{target} against {ref}", str(found.get(target) or ""), anchors[target],
                                         [str(v.get("sentence", "")) for v in mine],
                                         _estimates_table(mine, str(target), ref), _examples_table(mine, ref, target)))
    out.summary = [(str(s.get("line", "")), anchors[str(s["target"])]) for s in lines]
    out.checks = _checks_table(obj)
    out.rounds = rounds_line(obj.get("rounds"))
    return out


def rounds_line(rounds: Any) -> str:
    """``Until decided: 3 rounds (invariances n = 113, 201, 245); 20 of 26 findings decided in
    3.1 min; stopped: …`` for ``compare.json``'s ``rounds``; "" when there are none."""
    rounds = [r for r in rounds or [] if isinstance(r, dict)]
    if not rounds:
        return ""
    names = list(dict.fromkeys(n for r in rounds for n in (r.get("sizes") or {})))
    sizes = "; ".join(f"{n} n = " + ", ".join(str(r["sizes"][n]) for r in rounds if n in (r.get("sizes") or {}))
                      for n in names)
    last = rounds[-1]
    seconds = float(last.get("seconds") or 0.0)
    took = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"
    return (f"Until decided: {len(rounds)} round{'s' if len(rounds) != 1 else ''} ({sizes}); "
            f"{last.get('decided')} of {last.get('findings')} findings decided in {took}"
            + (f"; stopped: {last['stopped']}" if last.get("stopped") else "") + ".")


def _estimates(v: dict[str, Any], which: str) -> list[Estimate]:
    return Headline.from_json({"estimates": v.get(which) or []}).estimates


def _severity_cell(s: dict[str, Any] | None) -> Any:
    if not s:
        return ""
    level = str(s.get("level", ""))
    rate, low, high = s.get("rate"), s.get("low"), s.get("high")
    ok = all(isinstance(v, (int, float)) for v in (low, high))
    if rate is None:
        text = level
    elif s.get("score"):
        text = f"{level} · {rate:+.3g}" + (f" [{low:+.3g}, {high:+.3g}]" if ok else "")
    else:
        text = f"{level} · {percent(rate)} %" + (f" [{percent(low)}, {percent(high)}]" if ok else "")
    span = f" (interval: {s['span']})" if s.get("span") else ""
    above = s.get("shown_above")
    if isinstance(above, (int, float)) and ok and low < above and s.get("span"):  # the claim's one-sided basis
        p = (s.get("adjusted") or {}).get(level)
        span = (f" (shown above {percent(above, 0)} % one-sided" + (f", Holm p {p:.2g}" if isinstance(p, float) else "")
                + f"; 95 % interval reaches into {str(s['span']).split(' to ')[0]})")
    same = f" (counted with {s['same_as']})" if s.get("same_as") else ""
    flags = f" ⚑ {', '.join(map(str, s.get('flags') or []))}" if s.get("flags") else ""
    flags += decide_text(s.get("decide") if isinstance(s.get("decide"), dict) else None)
    css = level.replace(" ", "-").replace("(", "").replace(")", "")
    adjusted = s.get("adjusted") or {}
    tests = "; ".join(f"Holm-adjusted p ({h}) {p:.3g}" for h, p in adjusted.items() if isinstance(p, (int, float)))
    title = f"{s.get('what', '')}" + (f"; {tests}" if tests else "")
    return Markup(f'<span class="sev sev-{escape(css)}" title="{escape(title)}">'
                  f"{escape(text)}{escape(span)}{escape(same)}{escape(flags)}</span>")


def _estimates_table(mine: list[dict[str, Any]], target: str, ref: str) -> Table:
    rows = []
    for v in mine:
        theirs = {e.key: e for e in _estimates(v, "reference")}
        sev = {s.get("key"): s for s in v.get("severity") or [] if isinstance(s, dict)}
        for e in _estimates(v, "estimates"):
            other = theirs.get(e.key)
            rows.append([str(v.get("study", "")), e.measure, e.text() + (" ⚑" if e.flags else ""),
                         "" if other is None else other.text() + (" ⚑" if other.flags else ""),
                         "" if e.n is None else str(e.n), e.interval or "no interval", _severity_cell(sev.get(e.key))])
    return Table(header=["study", "measure", target, ref, "n", "interval over", "finding"], rows=rows,
                 numeric=[False, False, True, True, True, False, False], stack=True,
                 note="The estimate [its 95 % interval]; n: the examples behind it; the interval column says what the "
                      "interval is over. Finding: the rate of changed behaviour of the target against the reference "
                      "(invariances of the reference not kept, inputs on which the two disagree, accuracy or "
                      "robustness lost on the same examples), with its 95 % interval: medium when it is shown above "
                      "5 % (10 % for language models), major when shown above twice that, minor when its interval "
                      "ends below 5 %, undecided when the run's n cannot tell; within noise: a paired gap whose "
                      "interval holds 0; differs: a self-supervised score shown to differ (target − reference). "
                      "Levels and differences hold a 5 % family-wise error rate over each target's findings (Holm); "
                      "⚑: flagged (a model at chance level or predicting one class), shown with its finding.")


def _examples_table(mine: list[dict[str, Any]], ref: str, target: str) -> Table | None:
    rows = []
    for v in mine:
        for key, found in (v.get("examples") or {}).items():
            for ex in found:
                before, after = (list(ex.get("target") or []) + ["", ""])[:2]
                gold = ex.get("gold")
                rows.append([key.split(":", 1)[-1], str(ex.get("original", "")), str(ex.get("perturbed", "")),
                             "" if gold is None else str(gold), str(ex.get("reference", "")) + _right(ex, "reference"),
                             f"{before} → {after}" + _right(ex, "target")])
    if not rows:
        return None
    return Table(header=["capability", "original", "perturbed", "gold label", ref, target], rows=rows,
                 numeric=[False] * 6, title=f"Where {target} changes its prediction and {ref} keeps its own",
                 stack=True,
                 note="The first examples (by sample) of each medium or major invariance finding; changed words in "
                      "[[ ]]; ✓: the gold label (a row where the reference is wrong and the target right on the "
                      "perturbed text still counts as an invariance not shared). A language model's prediction is "
                      "its top-1 next token after the text (no gold label). A classifier study's "
                      "perturbed_examples.csv holds every search with each model's predictions, the gold label and "
                      "a column per target that says where it changed its prediction (click its name to bring them "
                      "first).")


def _right(ex: dict[str, Any], who: str) -> str:
    """`` ✓`` when ``who``'s prediction on the perturbed text is the gold label."""
    gold, pred = ex.get("gold"), ex.get(who)
    last = pred[-1] if isinstance(pred, list) and pred else pred
    return " ✓" if gold is not None and last is not None and str(last) == str(gold) else ""


def _checks_table(obj: dict[str, Any]) -> Table | None:
    checks = [c for c in obj.get("checks") or [] if isinstance(c, dict)]
    if not checks:
        return None
    num = (lambda v: "n/a" if not isinstance(v, (int, float)) else f"{v:.3f}")
    rows = []
    for c in checks:
        ci = (f" [{num(c.get('low'))}, {num(c.get('high'))}]" if c.get("low") is not None else "")
        equivalent = c.get("kind") == "equivalent"
        rows.append([("pass" if c.get("passed") else "FAIL"), str(c.get("target", "")),
                     str(c.get("key") or c.get("metric", "")), num(c.get("value")) + ci,
                     "" if c.get("n") is None else str(c.get("n")),
                     f"within ±{c.get('threshold', 0):g}" if equivalent else
                     f"{num(c.get('compared'))} (the {c.get('used', '')}) ≥ {c.get('threshold', 0):g}",
                     str(c.get("outcome", "")) + ("" if not c.get("interval") else f"; interval over: {c['interval']}")])
    failed = sum(not c.get("passed") for c in checks)
    rates = str(obj.get("error_rates") or "")
    return Table(header=["result", "target", "estimate", "value [interval]", "n", "check", "outcome"], rows=rows,
                 numeric=[False, False, False, True, True, False, False], title="Checks", stack=True,
                 note=f"{len(checks) - failed} of {len(checks)} checks passed. Equivalence intervals are 90 % "
                      f"(two one-sided tests at 5 %), the others 95 %. {rates}".strip())
