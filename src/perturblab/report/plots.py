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


def text_colour(im: Any, value: float) -> str:
    """Black on light cells of the image ``im``, white on dark ones (by the luminance of the
    cell's colour), so that a number written in a cell stays legible."""
    if not np.isfinite(value):
        return "black"
    r, g, b, _ = im.cmap(im.norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def wrap_title(title: str, width_in: float, fontsize: float = 9) -> str:
    """``title`` with each of its lines broken into lines that fit ``width_in`` inches at
    ``fontsize`` points (about 0.55 em a character); a line that fits stays whole."""
    import textwrap

    chars = max(20, int(width_in * 72 / (0.55 * fontsize)))
    return "\n".join("\n".join(textwrap.wrap(line, chars, break_on_hyphens=False)) if len(line) > chars else line
                     for line in title.split("\n"))


def names_note(full: Sequence[str], width: int = 28) -> str:
    """``full name: …`` lines for the names that :func:`short_name` shortens (empty when none)."""
    cut = [str(n) for n in dict.fromkeys(map(str, full)) if short_name(n, width) != n]
    return "\n".join(f"{short_name(n, width)}: {n}" for n in cut)


def _depth_below(ax: Any) -> float:
    """How far (points) the tick labels, x label and legend of ``ax`` reach below its bottom edge;
    they keep that depth when the layout resizes the axes."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    boxes = [ax.xaxis.get_tightbbox(renderer)] + ([ax.get_legend().get_window_extent(renderer)]
                                                   if ax.get_legend() is not None else [])
    lowest = min((b.y0 for b in boxes if b is not None), default=np.inf)
    return max(ax.get_window_extent(renderer).y0 - lowest, 0.0) * 72 / fig.dpi if np.isfinite(lowest) else 0.0


def legend_below(ax: Any, *args: Any, **kw: Any) -> Any:
    """A legend centred under the axes' tick labels and x label, clear of them however the layout
    later resizes the axes (the gap is in points); it replaces any legend the axes had."""
    from matplotlib.transforms import offset_copy

    fig = ax.figure
    kw.setdefault("loc", "upper center")
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    return ax.legend(*args, bbox_to_anchor=(0.5, 0), bbox_transform=offset_copy(
        ax.transAxes, fig=fig, y=-(_depth_below(ax) + 6), units="points"), **kw)


def note_below(ax: Any, text: str, fontsize: float = 7, width_in: float | None = None) -> Any:
    """``text`` in small print under the axes' tick labels, x label and legend, left-aligned with
    the axes and wrapped to ``width_in`` inches (default: the axes' width, so that beside other
    panels it widens no gap between them); returns the text artist."""
    fig = ax.figure
    width = 0.85 * ax.get_position().width * fig.get_size_inches()[0] if width_in is None else width_in
    lines = [wrap_title(line, width, fontsize) for line in text.split("\n")]
    return ax.annotate("\n".join(lines), (0, 0), xycoords="axes fraction", xytext=(0, -(_depth_below(ax) + 4)),
                       textcoords="offset points", ha="left", va="top", fontsize=fontsize)


def settle_layout(fig: Any) -> Any:
    """A first layout pass over ``fig``. One pass of ``tight_layout`` from matplotlib's default
    margins can leave a colour bar's label past the figure's edge when long tick labels and a wide
    title push the axes about; from this pass, the one :func:`save_figure` makes fits everything."""
    fig.tight_layout()
    return fig


def _label(name: str) -> str:
    """A tick label: each line of ``name`` shortened by :func:`short_name`."""
    return "\n".join(short_name(line) for line in str(name).split("\n"))


def heatmap_figure(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str,
                   cmap: str = "viridis", fmt: str = "{:.2f}", center: float | None = None,
                   colorbar: bool = True, colorbar_label: str = "", scale: np.ndarray | None = None,
                   max_span: float | None = None, notes: Sequence[str] = ()) -> Any:
    """A rows × cols heatmap with each value written in its cell (NaN cells left blank), in black
    on light cells and white on dark ones.

    ``center`` makes the colour scale symmetric around that value (e.g. 1 for relative robustness);
    ``max_span`` caps its half-width, and ``scale`` (a boolean array shaped like ``values``) picks
    the cells that set the scale (default: every finite cell). Cells beyond the scale take its end
    colours and the colour bar gets an arrow at that end. Long row and column names are cut in the
    middle (:func:`short_name`) and given in full in a note under the axes, after ``notes``.
    """
    plt = _plt()
    mat = np.asarray(values, dtype=float)
    finite = mat[np.isfinite(mat)]
    basis = mat[np.isfinite(mat) & (np.ones_like(mat, bool) if scale is None else np.asarray(scale, bool))]
    basis = basis if basis.size else finite
    col_labels, row_labels = [_label(c) for c in cols], [_label(r) for r in rows]
    longest = max((len(line) for c in col_labels for line in c.split("\n")), default=0)
    wide = longest > 10
    lines = max((c.count("\n") + 1 for c in col_labels), default=1)
    note = "\n".join([*notes, names_note([line for n in [*rows, *cols] for line in str(n).split("\n")])]).strip()
    # room under the axes for the column names slanted at 30° (half their length, about 0.08 inch a
    # character at 10 points) and the note, so that a few rows keep a readable height
    label_room = (0.04 * longest if wide else 0.0) + 0.15 * (lines - 1)
    width = max(4.5, 2.2 + 1.1 * len(cols))
    fig, ax = plt.subplots(figsize=(width, 1.2 + 0.45 * len(rows) + label_room + 0.13 * (note.count("\n") + 1
                                                                                            if note else 0)))
    kw = {}
    if center is not None and basis.size:
        span = float(np.max(np.abs(basis - center)))
        span = span if span > 1e-6 else 0.05  # every cell at the centre: a readable scale, not ±1e-9 around it
        span = min(span, max_span) if max_span else span
        kw = {"vmin": center - span, "vmax": center + span}
    elif basis.size and float(np.ptp(basis)) < 1e-12:  # every cell equal: a scale around that value
        pad = max(abs(float(basis[0])) * 0.05, 0.05)
        kw = {"vmin": float(basis[0]) - pad, "vmax": float(basis[0]) + pad}
    elif basis.size:
        kw = {"vmin": float(basis.min()), "vmax": float(basis.max())}
    im = ax.imshow(mat, cmap=cmap, aspect="auto", **kw)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isfinite(mat[i, j]):
                ax.text(j, i, fmt.format(mat[i, j]), ha="center", va="center", fontsize=7,
                        color=text_colour(im, mat[i, j]))
    ax.set_xticks(range(len(cols)), col_labels, rotation=30 if wide else 0, ha="right" if wide else "center",
                  rotation_mode="anchor" if wide else "default")
    ax.set_yticks(range(len(rows)), row_labels)
    ax.set_title(wrap_title(title, width - 1.0), fontsize=9)
    if colorbar:
        low, high = im.norm.vmin, im.norm.vmax
        extend = {(False, False): "neither", (True, False): "min", (False, True): "max", (True, True): "both"}[
            (bool(finite.size and finite.min() < low - 1e-12), bool(finite.size and finite.max() > high + 1e-12))]
        fig.colorbar(im, ax=ax, shrink=0.8, extend=extend, label=colorbar_label)
    if note:  # under the column names, whatever their height; as wide as the axes and colour bar
        note_below(ax, note, width_in=0.9 * width - ax.get_position().x0 * width)
    return settle_layout(fig)
