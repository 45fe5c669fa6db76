"""The outputs of a relative-robustness study (robustness paper Tables 1, 3 and 4): the summary of
the result rows with bootstrap intervals, its markdown tables and heatmaps. Shared by the
classification/regression study (:mod:`.study`) and the generation study
(:mod:`.generation`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np


def _cell(summary: dict[str, Any], model: str, pert: str, metric: str) -> dict[str, Any]:
    return next((c for c in summary["cells"] if (c["model"], c["perturbation"], c["metric"]) == (model, pert, metric)),
                {"mean": math.nan, "std": math.nan})


def summarise(rows: Sequence[dict[str, Any]],
              intervals: Mapping[tuple[str, str, str], list[float]] | None = None) -> dict[str, Any]:
    """Clean scores per model and metric, and the mean ± std (over draws; None for one draw) of
    relative robustness per model × perturbation × metric (NaN where the clean score is not
    positive), with its bootstrap 95 % interval (``ci``) where ``intervals`` has one."""
    clean = {}
    cells = []
    keys = dict.fromkeys((r["model"], r["perturbation"], r["metric"]) for r in rows)
    for model, pert, metric in keys:
        sel = [r for r in rows if (r["model"], r["perturbation"], r["metric"]) == (model, pert, metric)]
        clean[(model, metric)] = sel[0]["clean"]
        rr = np.array([math.nan if r["relative_robustness"] is None else r["relative_robustness"] for r in sel])
        cells.append({"model": model, "perturbation": pert, "metric": metric, "draws": len(sel),
                      "mean": float(rr.mean()), "std": float(rr.std(ddof=1)) if len(rr) > 1 else None,
                      "perturbed_mean": float(np.mean([r["perturbed"] for r in sel])),
                      "change_rate": float(np.mean([r["change_rate"] for r in sel])),
                      "ci": (intervals or {}).get((model, pert, metric))})
    return {"clean": [{"model": m, "metric": k, "value": v} for (m, k), v in clean.items()], "cells": cells}


def clean_table(summary: dict[str, Any]) -> list[str]:
    """Markdown lines of the clean scores: a row per metric, a column per model."""
    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    value = {(c["model"], c["metric"]): c["value"] for c in summary["clean"]}
    lines = ["| metric | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    for metric in dict.fromkeys(c["metric"] for c in summary["clean"]):
        lines.append(f"| {metric} | " + " | ".join(f"{value[(m, metric)]:.3f}" for m in models) + " |")
    return lines


def robustness_markdown(summary: dict[str, Any]) -> str:
    """Table 1 (clean scores) and Table 3 (relative robustness) of the robustness paper, per metric."""
    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    metrics = list(dict.fromkeys(c["metric"] for c in summary["clean"]))
    perts = list(dict.fromkeys(c["perturbation"] for c in summary["cells"]))
    lines = ["# Relative robustness", "",
             "robustness = 1 − (m_c − m_p) / m_c (robustness paper Sec. 3.4); mean ± s.d. over perturbation "
             "draws. **Bold**: the most robust model of each row; <u>underlined</u>: the three perturbations that "
             "hurt each model most.", "", "## Clean scores (Table 1)", ""] + clean_table(summary)
    for metric in metrics:
        grid = {(p, m): _cell(summary, m, p, metric) for p in perts for m in models}
        worst = {m: set(sorted((p for p in perts if not math.isnan(grid[(p, m)]["mean"])),
                               key=lambda p: grid[(p, m)]["mean"])[:3]) for m in models}
        lines += ["", f"## Relative robustness, {metric} (Table 3)", "",
                  "| perturbation | " + " | ".join(models) + " | changed |", "|---|" + "---|" * (len(models) + 1)]
        for p in perts:
            means = [grid[(p, m)]["mean"] for m in models]
            best = np.nanmax(means) if not all(math.isnan(v) for v in means) else math.nan
            cells = []
            for m, v in zip(models, means):
                sd = grid[(p, m)]["std"]
                text = "n/a" if math.isnan(v) else f"{v:.3f}" + ("" if sd is None else f" ± {sd:.3f}")
                if p in worst[m]:
                    text = f"<u>{text}</u>"
                if not math.isnan(v) and v == best and len(models) > 1:
                    text = f"**{text}**"
                cells.append(text)
            rate = np.mean([grid[(p, m)].get("change_rate", math.nan) for m in models])
            lines.append(f"| {p} | " + " | ".join(cells) + f" | {rate:.0%} |")
        if any(grid[k].get("ci") for k in grid):
            lines += ["", f"95 % paired-bootstrap intervals over test examples, {metric}:", "",
                      "| perturbation | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
            for p in perts:
                ci = [grid[(p, m)].get("ci") or [math.nan, math.nan] for m in models]
                lines.append(f"| {p} | " + " | ".join("n/a" if math.isnan(lo) else f"[{lo:.3f}, {hi:.3f}]"
                                                      for lo, hi in ci) + " |")
    return "\n".join(lines) + "\n"


def relative_robustness_figures(summary: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``<prefix>_<metric>.png`` -> figure per metric of a :func:`summarise` result: perturbations ×
    models, centred on 1 (unaffected)."""
    from ...report.plots import heatmap_figure

    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    perts = list(dict.fromkeys(c["perturbation"] for c in summary["cells"]))
    return {f"{prefix}_{metric}.png": heatmap_figure(
                np.array([[_cell(summary, m, p, metric)["mean"] for m in models] for p in perts]), perts, models,
                title=f"relative robustness 1 − (m_c − m_p)/m_c, {metric}", cmap="RdYlGn", fmt="{:.2f}", center=1.0)
            for metric in dict.fromkeys(c["metric"] for c in summary["clean"])}


def relative_robustness_heatmaps(summary: dict[str, Any], out: Path, prefix: str) -> list[Path]:
    """:func:`relative_robustness_figures` written into ``out``."""
    from ...report.plots import save_figure

    return [save_figure(fig, out / name) for name, fig in relative_robustness_figures(summary, prefix).items()]
