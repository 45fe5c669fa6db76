""":func:`perturblab.compare` (the ``compare`` study of the registry, :class:`Compare`, and its
``demo``): the plan, each study through the one entry, the verdicts; its result saves
``compare.json`` and the report."""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from ...core.console import named_by
from ...core.faults import hide_password
from ...core.boundary import Inputs
from ...core.entry import check_out, run_saved, workspace
from ...core.files import all_or_nothing, atomic_write_bytes, atomic_write_text
from ...core.lock import output_lock
from ...core.placement import placement
from ...core.readers import option_name
from ...core.study import Study, StudyResult
from ...errors import InputError, warn
from .config import CompareArgs
from ..part import CLASSIFIER
from .cluster import at_once, executor_line
from .plan import Plan, PlanWarning, make_plan
from ...report.html import MANIFEST, render_report
from ...report.html_compare import COMPARE_FILE
from .checks import Check, run_checks, run_equivalence
from .rounds import anytime_estimate, run_rounds
from .keys import check_range
from .verdict import Verdict, findings, grade, pool_flags, study_verdicts, summary, to_json

log = logging.getLogger(__name__)

#: what compare.json and the report say of the error rates of the verdicts and checks
ERROR_RATES = ("Levels (medium, major) and score differences: a 5 % family-wise error rate over each target's "
               "findings (Holm). --fail-under: each check on the estimate, or with --strict on the lower end of its "
               "95 % interval. --equivalent: two one-sided tests at 5 % on the paired difference (a 90 % "
               "interval); passing every check is an intersection-union test at 5 %.")
#: what ``--until decided`` adds to :data:`ERROR_RATES`
UNTIL_RATES = (" --until decided: the run looked after every round and stopped when its findings were decided; the "
               "rates of changed behaviour have confidence sequences, valid at every look (each at 5 %/m for m "
               "findings of a target), and the checks of those measures use a 95 % confidence sequence.")


