"""Figures of the learnability study: p–learnability curves (Fig. 3), learnability against
robustness and post-augmentation Δ with Spearman ρ (Fig. 4), and a robustness heatmap."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...report.plots import _plt, heatmap_figure, names_note, note_below, safe_name, short_name

#: where a point's name may go, tried in turn: offset (points) from the point and alignment
_OFFSETS = ((4, 4, "left", "bottom"), (4, -4, "left", "top"), (-4, 4, "right", "bottom"), (-4, -4, "right", "top"),
            (0, 7, "center", "bottom"), (0, -7, "center", "top"), (7, 0, "left", "center"), (-7, 0, "right", "center"),
            (4, 11, "left", "center"), (-4, 11, "right", "center"), (4, -11, "left", "center"),
            (-4, -11, "right", "center"), (4, 18, "left", "center"), (-4, 18, "right", "center"),
            (4, -18, "left", "center"), (-4, -18, "right", "center"))


def _overlap(a: Any, b: Any) -> float:
    """Area (pixels²) that two boxes share."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def label_points(ax: Any, xs: Sequence[float], ys: Sequence[float], names: Sequence[str],
                 fontsize: float = 6) -> list[Any]:
    """Write each name next to its point, at the first of a few places around it (:data:`_OFFSETS`)
    where it overlaps no name written before, no other point and the axes' edge; where no place is
    free, at the one that overlaps least. The axes must have their final size and limits (call
    ``tight_layout`` first). Returns the text artists."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    ax.autoscale_view()
    frame = ax.get_window_extent(renderer)
    centres = ax.transData.transform(np.column_stack([xs, ys]).astype(float)) if len(xs) else np.empty((0, 2))
    r = 3.5 * fig.dpi / 72  # a marker's radius
    dots = [Bbox.from_extents(x - r, y - r, x + r, y + r) for x, y in centres]
    placed: list[Any] = []
    texts = []
    for k, name in enumerate(names):
        best, best_box, best_cost = None, None, np.inf
        for dx, dy, ha, va in _OFFSETS:
            t = ax.annotate(name, (xs[k], ys[k]), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                            fontsize=fontsize)
            box = t.get_window_extent(renderer)
            cost = (sum(_overlap(box, p) for p in placed) + sum(_overlap(box, d) for i, d in enumerate(dots) if i != k)
                    + box.width * box.height - _overlap(box, frame))  # the last: the part outside the axes
            if cost < best_cost:
                if best is not None:
                    best.remove()
                best, best_box, best_cost = t, box, cost
            else:
                t.remove()
            if cost == 0:
                break
        placed.append(best_box)
        texts.append(best)
    return texts


def learnability_figure_set(rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any]:
    """File name -> figure: ``curves_<model>.png`` (Fig. 3), ``correlations.png`` (Fig. 4) and
    ``robustness_heatmap.png``."""
    plt = _plt()
    figs: dict[str, Any] = {}
    models = list(dict.fromkeys(r["model"] for r in rows))
    perts = list(dict.fromkeys(r["perturbation"] for r in rows))
    shorts = {m: short_name(m) for m in models}
    note = names_note(models)
    for model in models:
        fig, ax = plt.subplots(figsize=(7.6, 4))
        for k, pert in enumerate(perts):
            pts = [r for r in rows if (r["model"], r["perturbation"], r["metric"]) == (model, pert, "learnability")]
            ps = sorted({r["p"] for r in pts})
            mean = [np.mean([r["value"] for r in pts if r["p"] == p]) for p in ps]
            # ten colours, then the same colours dashed, dotted: every line stays its own
            ax.plot(ps, mean, marker="o", ms=3, label=pert, color=f"C{k % 10}", ls=("-", "--", ":", "-.")[k // 10 % 4])
        ax.set_xscale("log")
        ax.set_xlabel("perturbation probability p (log scale)")
        ax.set_ylabel("learnability (mean over seeds)")
        ax.set_title(f"{shorts[model]}: learnability@p", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), title="perturbation", title_fontsize=7)
        if shorts[model] != model:
            note_below(ax, f"{shorts[model]}: {model}")
        figs[f"curves_{safe_name(model)}.png"] = fig
    table = summary["table"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    xs_ys = []
    panels = (("robustness", "robustness (Eq. 1)"), ("post_aug_delta", "post-augmentation Δ (Eq. 2)"))
    for ax, (y, label) in zip(axes, panels):
        x = np.array([t["avg_learnability"] for t in table])
        v = np.array([t[y] for t in table])
        for model in models:
            sel = [i for i, t in enumerate(table) if t["model"] == model]
            ax.scatter(x[sel], v[sel], label=shorts[model])
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
        ax.margins(0.08)  # room for the names of the points at the edges
        xs_ys.append((ax, x, v, finite))
    # one legend for both panels, right of them (clear of the points)
    axes[1].legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    if note:
        note_below(axes[0], note)
    fig.tight_layout()  # the final axes size, which the placing of the names below depends on
    for ax, x, v, finite in xs_ys:  # each point is a (model, perturbation): say which, names kept apart
        idx = np.flatnonzero(finite)
        label_points(ax, x[idx], v[idx], [table[i]["perturbation"] for i in idx])
    figs["correlations.png"] = fig
    mat = np.array([[next((t["robustness"] for t in table if (t["model"], t["perturbation"]) == (m, p)), np.nan)
                      for m in models] for p in perts])
    # centred on 0 (no change): red is accuracy lost under the perturbation, green accuracy gained
    figs["robustness_heatmap.png"] = heatmap_figure(100 * mat, perts, models, cmap="RdYlGn", fmt="{:.1f}", center=0.0,
                                                    title="robustness: accuracy change on perturbed test (points)",
                                                    colorbar_label="accuracy change (points; 0 = unaffected)")
    return figs
