"""The outputs of a relative-robustness study (robustness paper Tables 1, 3 and 4): the summary of
the result rows with bootstrap intervals, its markdown tables and heatmaps. Shared by the
classification/regression study (:mod:`.study`) and the generation study
(:mod:`.generation`)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ...measures.quality import interval_se, tied_with_best
from ...measures.stats import paired_difference_ci, percentile_interval


def _undefined(v: Any) -> bool:
    """Whether a number of the summary is undefined: None (NaN read back from ``summary.json``) or NaN."""
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def _num(v: Any, fmt: str = ".3f") -> str:
    """``v`` formatted, ``n/a`` when it is undefined (:func:`_undefined`)."""
    return "n/a" if _undefined(v) else format(v, fmt)


def _cell(summary: dict[str, Any], model: str, pert: str, metric: str) -> dict[str, Any]:
    """One cell of the summary; an undefined mean (NaN, written as null in ``summary.json``) is NaN,
    so a summary read back from disk renders like the one in memory."""
    cell = next((c for c in summary["cells"] if (c["model"], c["perturbation"], c["metric"]) == (model, pert, metric)),
                {"mean": math.nan, "std": math.nan})
    return {**cell, "mean": math.nan if cell.get("mean") is None else cell["mean"]}


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
        std = float(rr.std(ddof=1)) if len(rr) > 1 else None
        ci = (intervals or {}).get((model, pert, metric))
        cells.append({"model": model, "perturbation": pert, "metric": metric, "draws": len(sel),
                      "mean": float(rr.mean()), "std": std,
                      "perturbed_mean": float(np.mean([r["perturbed"] for r in sel])),
                      "change_rate": float(np.mean([r["change_rate"] for r in sel])),
                      "ci": ci, "se": cell_se(std, len(sel), ci)})
    return {"clean": [{"model": m, "metric": k, "value": v} for (m, k), v in clean.items()], "cells": cells}


def cell_se(std: float | None, draws: int, ci: Sequence[float] | None) -> float | None:
    """Standard error of a cell's mean relative robustness: the one over perturbation draws
    (s.d. / √draws) and the one over test examples implied by the paired-bootstrap 95 % interval
    (:func:`~perturblab.measures.quality.interval_se`), added in quadrature as independent
    sources; None when neither is known (one draw, no interval)."""
    parts = [] if std is None or math.isnan(std) else [(std / math.sqrt(draws)) ** 2]
    boot = interval_se(ci)
    parts += [] if math.isnan(boot) else [boot ** 2]
    return math.sqrt(sum(parts)) if parts else None


def cell_df(std: float | None, draws: int, ci: Sequence[float] | None) -> float | None:
    """Welch–Satterthwaite degrees of freedom of :func:`cell_se`'s variance v = v_d + v_b, the
    part over draws v_d = (s.d. / √draws)² with draws − 1 degrees of freedom and the bootstrap
    part over test examples v_b taken as large-sample (infinite degrees of freedom):
    df = v² / (v_d² / (draws − 1)) = (draws − 1) · (1 + v_b / v_d)². ``math.inf`` when there is no
    spread over draws (only the bootstrap part, a normal quantile), draws − 1 with no bootstrap
    part; None with one draw or neither part."""
    if draws < 2 or std is None or math.isnan(std):
        return math.inf if draws >= 2 and not math.isnan(interval_se(ci)) else None
    v_d = (std / math.sqrt(draws)) ** 2
    boot = interval_se(ci)
    v_b = 0.0 if math.isnan(boot) else boot ** 2
    if v_d == 0:
        return math.inf if v_b > 0 else float(draws - 1)
    return (draws - 1) * (1 + v_b / v_d) ** 2


def combined_interval(mean: Any, std: float | None, draws: int, ci: Sequence[float] | None, *,
                      paired: bool = False, examples: str | None = None) -> tuple[float | None, float | None, str]:
    """(low, high, what it is over) of the 95 % interval of a mean relative robustness (or of a
    paired gap between two models, ``paired``) over ``draws`` perturbation draws and the test
    examples. One draw: the interval over test examples ``ci``, the paired percentile bootstrap
    unless ``examples`` says what else it is (then its text is ``examples``). Several: mean ±
    t(0.975, df) · :func:`cell_se`, df the Welch–Satterthwaite degrees of freedom of
    :func:`cell_df` (the normal quantile when there is no spread over draws), ``examples`` then
    naming the part over test examples. Nothing is cut: relative robustness and its gaps have no
    bounded range."""
    from scipy import stats

    both = " (both models on the same resamples)" if paired else ""
    if _undefined(mean):
        return None, None, "no interval (undefined estimate)"
    boot = ci is not None and len(ci) >= 2 and not (_undefined(ci[0]) or _undefined(ci[1]))
    if draws < 2:
        if boot:
            return float(ci[0]), float(ci[1]), examples or "95 % paired bootstrap over test examples" + both
        return None, None, "no interval (one draw and no bootstrap)"
    se, df = cell_se(std, draws, ci), cell_df(std, draws, ci)
    if se is None or df is None:
        return None, None, f"no interval ({draws} draws, no spread over draws known and no bootstrap)"
    both = " (both models on the same draws and resamples)" if paired else ""
    if examples and boot:
        both = (" (both models on the same draws and examples; the part over examples: the mean of each draw's "
                f"{examples})")
    if math.isinf(df):
        q, what = float(stats.norm.ppf(0.975)), f"95 % normal interval over {draws} draws and test examples"
    else:
        q = float(stats.t.ppf(0.975, df))
        what = (f"95 % t-interval (Satterthwaite df {df:.1f}) over {draws} draws and test examples" if boot
                else f"95 % t-interval over {draws} draws")
    return float(mean) - q * se, float(mean) + q * se, what + both


#: what a classifier's relative robustness gap's interval over test examples rests on (:func:`paired_gaps`)
JEFFREYS_POSTERIOR = ("the Dirichlet(½) posterior of both models' 16 joint outcomes on each example (right or wrong, "
                      "clean and perturbed)")


def _one_draw(perturbation: str) -> str:
    """What a gap's interval of one draw of ``perturbation`` leaves out: the variance between the
    draws of a random perturbation; nothing for a deterministic one (every draw the same)."""
    from ...errors import UnknownNameError
    from ...perturb.catalogue import get_perturbation

    try:
        fixed = bool(getattr(get_perturbation(perturbation), "deterministic", False))
    except UnknownNameError:  # a perturbation of the caller's own: not known to be deterministic
        fixed = False
    return ("; a deterministic perturbation, the same at every draw" if fixed
            else "; one draw of the perturbation: the variance between its draws is not in it")


def paired_gaps(rows: Sequence[dict[str, Any]],
                replicates: Mapping[tuple[str, str, str], np.ndarray] | None = None,
                correct: Mapping[str, np.ndarray] | None = None, *,
                n: int | None = None,
                perturbed: Mapping[tuple[str, str, int], np.ndarray] | None = None) -> list[dict[str, Any]]:
    """Each model's signed paired gap to the first model (the reference of a comparison): per
    perturbation and metric, its mean relative robustness minus the first model's, and for
    classifiers (``correct``: model -> whether each clean test prediction is right) its clean
    accuracy minus the first model's, with the Jeffreys interval of the paired difference
    (:func:`~perturblab.measures.stats.paired_difference_ci`, which keeps a width where a
    bootstrap has none: two models right and wrong on the same examples).

    A classifier's gap in relative robustness by accuracy, given ``perturbed`` ((model,
    perturbation, draw) -> whether each prediction on that draw of the perturbed test set is
    right) with ``correct``, has the Jeffreys interval of its 16 joint outcomes on each example
    (:func:`~perturblab.measures.paired.robustness_gap_ci`), which keeps a width where the models
    differ on few or no examples; with one draw it is over the test examples only (a random
    perturbation's variance between draws is not in it, and its text says so). Any other gap's
    interval over test examples (``ci``) is the percentile interval of the bootstrap
    replicate-by-replicate differences (``replicates``: (model, perturbation, metric) -> the
    (draws, n_boot) relative robustness of each draw on each bootstrap resample, the resamples
    the same for every model; mean over draws first), so what the two models share (errors on
    the same examples) cancels; at a near twin most replicates differ by exactly 0, and the
    interval can be [0, 0]. With several draws the interval adds the s.d. of the per-draw gaps
    (``std``) as :func:`combined_interval` does. Each gap: ``model, against, perturbation`` (None
    for clean accuracy), ``metric, gap, ci, std, draws, se, df, low, high, interval, n``. Empty
    with one model."""
    from ...measures.paired import robustness_gap_ci

    models = list(dict.fromkeys(r["model"] for r in rows)) or list(correct or {})
    if len(models) < 2:
        return []
    first, out = models[0], []
    per_draw: dict[tuple[str, str, str], dict[int, float]] = {}
    for r in rows:
        rr = r["relative_robustness"]
        per_draw.setdefault((r["model"], r["perturbation"], r["metric"]), {})[r["seed"]] = (
            math.nan if rr is None else float(rr))
        n = r.get("n", n) if n is None else n

    def record(model: str, pert: str | None, metric: str, gap: float, std: float | None, draws: int,
               ci: list[float] | None, examples: str | None = None) -> dict[str, Any]:
        low, high, what = combined_interval(gap, std, draws, ci, paired=True, examples=examples)
        return {"model": model, "against": first, "perturbation": pert, "metric": metric, "gap": gap, "ci": ci,
                "std": std, "draws": draws, "se": cell_se(std, draws, ci) if draws > 1 else interval_se(ci),
                "df": cell_df(std, draws, ci), "low": low, "high": high, "interval": what, "n": n}

    correct, perturbed = correct or {}, perturbed or {}
    for model in models[1:]:
        if model in correct and first in correct:
            right, right_first = np.asarray(correct[model], bool), np.asarray(correct[first], bool)
            ci = paired_difference_ci(right, right_first, seed=0)
            out.append({"model": model, "against": first, "perturbation": None, "metric": "accuracy",
                        "gap": float(np.mean(right)) - float(np.mean(right_first)), "ci": ci, "std": None,
                        "draws": 1, "se": interval_se(ci), "df": None, "low": ci[0], "high": ci[1],
                        "interval": "95 % Jeffreys interval of the paired difference over test examples "
                                    f"({int(np.sum(right != right_first))} discordant)", "n": n})
        for (m, pert, metric), mine in per_draw.items():
            theirs = per_draw.get((first, pert, metric))
            if m != model or theirs is None:
                continue
            seeds = sorted(set(mine) & set(theirs))
            gaps = np.array([mine[s] - theirs[s] for s in seeds])
            gap = float(np.mean([mine[s] for s in seeds]) - np.mean([theirs[s] for s in seeds]))
            std = float(gaps.std(ddof=1)) if len(seeds) > 1 else None
            outcomes = [(perturbed.get((model, pert, s)), perturbed.get((first, pert, s))) for s in seeds]
            if (metric == "accuracy" and model in correct and first in correct and not math.isnan(gap)
                    and all(a is not None and b is not None for a, b in outcomes)):
                ci = robustness_gap_ci(correct[model], correct[first], np.stack([a for a, _ in outcomes]),
                                       np.stack([b for _, b in outcomes]), seed=0)
                examples = (f"95 % Jeffreys interval over test examples, from {JEFFREYS_POSTERIOR}{_one_draw(pert)}"
                            if len(seeds) == 1 else f"Jeffreys interval, from {JEFFREYS_POSTERIOR}")
                out.append(record(model, pert, metric, gap, std, len(seeds), ci, examples))
                continue
            reps, reps_first = ((replicates or {}).get((x, pert, metric)) for x in (model, first))
            diffs = None if reps is None or reps_first is None else (
                np.mean(np.atleast_2d(reps), axis=0) - np.mean(np.atleast_2d(reps_first), axis=0))
            out.append(record(model, pert, metric, gap, std, len(seeds),
                              None if diffs is None else list(percentile_interval(diffs))))
    return out


def _flagged(summary: dict[str, Any]) -> dict[str, list[str]]:
    """model -> its quality flags (:mod:`perturblab.measures.quality`) from ``summary["models"]``."""
    return {q["model"]: list(q.get("flags") or []) for q in summary.get("models") or []}


def most_robust(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per metric and perturbation, the most robust model and every model tied with it (mean
    relative robustness within two standard errors of the difference,
    :func:`~perturblab.measures.quality.tied_with_best`); models flagged as one-class or at
    chance level are left out of the ranking (their robustness means nothing). ``best`` lists
    the models tied for first (one when there is no tie), with their means and standard errors."""
    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    flagged = _flagged(summary)
    out = []
    for metric in dict.fromkeys(c["metric"] for c in summary["clean"]):
        for p in dict.fromkeys(c["perturbation"] for c in summary["cells"]):
            cells = [_cell(summary, m, p, metric) for m in models]
            idx = tied_with_best([c["mean"] for c in cells], [c.get("se") for c in cells],
                                 eligible=[not flagged.get(m) for m in models])
            out.append({"metric": metric, "perturbation": p, "best": [models[i] for i in idx], "tied": len(idx) > 1,
                        "values": {models[i]: {"mean": cells[i]["mean"], "se": cells[i].get("se")} for i in idx},
                        "left_out": sorted(m for m in models if flagged.get(m))})
    return out


def _mean_se(mean: float, se: float | None) -> str:
    return _num(mean) + ("" if _undefined(se) or _undefined(mean) else f" ± {se:.3f}")


def ranking_lines(summary: dict[str, Any]) -> list[str]:
    """Markdown lines naming the most robust model of every row (ties listed, with mean ± s.e.)
    and the models whose scores mean nothing (one class, chance level)."""
    lines = []
    for q in summary.get("models") or []:
        for d in q.get("detail") or []:
            lines += [f"- **{q['model']}**: {d}", ""]
    if lines:
        lines = ["", "## Flags", "", "Relative robustness of these models means nothing; they are left out of "
                 "the ranking:", ""] + lines
    ranks = most_robust(summary)
    if len(dict.fromkeys(c["model"] for c in summary["clean"])) < 2 or not ranks:
        return lines[:-1]
    lines = lines[:-1] + ["", "## Most robust model per row", "",
                          "Mean relative robustness ± standard error (over draws and test examples); models within "
                          "two standard errors of the best are tied.", ""]
    for r in ranks:
        vals = ", ".join(f"{m} ({_mean_se(v['mean'], v['se'])})" for m, v in r["values"].items())
        what = "none (every model is flagged or n/a)" if not r["best"] else (f"tied: {vals}" if r["tied"] else vals)
        lines += [f"- {r['metric']}, {r['perturbation']}: {what}", ""]
    return lines[:-1]


def clean_table(summary: dict[str, Any]) -> list[str]:
    """Markdown lines of the clean scores: a row per metric, a column per model."""
    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    value = {(c["model"], c["metric"]): c["value"] for c in summary["clean"]}
    lines = ["| metric | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    for metric in dict.fromkeys(c["metric"] for c in summary["clean"]):
        lines.append(f"| {metric} | " + " | ".join(_num(value.get((m, metric))) for m in models) + " |")
    return lines


def robustness_markdown(summary: dict[str, Any]) -> str:
    """Table 1 (clean scores) and Table 3 (relative robustness) of the robustness paper, per metric."""
    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    metrics = list(dict.fromkeys(c["metric"] for c in summary["clean"]))
    perts = list(dict.fromkeys(c["perturbation"] for c in summary["cells"]))
    flagged = _flagged(summary)
    heads = [m + (f" ({', '.join(flagged[m])})" if flagged.get(m) else "") for m in models]
    best_of = {(r["metric"], r["perturbation"]): set(r["best"]) for r in most_robust(summary)}
    lines = ["# Relative robustness", "",
             "robustness = 1 − (m_c − m_p) / m_c (robustness paper Sec. 3.4); mean ± s.d. over perturbation "
             "draws. **Bold**: the most robust model of each row, several when they are tied (within two standard "
             "errors; models that predict one class or are at chance level are not ranked); <u>underlined</u>: the "
             "three perturbations that hurt each model most.", "", "## Clean scores (Table 1)", ""]
    lines += clean_table(summary)
    for metric in metrics:
        grid = {(p, m): _cell(summary, m, p, metric) for p in perts for m in models}
        worst = {m: set(sorted((p for p in perts if not math.isnan(grid[(p, m)]["mean"])),
                               key=lambda p: grid[(p, m)]["mean"])[:3]) for m in models}
        lines += ["", f"## Relative robustness, {metric} (Table 3)", "",
                  "| perturbation | " + " | ".join(heads) + " | changed |", "|---|" + "---|" * (len(models) + 1)]
        for p in perts:
            means = [grid[(p, m)]["mean"] for m in models]
            best = best_of.get((metric, p), set())
            cells = []
            for m, v in zip(models, means):
                sd = grid[(p, m)]["std"]
                text = _num(v) + ("" if _undefined(v) or _undefined(sd) else f" ± {sd:.3f}")
                if p in worst[m]:
                    text = f"<u>{text}</u>"
                if m in best and len(models) > 1:
                    text = f"**{text}**"
                cells.append(text)
            rates = [r for r in (grid[(p, m)].get("change_rate") for m in models) if not _undefined(r)]
            lines.append(f"| {p} | " + " | ".join(cells) + f" | {_num(np.mean(rates) if rates else None, '.0%')} |")
        if any(grid[k].get("ci") for k in grid):
            lines += ["", f"95 % paired-bootstrap intervals over test examples, {metric}:", "",
                      "| perturbation | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
            for p in perts:
                ci = [grid[(p, m)].get("ci") or [None, None] for m in models]
                lines.append(f"| {p} | " + " | ".join("n/a" if _undefined(lo) or _undefined(hi)
                                                      else f"[{lo:.3f}, {hi:.3f}]" for lo, hi in ci) + " |")
    lines += ranking_lines(summary)
    return "\n".join(lines) + "\n"


def relative_robustness_figures(summary: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``<prefix>_<metric>.png`` -> figure per metric of a :func:`summarise` result: perturbations ×
    models, centred on 1 (unaffected). The colour scale spans at most 0 to 2 and is set by the
    models that are not flagged (one class, chance level: their ratios of tiny scores can run far
    beyond it); flagged models say so under their names and in a note, cells beyond the scale
    take its end colours."""
    from ...report.plots import heatmap_figure

    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    perts = list(dict.fromkeys(c["perturbation"] for c in summary["cells"]))
    flagged = _flagged(summary)
    cols = [m + (f"\n({', '.join(flagged[m])})" if flagged.get(m) else "") for m in models]
    scale = np.array([[not flagged.get(m) for m in models] for _ in perts], dtype=bool)
    names = ", ".join(m for m in models if flagged.get(m))
    notes = [f"flagged, so not ranked and not used to set the colour scale: {names}"] if names else []
    return {f"{prefix}_{metric}.png": heatmap_figure(
                np.array([[_cell(summary, m, p, metric)["mean"] for m in models] for p in perts]), perts, cols,
                title=f"relative robustness 1 − (m_c − m_p)/m_c, {metric}\n"
                      "(m_c: clean score, m_p: perturbed score)",
                cmap="RdYlGn", fmt="{:.2f}", center=1.0, max_span=1.0, scale=scale, notes=notes,
                colorbar_label="relative robustness (1 = unaffected)")
            for metric in dict.fromkeys(c["metric"] for c in summary["clean"])}