class CompareResult(StudyResult):
    """What :func:`perturblab.compare` returns: the ``plan``, the ``verdicts`` per target and study, the
    ``checks`` (``--fail-under`` and ``--equivalent``) and ``passed`` (every check passed; True
    when there are none); ``results``: each study's own result by its folder name; ``rows``: one
    per estimate of a target (its study, key, value, interval, n and the level of its finding).
    :meth:`save` writes ``compare.json``, each study's files in its folder and the report."""

    study = "compare"

    def __init__(self, args: CompareArgs, plan: Plan, verdicts: list[Verdict] | None = None,
                 checks: list[Check] | None = None, results: dict[str, Any] | None = None,
                 seconds: dict[str, float] | None = None, out: Path | None = None) -> None:
        self.args, self.plan = args, plan
        self.verdicts, self.checks = list(verdicts or []), list(checks or [])
        self.results, self.seconds = dict(results or {}), dict(seconds or {})
        self.out = out  # where the studies' files are saved already (the run's directory)
        #: with ``--until decided``: each round's sizes, seconds and findings decided (:func:`run_rounds`)
        self.rounds: list[dict[str, Any]] = []
        self._saved: tuple[Path, list[Path]] | None = None  # where save() wrote, and what
        #: where the cells of the studies that take an executor run (None: in this process)
        self.executor: Any = None
        super().__init__(self._rows())

    def __repr__(self) -> str:
        return (f"CompareResult({', '.join(self.args.target_labels())} against {self.args.reference_name()}: "
                f"{len(self.verdicts)} verdicts, {self._checks_passed()})")

    def _estimates(self) -> Iterator[tuple[Verdict, Any, str | None]]:
        """Each estimate of a target: its verdict, the estimate and the level of its finding."""
        for v in self.verdicts:
            level = {s.key: s.level for s in v.severity}
            for e in v.estimates:
                yield v, e, level.get(e.key)

    def _rows(self) -> list[dict[str, Any]]:
        """One row per estimate of a target: its study, the estimate, the reference's own estimate
        of the same key where the study measures it (``reference_value``, ``reference_low``,
        ``reference_high``), the level of its finding and the finding in words (``finding``)."""
        rows = []
        for v, e, level in self._estimates():
            ref = next((r for r in v.reference if r.key == e.key), None)
            sev = next((s for s in v.severity if s.key == e.key), None)
            rows.append({"target": v.target, "study": v.study, **e.to_json(),
                         "reference_value": None if ref is None else ref.value,
                         "reference_low": None if ref is None else ref.low,
                         "reference_high": None if ref is None else ref.high,
                         "level": level, "finding": "" if sev is None else sev.text()})
        return rows

    #: the columns of :meth:`table` and of the notebook's view
    COLUMNS = ("target", "study", "measure", "estimate [95 % interval]", "n", "level")

    def _cells(self) -> list[tuple[str, ...]]:
        return [(v.target, v.study, e.key, e.text(), str(e.n or ""), level or "") for v, e, level in self._estimates()]

    def _checks_passed(self, which: bool = False) -> str:
        """``2 of 3 checks passed`` and, with ``which`` when one failed, which: ``; failed:
        agreement (invariances) for l3``."""
        failed = [c for c in self.checks if not c.passed]
        return f"{len(self.checks) - len(failed)} of {len(self.checks)} checks passed" + (
            "; failed: " + ", ".join(f"{c.key or c.metric}{f' ({c.study})' if c.study else ''} for {c.target}"
                                     for c in failed) if failed and which else "")

    def worst_first(self) -> list[str]:
        """One line per target, worst first (:func:`~.verdict.summary`): what the report and the
        notebook open with."""
        return [s["line"] for s in summary(self.verdicts, self.checks, self.args.target_labels())]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        """``compare.json``: the reference, the targets, the plan with the time each study took and
        each model's measured speed, the verdicts and the checks."""
        return {"reference": self.args.reference_name(), "targets": self.args.target_labels(),
                "reference_spec": self.args.reference, "target_specs": self.args.target_names(),
                "kind": self.plan.kind, "budget_seconds": self.args.budget_seconds(), "strict": self.args.strict,
                "error_rates": ERROR_RATES + (UNTIL_RATES if self.args.until else ""),
                "until": self.args.until, "undecided_exit": self.args.undecided if self.args.until else None,
                "rounds": self.rounds,
                "plan": [{"name": p.name, "kind": p.kind, "size": p.size, "estimated_seconds": round(p.seconds, 1),
                          "seconds": round(self.seconds.get(p.name, 0.0), 1), "options": p.options}
                         for p in self.plan.studies],
                "left_out": self.plan.left_out, "planned_on": self.plan.where(),
                "speeds": {m: None if s is None else {"where": s.where, "texts_per_s": round(s.texts_per_s, 2),
                                                      "tokens_per_s": None if s.tokens_per_s is None
                                                      else round(s.tokens_per_s, 1), "measured": s.measured}
                           for m, s in self.plan.speeds.items()},
                **to_json(self.verdicts, self.checks)}

    def console(self) -> str:
        """The verdicts, one block per target, then each check as pass or fail."""
        lines = []
        for target in self.args.target_labels():
            lines.append(f"{target} against {self.args.reference_name()}:")
            for v in (v for v in self.verdicts if v.target == target):
                lines.append(f"  [{v.study}] {v.sentence}")
                lines += [f"      {s.key}: {s.text()}" for s in v.severity
                          if s.level in ("medium", "major", "differs", "undecided") and s.counted()]
            lines.append(f"  {findings(self.verdicts, target)}")
        if self.checks:
            lines.append("checks" + (" (--fail-under: lower ends of the 95 % intervals)" if self.args.strict else "")
                         + ":")
            lines += [f"  {c.text()}" for c in self.checks]
            lines.append(self._checks_passed())
        if self.args.until and self.undecided():
            lines.append(f"undecided when the budget ended: {', '.join(self.undecided())} (--undecided "
                         f"{self.args.undecided}: {'exit 1' if self.args.undecided == 'fail' else 'the checks decide'})")
        if len(self.args.target_labels()) > 1:
            lines.append("worst first:")
            lines += [f"  {line}" for line in self.worst_first()]
        return "\n".join(lines)

    def table(self) -> str:
        """One line per estimate of a target: its study, measure, estimate with its 95 % interval,
        n and the level of its finding (what ``to_pandas()`` holds, as text)."""
        rows = [self.COLUMNS, *self._cells()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self.COLUMNS))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)

    def _repr_html_(self) -> str:
        """The verdicts as a notebook shows them: each target's findings, then its estimates."""
        from html import escape

        parts = [f"<p><b>{escape(', '.join(self.args.target_labels()))}</b> against "
                 f"<b>{escape(self.args.reference_name())}</b>: "
                 + escape(self._checks_passed(which=True) if self.checks else "no checks") + "</p>"]
        parts.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in self.worst_first()) + "</ul>")
        parts += [f"<p>{escape(t)}: {escape(findings(self.verdicts, t))}</p>" for t in self.args.target_labels()]
        head = "".join(f"<th>{escape(h)}</th>" for h in self.COLUMNS)
        rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in self._cells())
        return "".join(parts) + f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"

    def undecided(self) -> list[str]:
        """The counted findings still undecided, as ``target: key``."""
        return [f"{v.target}: {s.key}" for v in self.verdicts for s in v.severity
                if s.counted() and s.level == "undecided"]

    def exit_code(self) -> int:
        """The command's exit status: 1 when a check failed, or with ``--undecided fail`` when a
        finding is still undecided; else 0."""
        if self.args.until and self.args.undecided == "fail" and self.undecided():
            return 1
        return 0 if self.passed else 1

    def save(self, out: str | Path) -> list[Path]:
        """Write each study's files in ``out/<study>`` (with its manifest; already there when
        ``out`` is where the comparison ran), ``compare.json`` and ``report.html`` (the verdicts
        first), all or none; returns the paths written."""
        out = Path(out)
        if self._saved is not None and self._saved[0] == out.resolve():
            return list(self._saved[1])  # saved there already (a comparison kept for a history)
        obj = json.loads(json.dumps(self.to_json(), default=str))
        title = f"perturblab compare: {', '.join(self.args.target_names())} against {self.args.reference}"
        here = self.out is not None and out.resolve() == Path(self.out).resolve()
        with tempfile.TemporaryDirectory() as tmp:
            staged = Path(tmp)  # the studies' files, written whole before the report reads them
            if not here:
                for p in self.plan.studies:
                    if p.name in self.results:
                        atomic_write_text(staged / p.name / MANIFEST, p.manifest(finished=True))
                        self.results[p.name].save(staged / p.name)
            html = render_report(out if here else staged, title=title, compare=obj, source=str(out))
            with all_or_nothing():
                paths = [atomic_write_bytes(out / f.relative_to(staged), f.read_bytes())
                         for f in sorted(staged.rglob("*")) if f.is_file()]
                paths.append(atomic_write_text(out / COMPARE_FILE, json.dumps(obj, indent=2)))
                paths.append(atomic_write_bytes(out / "report.html", html.encode("utf-8")))
        self._saved = (out.resolve(), list(paths))
        return paths

    save._all_or_nothing = True  # type: ignore[attr-defined]  # its own: the report reads the staged files


