"""Figures of the learnability study: p–learnability curves (Fig. 3), learnability against
robustness and post-augmentation Δ with Spearman ρ (Fig. 4), and a robustness heatmap."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...report.plots import _plt, heatmap_figure, safe_name, save_figure


def learnability_figures(rows: Sequence[dict[str, Any]], summary: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write ``curves_<model>.png``, ``correlations.png`` and ``robustness_heatmap.png``."""
    return [save_figure(fig, Path(out_dir) / name) for name, fig in learnability_figure_set(rows, summary).items()]


def learnability_figure_set(rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any]:
    """File name -> figure: ``curves_<model>.png`` (Fig. 3), ``correlations.png`` (Fig. 4) and
    ``robustness_heatmap.png``."""
    plt = _plt()
    figs: dict[str, Any] = {}
    models = list(dict.fromkeys(r["model"] for r in rows))
    perts = list(dict.fromkeys(r["perturbation"] for r in rows))
    for model in models:
        fig, ax = plt.subplots(figsize=(6.4, 4))
        for pert in perts:
            pts = [r for r in rows if (r["model"], r["perturbation"], r["metric"]) == (model, pert, "learnability")]
            ps = sorted({r["p"] for r in pts})
            mean = [np.mean([r["value"] for r in pts if r["p"] == p]) for p in ps]
            ax.plot(ps, mean, marker="o", ms=3, label=pert)
        ax.set_xscale("log")
        ax.set_xlabel("perturbation probability p (log scale)")
        ax.set_ylabel("learnability (mean over seeds)")
        ax.set_title(f"{model}: learnability@p", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        figs[f"curves_{safe_name(model)}.png"] = fig
    table = summary["table"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (y, label) in zip(axes, (("robustness", "robustness (Eq. 1)"), ("post_aug_delta", "post-augmentation Δ (Eq. 2)"))):
        x = np.array([t["avg_learnability"] for t in table])
        v = np.array([t[y] for t in table])
        for model in models:
            sel = [i for i, t in enumerate(table) if t["model"] == model]
            ax.scatter(x[sel], v[sel], label=model)
        for xi, vi, t in zip(x, v, table):  # each point is a (model, perturbation): say which
            if np.isfinite(xi) and np.isfinite(vi):
                ax.annotate(t["perturbation"], (xi, vi), xytext=(3, 3), textcoords="offset points", fontsize=6)
        rho = next(c for c in summary["spearman"] if (c["x"], c["y"]) == ("avg_learnability", y))
        finite = np.isfinite(x) & np.isfinite(v)
        if rho["spearman"] is not None and finite.sum() >= 3 and np.ptp(x[finite]) > 0:
            # a trend line only beside a defined correlation of three points or more
            slope, icpt = np.polyfit(x[finite], v[finite], 1)
            grid = np.linspace(x[finite].min(), x[finite].max(), 20)
            ax.plot(grid, slope * grid + icpt, color="grey", ls="--", label="least-squares line")
        text = "n/a" if rho["spearman"] is None else f"{rho['spearman']:.2f} (p={rho['p_value']:.2g})"
        ax.set_title(f"Spearman ρ = {text}, n = {int(finite.sum())} (model, perturbation) pairs", fontsize=9)
        ax.set_xlabel("average learnability (log-AUC)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    figs["correlations.png"] = fig
    mat = np.array([[next((t["robustness"] for t in table if (t["model"], t["perturbation"]) == (m, p)), np.nan)
                      for m in models] for p in perts])
    figs["robustness_heatmap.png"] = heatmap_figure(100 * mat, perts, models, cmap="Reds_r", fmt="{:.1f}",
                                                    title="robustness: accuracy change on perturbed test (points)")
    return figs
