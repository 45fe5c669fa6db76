"""The grounding benchmark (Ding et al. 2021) on the study core.

A set S of representations is built from model variants, e.g. MiniLM-L6 fp32, its int8
copy, MiniLM-L3 and fine-tuned copies of MiniLM-L6 with different seeds (``ft:<seed>``).
The functionality f of a representation is the accuracy of a logistic-regression probe
trained on its training-split states and scored on the evaluation split; the reference A is
the member with the best f; every measure is scored by the Spearman ρ and Kendall τ between
|f(A) − f(B)| and d(A, B) over the other members, with 95 % bootstrap intervals (``n_boot``
resamples of the members). Distances are computed on the evaluation split's states.

Benchmarks (``benchmark`` column):

* ``layer_depth`` (Benchmark 1) — S = every layer 1..L of every variant (embeddings left out
  as in the paper; ``include_embeddings`` adds them).
* ``pc_deletion`` (Benchmark 2) — for each layer in ``pc_layers``, S = that layer of every
  variant of the base's depth with the k smallest principal components deleted, k over
  ``pc_fractions`` of the dimension (footnote 8). The probe of a member is trained on the
  training states projected on the same kept components (computed on the evaluation states).

Warm-up tests (Sec. 3), on the ``warmup`` pair of variants (two seeds by default):
``warmup_specificity`` rows (per measure and layer i: the fraction of the other layers of the
same model farther from i than layer i of the other model,
:func:`~perturblab.measures.grounding.layer_specificity`) and ``warmup_detection`` rows (per
measure: the fraction of components that must be deleted before the distance exceeds the seed
baseline d(A_ℓ, B_ℓ), with the probe accuracy there).

Stored work (content-keyed, so a re-run computes only what changed): one cell per member's probe
accuracy (``grounding.probe``), one per distance between two members under one measure
(``grounding.distance``), and the layer × layer matrices of the warm-up pair
(``grounding.warmup``). A probe's key holds its encoder's fingerprint, the training and
evaluation examples as used, the pooling, its layer and deleted components, and the probe's
settings; a distance's and a warm-up matrix's keys hold the same without the training examples,
which they do not read (a larger ``--n-train`` recomputes the probes only).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass, replace
from typing import Any, Hashable, Iterator, Sequence

import numpy as np

from ...core.boundary import Inputs
from ...core.keys import content_key, examples_fingerprint, model_fingerprint
from ...core.study import Phase, RunContext, Study, Task
from ...data.examples import Dataset
from ...errors import InputError
from ...measures.grounding import (detection_threshold, dissimilarity, grounding_benchmark, layer_specificity,
                                   principal_directions)
from ...measures.layerwise import PAIRWISE, resolve_measures, similarity_matrix
from ...measures.similarity import check_cca_size, measure_key
from ...measures.probe import fit_probe
from ...models.finetune import FinetuneConfig
from ...models.states import layer_states
from ..inputs import given_splits, labelled_split
from .config import PC_FRACTIONS, GroundingArgs
from .result import GroundingStudyResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Member:
    """One representation of S: a variant's layer, raw (``pcs=False``) or in its principal
    components with the ``k`` smallest deleted (``pcs=True``; ``k = 0`` keeps them all)."""

    variant: str
    layer: int
    k: int = 0
    pcs: bool = False

    @property
    def name(self) -> str:
        return f"{self.variant}/L{self.layer}" + (f"/-{self.k}pc" if self.k else "")


class GroundingStudy(Study):
    """Which similarity measures track functionality (the ``grounding`` command; Ding et al. 2021,
    Table 1 and the warm-up tests of Figs. 1–2).

    ``variants`` are encoder specs, ``ft:<seed>`` (``base`` fine-tuned on the training split with
    that seed: ``epochs``, ``max_seconds`` of CPU time, learning rate ``lr``; saved under
    ``data_home()/finetuned`` and reused) or encoder objects (``hidden_states``, ``fingerprint``,
    ``name``). ``data`` is a data spec, a :class:`~perturblab.data.Dataset` (split 3:1 and sampled
    to ``n_train`` / ``n_eval``) or a ready ``(train, eval)`` pair. ``out`` keeps the results
    store, so calling again recomputes only what changed (``None``: a temporary directory);
    nothing but the store is written until you call ``.save(dir)``.

    Example (three encoders of two "layers" counting words, on data of your own)::

        >>> import numpy as np
        >>> from perturblab import grounding
        >>> from perturblab.data import Dataset, Example
        >>> class Counts:
        ...     num_layers = 2
        ...     def __init__(self, name, noise):
        ...         self.name, self.noise, self.fingerprint = name, noise, f"doctest-grounding-{name}"
        ...     def hidden_states(self, texts, pooling="mean"):
        ...         rng = np.random.default_rng(len(self.name))
        ...         h = np.array([[t.split().count(w) for w in ("good", "bad", "a", "film")] for t in texts], float)
        ...         h = h + self.noise * rng.normal(size=h.shape)
        ...         return [h.astype(np.float32), (h @ rng.normal(size=(4, 4))).astype(np.float32), (2 * h).astype(np.float32)]
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 10], ["negative", "positive"])
        >>> res = grounding([Counts("clean", 0.0), Counts("noisy", 0.5), Counts("noisier", 2.0)], data=data,
        ...                 n_train=40, n_eval=20, measures="cka,procrustes", pc_layers=[2], n_boot=50, quiet=True)
        >>> sorted({(r["benchmark"], r["measure"]) for r in res.summary})
        [('layer_depth', 'linear_cka'), ('layer_depth', 'procrustes_distance'), ('pc_deletion', 'linear_cka'), ('pc_deletion', 'procrustes_distance')]
        >>> [r["n"] for r in res.summary if r["benchmark"] == "layer_depth"]
        [5, 5]

    (The study: ``encoders`` are ready objects by variant name, the others are loaded, ``ft:<seed>``
    ones fine-tuned with ``finetune``, default :meth:`~.config.GroundingArgs.finetune_config`;
    ``splits`` gives (train, eval) directly, else ``args.data`` is sampled to ``n_train`` /
    ``n_eval``.)
    """

    name = command = "grounding"
    help = "rank correlation of similarity measures with probe accuracy (Table 1)"
    Args = GroundingArgs
    Result = GroundingStudyResult
    example = dict(variants="minilm-l6,minilm-l6-int8,minilm-l3", measures="cka", n_train=40, n_eval=20,
                   pc_layers=[6], pc_fractions=[0.0, 0.5], n_boot=50)

    @classmethod
    def of(cls, args: GroundingArgs, inputs: Inputs) -> "GroundingStudy":
        if args.pc_fractions is None:  # None in Python: the benchmark's fractions
            args = replace(args, pc_fractions=GroundingArgs.value("pc_fractions", PC_FRACTIONS))
        variants = args.variant_names()
        if inputs.model(args.base) is not None and any(v.startswith("ft:") for v in variants):
            raise InputError(f"--base: the ft:<seed> variants fine-tune it, so give it as an encoder spec (a preset, a "
                             f"directory or a hub id), not a {type(inputs.model(args.base)).__name__} object")
        splits = given_splits(inputs.data.get("data"), args.n_train, args.n_eval, args.seed)
        encoders = {v: inputs.models[v] for v in variants if v in inputs.models}
        return cls(args, encoders=encoders, splits=splits, progress=not args.quiet)

    def __init__(self, args: GroundingArgs, *, encoders: dict[str, Any] | None = None,
                 splits: tuple[Dataset, Dataset] | None = None, progress: bool = True,
                 finetune: FinetuneConfig | None = None) -> None:
        self.args, self.progress = args, progress
        self.variants = args.variant_names()
        self.finetune = finetune if finetune is not None else args.finetune_config()
        self.measures = resolve_measures(args.measure_list())
        self._given, self._splits = dict(encoders or {}), splits
        self._states: dict[tuple[str, str], list[np.ndarray]] = {}
        self._pcs: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.RLock()

    # -- set-up ------------------------------------------------------------------------
    def prepare(self, ctx: RunContext) -> None:
        args = self.args
        if self._splits is None:
            with ctx.step("loading the data"):
                self._splits = labelled_split(args.data, args.n_train, args.n_eval, args.seed,
                                              text_fields=args.text_fields, label_column=args.label_column)
        self.train, self.test = self._splits
        loaded: dict[str, Any] = {}
        for v in self.variants:  # ready and loaded encoders first: their widths are checked before any fine-tune
            if v in self._given:
                loaded[v] = self._given[v]
            elif not v.startswith("ft:"):
                from ...models.resolve import load_model

                with ctx.step(f"loading encoder {v}"):
                    loaded[v] = load_model(v, "encoder")
        self._check_cca_sizes(loaded.values())
        for v in self.variants:
            if v not in loaded:
                from ..robustness.finetuning.source import finetuned_encoder

                with ctx.step(f"fine-tuning {args.base} with seed {v[3:]} (or loading it)"):
                    loaded[v] = finetuned_encoder(args.base, self.train, int(v[3:]), self.finetune,
                                                  progress=self.progress)
        self.encoders: dict[str, Any] = {v: loaded[v] for v in self.variants}
        self._check_cca_sizes(self.encoders.values())
        with ctx.step("encoding the evaluation split"):
            self.depth = {v: len(self.states(v, "eval")) for v in self.variants}
        base_depth = self.depth.get(args.base, self.depth[self.variants[0]])
        for layer in args.pc_layers:
            if not 0 <= layer < base_depth:
                raise InputError(f"pc layer {layer} is out of range 0..{base_depth - 1}")
        self.same = [v for v in self.variants if self.depth[v] == base_depth]
        self._fps = {v: model_fingerprint(e) for v, e in self.encoders.items()}
        self._data = [examples_fingerprint(self.train), examples_fingerprint(self.test)]

    def _check_cca_sizes(self, encoders: Any) -> None:
        """Refuse a CCA measure before any encoding when the evaluation split is too small for two
        members of the widest variant (every member is compared with the reference, itself included)."""
        widths = [int(w) for w in (getattr(e, "hidden_size", None) for e in encoders) if w]
        if widths:
            for m in self.measures:
                check_cca_size(m, len(self.test), max(widths), max(widths))

    def identity(self) -> dict[str, Any]:
        opts = {k: v for k, v in self.args.study_options().items() if k != "data"}
        return {"options": opts, "encoders": self._fps, "train": self._data[0], "test": self._data[1]}

    # -- representations -----------------------------------------------------------------
    def states(self, variant: str, split: str) -> list[np.ndarray]:
        """Every layer's pooled states of one variant on the ``train`` or ``eval`` split (read
        through the on-disk state cache, kept in memory for the run)."""
        with self._lock:
            if (variant, split) not in self._states:
                data = self.train if split == "train" else self.test
                self._states[(variant, split)] = layer_states(self.encoders[variant], data.inputs(),
                                                              pooling=self.args.pooling, progress=self.progress)
            return self._states[(variant, split)]

    def member_states(self, m: Member, split: str) -> np.ndarray:
        """The member's states on one split (projected on its kept components for ``pcs``)."""
        x = self.states(m.variant, split)[m.layer]
        if not m.pcs:
            return x
        with self._lock:
            if (m.variant, m.layer) not in self._pcs:
                self._pcs[(m.variant, m.layer)] = principal_directions(self.states(m.variant, "eval")[m.layer])
            mean, dirs = self._pcs[(m.variant, m.layer)]
        return (x - mean) @ dirs[:, : dirs.shape[1] - m.k]

    def pc_rank(self, variant: str, layer: int) -> int:
        """The numerical rank of a variant's layer on the evaluation split."""
        self.member_states(Member(variant, layer, 0, True), "eval")
        return int(self._pcs[(variant, layer)][1].shape[1])

    def member_key(self, m: Member) -> list[Any]:
        """What a member's probe depends on: its states on both splits (the probe trains on one and
        scores the other)."""
        return [self._fps[m.variant], *self._data, self.args.pooling, m.layer, m.pcs, m.k]

    def state_key(self, m: Member) -> list[Any]:
        """What a member's evaluation states depend on (the distances and warm-up matrices read
        only those; the principal directions of PC deletion come from the evaluation split too):
        a larger training sample leaves their cells as they are. A fine-tuned variant's training
        is in its fingerprint."""
        return [self._fps[m.variant], self._data[1], self.args.pooling, m.layer, m.pcs, m.k]

    # -- the work cells ------------------------------------------------------------------
    def accuracy(self, m: Member) -> float:
        """f: the accuracy on the evaluation split of a probe fitted on the training split."""
        probe = fit_probe(self.member_states(m, "train"), self.train.labels, seed=self.args.seed, C=self.args.probe_c)
        return float(probe.accuracy(self.member_states(m, "eval"), self.test.labels))

    def reference_states(self, m: Member) -> np.ndarray:
        """The states of a member on the reference side of a distance: a member with no component
        deleted in its layer's own features (its neurons), as the released code compares the raw
        layer with the deleted copies; a deleted member in its kept-component coordinates (Â_{-k}
        of footnote 8). Only PWCCA's weights read the coordinates; the other measures are
        invariant to this rotation."""
        if m.pcs and m.k == 0:
            return self.states(m.variant, "eval")[m.layer]
        return self.member_states(m, "eval")

    def distance(self, measure: str, a: Member, b: Member) -> float:
        """d(a, b) under one measure, on the evaluation split (a: :meth:`reference_states`)."""
        return dissimilarity(measure, PAIRWISE[measure](self.reference_states(a), self.member_states(b, "eval")))

    def warmup_matrices(self, a: str, b: str) -> dict[str, Any]:
        """The layer × layer measures of variant a with itself and with b (blocks only, as Fig. 1)."""
        la, lb = self.states(a, "eval")[1:], self.states(b, "eval")[1:]
        same, other = similarity_matrix(la, la, self.measures), similarity_matrix(la, lb, self.measures)
        return {"same": {m: np.asarray(v).tolist() for m, v in same.items()},
                "other": {m: np.asarray(v).tolist() for m, v in other.items()}}

    def _probe_cells(self, group: Hashable, members: list[Member]) -> list[float]:
        return [self.accuracy(m) for m in members]

    def _distance_cells(self, group: Hashable, pairs: list[tuple[str, Member, Member]]) -> list[float]:
        return [self.distance(*p) for p in pairs]

    def _warmup_cells(self, group: Hashable, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [self.warmup_matrices(*p) for p in pairs]

    # -- the plan ------------------------------------------------------------------------
    def subsets(self) -> list[tuple[str, str, list[Member]]]:
        """(benchmark, subset, members) of both benchmarks, in the order of the results."""
        args = self.args
        first = 0 if args.include_embeddings else 1
        out = [("layer_depth", "all", [Member(v, i) for v in self.variants for i in range(first, self.depth[v])])]
        for layer in args.pc_layers:
            pcs = []
            for v in self.same:
                r = self.pc_rank(v, layer)
                pcs += [Member(v, layer, min(int(round(f * r)), r - 1), True) for f in args.pc_fractions]
            out.append(("pc_deletion", f"layer {layer}", pcs))
        return out

    def warmup_pair(self) -> list[str] | None:
        """The warm-up pair, or None (with a warning) when there is no equally deep pair."""
        pair = list(self.args.warmup or [v for v in self.variants if v.startswith("ft:")][:2] or self.same[:2])
        if len(pair) == 2 and all(p in self.depth for p in pair) and self.depth[pair[0]] == self.depth[pair[1]]:
            return pair
        log.warning("no warm-up pair of equally deep variants (give warmup=[a, b]); warm-up tests skipped")
        return None

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        args = self.args
        self._subsets = self.subsets()
        members = list(dict.fromkeys(m for _, _, ms in self._subsets for m in ms))
        probe_key = {m: content_key("grounding.probe", *self.member_key(m), args.probe_c, args.seed) for m in members}
        probes = Phase("grounding.probe", [Task(probe_key[m], m, group=m.variant) for m in members],
                       self._probe_cells, batch_size=8, label="probes of the members")
        yield probes
        self._f = {m: float(probes.results[probe_key[m]]) for m in members}

        pairs: list[tuple[str, Member, Member]] = []
        for _, _, ms in self._subsets:
            ref = ms[int(np.argmax([self._f[m] for m in ms]))]
            pairs += [(measure, ref, b) for measure in self.measures for b in ms]
        self._pair = self.warmup_pair()
        if self._pair is not None:
            a, b = self._pair
            for layer in args.pc_layers:
                curve = [m for m in self._subsets_at(layer) if m.variant == a]
                if not curve:
                    continue
                pairs += [(measure, curve[0], p) for measure in self.measures for p in curve]
                pairs += [(measure, Member(a, layer), Member(b, layer)) for measure in self.measures]
        self._dist_key = {p: content_key("grounding.distance", measure_key(p[0]), "reference-in-features",
                                         self.state_key(p[1]), self.state_key(p[2])) for p in pairs}
        distances = Phase("grounding.distance", [Task(k, p, group=p[0]) for p, k in self._dist_key.items()],
                          self._distance_cells, batch_size=16, label="distances between members")
        yield distances
        self._d = {p: float(distances.results[k]) for p, k in self._dist_key.items()}

        self._warm = None
        if self._pair is not None:
            a, b = self._pair
            key = content_key("grounding.warmup", [measure_key(m) for m in self.measures], self.state_key(Member(a, 0)),
                              self.state_key(Member(b, 0)))
            warm = Phase("grounding.warmup", [Task(key, (a, b))], self._warmup_cells,
                         label="layer x layer warm-up matrices")
            yield warm
            self._warm = warm.results[key]

    def _subsets_at(self, layer: int) -> list[Member]:
        return next(ms for bk, sub, ms in self._subsets if bk == "pc_deletion" and sub == f"layer {layer}")

    # -- the result ----------------------------------------------------------------------
    def finish(self, ctx: RunContext) -> GroundingStudyResult:
        results: list[dict[str, Any]] = []
        members: list[dict[str, Any]] = []
        for bk, sub, ms in self._subsets:
            res, rows = self._benchmark(bk, sub, ms)
            results += res
            members += rows
        figures: dict[str, Any] = {}
        if self._pair is not None and self._warm is not None:
            results += self._warmup_rows(figures)
        result = GroundingStudyResult(results, members=members, args=self.args, finetune=asdict(self.finetune),
                                      figure_data=figures, run_id=ctx.run_id)
        result.split_sizes = {"train": len(self.train), "eval": len(self.test)}
        return result

    def _benchmark(self, benchmark: str, subset: str,
                   ms: Sequence[Member]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(one result row per measure, one row per member with its f and d(A, B) per measure)."""
        args = self.args
        f = np.array([self._f[m] for m in ms])
        ref = int(np.argmax(f))
        dists = {meas: np.array([self._d[(meas, ms[ref], b)] for b in ms]) for meas in self.measures}
        res = grounding_benchmark(f, dists, reference=ref, names=[m.name for m in ms], n_boot=args.n_boot,
                                  seed=args.seed, functionality_name=f"probe:{args.data}")
        rows = [{"benchmark": benchmark, "subset": subset, "member": b.name, "variant": b.variant, "layer": b.layer,
                 "k": b.k, "reference": i == ref, "probe_accuracy": self._f[b],
                 **{f"d_{meas}": float(dists[meas][i]) for meas in self.measures}} for i, b in enumerate(ms)]
        return [dict(r.to_row(), benchmark=benchmark, subset=subset) for r in res], rows

    def _warmup_rows(self, figures: dict[str, Any]) -> list[dict[str, Any]]:
        """The warm-up rows; ``figures`` gets what the warm-up figures are drawn from."""
        assert self._pair is not None and self._warm is not None
        a, b = self._pair
        rows: list[dict[str, Any]] = []
        dist_same, dist_other = {}, {}
        for meas in self.measures:
            ds = np.vectorize(lambda v: dissimilarity(meas, v))(np.asarray(self._warm["same"][meas], dtype=float))
            do = np.vectorize(lambda v: dissimilarity(meas, v))(np.asarray(self._warm["other"][meas], dtype=float))
            dist_same[meas], dist_other[meas] = ds, do
            for i, s in enumerate(layer_specificity(ds, do)):
                rows.append({"benchmark": "warmup_specificity", "subset": f"{a} vs {b}", "measure": meas,
                             "layer": i + 1, "value": float(s)})
        figures["warmup_layers.png"] = ("specificity", dist_same, dist_other, (a, b))
        for layer in self.args.pc_layers:
            pcs = [m for m in self._subsets_at(layer) if m.variant == a]
            if not pcs:
                continue
            ks = [p.k for p in pcs]
            r = self.pc_rank(a, layer) - pcs[0].k  # the dimension of the curve's full representation
            per_measure = {}
            for meas in self.measures:
                d = [self._d[(meas, pcs[0], p)] for p in pcs]
                baseline = self._d[(meas, Member(a, layer), Member(b, layer))]
                k_star = detection_threshold(ks, d, baseline)
                acc = next((self._f[p] for p in pcs if p.k == k_star), None)
                per_measure[meas] = (d, baseline, k_star)
                rows.append({"benchmark": "warmup_detection", "subset": f"{a} layer {layer}", "measure": meas,
                             "layer": layer, "baseline": baseline,
                             "value": None if k_star is None else k_star / r, "k": k_star,
                             "accuracy_at_threshold": acc, "accuracy_full": self._f[pcs[0]]})
            figures[f"warmup_pc_deletion_layer{layer}.png"] = (
                "pc_deletion", ks, [self._f[p] for p in pcs], per_measure, r, f"{a} layer {layer} (baseline: {b})")
        return rows