class Compare(Study):
    """Compare ``targets`` (a comma list, or a list) with ``reference``: run the studies their
    kind supports, sized to ``budget``, each into ``out/<study>`` through the one entry (a re-run,
    or one with a larger budget, reads back what is stored and computes the rest), and
    return the verdict of each target; ``.save(out)`` writes ``compare.json``, the studies' files
    and the report, whose top is the verdicts (the command saves them itself). ``equivalent``
    (``["agreement=0.05"]``) passes only targets shown within the margin of the reference;
    ``detect`` sizes each study to detect a difference of that size (docs/compare.md). ``out``
    keeps the studies' stores (``None``: a temporary directory); ``device=`` and ``dtype=`` place
    every model it loads (``--device`` / ``--dtype``). The models are given as specs (names,
    directories, hub ids): every study of the comparison loads them itself.

    Example: the plan of a comparison (which studies, at which sizes; nothing runs)::

        >>> from perturblab.studies.compare.plan import make_plan
        >>> plan = make_plan(CompareArgs(reference="tfidf-lr", targets="minilm-l3", budget="2m", out=None))
        >>> plan.kind, [(p.name, p.kind) for p in plan.studies]
        ('classifier', [('invariances', 'scope'), ('robustness', 'robustness')])
        >>> plan.left_out  # a bag of words has no layers to compare
        ["layers: tfidf-lr exposes no hidden states (so no target's layers are compared)"]

    and the comparison itself (not run here: it runs for about the budget)::

        >>> import perturblab as pl
        >>> r = pl.compare("minilm-l6", "minilm-l6-int8,minilm-l3", out="out/cmp",
        ...                fail_under=["hard_scope:typo=0.9"])  # doctest: +SKIP
        >>> r.passed, [c.key for c in r.checks if not c.passed]  # doctest: +SKIP
        >>> r.save("out/cmp")  # doctest: +SKIP

    (It runs other studies, each through :func:`~perturblab.core.entry.run_saved`, and is never
    built itself: :meth:`call` is the comparison.)
    """

    command = "compare"
    help = ("how models differ from the one you trust: the studies their kind supports, verdicts with intervals, and "
            "thresholds for CI")
    Args = CompareArgs
    Result = CompareResult

    @classmethod
    def call(cls, args: CompareArgs, inputs: Inputs) -> CompareResult:
        from ...models.resolve import shared_loads

        if inputs.models:
            raise InputError(f"compare takes model specs (names, directories, hub ids), not objects: give "
                             f"{', '.join(repr(n) for n in inputs.models)} as specs; each study of the comparison "
                             "loads them itself")
        other = [f for f in inputs.data if f != "data"]
        if other:
            raise InputError(f"{option_name(other[0])}: give a corpus name or a file, not a "
                             f"{type(inputs.data[other[0]]).__name__} object")
        if "data" in inputs.data:  # a DataFrame or a Dataset
            args = replace(args, data=str(data_file(inputs.data["data"])))
            args.check()  # its columns, as a file's are checked
        if args.history:  # a history that cannot be written, or a label stored with other models: refused first
            from ...history.store import check_labels

            notes = check_labels(args.history, {args.release or "": dict(zip(args.target_labels(),
                                                                             args.target_names()))})
            if not args.quiet:
                for note in notes:
                    log.info(note)
        if args.mlflow:  # and a tracking store that cannot be opened, before any model is loaded
            from .tracker import experiment_id

            experiment_id(args.mlflow)
        executor = inputs.executor or args.executor
        with shared_loads():  # each model loaded once: for its timing and for every study
            # the executor first: a cluster that cannot be reached is refused before any model is timed
            with workspace(inputs.out, executor, address=args.address, num_cpus=args.num_cpus) as (where, ex):
                cluster = ex.cluster() if getattr(ex, "address", None) else None  # joined: sized for its CPUs
                with placement(*args.placement()):  # each model timed where it will run, before any directory
                    plan = make_plan(args, measure=True, cluster=cluster)
                result = run_compare(replace(args, out=str(where)), plan, executor=ex)
                if args.history or args.mlflow:
                    record(result, saved=inputs.out is not None)
                return result


