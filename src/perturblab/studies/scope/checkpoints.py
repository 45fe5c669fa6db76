"""Training dynamics of shared invariances: SCoPE over a sequence of checkpoints (App. D, Figs. 9-10).

Given checkpoints m_0, ..., m_T of one training run (in training order), the study runs the
shared-invariance study of :mod:`.scope` (reused, not re-implemented: perturbations by the
greedy search of Eq. 1, Gap in IID accuracy, IID/OOD agreement, Hard-SCoPE Eq. 2 and
Soft-SCoPE Eq. 3) for two families of pairs:

* ``vs_final`` — reference m_T (the final checkpoint), target every m_t, the final one
  included (a model against itself scores Hard = Soft-SCoPE = 1): Fig. 9 and Fig. 10 (left);
* ``vs_previous`` — reference m_{t-1}, target m_t for t >= 1: Fig. 10 (right).

Searches depend only on the reference, so there is one :class:`~.study.ScopeStudy` per
reference (the final checkpoint's covers every target); all of them share one output directory
(held by one lock for the whole run) and its results store, where every search is keyed on the
reference's fingerprint and the sample's content: a re-run resumes, and other weights under the
same names are searched and scored afresh. ``checkpoints.json`` records every checkpoint's
fingerprint.

:func:`finetune_checkpoints` makes such a sequence by fine-tuning a packaged encoder with
intermediate checkpoints (cached under the data home); the paper instead uses pre-training
checkpoints with a trained linear probe.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ...core.boundary import Inputs
from ...core.files import atomic_write_text, write_json
from ...core.headline import Headline
from ...core.keys import model_fingerprint
from ...core.study import Phase, RunContext, Study, StudyResult
from ...data.examples import Dataset
from ...errors import InputError, warn
from ...measures.scope import METRICS
from ...models.base import Classifier
from ...models.checkpoints import list_checkpoints, read_checkpoint_meta
from ...models.finetune import FinetuneConfig
from ..inputs import search_splits
from ..names import items
from .analysis import summarise
from .config import COMPARISONS, CheckpointsArgs
from .study import ScopeStudy
from .tables import FLAG_LEGEND

if TYPE_CHECKING:  # pragma: no cover
    from ...history.release import Release

log = logging.getLogger(__name__)
DEFAULT_FRACTIONS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
MANIFEST = "checkpoints.json"


@dataclass
class Checkpoint:
    """One checkpoint m_t: a name, a classifier (or a directory loadable by
    :class:`~perturblab.models.hf.HFSequenceClassifier`) and, when known, its percent of training."""

    name: str
    model: Classifier | str | Path
    percent: float | None = None

    @property
    def fingerprint(self) -> str:
        """What its weights are: its classifier's fingerprint, or for a directory the fingerprint
        of the weight files and configuration in it. A directory that does not exist or holds
        none of these is an :class:`InputError`."""
        if not isinstance(self.model, (str, Path)):
            return model_fingerprint(self.model)
        path = Path(self.model).expanduser()
        if not path.is_dir():
            raise InputError(f"checkpoint {self.name!r}: {str(self.model)!r} is not a directory")
        from ...models.hf import _files_fingerprint

        found = _files_fingerprint(str(path))
        if found is None:
            raise InputError(f"checkpoint {self.name!r}: {str(self.model)!r} holds no model (config.json, *.safetensors "
                             "or *.bin); give directories written by save_pretrained")
        return found


def checkpoints_from_dirs(dirs: Sequence[str | Path]) -> list[Checkpoint]:
    """Checkpoints from model directories, in the given order; a single directory holding
    ``checkpoint-*`` subdirectories (a fine-tune with checkpoints) stands for those, in training
    order. Names are directory names (full paths where two coincide); percents come from
    ``perturblab_checkpoint.json`` when present."""
    paths = [Path(d).expanduser() for d in dirs]
    for d, p in zip(dirs, paths):
        if not p.is_dir():
            raise InputError(f"checkpoint {str(d)!r} is not a directory; give model directories written by "
                             "save_pretrained (e.g. the checkpoint-* directories of a fine-tune)")
    if len(paths) == 1:
        paths = list_checkpoints(paths[0]) or paths
    names = [p.name for p in paths]
    return [_dir_checkpoint(p, name if names.count(name) == 1 else str(p)) for p, name in zip(paths, names)]


def _dir_checkpoint(path: Path, name: str | None = None) -> Checkpoint:
    path = Path(path).expanduser()
    if not path.is_dir():
        raise InputError(f"checkpoint {str(path)!r} is not a directory")
    meta = read_checkpoint_meta(path) or {}
    pct = 100.0 * meta["fraction"] if isinstance(meta.get("fraction"), (int, float)) else None
    return Checkpoint(name or path.name, path, pct)


def finetune_checkpoints(base: str, train: Dataset, *, seed: int = 0,
                         fractions: Sequence[float] = DEFAULT_FRACTIONS,
                         config: FinetuneConfig = FinetuneConfig(epochs=1, max_seconds=300.0),
                         progress: bool = True) -> list[Checkpoint]:
    """Fine-tune encoder ``base`` (a preset such as ``minilm-l3``, or a local directory) on
    ``train`` with checkpoints at ``fractions`` of the steps (0 = initialised model, random head),
    cached under ``data_home()/finetuned`` like :func:`~perturblab.models.finetune.load_or_finetune`;
    returns them in training order."""
    from ...models.checkpoints import check_fractions
    from ...models.finetune import load_or_finetune
    from ..robustness.finetuning import finetune_source

    if len(check_fractions(fractions)) < 2:
        raise InputError(f"give at least two checkpoint fractions (e.g. 0,0.5,1), got {list(fractions)}")
    source, tok = finetune_source(base)
    path = load_or_finetune(base, source, train, seed=seed, tokenizer=tok, config=config, progress=progress,
                            checkpoints=fractions)
    found = list_checkpoints(path)
    if len(found) < 2:
        raise InputError(f"the fine-tune in {path} has {len(found)} checkpoint(s); give at least two fractions")
    return [_dir_checkpoint(c, f"{Path(base).name}-{c.name}") for c in found]


class CheckpointStudy(Study):
    """Shared invariances over the checkpoints of one training run (SCoPE App. D; the
    ``checkpoints`` command).

    ``checkpoints`` are in training order, the last the final model: classifier directories (one
    string, comma-separated, or a list; one directory holding ``checkpoint-*`` subdirectories
    stands for those), :class:`~perturblab.studies.scope.checkpoints.Checkpoint` objects or
    classifier objects (named by their ``name``), or ``None`` with ``finetune=BASE`` to fine-tune
    an encoder here with checkpoints at ``fractions``.

    Example (three checkpoints that drift from the final one)::

        >>> import numpy as np, perturblab as pl
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.models import CallableClassifier
        >>> from perturblab.studies.scope.checkpoints import Checkpoint
        >>> def lexicon(weight):
        ...     def proba(texts):
        ...         s = np.array([weight * ("good" in t) - 0.5 + 0.1 * len(t) % 1 for t in texts])
        ...         p = 1 / (1 + np.exp(-s))
        ...         return np.stack([1 - p, p], axis=1)
        ...     return proba
        >>> labels = ["negative", "positive"]
        >>> cks = [Checkpoint(f"step{i}", CallableClassifier(lexicon(w), labels, name=f"step{i}"), 50.0 * i)
        ...        for i, w in enumerate([0.2, 1.0, 3.0])]
        >>> texts = ["a good film", "a bad film", "good acting here", "the plot was weak", "a good story"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 4], labels)
        >>> res = pl.checkpoints(cks, capabilities="typo", data=data, n=4, trials=1, quiet=True)
        >>> [(r["comparison"], r["checkpoint"]) for r in res.rows][:3]
        [('vs_final', 'step0'), ('vs_final', 'step1'), ('vs_final', 'step2')]
        >>> res.rows[2]["hard_scope"]  # the final checkpoint against itself
        1.0

    (The study: one :class:`~.study.ScopeStudy` per reference of the plan (:meth:`plan`), their
    phases run in turn as this study's, in one run of one output directory. ``checkpoints`` are
    :class:`Checkpoint` objects or directories; ``splits`` gives (train, test) directly (default:
    ``args.data`` split like the SCoPE study); ``cache`` scores the checkpoints as float32
    behind a prediction cache in each cell, as models loaded by name are; their predictions are
    stored in the results store.)
    """

    name = command = "checkpoints"
    help = "shared invariances over training checkpoints (SCoPE App. D, Figs. 9-10)"
    Args = CheckpointsArgs

    @classmethod
    def of(cls, args: CheckpointsArgs, inputs: Inputs) -> "CheckpointStudy":
        """The study of the checkpoints ``args`` names (directories, or ready objects by name in
        ``inputs``), or of those a fine-tune of ``args.finetune`` saves here."""
        splits = search_splits(inputs.data.get("data", args.data), text_column=args.text_column,
                               text_fields=args.text_fields, label_column=args.label_column,
                               perturb_field=args.perturb_field, seed=args.seed, test_size=args.test_size)
        if args.finetune is not None:
            if inputs.model(args.finetune) is not None:
                raise InputError("--finetune: give the encoder to fine-tune here as a preset name (e.g. minilm-l3) "
                                 "or a local directory, not a model object")
            train = splits[0] if args.n_train is None else splits[0].sample(args.n_train, seed=args.seed)
            ft = FinetuneConfig(epochs=args.epochs, max_seconds=args.max_seconds, lr=args.lr)
            cks: list[Any] = finetune_checkpoints(args.finetune, train, seed=args.seed,
                                                  fractions=[float(x) for x in items(args.fractions)], config=ft,
                                                  progress=not args.quiet)
        else:
            listed = items(args.checkpoints)
            given = [inputs.model(c) for c in listed]
            if all(m is None for m in given):
                cks = checkpoints_from_dirs(listed)
            else:  # directories beside objects are one checkpoint each; the options name no directories
                cks = [c if m is None else m if isinstance(m, Checkpoint) else Checkpoint(c, m)
                       for c, m in zip(listed, given)]
                args = replace(args, checkpoints=None)
        return cls(args, cks, splits=splits, progress=not args.quiet)

    @classmethod
    def call(cls, args: CheckpointsArgs, inputs: Inputs) -> "CheckpointResult":
        """Run the study (:meth:`of`) and, with ``history``, append each checkpoint to it as a
        release ``<release>/<checkpoint>``: a label stored with other checkpoints is refused
        before any work."""
        if (args.checkpoints is None) == (args.finetune is None):
            raise InputError("give either checkpoints (--checkpoints DIR,DIR,...) or a model to fine-tune "
                             "(--finetune BASE), not both and not neither")
        study = cls.of(args, inputs)
        if args.history:
            from ...history.store import check_labels

            check_labels(args.history, {f"{args.release}/{c.name}": {comp: c.name for comp in args.comparison_list()
                                                                      if comp == "vs_final" or i > 0}
                                        for i, c in enumerate(study.checkpoints)})
        result = inputs.run(study, args)
        if args.history:
            from ...history.store import ReleaseConflictWarning, append_releases

            added, conflicts = append_releases(args.history,
                                               result.releases(args.release or "", args.study_options()))
            for c in conflicts:
                warn(c, ReleaseConflictWarning)
            if not args.quiet:
                from ...core.faults import hide_password

                log.info(f"history: {sum(added)} of {len(added)} checkpoints appended to "
                         f"{hide_password(args.history)} as {args.release}/<checkpoint>")
        return result

    def __init__(self, args: CheckpointsArgs, checkpoints: Sequence[Checkpoint | str | Path],
                 splits: tuple[Dataset, Dataset] | None = None, progress: bool = True, cache: bool = True):
        if all(not isinstance(c, Checkpoint) for c in checkpoints):
            self.checkpoints = checkpoints_from_dirs(checkpoints)
        else:
            self.checkpoints = [c if isinstance(c, Checkpoint) else _dir_checkpoint(Path(c))
                                for c in checkpoints]
        if len(self.checkpoints) < 2:
            raise InputError(f"give at least 2 checkpoints in training order, got {len(self.checkpoints)}")
        names = [c.name for c in self.checkpoints]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InputError(f"checkpoint names must be unique, {dupes} appear twice")
        self.args, self.comparisons = args, args.comparison_list()
        self.progress, self.cache = progress, cache
        self._splits = splits
        self._models: dict[str, Classifier] | None = None
        self._studies: list[ScopeStudy] = []

    # -- set-up ------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.checkpoints]

    @property
    def final(self) -> str:
        return self.checkpoints[-1].name

    def splits(self) -> tuple[Dataset, Dataset]:
        if self._splits is None:
            from ...data.loaders import load_dataset, train_test_split

            ds = load_dataset(self.args.data)
            self._splits = train_test_split(ds, test_size=self.args.test_size, seed=self.args.seed)
        return self._splits

    def plan(self) -> dict[str, list[tuple[str, str]]]:
        """reference -> [(target, comparison)]: one SCoPE study (one set of searches) per reference."""
        plan: dict[str, list[tuple[str, str]]] = {}
        if "vs_final" in self.comparisons:
            plan[self.final] = [(n, "vs_final") for n in self.names]
        if "vs_previous" in self.comparisons:
            for prev, cur in zip(self.names, self.names[1:]):
                plan.setdefault(prev, []).append((cur, "vs_previous"))
        return plan

    def models(self, out: Path) -> dict[str, Classifier]:
        """The checkpoints' classifiers (loaded once), after
        checking they share one label set."""
        if self._models is None:
            from ...models.cache import CachedClassifier
            from ...models.hf import HFSequenceClassifier

            models: dict[str, Classifier] = {}
            for c in self.checkpoints:
                m = c.model
                if isinstance(m, (str, Path)):
                    if not Path(m).expanduser().is_dir():
                        raise InputError(f"checkpoint {c.name!r}: {str(m)!r} is not a directory")
                    m = HFSequenceClassifier(Path(m).expanduser(), name=c.name)
                models[c.name] = CachedClassifier(m) if self.cache else m
            self._check_labels(models)
            self._models = models
        return self._models

    def _check_labels(self, models: Mapping[str, Classifier]) -> None:
        first = list(models[self.names[0]].labels)
        differ = {n: list(m.labels) for n, m in models.items() if list(m.labels) != first}
        if differ:
            raise InputError(f"checkpoints must share one label set; {self.names[0]!r} has {first} but "
                             + ", ".join(f"{n!r} has {ls}" for n, ls in differ.items()))
        names = list(self.splits()[1].label_names)
        if names and len(names) != len(first):
            raise InputError(f"the data has {len(names)} classes {names} but the checkpoints {len(first)} {first}")
        if names and names != first:
            log.warning("checkpoint labels %s differ in name from the data's %s; matching them by index",
                        first, names)

    def manifest(self, models: Mapping[str, Classifier]) -> dict[str, Any]:
        """What ``checkpoints.json`` records: every checkpoint's position, percent, source and
        fingerprint, and the test data's fingerprint."""
        from ...models.presets import data_fingerprint

        return {"models": {n: m.fingerprint for n, m in models.items()},
                "data": {self.args.data: data_fingerprint(self.splits()[1])},
                "checkpoints": [{"name": c.name, "position": i, "percent": c.percent,
                                 "source": str(c.model) if isinstance(c.model, (str, Path)) else None,
                                 "fingerprint": models[c.name].fingerprint} for i, c in enumerate(self.checkpoints)]}

    # -- the study protocol --------------------------------------------------------------
    def check(self) -> None:
        """An ``n`` larger than the test split fails before a checkpoint is loaded or a file written."""
        from ..inputs import sample_size

        sample_size(self.args.n, len(self.splits()[1]), "base samples (the test split's size)")

    def prepare(self, ctx: RunContext) -> None:
        models, splits = self.models(ctx.out), self.splits()
        self._manifest = self.manifest(models)
        self._plan, self._studies = self.plan(), []
        for ref, pairs in self._plan.items():
            targets = list(dict.fromkeys(t for t, _ in pairs))
            study = ScopeStudy(self.args.scope_args(ref, targets), models={n: models[n] for n in [ref, *targets]},
                               splits=splits, progress=self.progress)
            study.prepare(ctx)
            self._studies.append(study)

    def identity(self) -> dict[str, Any]:
        return {"options": self.args.study_options(), "checkpoints": self._manifest,
                "scope": [s.identity() for s in self._studies]}

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        for study in self._studies:
            log.debug("SCoPE with reference %s: %d target(s)", study.reference, len(study.targets))
            yield from study.phases(ctx)

    def finish(self, ctx: RunContext) -> "CheckpointResult":
        results = [study.finish(ctx) for study in self._studies]
        scope_rows = [r for res in results for r in res.rows]
        outcomes: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
        for study, res in zip(self._studies, results):  # each checkpoint's per-example terms, per comparison
            for target, comparison in self._plan.get(study.reference, []):
                outcomes[(target, comparison)] = {key: terms for (t, key), terms in res.outcomes().items()
                                                  if t == target}
        return CheckpointResult(self.rows(scope_rows, self._plan), scope_rows, self._manifest, outcomes)

    def rows(self, scope_rows: Sequence[dict[str, Any]], plan: Mapping[str, list[tuple[str, str]]]
             ) -> list[dict[str, Any]]:
        """One row per (checkpoint, comparison, capability): the summary over trials of the
        SCoPE rows (mean, ``<metric>_se``) and every trial's bootstrap interval of Hard/Soft-SCoPE."""
        pos = {n: i for i, n in enumerate(self.names)}
        pct = {c.name: c.percent for c in self.checkpoints}
        out = []
        for s in summarise(scope_rows, counts=("n_perturbed", "n_ref_invariant")):
            trials = [r for r in scope_rows if (r["reference"], r["target"], r["capability"])
                      == (s["reference"], s["target"], s["capability"])]
            for target, comparison in plan.get(s["reference"], []):
                if target != s["target"]:
                    continue
                row = {"checkpoint": target, "position": pos[target], "percent": pct[target],
                       "comparison": comparison, "reference": s["reference"],
                       "reference_position": pos[s["reference"]], **{k: v for k, v in s.items()
                                                                     if k not in ("reference", "target")}}
                for m in ("hard_scope", "soft_scope"):
                    row[m + "_ci_trials"] = [r[m + "_ci"] for r in sorted(trials, key=lambda r: r["trial"])]
                out.append(row)
        order = {c: i for i, c in enumerate(COMPARISONS)}
        caps = {c: i for i, c in enumerate(dict.fromkeys(r["capability"] for r in scope_rows))}
        return sorted(out, key=lambda r: (order[r["comparison"]], caps[r["capability"]], r["position"]))


