"""Figures of the grounding warm-up tests (Ding et al. 2021, Figs. 1–2); each function returns
the matplotlib figure (saved at :data:`DPI` by :meth:`GroundingStudyResult.save`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...report.plots import _plt, legend_below, names_note, note_below, short_name

#: resolution of the grounding figures
DPI = 110


def specificity_figure(dist_same: dict[str, np.ndarray], dist_other: dict[str, np.ndarray], *,
                       names: Sequence[str], layer: int | None = None) -> Any:
    """Fig. 1: per measure, the distances between the layers of model A and of A vs B (top), and
    for one layer of A (default: the middle one) its distance to every layer of A and of B,
    with the distance to the same layer of B dashed (bottom). The panels widen with the number
    of layers (their tick labels stay apart); one legend under the bottom row serves every
    panel, and long model names are cut in the middle and given in full under it. Where the two
    curves of a panel coincide (equal models), the broad pale one shows under the other."""
    plt = _plt()
    measures = list(dist_same)
    n_max = max((dist_same[m].shape[0] for m in measures), default=1)
    panel = max(4.2, 1.8 + 0.16 * 2 * n_max)  # two blocks of n_max columns, about 0.16 inch each
    fig, axes = plt.subplots(2, len(measures), figsize=(panel * len(measures), 7.4), squeeze=False)
    a, b = (str(n) for n in names)
    sa, sb = short_name(a, 20), short_name(b, 20)
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
        ax.set_title(f"{m}\n{sa} vs {sa} | {sa} vs {sb}", fontsize=8)
        ax.set_xlabel(f"layer of {sa} | layer of {sb}", fontsize=8)
        ax.set_ylabel(f"{sa} layer")
        what = m if "distance" in m else f"{m} distance"  # procrustes_distance, linear_cka distance
        fig.colorbar(im, ax=ax, shrink=0.8, label=what)
        ax = axes[1, c]
        x = np.arange(1, n + 1)
        # the first line broad and pale under the second, so that both show where they coincide
        ax.plot(x, ds[i], marker="o", ms=8, lw=3, alpha=0.5, label=f"to {sa} layers")
        ax.plot(x, do[i], marker="s", ms=4, label=f"to {sb} layers")
        ax.axhline(do[i, i], ls="--", color="grey", label=f"to {sb} layer {i + 1}")
        ax.set_xticks(x)
        ax.set_xlabel("layer")
        ax.set_ylabel(f"{what} from {sa} layer {i + 1}", fontsize=8)
        ax.grid(alpha=0.3)
    bottom = axes[1, len(measures) // 2]
    legend_below(bottom, *axes[1, 0].get_legend_handles_labels(), fontsize=8)  # one column: no wider than a panel
    note = names_note([a, b], 20)
    if note:
        note_below(axes[1, 0], note)
    return fig


def pc_deletion_figure(ks: Sequence[int], accuracy: Sequence[float],
                       per_measure: dict[str, tuple[Sequence[float], float, int | None]], dim: int, *,
                       title: str) -> Any:
    """Fig. 2 (and 3b): distance to the full representation as the smallest principal components
    are deleted (solid), the seed baseline (dotted) and the first point above it (star); probe
    accuracy on the right axis (dashed). The legend, under the axes, says what each line style
    and the star mean."""
    plt = _plt()
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
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
    ax2.plot(fractions, accuracy, color="black", lw=1, ls="--")
    ax2.set_ylabel("probe accuracy (dashed)")
    ax.set_title(title, fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="grey", ls=":"), Line2D([], [], color="grey", ls="", marker="*", ms=10),
                Line2D([], [], color="black", lw=1, ls="--")]
    labels += ["seed baseline (dotted)", "first deletion above the baseline", "probe accuracy (right axis)"]
    legend_below(ax, handles, labels, fontsize=7, ncol=3)
    ax.grid(alpha=0.3)
    return fig