class Demo(Compare):
    """The ``demo`` command: :class:`Compare` with its defaults (MiniLM-L6 against its int8 copy
    and MiniLM-L3 on packaged data, until the findings are decided or about five minutes)."""

    command = "demo"
    function = "compare"
    help = ("compare MiniLM-L6 with its int8 copy and MiniLM-L3 on packaged data until its findings are decided, in at "
            "most about five minutes: a verdict and its report")
    defaults = dict(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3", budget="5m", until="decided",
                    out="out/demo")
    config = False


def data_file(data: Any) -> Path:
    """A pandas DataFrame (its columns as they are) or a :class:`~perturblab.data.Dataset`
    (columns ``text``, ``text_b`` for pairs, ``label`` by name) as a JSON Lines file in the cache
    directory, named by the digest of its content: every study of the comparison reads it as
    ``--data`` does a file, and the same frame gives the same file, so a re-run reads its results
    back and a changed frame is a new data set. Anything else is an :class:`InputError`."""
    import hashlib

    from ...data.examples import Dataset
    from ...errors import InputError
    from ...paths import cache_dir

    if isinstance(data, Dataset):
        names = data.label_names
        rows = [{"text": e.text, **({"text_b": e.text_b} if e.text_b is not None else {}),
                 **({"label": names[int(e.label)] if names else e.label} if e.label is not None else {})}
                for e in data.examples]
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    elif hasattr(data, "to_json") and hasattr(data, "columns"):  # a pandas DataFrame
        frame = data.rename(columns=str)
        if frame.columns.duplicated().any():
            raise InputError(f"data: the DataFrame repeats the column(s) "
                             f"{sorted(set(frame.columns[frame.columns.duplicated()]))}; give each column one name")
        text = frame.to_json(orient="records", lines=True, force_ascii=False)
        text = text if text.endswith("\n") else text + "\n"
    else:
        raise InputError(f"data: give a data set name, a file path, a pandas DataFrame or a perturblab Dataset, not "
                         f"{type(data).__name__}")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = cache_dir() / "frames" / f"data-{digest}.jsonl"
    if not path.is_file():
        atomic_write_text(path, text)
    return path