CHECKPOINT_SENTENCE = (
    "How much of its reference's invariances each checkpoint shares (the reference named beside it: the "
    "final checkpoint, or the one before). Hard-SCoPE: of the examples whose prediction the reference keeps "
    "under the perturbation it is least sensitive to, the share on which the checkpoint keeps its prediction "
    "too; Soft-SCoPE also counts how far its output moves (0 ≤ Soft ≤ Hard ≤ 1). n: the examples on which "
    "the reference is invariant.")


class CheckpointResult(StudyResult):
    """The result of :func:`perturblab.checkpoints`: ``rows`` (one per checkpoint, comparison and
    capability: the summary over trials), ``trials`` (the per-trial SCoPE rows), ``manifest``
    (``checkpoints.json``); :meth:`save` writes the command's files."""

    study = "checkpoints"

    def __init__(self, rows: Sequence[dict[str, Any]], trials: Sequence[dict[str, Any]],
                 manifest: dict[str, Any],
                 outcomes: dict[tuple[str, str], dict[str, dict[str, float]]] | None = None) -> None:
        super().__init__(rows, rows)
        self.trials, self.manifest = list(trials), manifest
        #: (checkpoint, comparison) -> estimate key -> example id -> term (:meth:`releases`)
        self.checkpoint_outcomes = dict(outcomes or {})

    def releases(self, prefix: str, options: Mapping[str, Any]) -> list["Release"]:
        """Each checkpoint as a release of a history (:mod:`perturblab.history`), in training
        order, labelled ``<prefix>/<checkpoint>``: its estimates against the final checkpoint
        (target ``vs_final``) and the one before (``vs_previous``), with their per-example terms,
        so that one trend page draws the training curve beside the releases. ``options``: the
        study's options, which with the final checkpoint's fingerprint make the releases' setup."""
        from ...history.release import Release

        subjects = {f"{r['checkpoint']} (reference {r['reference']})": (r["checkpoint"], r["comparison"])
                    for r in self.rows}
        fps = {c["name"]: c["fingerprint"] for c in self.manifest["checkpoints"]}
        names = [c["name"] for c in self.manifest["checkpoints"]]
        final = names[-1]
        setup = {"kind": "checkpoints", "options": {k: v for k, v in options.items() if k != "checkpoints"},
                 "reference_fingerprints": [fps[final]]}
        by_checkpoint: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for e in self.headline().estimates:
            if e.subject in subjects:
                checkpoint, comparison = subjects[e.subject]
                by_checkpoint[checkpoint].append({"target": comparison, "study": "checkpoints", **e.to_json()})
        out = []
        for name in names:
            comparisons = list(dict.fromkeys(e["target"] for e in by_checkpoint[name]))
            outcomes = {(comp, "checkpoints", key): terms for comp in comparisons
                        for key, terms in self.checkpoint_outcomes.get((name, comp), {}).items()}
            out.append(Release(label=f"{prefix}/{name}", reference=final, setup=setup, kind="checkpoints",
                               models={comp: {"spec": name, "fingerprint": fps[name]} for comp in comparisons},
                               estimates=by_checkpoint[name], outcomes=outcomes))
        return out

    def table(self) -> str:
        """The Markdown tables of ``table.md``."""
        return checkpoint_table(self.rows)

    def console(self) -> str:
        """One line per comparison, capability and checkpoint (the metrics of Figs. 9-10), its
        sizes, and the number of checkpoints, trials and base samples."""
        from .tables import fmt

        lines = [f"{'comparison':12s} {'capability':10s} {'checkpoint':28s} {'%':>6s} {'hard_scope':>14s} "
                 f"{'soft_scope':>14s} {'ood_agreement':>14s}"]
        for r in self.rows:
            pct = "" if r["percent"] is None else f"{r['percent']:.0f}"
            lines.append(f"{r['comparison']:12s} {r['capability']:10s} {r['checkpoint'][-28:]:28s} {pct:>6s} "
                         f"{fmt(r['hard_scope'], r['hard_scope_se']):>14s} "
                         f"{fmt(r['soft_scope'], r['soft_scope_se']):>14s} "
                         f"{fmt(r['ood_agreement'], r['ood_agreement_se']):>14s}"
                         + (f"  {', '.join(r['flags'])}" if r.get("flags") else ""))
        if any(r.get("flags") for r in self.rows):
            lines.append(FLAG_LEGEND)
        sizes = self.sizes()
        trials = max((int(r["trials"]) for r in self.rows), default=0)
        n = max((t["n_base"] for t in self.trials), default=0)
        return "\n".join(lines + ([sizes] if sizes else [])) + (
            f"\n\n{len(self.manifest['checkpoints'])} checkpoints; {trials} trial(s) of n={n}")

    def headline(self) -> Headline:
        """Hard- and Soft-SCoPE of each checkpoint against its reference (the final or the
        previous checkpoint) per capability, with their intervals and n."""
        from .analysis import scope_headline

        return scope_headline(self.trials, "", sentence=CHECKPOINT_SENTENCE, name_references=True)

    def save(self, out: str | Path) -> list[Path]:
        """``results.json``, ``trials.json`` (per-trial SCoPE rows), ``table.md``, ``checkpoints.json``
        and the Fig. 9/10 PNGs, each written atomically."""
        from .plots import metrics_vs_final, soft_scope_panels

        out = Path(out)
        paths = [write_json(out / "results.json", self.rows), write_json(out / "trials.json", self.trials),
                 atomic_write_text(out / "table.md", checkpoint_table(self.rows)),
                 write_json(out / MANIFEST, self.manifest)]
        if any(r["comparison"] == "vs_final" for r in self.rows):
            paths += metrics_vs_final(self.rows, out)
        paths.append(soft_scope_panels(self.rows, out / "checkpoints_soft_scope.png"))
        return paths


