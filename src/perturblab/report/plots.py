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


def short_name(name: str, width: int = 28) -> str:
    """``name`` cut in the middle to at most ``width`` characters (a long local path or hub id
    keeps its start and its end: ``/home/me/…/checkpoint-500``)."""
    name = str(name)
    if len(name) <= width:
        return name
    keep = width - 1
    return name[: keep // 2] + "…" + name[len(name) - (keep - keep // 2):]


def _interval_errors(mean: float, ci: Any) -> tuple[float, float] | None:
    """(below, above) the mean of a 95% interval ``ci``, None when it is undefined."""
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or not all(isinstance(v, (int, float)) for v in ci):
        return None
    lo, hi = float(ci[0]), float(ci[1])
    if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(mean)):
        return None
    return max(0.0, mean - lo), max(0.0, hi - mean)


def scope_bar_figures(summary: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """One figure per target (SCoPE Fig. 3 style), by file name ``scope_<target>.png``: the
    metrics grouped by capability, each group labelled with its n (base samples per trial).
    Error bars: ± the standard error over trials when there are several; with one trial, the
    95% bootstrap interval of Hard-/Soft-SCoPE from that trial's row of ``rows`` (the other
    metrics then have none). A note under the axes says which, explains ``synonym*``/``typo*``
    and gives the models' full names when the title shortens them."""
    plt = _plt()
    figures: dict[str, Any] = {}
    targets = list(dict.fromkeys(r["target"] for r in summary))
    metrics = list(METRIC_LABELS)
    for target in targets:
        group = [r for r in summary if r["target"] == target]
        caps = [r["capability"] for r in group]
        trials = max((int(r.get("trials") or 1) for r in group), default=1)
        fig, ax = plt.subplots(figsize=(max(6.4, 1.6 + 1.5 * len(caps) * len(metrics) / 5), 4.2))
        width = 0.8 / len(metrics)
        x = np.arange(len(caps))
        for k, m in enumerate(metrics):
            vals = [np.nan if r.get(m) is None else float(r[m]) for r in group]
            below, above = [], []
            for r, v in zip(group, vals):
                se = r.get(m + "_se")
                err: tuple[float, float] | None = None
                if trials > 1 and isinstance(se, (int, float)) and np.isfinite(se):
                    err = (float(se), float(se))
                elif trials == 1:
                    one = next((t for t in rows if (t.get("target"), t.get("capability")) == (target, r["capability"])),
                               None)
                    err = _interval_errors(v, (one or {}).get(m + "_ci"))
                below.append(err[0] if err else 0.0)
                above.append(err[1] if err else 0.0)
            bars = any(below) or any(above)
            ax.bar(x + (k - (len(metrics) - 1) / 2) * width, vals, width, yerr=[below, above] if bars else None,
                   capsize=2 if bars else 0, label=METRIC_LABELS[m])
        ax.set_xticks(x, [f"{c}\nn={int(r['n'])}" if isinstance(r.get("n"), (int, float)) else c
                          for c, r in zip(caps, group)])
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("value")
        ref = group[0]["reference"]
        ax.set_title(f"reference {short_name(ref)} → target {short_name(target)}", fontsize=10)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        notes = [f"error bars: ± standard error over {trials} trials" if trials > 1 else
                 "one trial: error bars are the 95% bootstrap intervals of Hard- and Soft-SCoPE"]
        if any(c.endswith("*") for c in caps):
            notes.append("synonym* / typo*: on the base samples fairness changes (SCoPE App. C)")
        if short_name(ref) != ref or short_name(target) != target:
            notes.append(f"reference: {ref}; target: {target}")
        ax.text(0, -0.2, "\n".join(notes), fontsize=7, va="top", ha="left", transform=ax.transAxes)
        figures[f"scope_{safe_name(target)}.png"] = fig
    return figures


def scope_bars(summary: Sequence[dict[str, Any]], out_dir: str | Path,
               rows: Sequence[dict[str, Any]] = ()) -> list[Path]:
    """:func:`scope_bar_figures` written into ``out_dir``."""
    return [save_figure(fig, Path(out_dir) / name) for name, fig in scope_bar_figures(summary, rows).items()]


def sample_complexity_plot(curves: dict[str, list[dict[str, float]]], path: str | Path,
                           title: str = "") -> Path:
    """:func:`sample_complexity_figure` written to ``path``."""
    return save_figure(sample_complexity_figure(curves, title), path)


def has_curve(curves: dict[str, list[dict[str, float]]]) -> bool:
    """Whether any curve has two sample sizes or more (one size is a point, not a curve)."""
    return any(len(rows) >= 2 for rows in curves.values())


def sample_complexity_figure(curves: dict[str, list[dict[str, float]]], title: str = "") -> Any:
    """SCoPE Fig. 15 style: metric mean and 95% interval against the number of base samples m;
    the interval is over random subsets of m of the samples (so it closes at the full sample,
    where every subset is the same)."""
    plt = _plt()
    from matplotlib.ticker import ScalarFormatter

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for name, rows in curves.items():
        if len(rows) < 2:  # a single sample size is no curve
            continue
        n = [r["n"] for r in rows]
        label = " ".join(METRIC_LABELS.get(w, w) for w in name.split())  # "typo hard_scope" -> "typo Hard-SCoPE"
        ax.plot(n, [r["mean"] for r in rows], marker="o", label=label)
        ax.fill_between(n, [r["low"] for r in rows], [r["high"] for r in rows], alpha=0.2)
    ax.set_xscale("log")
    sizes = sorted({r["n"] for rows in curves.values() if len(rows) >= 2 for r in rows})
    if sizes:  # ticks at the sample sizes drawn, as whole numbers (no 10.2, 10.4, ... on a narrow range)
        from matplotlib.ticker import NullFormatter, NullLocator

        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(sizes, [f"{n:g}" for n in sizes], fontsize=8)
    else:
        ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("number of base samples m")
    ax.set_ylabel("mean and 95% interval")
    ax.set_title(title, fontsize=10)
    ax.text(0, -0.2, "interval: over 100 random subsets of m of the samples the reference leaves invariant "
                     "(it closes at the full sample)", fontsize=7, va="top", ha="left", transform=ax.transAxes)
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
    finite = mat[np.isfinite(mat)]
    if center is not None and finite.size:
        span = float(np.max(np.abs(finite - center)))
        span = span if span > 1e-6 else 0.05  # every cell at the centre: a readable scale, not ±1e-9 around it
        kw = {"vmin": center - span, "vmax": center + span}
    elif finite.size and float(np.ptp(finite)) < 1e-12:  # every cell equal: a scale around that value
        pad = max(abs(float(finite[0])) * 0.05, 0.05)
        kw = {"vmin": float(finite[0]) - pad, "vmax": float(finite[0]) + pad}
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
