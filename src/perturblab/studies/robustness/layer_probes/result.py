"""What the layer-probe study returns and the files it writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ....core.files import write_csv, write_json
from ....core.study import StudyResult

if TYPE_CHECKING:  # pragma: no cover
    from .config import LayerProbeConfig

#: the files :meth:`LayerProbeResult.save` writes
FILES = ("results.json", "top_layers.csv", "probe_drops.png")


def top_layers(rows: Sequence[dict[str, Any]], top: int = 3) -> dict[str, list[int]]:
    """The ``top`` most affected layers of every perturbation (largest accuracy drop first)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        if r["metric"] == "rank" and r["value"] <= top:
            out.setdefault(r["perturbation"], []).append((int(r["value"]), r["layer"]))
    return {p: [layer for _, layer in sorted(v)] for p, v in out.items()}


class LayerProbeResult(StudyResult):
    """The result of :func:`perturblab.studies.robustness.layer_probes.layer_probes`.

    * ``rows`` — ``model, perturbation, layer, metric, value`` with metrics ``clean_acc``,
      ``perturbed_acc``, ``drop``, ``drop_se`` (paired standard error: drops within two of them
      are noise), ``rank`` (1 = most affected) and ``change_rate`` (per perturbation);
    * ``summary`` — per perturbation its change rate and its ``top`` most affected layers;
    * :meth:`figures` — ``probe_drops.png``; :meth:`save` writes what the ``layer-probes``
      command writes.
    """

    study = "layer-probes"

    def __init__(self, config: "LayerProbeConfig", rows: Sequence[dict[str, Any]], run_id: str | None = None):
        self.config = config
        self.top_layers = top_layers(rows, config.top)
        summary = [{"model": config.model, "perturbation": p, "change_rate": self.change_rate(rows, p),
                    "top_layers": self.top_layers.get(p, [])} for p in config.perturbations]
        super().__init__(rows, summary, run_id=run_id)

    @staticmethod
    def change_rate(rows: Sequence[dict[str, Any]], perturbation: str) -> float:
        """The share of evaluation inputs ``perturbation`` changed."""
        return next(r["value"] for r in rows if r["perturbation"] == perturbation and r["metric"] == "change_rate")

    def console(self) -> str:
        """What the command prints: each perturbation's most affected layers, then the number of
        examples they were computed on."""
        lines = [f"{p:16s} most affected layers: {layers}" for p, layers in self.top_layers.items()]
        sizes = self.sizes()
        return "\n".join(lines + ([sizes] if sizes else []))

    def drops(self) -> np.ndarray:
        """Accuracy drop per perturbation (rows, in the config's order) × layer."""
        return np.array([[r["value"] for r in self.rows if r["perturbation"] == p and r["metric"] == "drop"]
                         for p in self.config.perturbations])

    def figures(self) -> dict[str, Any]:
        """File name -> matplotlib figure: ``probe_drops.png`` (Figs. 3–5 style)."""
        from ....report.layer_plots import probe_drop_figure

        cfg = self.config
        return {"probe_drops.png": probe_drop_figure(
            self.drops(), list(cfg.perturbations), top=cfg.top,
            title=f"{cfg.model}: probe accuracy drop per layer ({cfg.data}, n={cfg.n_eval})")}

    def top_layer_rows(self) -> list[list[Any]]:
        """The rows of ``top_layers.csv`` (model, perturbation, change rate, the top layers)."""
        return [[self.config.model, s["perturbation"], f"{s['change_rate']:.3f}", *s["top_layers"]]
                for s in self.summary]

    def save(self, out: str | Path) -> list[Path]:
        """Write ``results.json``, ``top_layers.csv`` and ``probe_drops.png`` into ``out`` (each
        atomically); returns their paths."""
        from ....report.plots import save_figure

        out = Path(out)
        header = ["model", "perturbation", "change_rate", *[f"layer_{k + 1}" for k in range(self.config.top)]]
        paths = [write_json(out / "results.json", self.rows),
                 write_csv(out / "top_layers.csv", header, self.top_layer_rows())]
        paths += [save_figure(fig, out / name) for name, fig in self.figures().items()]
        return paths