def record(result: CompareResult, *, saved: bool) -> None:
    """Append ``result`` to its ``--history`` and log it to ``--mlflow``, after saving its files
    into its directory when that is kept (``saved``: the history links its report, MLflow logs
    ``compare.json`` and the report); in a temporary directory the history holds no report. The
    line naming the release appended and the MLflow run is logged (INFO) under ``quiet`` too: it
    is a result, not progress; a release not appended for a conflict is a
    :class:`~perturblab.history.store.ReleaseConflictWarning`."""
    from .release import compare_release
    from ...models.resolve import loaded_fingerprints

    args = result.args
    out = Path(result.out) if result.out is not None else None
    if out is not None:
        result.save(out)
    report = str((out / "report.html").resolve()) if saved and out is not None else None
    role = "classifier" if result.plan.kind == CLASSIFIER else "language_model"  # the studies' role, always loaded
    fingerprints = {spec: loaded_fingerprints(spec, role) for spec in [args.reference or "", *args.target_names()]}
    if args.history:
        from ...history.store import ReleaseConflictWarning, append_releases

        release = compare_release(result, args.release or "", fingerprints=fingerprints, report=report)
        (added,), conflicts = append_releases(args.history, [release])
        for conflict in conflicts:
            warn(conflict, ReleaseConflictWarning)
        if not conflicts:  # a result, not progress: said under --quiet too (a CI log keeps it); no password
            log.info(f"history: release {release.label} {'appended to' if added else 'stored already in'} "
                     f"{hide_password(args.history)}" + ("" if added else "; nothing added"))
    if args.mlflow:
        from .tracker import log_compare

        run_id = log_compare(args.mlflow, result, out, fingerprints=fingerprints)
        log.info(f"mlflow: run {run_id} at {hide_password(args.mlflow)}")  # a result: under --quiet too


