"""Figures of the checkpoint-dynamics study (SCoPE App. D): metrics against training progress.

* :func:`metrics_vs_final` — Fig. 9: every metric of Sec. 3.3 for each checkpoint m_t with the
  final checkpoint as reference, one figure per capability.
* :func:`soft_scope_panels` — Fig. 10: Soft-SCoPE (Eq. 3) per capability against the final
  checkpoint (left) and against the previous checkpoint m_{t-1} (right).

Rows are those of :func:`perturblab.studies.scope.checkpoints.CheckpointStudy.run` (``comparison``,
``capability``, ``percent``/``position``, metric means and ``<metric>_se``); error bars are
standard errors over trials.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from ...report.plots import METRIC_LABELS, _plt, names_note, note_below, safe_name, save_figure, short_name


def x_axis(rows: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(row key, axis label): training percent when every row has one, else checkpoint position."""
    if rows and all(isinstance(r.get("percent"), (int, float)) for r in rows):
        return "percent", "checkpoint (% of training)"
    return "position", "checkpoint (position in the list)"


def _series(rows: Sequence[dict[str, Any]], metric: str, key: str) -> tuple[list, list, list]:
    rows = sorted(rows, key=lambda r: r[key])
    xs = [r[key] for r in rows]
    ys = [math.nan if r.get(metric) is None else r[metric] for r in rows]
    es = [0.0 if not isinstance(r.get(metric + "_se"), (int, float)) or not math.isfinite(r[metric + "_se"])
          else r[metric + "_se"] for r in rows]
    return xs, ys, es


def _ticks(ax, rows: Sequence[dict[str, Any]], key: str) -> None:
    xs = sorted({r[key] for r in rows})
    if len(xs) <= 12:
        ax.set_xticks(xs, [f"{x:.3g}" for x in xs])


def _line(ax, xs: list, ys: list, es: list, width: float, **kw: Any) -> None:
    """One series: error bars only where some standard error is known (one trial has none, and
    then the legend shows no error-bar marker), drawn ``width`` points wide so that a series
    drawn earlier and broader still shows where a later one coincides with it."""
    if any(e > 0 for e in es):
        ax.errorbar(xs, ys, yerr=es, marker="o", ms=4, capsize=2, lw=width, **kw)
    else:
        ax.plot(xs, ys, marker="o", ms=4, lw=width, **kw)


def _error_note(rows: Sequence[dict[str, Any]], metrics: Sequence[str]) -> str:
    """What the error bars are: ± 1 s.e. over the trials, or none (one trial)."""
    if not any(_series(rows, m, "position")[2][i] > 0 for m in metrics for i in range(len(rows))):
        return "no error bars: one trial"
    trials = max((int(r["trials"]) for r in rows if isinstance(r.get("trials"), int)), default=0)
    return f"error bars: ± 1 s.e. over {trials} trials" if trials else "error bars: ± 1 s.e. over trials"


def metrics_vs_final(rows: Sequence[dict[str, Any]], out_dir: str | Path,
                     metrics: Sequence[str] = tuple(METRIC_LABELS)) -> list[Path]:
    """Fig. 9: one PNG per capability, ``checkpoints_vs_final_<capability>.png``, with a line per
    metric (mean ± s.e. over trials) against the checkpoint, the final checkpoint as reference."""
    plt = _plt()
    sel = [r for r in rows if r["comparison"] == "vs_final"]
    key, xlabel = x_axis(sel)
    paths = []
    for cap in dict.fromkeys(r["capability"] for r in sel):
        cap_rows = [r for r in sel if r["capability"] == cap]
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
        for i, m in enumerate(metrics):  # earlier lines broader: coinciding metrics (often 1.0) all show
            xs, ys, es = _series(cap_rows, m, key)
            _line(ax, xs, ys, es, 1.2 + 0.9 * (len(metrics) - 1 - i), label=METRIC_LABELS.get(m, m), alpha=0.85)
        _ticks(ax, cap_rows, key)
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("value")
        reference = cap_rows[0]["reference"]
        ax.set_title(f"{cap}: checkpoint $m_t$ vs the final {short_name(reference)} (reference)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        note_below(ax, "\n".join(t for t in (_error_note(cap_rows, metrics), names_note([reference])) if t))
        paths.append(save_figure(fig, Path(out_dir) / f"checkpoints_vs_final_{safe_name(cap)}.png"))
    return paths


def soft_scope_panels(rows: Sequence[dict[str, Any]], path: str | Path, metric: str = "soft_scope") -> Path:
    """Fig. 10: ``metric`` (default Soft-SCoPE) per capability against the checkpoint, final
    checkpoint as reference (left) and previous checkpoint as reference (right)."""
    plt = _plt()
    key, xlabel = x_axis(rows)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True, sharex=True)
    titles = {"vs_final": "reference: final checkpoint", "vs_previous": "reference: previous checkpoint $m_{t-1}$"}
    values = [r[metric] for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
    low = max(0.0, min(values, default=0.0) - 0.05)  # zoom in: Soft-SCoPE often stays close to 1
    for ax, comparison in zip(axes, ("vs_final", "vs_previous")):
        sel = [r for r in rows if r["comparison"] == comparison]
        caps = list(dict.fromkeys(r["capability"] for r in rows))
        for i, cap in enumerate(caps):
            xs, ys, es = _series([r for r in sel if r["capability"] == cap], metric, key)
            if xs:
                _line(ax, xs, ys, es, 1.2 + 0.9 * (len(caps) - 1 - i), label=cap, color=f"C{i}", alpha=0.85)
        if sel:
            _ticks(ax, rows, key)
        else:
            ax.text(0.5, 0.5, "no rows", ha="center", va="center", transform=ax.transAxes)
        ax.set_ylim(low - 0.02 * (1 - low), 1 + 0.05 * (1 - low))
        ax.set_xlabel(xlabel)
        ax.set_title(titles[comparison], fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(METRIC_LABELS.get(metric, metric))
    handles, labels = axes[0].get_legend_handles_labels()
    more = [(h, l) for h, l in zip(*axes[1].get_legend_handles_labels()) if l not in labels]
    if handles or more:
        axes[1].legend(handles + [h for h, _ in more], labels + [l for _, l in more], fontsize=8,
                       title="capability", loc="center left", bbox_to_anchor=(1.01, 0.5))
    note_below(axes[0], _error_note(rows, [metric]))
    return save_figure(fig, path)
