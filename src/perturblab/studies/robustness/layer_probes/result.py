"""What the layer-probe study returns and the files it writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ....core.files import write_csv, write_json
from ....core.headline import LEVEL, Estimate, Headline, defined, within
from ....core.study import StudyResult
from ....measures.quality import above_noise, tied_with_best

if TYPE_CHECKING:  # pragma: no cover
    from .config import LayerProbesArgs

#: the files :meth:`LayerProbeResult.save` writes
FILES = ("results.json", "summary.json", "top_layers.csv", "probe_drops.png", "headline.json")
#: the flag of a perturbation that affects no layer beyond noise
NO_LAYER = "no layer affected beyond noise"


def _per_layer(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[int, float]]]:
    """perturbation -> metric (``drop``, ``drop_se``, ``rank``) -> layer -> value."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for r in rows:
        if r["metric"] in ("drop", "drop_se", "rank"):
            out.setdefault(r["perturbation"], {}).setdefault(r["metric"], {})[r["layer"]] = r["value"]
    return out


def affected_layers(rows: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """Per perturbation, the layers whose accuracy drop is positive and above noise (more than
    two paired standard errors, :func:`~perturblab.measures.quality.above_noise`), largest drop
    first (by ``rank``)."""
    out = {}
    for p, m in _per_layer(rows).items():
        layers = sorted(m.get("rank", {}), key=lambda layer: m["rank"][layer])
        ok = above_noise([m["drop"][layer] for layer in layers], [m["drop_se"][layer] for layer in layers])
        out[p] = [layer for layer, keep in zip(layers, ok) if keep]
    return out


def top_layers(rows: Sequence[dict[str, Any]], top: int = 3) -> dict[str, list[int]]:
    """The ``top`` most affected layers of every perturbation (largest accuracy drop first),
    among the layers whose drop is positive and above noise (:func:`affected_layers`): a
    perturbation that affects no layer beyond noise gets an empty list."""
    return {p: layers[:top] for p, layers in affected_layers(rows).items()}


def tied_for_first(rows: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """Per perturbation, the affected layers whose drop is within two standard errors of the
    largest one (:func:`~perturblab.measures.quality.tied_with_best`), largest first; empty when no
    layer is affected."""
    per, out = _per_layer(rows), {}
    for p, layers in affected_layers(rows).items():
        m = per[p]
        idx = tied_with_best([m["drop"][layer] for layer in layers], [m["drop_se"][layer] for layer in layers])
        out[p] = [layers[i] for i in idx]
    return out


def selected_drop_interval(drop: float, se: float, layers: int
                           ) -> tuple[float | None, float | None, str]:
    """(low, high, what it is over) of the largest of ``layers`` accuracy drops, ``drop`` with
    paired standard error ``se``: the normal interval with the Bonferroni-adjusted quantile
    z(1 − 0.025 / L), so that all L layers' intervals hold together with probability ≥ 95 % and
    the one of the layer chosen for being largest does too (a plain 1.96 · s.e. interval would
    not: the largest of L noisy drops is biased upwards). Cut to a drop's range [−1, 1].

    >>> low, high, what = selected_drop_interval(0.10, 0.02, 12)
    >>> round(high - 0.10, 4)
    0.0573
    >>> what
    '95 % normal interval, paired over examples, Bonferroni-adjusted for choosing the largest of 12 layers'
    """
    if not (defined(drop) and defined(se)):
        return None, None, "no interval (no standard error)"
    from scipy import stats

    layers = max(int(layers), 1)  # one layer: no choice, z = 1.96
    half = float(stats.norm.ppf(1 - (1 - LEVEL) / 2 / layers)) * float(se)
    low, high, cut = within(float(drop) - half, float(drop) + half, (-1.0, 1.0))
    chosen = f", Bonferroni-adjusted for choosing the largest of {layers} layers" if layers > 1 else ""
    return low, high, "95 % normal interval, paired over examples" + chosen + cut


def _drop(rows: Sequence[dict[str, Any]], perturbation: str, layer: int) -> str:
    m = _per_layer(rows)[perturbation]
    return f"{m['drop'][layer]:.3f} ± {m['drop_se'][layer]:.3f}"


class LayerProbeResult(StudyResult):
    """The result of :func:`perturblab.studies.robustness.layer_probes.layer_probes`.

    * ``rows`` — ``model, perturbation, layer, metric, value`` with metrics ``clean_acc``,
      ``perturbed_acc``, ``drop``, ``drop_se`` (paired standard error: drops within two of them
      are noise), ``rank`` (1 = most affected) and ``change_rate`` (per perturbation);
    * ``summary`` — per perturbation its change rate, its ``top`` most affected layers (only
      layers whose drop is positive and above two standard errors), the number of such layers,
      the layers tied for first, and ``flags`` (:data:`NO_LAYER` when no layer is affected);
    * ``args`` — the study's options;
    * :meth:`figures` — ``probe_drops.png``; :meth:`save` writes what the ``layer-probes``
      command writes.
    """

    study = "layer-probes"

    def __init__(self, args: "LayerProbesArgs", rows: Sequence[dict[str, Any]], run_id: str | None = None):
        self.args = args
        self.perturbations = args.perturbation_list()
        self.top_layers = top_layers(rows, args.top)
        self.tied = tied_for_first(rows)
        affected = affected_layers(rows)
        summary = [{"model": args.model, "perturbation": p, "change_rate": self.change_rate(rows, p),
                    "top_layers": self.top_layers.get(p, []), "affected_layers": len(affected.get(p, [])),
                    "tied_for_first": self.tied.get(p, []), "flags": [] if affected.get(p) else [NO_LAYER]}
                   for p in self.perturbations]
        super().__init__(rows, summary, run_id=run_id)

    @staticmethod
    def change_rate(rows: Sequence[dict[str, Any]], perturbation: str) -> float:
        """The share of evaluation inputs ``perturbation`` changed."""
        return next(r["value"] for r in rows if r["perturbation"] == perturbation and r["metric"] == "change_rate")

    def console(self) -> str:
        """What the command prints: each perturbation's most affected layers (only drops that are
        positive and above two paired standard errors) with their drop ± s.e. and the layers tied
        for first, or that no layer is affected beyond noise; then the number of examples."""
        lines = []
        for p, layers in self.top_layers.items():
            if layers:
                tied = self.tied.get(p, [])
                lines.append(f"{p:16s} most affected layers: {layers} (accuracy drop ± s.e.: "
                             + ", ".join(f"layer {layer} {_drop(self.rows, p, layer)}" for layer in layers)
                             + (f"; tied for first: {', '.join(map(str, tied))}" if len(tied) > 1 else "") + ")")
            else:
                m = _per_layer(self.rows)[p]
                worst = min(m["rank"], key=lambda layer: m["rank"][layer])
                lines.append(f"{p:16s} most affected layers: none ({NO_LAYER}: no drop is positive and above 2 s.e.;"
                             f" largest drop {_drop(self.rows, p, worst)} at layer {worst})")
        sizes = self.sizes()
        return "\n".join(lines + ([sizes] if sizes else []))

    def headline(self) -> Headline:
        """Per perturbation, the largest probe accuracy drop over the L layers with its paired
        normal interval, Bonferroni-adjusted for that choice (:func:`selected_drop_interval`:
        z(1 − 0.025 / L) standard errors, not 1.96), the layer it is at and the number of layers
        affected beyond noise."""
        per_layer = _per_layer(self.rows)
        n_eval = (self.split_sizes or {}).get("eval")
        estimates = []
        for s in self.summary:
            p = s["perturbation"]
            m = per_layer[p]
            worst = min(m["rank"], key=lambda layer: m["rank"][layer])
            low, high, what = selected_drop_interval(m["drop"][worst], m["drop_se"][worst], len(m["rank"]))
            estimates.append(Estimate(
                self.args.model, f"largest probe accuracy drop, {p} (layer {worst}; "
                f"{s['affected_layers']} layer{'s' if s['affected_layers'] != 1 else ''} affected)",
                m["drop"][worst], low, high, n=n_eval, interval=what,
                flags=tuple(s["flags"]), key=f"probe_drop:{p}"))
        return Headline(
            "How much a linear probe of each layer loses in accuracy when the evaluation text is perturbed "
            "(clean minus perturbed accuracy; 0.10 = ten points lost), at the layer that loses most; a layer "
            "is affected when its drop is positive and above two paired standard errors. n: the evaluation "
            "examples.", estimates)

    def drops(self) -> np.ndarray:
        """Accuracy drop per perturbation (rows, in the order of the options) × layer."""
        return np.array([[r["value"] for r in self.rows if r["perturbation"] == p and r["metric"] == "drop"]
                         for p in self.perturbations])

    def figures(self) -> dict[str, Any]:
        """File name -> matplotlib figure: ``probe_drops.png`` (Figs. 3–5 style)."""
        from ....report.layer_plots import probe_drop_figure

        args = self.args
        return {"probe_drops.png": probe_drop_figure(
            self.drops(), list(self.perturbations), top=args.top,
            boxed=[self.top_layers.get(p, []) for p in self.perturbations],
            title=f"{args.model}: probe accuracy drop per layer ({args.data}, n={args.n_eval})")}

    def top_layer_rows(self) -> list[list[Any]]:
        """The rows of ``top_layers.csv``: model, perturbation, change rate, the top layers (blank
        where fewer layers are affected beyond noise), the layers tied for first (when several)
        and the flag."""
        top = self.args.top
        return [[self.args.model, s["perturbation"], f"{s['change_rate']:.3f}",
                 *s["top_layers"], *[""] * (top - len(s["top_layers"])),
                 " ".join(map(str, s["tied_for_first"])) if len(s["tied_for_first"]) > 1 else "",
                 "; ".join(s["flags"])] for s in self.summary]

    def save(self, out: str | Path) -> list[Path]:
        """Write ``results.json``, ``summary.json``, ``top_layers.csv`` and ``probe_drops.png`` into
        ``out`` (each atomically); returns their paths."""
        from ....report.plots import save_figure

        out = Path(out)
        header = ["model", "perturbation", "change_rate", *[f"layer_{k + 1}" for k in range(self.args.top)],
                  "tied_for_first", "flags"]
        paths = [write_json(out / "results.json", self.rows), write_json(out / "summary.json", self.summary),
                 write_csv(out / "top_layers.csv", header, self.top_layer_rows())]
        paths += [save_figure(fig, out / name) for name, fig in self.figures().items()]
        return paths
