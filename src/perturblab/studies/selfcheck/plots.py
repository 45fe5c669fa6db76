"""Figures of the self-supervised LM evaluation: the spider plot (paper Fig. 2) and the
ablation curves (Figs. 16, 18, 20, 21)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...report.plots import _plt, legend_below, names_note, note_below, short_name

#: (score, higher is better, axis label) of the spider plot, in the paper's order.
SPIDER_AXES = (("negation_sensitivity", True, "Negation"),
               ("toxicity_generation", False, "Toxicity"),
               ("long_range", True, "Long-range context"),
               ("word_order", True, "Word order"),
               ("tokenization", False, "Tokenization"))
#: (score, setting key, x label, figure of the paper) of the ablation panels.
ABLATIONS = (("toxicity_generation", "k", "triggers appended", "Fig. 16"),
             ("long_range", "swapped", "sentences swapped", "Fig. 18"),
             ("word_order", "swaps", "word swaps", "Fig. 20"),
             ("tokenization", "stride", "split stride (characters)", "Fig. 21"))


def _finite(x: float) -> float:
    return x if np.isfinite(x) else 0.0


def spider_figure(rows: Sequence[dict[str, Any]]) -> Any:
    """Fig. 2: one polygon per model over the headline scores.

    Each axis is scaled so that the best model reaches 1 and a larger area is better: a
    higher-is-better score as value / best value, a lower-is-better one as best value /
    value. The raw values are printed in the legend. With one model (best on every axis by
    construction) the figure shows its raw scores as bars instead.
    """
    plt = _plt()
    main = [r for r in rows if r["main"]]
    axes = [a for a in SPIDER_AXES if any(r["metric"] == a[0] for r in main)]
    models = list(dict.fromkeys(r["model"] for r in main))
    value = {(r["model"], r["metric"]): r["value"] for r in main}
    if len(models) < 2:  # scaled to the best model, one model is "best" on every axis: show its raw scores
        return _raw_scores_figure(models[0] if models else "", axes, value)
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False)
    fig = plt.figure(figsize=(6.4, 5.6))
    ax = fig.add_subplot(projection="polar")
    for model in models:
        scaled, raw = [], []
        for metric, higher, _ in axes:
            vals = [value[(m, metric)] for m in models if (m, metric) in value and np.isfinite(value[(m, metric)])]
            v = value.get((model, metric), np.nan)
            raw.append(f"{v:.3g}")
            if not np.isfinite(v) or not vals:
                scaled.append(0.0)
            elif higher:
                best = max(vals)
                scaled.append(max(v, 0.0) / best if best > 0 else 0.0)
            else:
                best = max(min(vals), 0.0)
                scaled.append(1.0 if v <= best else (best / v if v > 0 else 0.0))
        closed = np.append(scaled, scaled[0])
        ax.plot(np.append(angles, angles[0]), closed, marker="o", label=f"{short_name(model)}: " + ", ".join(raw))
        ax.fill(np.append(angles, angles[0]), closed, alpha=0.15)
    ax.set_xticks(angles, [a[2] for a in axes])
    ax.tick_params(axis="x", pad=6)
    for label, angle in zip(ax.get_xticklabels(), angles):  # each name outward from the circle, not across it
        c, s = np.cos(angle), np.sin(angle)
        label.set_horizontalalignment("left" if c > 0.1 else "right" if c < -0.1 else "center")
        label.set_verticalalignment("bottom" if s > 0.1 else "top" if s < -0.1 else "center")
    ax.set_ylim(0, 1.05)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["", "", "", "best"], fontsize=7)
    # a figure title: the layout keeps it above the axis names, which stand outside the polar axes
    fig.suptitle("Self-supervised sensitivity scores (larger area is better)", fontsize=10)
    legend_below(ax, fontsize=7, title="raw values: " + ", ".join(a[2] for a in axes), title_fontsize=7)
    note = names_note(models)
    if note:
        note_below(ax, note)
    return fig


def _raw_scores_figure(model: str, axes: Sequence[tuple[str, bool, str]], value: dict[tuple[str, str], float]) -> Any:
    """The headline scores of one model as bars of their raw values, each written after its bar
    (a spider plot scales each axis to the best model, which says nothing about a model alone)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.55 * max(len(axes), 1)))
    vals = [value.get((model, metric), np.nan) for metric, _, _ in axes]
    labels = [f"{label} ({'higher' if higher else 'lower'} is better)" for _, higher, label in axes]
    y = np.arange(len(axes))
    ax.barh(y, [_finite(v) for v in vals], color="#4c78a8")
    for k, v in enumerate(vals):
        ax.text(_finite(v), k, f" {v:.3g}", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("score")
    ax.margins(x=0.12)  # room right of the longest bar for its value
    ax.set_title(f"Self-supervised sensitivity scores of {model} (give two models or more to compare them "
                 "on one spider plot)", fontsize=9, wrap=True)
    return fig


def ablation_figure(rows: Sequence[dict[str, Any]]) -> Any:
    """Figs. 16/18/20/21 in one figure: each score against its setting, ± standard error, with
    ticks at the settings measured; one legend right of the last panel, long model names cut in
    the middle and given in full under the first."""
    plt = _plt()
    panels = [a for a in ABLATIONS if any(r["metric"] == a[0] for r in rows)]
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axs = plt.subplots(1, max(len(panels), 1), figsize=(3.6 * max(len(panels), 1) + 2.2, 3.6), squeeze=False)
    for ax, (metric, key, xlabel, fig_ref) in zip(axs[0], panels):
        sel = [r for r in rows if r["metric"] == metric and r["setting"].startswith(key + "=")]
        settings: set[int] = set()
        for model in dict.fromkeys(r["model"] for r in sel):
            pts = sorted((int(r["setting"].split("=")[1]), r["value"], _finite(r["stderr"]))
                         for r in sel if r["model"] == model)
            x, y, e = zip(*pts)
            settings.update(x)
            ax.errorbar(x, y, yerr=e, marker="o", capsize=2, label=short_name(model),
                        color=f"C{models.index(model) % 10}")
        if 0 < len(settings) <= 12:  # whole-number settings: ticks at them, not at 1.5, 2.5
            ax.set_xticks(sorted(settings))
        else:
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{metric.replace('_', ' ')} (± s.e.)")
        ax.set_title(f"{metric.replace('_', ' ')} ({fig_ref})", fontsize=9)
        ax.grid(alpha=0.3)
    if panels:
        handles = {label: h for ax in axs[0] for h, label in zip(*ax.get_legend_handles_labels())}
        axs[0][len(panels) - 1].legend(handles.values(), handles.keys(), fontsize=7, loc="center left",
                                       bbox_to_anchor=(1.02, 0.5))
        note = names_note(models)
        if note:
            note_below(axs[0][0], note)
    return fig
