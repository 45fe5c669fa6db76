"""A comparison as a release of a history: its setup, models, estimates and per-example terms."""

from __future__ import annotations

import time
from typing import Any

from ...history.release import Release

#: options of a comparison that do not make two releases incomparable: which model is the target,
#: how long the studies may take (samples are nested: a larger budget holds the smaller one's
#: examples), and the checks
NOT_SETUP = ("targets", "budget", "fail_under", "strict", "equivalent", "detect", "until", "undecided")


def setup_of(args: Any, reference_fingerprints: list[str]) -> dict[str, Any]:
    """What must match for two comparisons to be compared: the reference's spec and
    fingerprint, the kind of release and every option that shapes the studies' examples."""
    options = {k: v for k, v in args.study_options().items() if k not in NOT_SETUP}
    return {"options": options, "reference_fingerprints": list(reference_fingerprints)}


def compare_release(result: Any, label: str, *, fingerprints: dict[str, list[str]] | None = None,
                    report: str | None = None, created: float | None = None) -> Release:
    """Release ``label`` of a finished comparison (a :class:`~.function.CompareResult`): each
    target's estimates (with the level of its finding) and the per-example terms its studies keep
    (:meth:`StudyResult.outcomes`), keyed by the target's name. ``fingerprints``: spec ->
    fingerprints of the models loaded for it."""
    args = result.args
    fingerprints = fingerprints or {}
    specs = dict(zip(args.target_labels(), args.target_names()))
    estimates = []
    for v in result.verdicts:
        levels = {s.key: s.level for s in v.severity}
        for e in v.estimates:
            estimates.append({"target": v.target, "study": v.study, **e.to_json(), "level": levels.get(e.key)})
    outcomes: dict[tuple[str, str, str], dict[str, float]] = {}
    wanted = {(e["target"], e["study"], e["key"]) for e in estimates}
    for study, res in result.results.items():
        for (subject, key), terms in (res.outcomes() if hasattr(res, "outcomes") else {}).items():
            if (subject, study, key) in wanted and terms:
                outcomes[(subject, study, key)] = dict(terms)
    models = {label_: {"spec": spec, "fingerprint": ",".join(fingerprints.get(spec, []))}
              for label_, spec in specs.items()}
    return Release(label=label, reference=args.reference_name(),
                   setup={"kind": result.plan.kind, **setup_of(args, fingerprints.get(args.reference or "", []))},
                   models=models, estimates=estimates, outcomes=outcomes, kind="compare",
                   created=time.time() if created is None else created, report=report)