def what_would_decide(result: CompareResult) -> None:
    """Set :attr:`~.severity.Severity.decide` of each counted undecided rate finding: the samples
    its study would need for its interval to lie within one level if its rate stayed what it is
    (:func:`~.severity.n_to_decide`, the finding's examples scaled to the study's samples), how
    many more than this run's, and about how long they take at this run's pace (the plan's
    seconds a sample times what the study took over its plan); or why no size of the study can
    (beyond what the data holds or the study's largest useful size, or a rate on a threshold)."""
    from .severity import n_to_decide

    planned = {p.name: p for p in result.plan.studies}
    for v in result.verdicts:
        p = planned.get(v.study)
        if p is None or not p.count:
            continue
        pace = result.seconds.get(p.name, p.seconds) / p.seconds if p.seconds else 1.0
        for s in v.severity:
            if s.level != "undecided" or not s.counted() or s.score or not s.n:
                continue
            need = n_to_decide(s, v.kind)
            if need is None:
                s.decide = {"held": "no size decides it while its rate stays on a level's threshold"}
                continue
            samples = math.ceil(p.count * need / s.n - 1e-9)
            if p.most and samples > p.most:
                s.decide = {"n": need, "samples": samples,
                            "held": f"it would take {p.size_key.replace('_', '-')} = {samples}, but {p.most_why}"}
                continue
            more = samples - p.count
            s.decide = {"n": need, "samples": samples, "more": more,
                        "seconds": round(more * p.per_sample * pace, 1) if p.per_sample else None}


def stale_report_removed(out: Path) -> None:
    """Remove the report and ``compare.json`` an earlier comparison left in ``out`` before this one
    runs its first study: a run that then fails (or is stopped) leaves no report of other options
    looking current; the studies' stores stay, so a re-run reads back what they hold and writes
    both anew."""
    for name in (COMPARE_FILE, "report.html"):
        try:
            (out / name).unlink()
        except FileNotFoundError:
            pass


def run_compare(args: CompareArgs, plan: Plan, executor: Any = None) -> CompareResult:
    """The comparison of checked options: each study of ``plan`` run and saved into
    ``args.out/<study>``, then the verdicts and checks. ``executor`` (an object; None: each study
    runs its cells here) runs the cells of the studies that take one (:func:`on_executor`)."""

    out = check_out(args.out)
    notes = [n for n in (check_range(m, v) for m, v in args.threshold_list()) if n]
    plan.note_stored(out)
    if not args.quiet:
        log.info(plan.table())  # its warnings among its lines
        for n in notes:
            log.info(n)
    else:  # what a CI log needs even when quiet: the plan's warnings (a gate that cannot pass)
        for n in plan.notes:
            if n.startswith("warning:"):
                warn(n.removeprefix("warning: "), PlanWarning)
    result = CompareResult(args, plan, out=out)
    result.executor = executor
    if executor is not None and executor.name != "local" and not args.quiet:
        log.info(executor_line(executor, plan))
    planned = {p.name: p.study_args(out / p.name, args.quiet) for p in plan.studies}
    for options in planned.values():  # every study's options refused, if at all, before the first one runs
        options.check()
    with output_lock(out, name=".compare.lock", what="the comparison"), placement(*args.placement()):
        stale_report_removed(out)
        started = time.time()
        for group in at_once(plan.studies, executor):
            run_together(result, group, planned)
        judge(result)
        if args.until:
            run_rounds(result, planned, started, run_planned, judge)
    return result


def run_together(result: CompareResult, group: list[Any], planned: dict[str, Any]) -> None:
    """Run the planned studies of ``group`` (:func:`~.cluster.at_once`): one in this thread, several
    at once, each in a thread of its own waiting on its cells on the executor; a study that fails
    fails the comparison once all have stopped (what the others stored stays). Interrupted
    (Ctrl-C, SIGTERM), it raises at once: the studies' threads end with the process, as a killed
    run's work does, and the same command resumes from what they stored."""
    if len(group) == 1:
        run_planned(result, group[0], planned[group[0].name])
        return
    import contextvars
    import threading

    before = dict(getattr(result.executor, "cells_by_node", {}))
    failed: dict[str, BaseException] = {}

    def one(p: Any) -> None:
        try:
            run_planned(result, p, planned[p.name], None, False)
        except BaseException as e:  # raised by this thread's caller, once all have stopped
            failed[p.name] = e

    # each study in the comparison's context (its placement, its console); daemon threads, so
    # that an interrupted comparison does not wait for them
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(one, p), daemon=True,
                                name=f"perturblab-study-{p.name}") for p in group]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # in short waits: an interruption is raised here at once
            t.join(0.1)
    for p in group:
        if p.name in failed:
            raise failed[p.name]
    for p in group:  # in the plan's order, whichever finished first
        result.results[p.name] = result.results.pop(p.name)
        result.seconds[p.name] = result.seconds.pop(p.name)
    _cells_line(result, ", ".join(p.name for p in group), before)


