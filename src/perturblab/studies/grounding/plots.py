"""Figures of the grounding warm-up tests (Ding et al. 2021, Figs. 1–2); each function returns
the matplotlib figure (saved at :data:`DPI` by :meth:`GroundingStudyResult.save`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...report.plots import _plt

#: resolution of the grounding figures
DPI = 110


def specificity_figure(dist_same: dict[str, np.ndarray], dist_other: dict[str, np.ndarray], *,
                       names: Sequence[str], layer: int | None = None) -> Any:
    """Fig. 1: per measure, the distances between the layers of model A and of A vs B (top), and
    for one layer of A (default: the middle one) its distance to every layer of A and of B,
    with the distance to the same layer of B dashed (bottom)."""
    plt = _plt()
    measures = list(dist_same)
    fig, axes = plt.subplots(2, len(measures), figsize=(4.2 * len(measures), 6.6), squeeze=False)
    a, b = names
    for c, m in enumerate(measures):
        ds, do = dist_same[m], dist_other[m]
        n = ds.shape[0]
        i = (n - 1) // 2 if layer is None else layer - 1
        both = np.hstack([ds, do])
        ax = axes[0, c]
        im = ax.imshow(both, cmap="viridis", aspect="auto", origin="lower")
        ax.axvline(n - 0.5, color="white", lw=2)
        ax.set_xticks(range(2 * n), [str(j + 1) for j in range(n)] * 2, fontsize=7)
        ax.set_yticks(range(n), [str(j + 1) for j in range(n)], fontsize=7)
        ax.set_title(f"{m}: {a} vs {a} | {a} vs {b}", fontsize=8)
        ax.set_ylabel(f"{a} layer")
        fig.colorbar(im, ax=ax, shrink=0.8)
        ax = axes[1, c]
        x = np.arange(1, n + 1)
        ax.plot(x, ds[i], marker="o", label=f"to {a} layers")
        ax.plot(x, do[i], marker="s", label=f"to {b} layers")
        ax.axhline(do[i, i], ls="--", color="grey", label=f"{b} layer {i + 1}")
        ax.set_xlabel("layer")
        ax.set_ylabel(f"distance from {a} layer {i + 1}")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    return fig


def pc_deletion_figure(ks: Sequence[int], accuracy: Sequence[float],
                       per_measure: dict[str, tuple[Sequence[float], float, int | None]], dim: int, *,
                       title: str) -> Any:
    """Fig. 2 (and 3b): distance to the full representation as the smallest principal components
    are deleted (solid), the seed baseline (dotted) and the first point above it (star); probe
    accuracy on the right axis."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ks = list(ks)
    fractions = np.asarray(ks, dtype=float) / dim
    for m, (d, baseline, k_star) in per_measure.items():
        line, = ax.plot(fractions, d, marker="o", ms=3, label=m)
        ax.axhline(baseline, ls=":", color=line.get_color())
        if k_star is not None:
            ax.plot([k_star / dim], [d[ks.index(k_star)]], marker="*", ms=14, color=line.get_color())
    ax.set_xlabel("fraction of principal components deleted (smallest first)")
    ax.set_ylabel("distance to the full representation")
    ax2 = ax.twinx()
    ax2.plot(fractions, accuracy, color="black", lw=1, ls="--", label="probe accuracy")
    ax2.set_ylabel("probe accuracy (dashed)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    return fig
