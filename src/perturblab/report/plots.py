"""Figures drawn with matplotlib (Agg backend, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

METRIC_LABELS = {"gap_iid_acc": "Gap IID acc", "iid_agreement": "IID agreement",
                 "ood_agreement": "OOD agreement", "hard_scope": "Hard-SCoPE",
                 "soft_scope": "Soft-SCoPE"}


def safe_name(name: str) -> str:
    """``name`` with every character other than letters, digits, '-', '_' and '.' as '_'
    (model names can be paths or hub ids; file names must not be)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path, dpi: int = 120) -> Path:
    """Lay out, write (atomically) and close a figure; returns its path."""
    from ..core.files import save_figure as _save

    _plt()
    return _save(fig, path, dpi=dpi)


def scope_bar_figures(summary: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One figure per target (SCoPE Fig. 3 style), by file name ``scope_<target>.png``: metrics
    grouped by capability, error bars = standard error over trials."""
    plt = _plt()
    figures: dict[str, Any] = {}
    targets = list(dict.fromkeys(r["target"] for r in summary))
    metrics = list(METRIC_LABELS)
    for target in targets:
        rows = [r for r in summary if r["target"] == target]
        caps = [r["capability"] for r in rows]
        fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(caps) * len(metrics) / 5, 3.6))
        width = 0.8 / len(metrics)
        x = np.arange(len(caps))
        for k, m in enumerate(metrics):
            vals = [r[m] for r in rows]
            errs = [0 if not np.isfinite(r.get(m + "_se", np.nan)) else r[m + "_se"] for r in rows]
            ax.bar(x + (k - (len(metrics) - 1) / 2) * width, vals, width, yerr=errs, capsize=2,
                   label=METRIC_LABELS[m])
        ax.set_xticks(x, caps)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("value")
        ax.set_title(f"reference {rows[0]['reference']} → target {target}")
        ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12))
        figures[f"scope_{safe_name(target)}.png"] = fig
    return figures


def scope_bars(summary: Sequence[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """:func:`scope_bar_figures` written into ``out_dir``."""
    return [save_figure(fig, Path(out_dir) / name) for name, fig in scope_bar_figures(summary).items()]


def sample_complexity_plot(curves: dict[str, list[dict[str, float]]], path: str | Path,
                           title: str = "") -> Path:
    """:func:`sample_complexity_figure` written to ``path``."""
    return save_figure(sample_complexity_figure(curves, title), path)


def sample_complexity_figure(curves: dict[str, list[dict[str, float]]], title: str = "") -> Any:
    """SCoPE Fig. 15 style: metric mean and interval against the number of base samples."""
    plt = _plt()
    from matplotlib.ticker import ScalarFormatter

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for name, rows in curves.items():
        if len(rows) < 2:  # a single sample size is no curve
            continue
        n = [r["n"] for r in rows]
        ax.plot(n, [r["mean"] for r in rows], marker="o", label=name)
        ax.fill_between(n, [r["low"] for r in rows], [r["high"] for r in rows], alpha=0.2)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("number of base samples")
    ax.set_ylabel("mean and 95% interval")
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def value_heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], path: str | Path, *,
                  title: str, cmap: str = "viridis", fmt: str = "{:.2f}", center: float | None = None,
                  colorbar: bool = True) -> Path:
    """:func:`heatmap_figure` written to ``path``."""
    return save_figure(heatmap_figure(values, rows, cols, title=title, cmap=cmap, fmt=fmt, center=center,
                                      colorbar=colorbar), path)


def heatmap_figure(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str,
                   cmap: str = "viridis", fmt: str = "{:.2f}", center: float | None = None,
                   colorbar: bool = True) -> Any:
    """A rows × cols heatmap with each value written in its cell (NaN cells left blank).

    ``center`` makes the colour scale symmetric around that value (e.g. 1 for relative robustness).
    """
    plt = _plt()
    mat = np.asarray(values, dtype=float)
    fig, ax = plt.subplots(figsize=(max(4.5, 2.2 + 1.1 * len(cols)), 1.2 + 0.45 * len(rows)))
    kw = {}
    if center is not None and np.isfinite(mat).any():
        span = max(float(np.nanmax(np.abs(mat - center))), 1e-9)
        kw = {"vmin": center - span, "vmax": center + span}
    im = ax.imshow(mat, cmap=cmap, aspect="auto", **kw)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isfinite(mat[i, j]):
                ax.text(j, i, fmt.format(mat[i, j]), ha="center", va="center", fontsize=7)
    short = [c if len(c) <= 24 else "…" + c[-23:] for c in map(str, cols)]  # paths and hub ids can be long
    wide = max(map(len, short), default=0) > 10
    ax.set_xticks(range(len(cols)), short, rotation=30 if wide else 0, ha="right" if wide else "center")
    ax.set_yticks(range(len(rows)), list(rows))
    ax.set_title(title, fontsize=9)
    if colorbar:
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig
