""":func:`perturblab.compare`: the plan, each study through the one entry, the verdicts."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.entry import check_out, run_saved
from ...core.files import atomic_write_text
from ...core.lock import output_lock
from .config import CompareArgs
from .plan import Plan, make_plan
from ...report.html import MANIFEST, write_report
from ...report.html_compare import COMPARE_FILE
from .checks import Check, run_checks, run_equivalence
from .keys import check_metrics, check_range
from .verdict import Verdict, findings, grade, pool_flags, study_verdicts, to_json

#: what compare.json and the report say of the error rates of the verdicts and checks
ERROR_RATES = ("Levels (medium, major) and score differences: a 5 % family-wise error rate over each target's "
               "findings (Holm). --fail-under: each check on the estimate, or with --strict on the lower end of its "
               "95 % interval. --equivalent: two one-sided tests at 5 % on the paired difference (a 90 % "
               "interval); passing every check is an intersection-union test at 5 %.")


@dataclass
class CompareResult:
    """What :func:`compare` returns: the ``plan``, the ``verdicts`` per target and study, the
    ``checks`` (``--fail-under`` and ``--equivalent``) and ``passed`` (every check passed; True
    when there are none); ``results``: each study's own result by its folder name."""

    args: CompareArgs
    plan: Plan
    verdicts: list[Verdict] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        """``compare.json``: the reference, the targets, the plan with the time each study took, the
        verdicts and the checks."""
        return {"reference": self.args.reference_name(), "targets": self.args.target_labels(),
                "reference_spec": self.args.reference, "target_specs": self.args.target_names(),
                "kind": self.plan.kind, "budget_seconds": self.args.budget_seconds(), "strict": self.args.strict,
                "error_rates": ERROR_RATES,
                "plan": [{"name": p.name, "kind": p.kind, "size": p.size, "estimated_seconds": round(p.seconds, 1),
                          "seconds": round(self.seconds.get(p.name, 0.0), 1), "options": p.options}
                         for p in self.plan.studies],
                "left_out": self.plan.left_out, **to_json(self.verdicts, self.checks)}

    def console(self) -> str:
        """The verdicts, one block per target, then each check as pass or fail."""
        lines = []
        for target in self.args.target_labels():
            lines.append(f"{target} against {self.args.reference_name()}:")
            for v in (v for v in self.verdicts if v.target == target):
                lines.append(f"  [{v.study}] {v.sentence}")
                lines += [f"      {s.key}: {s.text()}" for s in v.severity
                          if s.level in ("medium", "major", "differs") and s.counted()]
            lines.append(f"  {findings(self.verdicts, target)}")
        if self.checks:
            lines.append("checks" + (" (--fail-under: lower ends of the 95 % intervals)" if self.args.strict else "")
                         + ":")
            lines += [f"  {c.text()}" for c in self.checks]
            failed = sum(not c.passed for c in self.checks)
            lines.append(f"{len(self.checks) - failed} of {len(self.checks)} checks passed")
        return "\n".join(lines)


def compare(reference: str, targets: str, *, data: str = "rotten_tomatoes", corpus: str = "oanc",
            studies: str | None = None, budget: str = "10m", fail_under: list[str] | None = None,
            strict: bool = False, equivalent: list[str] | None = None, detect: float | None = None,
            seed: int = 0, out: str | Path | None = None, quiet: bool = False,
            device: str | None = None, dtype: str | None = None) -> CompareResult:
    """Compare ``targets`` (a comma list) with ``reference``: run the studies their kind supports,
    sized to ``budget``, each into ``out/<study>`` through the one entry (a re-run, or one with a
    larger budget, reads back what is stored and computes only what is new), then write
    ``compare.json`` and the report, whose top is the verdict of each target. ``device`` and
    ``dtype`` place every model it loads (``--device`` / ``--dtype``). ``equivalent``
    (``["agreement=0.05"]``) passes only targets shown within the margin of the reference;
    ``detect`` sizes each study to detect a difference of that size (docs/compare.md).

    Example (not run here: it runs for about the budget)::

        >>> r = pl.compare("minilm-l6", "minilm-l6-int8,minilm-l3", out="out/cmp",
        ...                fail_under=["hard_scope:typo=0.9"])  # doctest: +SKIP
        >>> r.passed, [c.key for c in r.checks if not c.passed]  # doctest: +SKIP
    """
    args = CompareArgs(reference=reference, targets=targets, data=data, corpus=corpus, studies=studies,
                       budget=budget, fail_under=list(fail_under or []), strict=strict,
                       equivalent=list(equivalent or []), detect=detect, seed=seed,
                       out=None if out is None else str(out), quiet=quiet, device=device, dtype=dtype)
    args.check()
    return run_compare(args)


def run_compare(args: CompareArgs) -> CompareResult:
    """:func:`compare` of checked options (the command and the function)."""
    from ...studies.registry import entry

    plan = make_plan(args)
    check_metrics([m for m, _ in args.threshold_list()], [p.name for p in plan.studies])
    check_metrics([m for m, _ in args.margin_list()], [p.name for p in plan.studies], "--equivalent")
    out = check_out(args.out)
    notes = [n for n in (check_range(m, v) for m, v in args.threshold_list()) if n]
    if not args.quiet:
        print(plan.table(), file=sys.stderr, flush=True)
        for n in notes:
            print(n, file=sys.stderr, flush=True)
    result = CompareResult(args, plan)
    from ...models.device import placement

    with output_lock(out, name=".compare.lock", what="the comparison"), placement(*args.placement()):
        for p in plan.studies:
            study = entry(p.kind)
            options = study.options()(**p.options, out=str(out / p.name), quiet=args.quiet)
            sdir = out / p.name
            sdir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(sdir / MANIFEST, json.dumps({"name": p.name, "kind": p.kind, "options": p.options},
                                                          indent=2, default=str))
            t0 = time.time()
            res, _ = run_saved(study.load_function(), options, out=sdir, what=f"study {p.name}",
                               prefix=f"{p.name}: ")
            result.seconds[p.name] = time.time() - t0
            result.results[p.name] = res
            if not args.quiet:
                print(f"{p.name}: done in {result.seconds[p.name]:.0f} s (planned ~{p.seconds:.0f} s)",
                      file=sys.stderr, flush=True)
        reference, targets = args.reference_name(), args.target_labels()
        mine: dict[str, list] = {t: [] for t in targets}
        theirs: dict[str, Any] = {}
        headlines = {name: h for name, h in ((n, r.headline()) for n, r in result.results.items()) if h is not None}
        notes = pool_flags(headlines, reference)  # a flag rests on all the run's evidence
        for name, headline in headlines.items():
            result.verdicts += study_verdicts(name, headline, reference, targets, result.results[name])
        grade(result.verdicts)  # one family of findings per target, over every study
        for v in result.verdicts:
            if (v.study, v.target) in notes:
                v.sentence += " " + notes[(v.study, v.target)]
            mine[v.target] += v.estimates
            theirs.update({e.key: e for e in v.reference})
        result.checks = (run_checks(mine, args.threshold_list(), args.strict)
                         + run_equivalence(mine, theirs, args.margin_list()))
        atomic_write_text(out / COMPARE_FILE, json.dumps(result.to_json(), indent=2, default=str))
        write_report(out, title=f"perturblab compare: {', '.join(args.target_names())} against {args.reference}")
    return result
