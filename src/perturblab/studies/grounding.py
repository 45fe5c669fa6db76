"""The grounding benchmark (Ding et al. 2021) on the offline models.

A set S of representations is built from model variants, e.g. MiniLM-L6 fp32, its int8
copy, MiniLM-L3 and fine-tuned copies of MiniLM-L6 with different seeds (``ft:<seed>``).
The functionality f of a representation is the accuracy of a logistic-regression probe
trained on its training-split states and scored on the evaluation split; the reference A is
the member with the best f; every measure is scored by the Spearman ρ and Kendall τ between
|f(A) − f(B)| and d(A, B) over the other members, with 95 % bootstrap intervals (2,000
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
same model farther from i than layer i of the other model, :func:`~perturblab.measures.grounding.layer_specificity`)
and ``warmup_detection`` rows (per measure: the fraction of components that must be deleted
before the distance exceeds the seed baseline d(A_ℓ, B_ℓ), with the probe accuracy there).
Figures ``warmup_layers.png`` (Fig. 1) and ``warmup_pc_deletion.png`` (Fig. 2).
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from ..measures.grounding import (detection_threshold, dissimilarity, grounding_benchmark, layer_specificity,
                                  principal_directions)
from ..measures.layerwise import PAIRWISE, resolve_measures, similarity_matrix
from ..measures.probe import fit_probe
from ..models.base import Pooling
from ..models.finetune import FinetuneConfig
from ..models.head import dataset_inputs
from ..models.states import layer_states
from .inputs import labelled_split

log = logging.getLogger(__name__)
MEASURES = ("procrustes_distance", "linear_cka", "pwcca_distance")
PC_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 0.97, 0.99)


@dataclass(kw_only=True)
class GroundingConfig:
    """Settings of :func:`run_grounding`."""

    data: str = "rotten_tomatoes"
    variants: Sequence[str] = ("minilm-l6", "minilm-l6-int8", "minilm-l3", "ft:0", "ft:1")
    base: str = "minilm-l6"
    n_train: int = 2000
    n_eval: int = 1000
    seed: int = 0
    pooling: Pooling = "mean"
    measures: Sequence[str] = MEASURES
    include_embeddings: bool = False
    pc_layers: Sequence[int] = (4, 5, 6)
    pc_fractions: Sequence[float] = PC_FRACTIONS
    warmup: Sequence[str] | None = None  # default: the first two ft:<seed> variants
    n_boot: int = 2000
    probe_c: float = 0.01
    finetune: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(epochs=1, max_seconds=300.0))
    text_fields: Sequence[str] = ()  # data columns: one text, or two for pairs (default: the loader's)
    label_column: str | None = None


@dataclass
class Member:
    """One representation of S: its variant, layer, deleted components and functionality."""

    variant: str
    layer: int
    k: int
    eval_states: np.ndarray
    accuracy: float

    @property
    def name(self) -> str:
        return f"{self.variant}/L{self.layer}" + (f"/-{self.k}pc" if self.k else "")


def _encoders(config: GroundingConfig, train: Any, progress: bool) -> dict[str, Any]:
    from ..models.presets import load_encoder
    from .finetuning import finetuned_encoder

    out = {}
    for v in config.variants:
        if v.startswith("ft:"):
            try:
                seed = int(v[3:])
            except ValueError:
                raise InputError(f"variant {v!r}: write ft:<integer seed>, e.g. ft:0") from None
            out[v] = finetuned_encoder(config.base, train, seed, config.finetune, progress=progress)
        else:
            out[v] = load_encoder(v)
    return out


def _benchmark(benchmark: str, subset: str, members: list[Member], measures: list[str],
               config: GroundingConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one result row per measure, one row per member with its f and d(A, B) per measure)."""
    f = np.array([m.accuracy for m in members])
    ref = int(np.argmax(f))
    a = members[ref].eval_states
    dists = {m: np.array([dissimilarity(m, PAIRWISE[m](a, b.eval_states)) for b in members]) for m in measures}
    res = grounding_benchmark(f, dists, reference=ref, names=[m.name for m in members], n_boot=config.n_boot,
                              seed=config.seed, functionality_name=f"probe:{config.data}")
    rows = [{"benchmark": benchmark, "subset": subset, "member": b.name, "variant": b.variant, "layer": b.layer,
             "k": b.k, "reference": i == ref, "probe_accuracy": b.accuracy,
             **{f"d_{m}": float(dists[m][i]) for m in measures}} for i, b in enumerate(members)]
    return [dict(r.to_row(), benchmark=benchmark, subset=subset) for r in res], rows