def checkpoint_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table per comparison: metric means ± s.e. over trials for every checkpoint and
    capability, with a ``flags`` column and its legend when a checkpoint predicts one class or is at
    chance level (:mod:`perturblab.measures.quality`)."""
    from .tables import fmt

    heads = {"vs_final": "Reference: the final checkpoint (Fig. 9, Fig. 10 left)",
             "vs_previous": "Reference: the previous checkpoint m_{t-1} (Fig. 10 right)"}
    flagged = any(r.get("flags") for r in rows)
    cols = ["checkpoint", "%", "reference", "capability", "n_perturbed", *METRICS] + (["flags"] if flagged else [])
    parts = []
    for comparison in COMPARISONS:
        sel = [r for r in rows if r["comparison"] == comparison]
        if not sel:
            continue
        lines = [f"## {heads[comparison]}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in sel:
            pct = "" if r.get("percent") is None else f"{round(r['percent'], 1):g}"
            cells = [str(r["checkpoint"]), pct, str(r["reference"]), str(r["capability"]), f"{r['n_perturbed']:.0f}"]
            cells += [fmt(r[m], r.get(m + "_se")) for m in METRICS]
            cells += [", ".join(r.get("flags") or [])] if flagged else []
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts + ([FLAG_LEGEND] if flagged else [])) + "\n"


CheckpointStudy.Result = CheckpointResult  # what it returns, declared once the class is defined
