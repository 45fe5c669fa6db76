"""Figures of the representation studies: layer × layer heatmaps, per-layer curves (robustness
paper Fig. 1) and per-layer probe accuracy under perturbations (Figs. 3–5)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..measures.similarity import INFO
from .plots import _plt, names_note, note_below, safe_name, settle_layout, short_name, text_colour, wrap_title


def layer_heatmap_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``heatmap_<measure>.png`` -> figure per measure: layers of ``a`` down, layers of ``b`` across,
    each value written in its cell; the colour bar is labelled with the measure. Long model names
    are cut in the middle on the axes and given in full under them."""
    plt = _plt()
    out: dict[str, Any] = {}
    for m in dict.fromkeys(r["measure"] for r in rows):
        sub = [r for r in rows if r["measure"] == m]
        na, nb = 1 + max(r["layer_a"] for r in sub), 1 + max(r["layer_b"] for r in sub)
        mat = np.full((na, nb), np.nan)
        for r in sub:
            mat[r["layer_a"], r["layer_b"]] = r["value"]
        info = INFO[m]
        a, b = str(sub[0]["a"]), str(sub[0]["b"])
        note = names_note([a, b])
        # wide enough for the title and the colour bar with few layers, tall enough for the note
        width = max(5.2, 2.2 + 0.6 * nb)
        fig, ax = plt.subplots(figsize=(width, max(3.6, 1.4 + 0.5 * na) + 0.15 * (note.count("\n") + 1 if note else 0)))
        cmap = "viridis" if info.kind == "similarity" else "viridis_r"
        im = ax.imshow(mat, cmap=cmap, aspect="auto", origin="lower")
        for i in range(na):
            for j in range(nb):
                ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color=text_colour(im, mat[i, j]))
        ax.set_xticks(range(nb))
        ax.set_yticks(range(na))
        ax.set_xlabel(f"{short_name(b)} layer")
        ax.set_ylabel(f"{short_name(a)} layer")
        better = "higher" if info.kind == "similarity" else "lower"
        ax.set_title(wrap_title(f"{m} ({better} = more similar), n={sub[0]['n']}\nlayer 0 = embeddings",
                                width - 1.2), fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8, label=m if info.kind in m else f"{m} ({info.kind})")
        if note:
            note_below(ax, note)
        out[f"heatmap_{safe_name(m)}.png"] = settle_layout(fig)
    return out


def layer_curves_figure(series: dict[str, Sequence[float]], *, title: str,
                        errors: dict[str, Sequence[float]] | None = None, ylabel: str = "similarity") -> Any:
    """Lines over layers (0 = embeddings), one per series (dashed when its name says "ceiling"),
    optional ± error bands (said in the legend's title); each line is drawn a little broader than
    the next, so that lines that coincide all show. The legend stands right of the axes, clear of
    the lines, the title wraps to the figure's width and the layers are whole-number ticks.
    Returns the matplotlib figure (save it with :func:`~perturblab.report.plots.save_figure`)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.6, 3.6))
    layers = 0
    last = max(len(series) - 1, 1)
    for k, (name, values) in enumerate(series.items()):
        x = np.arange(len(values))
        layers = max(layers, len(values))
        # each line a little broader than the next, so that lines that coincide all show
        grow = (len(series) - 1 - k) / last
        line, = ax.plot(x, values, marker="o", label=name, ls="--" if "ceiling" in name else "-",
                        lw=1.5 + 1.5 * grow, ms=4.5 + 3.5 * grow)
        if errors and name in errors:
            e = np.asarray(errors[name], dtype=float)
            ax.fill_between(x, np.asarray(values) - e, np.asarray(values) + e, alpha=0.2, color=line.get_color())
    if layers:
        ax.set_xticks(range(layers) if layers <= 25 else range(0, layers, 2))
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(ylabel)
    ax.set_title(wrap_title(title, 5.4), fontsize=9)
    ax.grid(alpha=0.3)
    banded = bool(errors and any(name in errors for name in series))
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5),
              title="bands: ± 1 s.d." if banded else None, title_fontsize=7)
    return fig


def probe_drop_figure(drops: np.ndarray, perturbations: Sequence[str], *, title: str, top: int = 3,
                      boxed: Sequence[Sequence[int]] | None = None) -> Any:
    """Accuracy drop (clean − perturbed) per perturbation × layer; the most affected layers of
    each perturbation are boxed (robustness paper Figs. 3–5): ``boxed[i]`` (the layers of row i
    that count, e.g. only drops above noise) when given, else the ``top`` largest drops; returns
    the figure, with a note under it saying what the boxes are. White is no drop: a negative drop
    (perturbed accuracy higher) is written in its cell and drawn white, the colour bar's arrow
    marking those cells."""
    plt = _plt()
    drops = np.asarray(drops, dtype=float)
    points = 100 * drops  # in accuracy points
    finite = points[np.isfinite(points)]
    high = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    # wide and tall enough for its title and labels at any size (one perturbation of a 3-layer model too)
    width = max(6.4, 2.5 + 0.55 * drops.shape[1])
    fig, ax = plt.subplots(figsize=(width, max(2.6, 1.4 + 0.45 * drops.shape[0])))
    im = ax.imshow(points, cmap="Reds", aspect="auto", vmin=0.0, vmax=high)
    for i in range(drops.shape[0]):
        worst = set(np.argsort(-drops[i], kind="stable")[:top].tolist()) if boxed is None else set(boxed[i])
        for j in range(drops.shape[1]):
            ax.text(j, i, f"{points[i, j]:.1f}", ha="center", va="center", fontsize=7,
                    fontweight="bold" if j in worst else "normal", color=text_colour(im, points[i, j]))
            if j in worst:  # a black frame lined with white: it shows on light and on dark cells
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2.4, ec="black"))
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=0.8, ec="white"))
    ax.set_yticks(range(len(perturbations)), [short_name(p) for p in perturbations])
    ax.set_xticks(range(drops.shape[1]))
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_title(wrap_title(title, width - 1.0), fontsize=9)
    fig.colorbar(im, ax=ax, shrink=0.8, label="accuracy drop (points)",
                 extend="min" if finite.size and finite.min() < 0 else "neither")
    note_below(ax, "boxed, in bold: each perturbation's most affected layers" if boxed is not None
               else f"boxed, in bold: each perturbation's {top} largest drops", width_in=width - 1.0)
    return settle_layout(fig)