def run_grounding(config: GroundingConfig, out_dir: str | Path, *, progress: bool = True) -> list[dict[str, Any]]:
    """Build the representation sets, run both benchmarks and the warm-up tests, write outputs."""
    from ..report.grounding_plots import pc_deletion_figure, specificity_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    measures = resolve_measures(config.measures)
    if len(config.variants) < 2:
        raise InputError("give at least two variants (e.g. minilm-l6,minilm-l6-int8,ft:0,ft:1)")
    train, test = labelled_split(config.data, config.n_train, config.n_eval, config.seed,
                                 text_fields=config.text_fields, label_column=config.label_column)
    encoders = _encoders(config, train, progress)
    kw = dict(pooling=config.pooling, progress=progress)
    tr = {v: layer_states(e, dataset_inputs(train), **kw) for v, e in encoders.items()}
    ev = {v: layer_states(e, dataset_inputs(test), **kw) for v, e in encoders.items()}
    ytr, yev = train.labels, test.labels

    def accuracy(train_x: np.ndarray, eval_x: np.ndarray) -> float:
        return fit_probe(train_x, ytr, seed=config.seed, C=config.probe_c).accuracy(eval_x, yev)

    first = 0 if config.include_embeddings else 1
    depth = [Member(v, i, 0, ev[v][i], accuracy(tr[v][i], ev[v][i]))
             for v in config.variants for i in range(first, len(ev[v]))]
    results, members = _benchmark("layer_depth", "all", depth, measures, config)

    base_depth = len(ev[config.variants[0]]) if config.base not in ev else len(ev[config.base])
    same = [v for v in config.variants if len(ev[v]) == base_depth]
    curves: dict[int, dict[str, Any]] = {}
    for layer in config.pc_layers:
        if not 0 <= layer < base_depth:
            raise InputError(f"pc layer {layer} is out of range 0..{base_depth - 1}")
        pcs = []
        for v in same:
            mean, dirs = principal_directions(ev[v][layer])
            r = dirs.shape[1]
            for frac in config.pc_fractions:
                k = min(int(round(frac * r)), r - 1)
                keep = dirs[:, : r - k]
                e, t = (ev[v][layer] - mean) @ keep, (tr[v][layer] - mean) @ keep
                pcs.append(Member(v, layer, k, e, accuracy(t, e)))
        res, mem = _benchmark("pc_deletion", f"layer {layer}", pcs, measures, config)
        results += res
        members += mem
        curves[layer] = {"members": pcs}

    pair = list(config.warmup or [v for v in config.variants if v.startswith("ft:")][:2] or same[:2])
    if len(pair) == 2 and all(p in ev for p in pair) and len(ev[pair[0]]) == len(ev[pair[1]]):
        results += _warmup(pair, ev, measures, curves, config, out, specificity_figure, pc_deletion_figure)
    else:
        log.warning("no warm-up pair of equally deep variants (give warmup=[a, b]); warm-up tests skipped")
    (out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    with (out / "members.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(members[0]))
        w.writeheader()
        w.writerows(members)
    (out / "config.json").write_text(json.dumps(asdict(config), indent=1, default=str))
    (out / "table.md").write_text(render_table(results))
    return results


def _warmup(pair: list[str], ev: dict[str, list[np.ndarray]], measures: list[str], curves: dict[int, Any],
            config: GroundingConfig, out: Path, specificity_figure: Any, pc_deletion_figure: Any) -> list[dict]:
    a, b = pair
    la, lb = ev[a][1:], ev[b][1:]  # blocks only, as Fig. 1
    same, other = similarity_matrix(la, la, measures), similarity_matrix(la, lb, measures)
    rows: list[dict[str, Any]] = []
    dist_same, dist_other = {}, {}
    for m in measures:
        ds = np.vectorize(lambda v: dissimilarity(m, v))(same[m])
        do = np.vectorize(lambda v: dissimilarity(m, v))(other[m])
        dist_same[m], dist_other[m] = ds, do
        for i, s in enumerate(layer_specificity(ds, do)):
            rows.append({"benchmark": "warmup_specificity", "subset": f"{a} vs {b}", "measure": m,
                         "layer": i + 1, "value": float(s)})
    specificity_figure(dist_same, dist_other, out / "warmup_layers.png", names=(a, b))
    for layer, cur in curves.items():
        pcs = [p for p in cur["members"] if p.variant == a]
        base = pcs[0].eval_states  # k = 0: the full PC basis, a rotation of the centred states
        ks = [p.k for p in pcs]
        r = base.shape[1]
        per_measure = {}
        for m in measures:
            d = [dissimilarity(m, PAIRWISE[m](base, p.eval_states)) for p in pcs]
            baseline = dissimilarity(m, PAIRWISE[m](ev[a][layer], ev[b][layer]))
            k_star = detection_threshold(ks, d, baseline)
            acc = next((p.accuracy for p in pcs if p.k == k_star), None)
            per_measure[m] = (d, baseline, k_star)
            rows.append({"benchmark": "warmup_detection", "subset": f"{a} layer {layer}", "measure": m,
                         "layer": layer, "baseline": baseline,
                         "value": None if k_star is None else k_star / r, "k": k_star,
                         "accuracy_at_threshold": acc, "accuracy_full": pcs[0].accuracy})
        pc_deletion_figure(ks, [p.accuracy for p in pcs], per_measure, r,
                           out / f"warmup_pc_deletion_layer{layer}.png", title=f"{a} layer {layer} (baseline: {b})")
    return rows


def render_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table like the grounding paper's Table 1 (ρ and τ with 95 % intervals; the
    PC-deletion subsets averaged, as the paper does, with each subset's values listed below)."""
    bench = [r for r in rows if r.get("benchmark") in ("layer_depth", "pc_deletion")]
    measures = list(dict.fromkeys(r["measure"] for r in bench))
    lines = ["| benchmark | subset | n | functionality | " + " | ".join(f"{m} ρ [95% CI] | {m} τ" for m in measures) + " |",
             "|" + "---|" * (4 + 2 * len(measures))]
    keys = list(dict.fromkeys((r["benchmark"], r["subset"]) for r in bench))
    for bk, sub in keys:
        cells = {r["measure"]: r for r in bench if (r["benchmark"], r["subset"]) == (bk, sub)}
        first = next(iter(cells.values()))
        vals = " | ".join(f"{c['spearman']:.3f} [{c['spearman_low']:.2f}, {c['spearman_high']:.2f}] | "
                          f"{c['kendall']:.3f}" for c in (cells[m] for m in measures))
        lines.append(f"| {bk} | {sub} | {first['n']} | {first['functionality']} | {vals} |")
    pcs = [r for r in bench if r["benchmark"] == "pc_deletion"]
    if pcs:
        avg = " | ".join(f"{np.mean([r['spearman'] for r in pcs if r['measure'] == m]):.3f} | "
                         f"{np.mean([r['kendall'] for r in pcs if r['measure'] == m]):.3f}" for m in measures)
        lines.append(f"| pc_deletion | average of subsets | | | {avg} |")
    return "\n".join(lines) + "\n"
