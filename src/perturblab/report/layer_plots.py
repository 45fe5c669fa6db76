"""Figures of the representation studies: layer × layer heatmaps, per-layer curves (robustness
paper Fig. 1) and per-layer probe accuracy under perturbations (Figs. 3–5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..measures.similarity import INFO
from .plots import _plt, safe_name, save_figure


def _text_colour(im: Any, value: float) -> str:
    """Black on light cells, white on dark ones."""
    if not np.isfinite(value):
        return "black"
    r, g, b, _ = im.cmap(im.norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def layer_heatmaps(rows: Sequence[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """:func:`layer_heatmap_figures` written into ``out_dir``."""
    return [save_figure(fig, Path(out_dir) / name) for name, fig in layer_heatmap_figures(rows).items()]


def layer_heatmap_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``heatmap_<measure>.png`` -> figure per measure: layers of ``a`` down, layers of ``b`` across."""
    plt = _plt()
    out: dict[str, Any] = {}
    for m in dict.fromkeys(r["measure"] for r in rows):
        sub = [r for r in rows if r["measure"] == m]
        na, nb = 1 + max(r["layer_a"] for r in sub), 1 + max(r["layer_b"] for r in sub)
        mat = np.full((na, nb), np.nan)
        for r in sub:
            mat[r["layer_a"], r["layer_b"]] = r["value"]
        info = INFO[m]
        fig, ax = plt.subplots(figsize=(1.2 + 0.6 * nb, 1.0 + 0.5 * na))
        cmap = "viridis" if info.kind == "similarity" else "viridis_r"
        im = ax.imshow(mat, cmap=cmap, aspect="auto", origin="lower")
        for i in range(na):
            for j in range(nb):
                ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color=_text_colour(im, mat[i, j]))
        ax.set_xticks(range(nb))
        ax.set_yticks(range(na))
        ax.set_xlabel(f"{sub[0]['b']} layer (0 = embeddings)")
        ax.set_ylabel(f"{sub[0]['a']} layer")
        better = "higher" if info.kind == "similarity" else "lower"
        ax.set_title(f"{m} ({better} = more similar), n={sub[0]['n']}", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
        out[f"heatmap_{safe_name(m)}.png"] = fig
    return out


def layer_curves_figure(series: dict[str, Sequence[float]], *, title: str,
                        errors: dict[str, Sequence[float]] | None = None, ylabel: str = "similarity") -> Any:
    """Lines over layers (0 = embeddings), one per series (dashed when its name says "ceiling"),
    optional ± error bands; returns the matplotlib figure (save it with
    :func:`~perturblab.report.plots.save_figure`)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, values in series.items():
        x = np.arange(len(values))
        line, = ax.plot(x, values, marker="o", label=name, ls="--" if "ceiling" in name else "-")
        if errors and name in errors:
            e = np.asarray(errors[name], dtype=float)
            ax.fill_between(x, np.asarray(values) - e, np.asarray(values) + e, alpha=0.2, color=line.get_color())
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def probe_drop_figure(drops: np.ndarray, perturbations: Sequence[str], *, title: str, top: int = 3,
                      boxed: Sequence[Sequence[int]] | None = None) -> Any:
    """Accuracy drop (clean − perturbed) per perturbation × layer; the most affected layers of
    each perturbation are boxed (robustness paper Figs. 3–5): ``boxed[i]`` (the layers of row i
    that count, e.g. only drops above noise) when given, else the ``top`` largest drops; returns
    the figure."""
    plt = _plt()
    drops = np.asarray(drops, dtype=float)
    # wide and tall enough for its title and labels at any size (one perturbation of a 3-layer model too)
    fig, ax = plt.subplots(figsize=(max(6.4, 2.5 + 0.55 * drops.shape[1]), max(2.6, 1.4 + 0.45 * drops.shape[0])))
    im = ax.imshow(100 * drops, cmap="Reds", aspect="auto")  # in accuracy points
    for i in range(drops.shape[0]):
        worst = set(np.argsort(-drops[i], kind="stable")[:top].tolist()) if boxed is None else set(boxed[i])
        for j in range(drops.shape[1]):
            dark = im.norm(100 * drops[i, j]) > 0.6 if np.isfinite(drops[i, j]) else False
            ax.text(j, i, f"{100 * drops[i, j]:.1f}", ha="center", va="center", fontsize=7,
                    fontweight="bold" if j in worst else "normal", color="white" if dark else "black")
            if j in worst:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.5, ec="black"))
    ax.set_yticks(range(len(perturbations)), list(perturbations))
    ax.set_xticks(range(drops.shape[1]))
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_title(title, fontsize=9, wrap=True)
    fig.colorbar(im, ax=ax, shrink=0.8, label="accuracy drop (points)")
    return fig
