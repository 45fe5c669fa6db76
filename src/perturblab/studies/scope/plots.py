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

from ...report.plots import METRIC_LABELS, _plt, safe_name, save_figure


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
        for m in metrics:
            xs, ys, es = _series(cap_rows, m, key)
            ax.errorbar(xs, ys, yerr=es, marker="o", ms=4, capsize=2, label=METRIC_LABELS.get(m, m))
        _ticks(ax, cap_rows, key)
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("value")
        ax.set_title(f"{cap}: checkpoint $m_t$ vs the final {cap_rows[0]['reference']} (reference)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        paths.append(save_figure(fig, Path(out_dir) / f"checkpoints_vs_final_{safe_name(cap)}.png"))
    return paths


def soft_scope_panels(rows: Sequence[dict[str, Any]], path: str | Path, metric: str = "soft_scope") -> Path:
    """Fig. 10: ``metric`` (default Soft-SCoPE) per capability against the checkpoint, final
    checkpoint as reference (left) and previous checkpoint as reference (right)."""
    plt = _plt()
    key, xlabel = x_axis(rows)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    titles = {"vs_final": "reference: final checkpoint", "vs_previous": "reference: previous checkpoint $m_{t-1}$"}
    values = [r[metric] for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
    low = max(0.0, min(values, default=0.0) - 0.05)  # zoom in: Soft-SCoPE often stays close to 1
    for ax, comparison in zip(axes, ("vs_final", "vs_previous")):
        sel = [r for r in rows if r["comparison"] == comparison]
        for cap in dict.fromkeys(r["capability"] for r in sel):
            xs, ys, es = _series([r for r in sel if r["capability"] == cap], metric, key)
            ax.errorbar(xs, ys, yerr=es, marker="o", ms=4, capsize=2, label=cap)
        if sel:
            _ticks(ax, sel, key)
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "no rows", ha="center", va="center", transform=ax.transAxes)
        ax.set_ylim(low - 0.02 * (1 - low), 1 + 0.05 * (1 - low))
        ax.set_xlabel(xlabel)
        ax.set_title(titles[comparison], fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(METRIC_LABELS.get(metric, metric))
    return save_figure(fig, path)