def run_planned(result: CompareResult, p: Any, options: Any, planned: float | None = None,
                nodes: bool = True) -> None:
    """Run study ``p`` of the plan with its checked ``options`` into its folder (what its store
    holds is read back, the rest computed), its manifest saying whether it finished; ``planned``:
    the seconds planned for this run (a round's new samples), else the study's; ``nodes``: say
    how many cells ran on each Ray node (not for studies run at once: their group says it)."""
    from ...studies.registry import entry

    args, out = result.args, Path(result.out)
    sdir = out / p.name
    sdir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(sdir / MANIFEST, p.manifest())
    t0 = time.time()
    before = dict(getattr(result.executor, "cells_by_node", {}))
    with named_by(p.name):  # its bars and lines say which study they belong to
        res, _ = run_saved(entry(p.kind).study, options, out=sdir, what=f"study {p.name}",
                           executor=result.executor, prefix=f"{p.name}: ")
    took = time.time() - t0
    if nodes:
        _cells_line(result, p.name, before)
    result.seconds[p.name] = result.seconds.get(p.name, 0.0) + took
    result.results[p.name] = res
    atomic_write_text(sdir / MANIFEST, p.manifest(finished=True))
    if not args.quiet:
        log.info(f"{p.name}: done in {took:.0f} s (planned ~{p.seconds if planned is None else planned:.0f} s)")


def _cells_line(result: CompareResult, names: str, before: dict[str, int]) -> None:
    """Say how many cells the studies ``names`` ran on each Ray node (since ``before``)."""
    ran = {n: c - before.get(n, 0) for n, c in getattr(result.executor, "cells_by_node", {}).items()
           if c > before.get(n, 0)}
    if ran and not result.args.quiet:
        log.info(f"{names}: {sum(ran.values())} cells on {len(ran)} Ray node{'s' if len(ran) > 1 else ''}: "
                 + ", ".join(f"{n} {c}" for n, c in sorted(ran.items())))


def judge(result: CompareResult) -> None:
    """The verdicts and checks of what the studies of ``result`` hold now (anew at each round)."""
    args = result.args
    reference, targets = args.reference_name(), args.target_labels()
    mine: dict[str, list] = {t: [] for t in targets}
    theirs: dict[str, Any] = {}
    result.verdicts = []
    headlines = {name: h for name, h in ((n, r.headline()) for n, r in result.results.items()) if h is not None}
    notes = pool_flags(headlines, reference)  # a flag rests on all the run's evidence
    for name, headline in headlines.items():
        result.verdicts += study_verdicts(name, headline, reference, targets, result.results[name])
    if args.until:  # the estimates the sentences and checks show: confidence sequences where they have one
        for v in result.verdicts:
            v.estimates = [anytime_estimate(e) for e in v.estimates]
    grade(result.verdicts, anytime=bool(args.until))  # one family of findings per target, over every study
    what_would_decide(result)
    for v in result.verdicts:
        if (v.study, v.target) in notes:
            v.sentence += " " + notes[(v.study, v.target)]
        mine[v.target] += [(v.study, e) for e in v.estimates]
        theirs.update({e.key: e for e in v.reference})
    result.checks = (run_checks(mine, args.threshold_list(), args.strict)
                     + run_equivalence(mine, theirs, args.margin_list()))
    result.rows = result._rows()
