"""The figures say what their error bars are, how many samples each group rests on, what a
starred capability is, and who the models are when their names are long."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from perturblab.report.plots import (has_curve, sample_complexity_figure, scope_bar_figures,  # noqa: E402
                                     short_name)

METRICS = ("gap_iid_acc", "iid_agreement", "ood_agreement", "hard_scope", "soft_scope")
LONG = "my-distilled-quantised-checkpoint-from-last-week.v2"


def summary_row(cap, n, trials, se=None, target="t", **values):
    row = {"reference": "ref", "target": target, "capability": cap, "n": n, "trials": trials}
    for i, m in enumerate(METRICS):
        row[m] = values.get(m, 0.5 + 0.1 * i)
        row[m + "_se"] = se
    return row


def error_spans(ax, label):
    """(low, high) of each error bar of the bars labelled ``label``."""
    bars = next(c for c in ax.containers if c.get_label() == label)
    if bars.errorbar is None:
        return []
    segments = bars.errorbar.lines[2][0].get_segments()
    return [(round(float(s[0][1]), 6), round(float(s[1][1]), 6)) for s in segments]


def test_one_trial_draws_the_bootstrap_intervals_and_says_so():
    summary = [summary_row("typo", 12, 1, hard_scope=0.6, soft_scope=0.55),
               summary_row("synonym*", 5, 1, hard_scope=0.8, soft_scope=0.7)]
    rows = [{"target": "t", "capability": "typo", "hard_scope_ci": [0.4, 0.9], "soft_scope_ci": [0.3, 0.85]},
            {"target": "t", "capability": "synonym*", "hard_scope_ci": [0.5, 1.0], "soft_scope_ci": [0.6, 0.9]}]
    (fig,) = scope_bar_figures(summary, rows).values()
    ax = fig.axes[0]
    assert error_spans(ax, "Hard-SCoPE") == [(0.4, 0.9), (0.5, 1.0)]
    assert error_spans(ax, "Soft-SCoPE") == [(0.3, 0.85), (0.6, 0.9)]
    assert error_spans(ax, "IID agreement") == []  # no interval for it: no bar drawn, none of zero height
    assert [t.get_text() for t in ax.get_xticklabels()] == ["typo\nn=12", "synonym*\nn=5"]
    notes = "\n".join(t.get_text() for t in ax.texts)
    assert "95% bootstrap intervals" in notes and "synonym* / typo*" in notes and "App. C" in notes
    plt.close(fig)


def test_several_trials_draw_the_standard_error_and_long_names_get_a_key():
    summary = [summary_row("typo", 60, 3, se=0.05, target=LONG, hard_scope=0.6)]
    (fig,) = scope_bar_figures(summary, []).values()
    ax = fig.axes[0]
    assert error_spans(ax, "Hard-SCoPE") == [(0.55, 0.65)]
    title = ax.get_title()
    assert len(short_name(LONG)) == 28 and short_name(LONG) in title and LONG not in title and "→" in title
    notes = "\n".join(t.get_text() for t in ax.texts)
    assert "standard error over 3 trials" in notes and f"target: {LONG}" in notes and "synonym*" not in notes
    plt.close(fig)


def test_a_single_sample_size_is_no_curve():
    point = {"typo hard_scope": [{"n": 8, "mean": 1.0, "low": 1.0, "high": 1.0}]}
    curve = {"typo hard_scope": [{"n": 5, "mean": 0.9, "low": 0.8, "high": 1.0},
                                 {"n": 8, "mean": 0.95, "low": 0.95, "high": 0.95}]}
    assert not has_curve(point) and has_curve(curve)
    fig = sample_complexity_figure(curve, "reference a → target b")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["typo Hard-SCoPE"]
    assert "random subsets of m" in ax.texts[0].get_text()
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5", "8"]  # the sizes drawn, whole numbers
    assert not [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    plt.close(fig)
    assert short_name("abc") == "abc" and short_name("x" * 40, 10) == "xxxx…xxxxx"
    with pytest.raises(StopIteration):
        error_spans(ax, "nothing")


@pytest.mark.parametrize("center", [1.0, None])
def test_a_heatmap_of_equal_values_has_a_readable_colour_scale(center):
    """Every cell equal (a model against itself): the colour bar spans a readable range around the
    value, not ±1e-9 (whose ticks read '1e-9+1')."""
    import numpy as np

    from perturblab.report.plots import heatmap_figure

    fig = heatmap_figure(np.ones((2, 3)), ["a", "b"], ["x", "y", "z"], title="t", center=center)
    bar = fig.axes[1]
    low, high = bar.get_ylim()
    assert low == pytest.approx(0.95) and high == pytest.approx(1.05)
    fig.canvas.draw()
    assert bar.yaxis.get_offset_text().get_text() == ""
    plt.close(fig)


def test_the_spider_plot_of_one_model_shows_its_raw_scores_not_best_everywhere():
    from perturblab.studies.selfcheck.plots import spider_figure

    rows = [{"model": "m", "metric": "negation_sensitivity", "value": 0.42, "main": True},
            {"model": "m", "metric": "tokenization", "value": 0.13, "main": True}]
    fig = spider_figure(rows)
    ax = fig.axes[0]
    assert ax.name != "polar" and [round(p.get_width(), 6) for p in ax.patches] == [0.42, 0.13]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Negation (higher is better)",
                                                            "Tokenization (lower is better)"]
    plt.close(fig)
    two = spider_figure(rows + [{"model": "n", "metric": "negation_sensitivity", "value": 0.21, "main": True},
                                {"model": "n", "metric": "tokenization", "value": 0.26, "main": True}])
    assert two.axes[0].name == "polar"
    plt.close(two)


def test_the_learnability_scatter_names_its_points_and_draws_no_line_without_a_correlation():
    from perturblab.studies.learnability.plots import learnability_figure_set

    table = [{"model": "m", "perturbation": p, "avg_learnability": a, "robustness": r, "post_aug_delta": d}
             for p, a, r, d in [("typo", 0.2, -0.1, 0.05), ("leet", 0.5, -0.3, 0.02)]]
    summary = {"table": table, "spearman": [{"x": "avg_learnability", "y": y, "spearman": None, "p_value": None}
                                            for y in ("robustness", "post_aug_delta")]}
    rows = [{"model": "m", "perturbation": pert, "metric": "learnability", "p": p, "value": v}
            for pert in ("typo", "leet") for p, v in [(0.1, 0.2), (1.0, 0.6)]]
    figs = learnability_figure_set(rows, summary)
    left = figs["correlations.png"].axes[0]
    assert sorted(t.get_text() for t in left.texts) == ["leet", "typo"]
    assert not left.get_lines()  # two points and rho n/a: no line through them
    assert left.get_title() == "Spearman ρ = n/a, n = 2 (model, perturbation) pairs"
    for fig in figs.values():
        plt.close(fig)


def test_the_probe_drop_figure_has_room_for_its_title_and_readable_cells():
    import numpy as np

    from perturblab.report.layer_plots import probe_drop_figure

    fig = probe_drop_figure(np.array([[0.01, 0.05, 0.02, 0.0]]), ["change_char"],
                            title="minilm-l3: probe accuracy drop per layer (rotten_tomatoes, n=40)")
    width, height = fig.get_size_inches()
    assert width >= 6.4 and height >= 2.6  # one perturbation of a 3-layer model was 3.7 x 1.45 inches
    ax = fig.axes[0]
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["5.0"] == "white" and colours["0.0"] == "black"  # the darkest cell's number stays legible
    plt.close(fig)


# --- what a reader sees at realistic sizes: drawn extents, colours and scales read back -------------

PERTS = ["add_text", "butter_fingers", "change_char", "drop_first", "drop_last", "drop_nouns", "drop_verbs",
         "duplicate_punctuations", "gender_swap", "insert_abbreviation", "leet_letters", "negate"]


def laid_out(fig):
    """The figure laid out as :func:`perturblab.report.plots.save_figure` lays it out, and drawn;
    returns the renderer that measures its artists."""
    fig.tight_layout()
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def overlap(a, b):
    """Whether two window extents share more than a pixel."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1


def inside(box, fig):
    """Whether a window extent lies within the figure (a pixel of slack)."""
    frame = fig.bbox
    return box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1


def luminance(colour):
    """Perceived brightness of a colour, 0 (black) to 1 (white)."""
    import matplotlib.colors as mcolors

    r, g, b = mcolors.to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


def robustness_summary(models, flagged=(), values=None):
    """A :func:`perturblab.studies.robustness.summary.summarise`-like summary of one metric."""
    import numpy as np

    rng = np.random.default_rng(0)
    cells = [{"model": m, "perturbation": p, "metric": "accuracy", "std": None,
              "mean": (values or {}).get((m, p), float(rng.uniform(0.6, 1.1)))} for m in models for p in PERTS]
    return {"clean": [{"model": m, "metric": "accuracy", "value": 0.8} for m in models], "cells": cells,
            "models": [{"model": m, "flags": ["chance-level"] if m in flagged else []} for m in models]}


def test_heatmap_numbers_are_white_on_dark_cells_and_black_on_light_ones():
    import numpy as np

    from perturblab.report.plots import heatmap_figure

    fig = heatmap_figure(np.array([[0.05, 1.0, 1.9]]), ["p"], ["a", "b", "c"], title="t", cmap="RdYlGn", center=1.0)
    ax = fig.axes[0]
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["0.05"] == "white" and colours["1.90"] == "white" and colours["1.00"] == "black"
    for t in ax.texts:  # every number contrasts with its cell
        cell = ax.images[0].cmap(ax.images[0].norm(float(t.get_text())))
        assert abs(luminance(t.get_color()) - luminance(cell[:3])) > 0.35
    plt.close(fig)


def test_heatmap_cuts_long_column_names_in_the_middle_and_gives_them_in_full():
    import numpy as np

    from perturblab.report.plots import heatmap_figure

    cols = ["minilm-l6", "minilm-l6-int8", "minilm-l3", "tfidf-lr", LONG]
    fig = heatmap_figure(np.ones((len(PERTS), len(cols))), PERTS, cols, title="t", colorbar_label="relative robustness")
    ax = fig.axes[0]
    r = laid_out(fig)
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels] == [short_name(c) for c in cols] and short_name(LONG) != LONG
    boxes = [t.get_window_extent(r) for t in labels]
    # slanted names stay apart when the columns' spacing across the slant exceeds a line of text
    import math

    spacing = ax.get_window_extent(r).width / len(cols) * math.sin(math.radians(labels[0].get_rotation()))
    assert labels[0].get_rotation() == 30 and spacing > labels[0].get_fontsize() * fig.dpi / 72
    notes = [t for t in ax.texts if LONG in t.get_text()]
    assert len(notes) == 1 and inside(notes[0].get_window_extent(r), fig)
    assert not any(overlap(notes[0].get_window_extent(r), b) for b in boxes)  # the note is under the names
    assert fig.axes[1].get_ylabel() == "relative robustness"
    plt.close(fig)


def test_heatmap_height_grows_with_rows_and_keeps_each_row_readable():
    import numpy as np

    from perturblab.report.plots import heatmap_figure

    heights = []
    for n in (2, 8, 19):  # long model names, slanted: they take their room from the figure, not from the rows
        fig = heatmap_figure(np.zeros((n, 4)), [f"p{i}" for i in range(n)], ["minilm-l6", LONG, LONG + "-int8", "d"],
                             title="t")
        laid_out(fig)
        heights.append(fig.get_size_inches()[1])
        ax_height = fig.axes[0].get_window_extent().height / fig.dpi
        assert ax_height / n >= 0.3  # inches a row, after the slanted column names took their room
        plt.close(fig)
    assert heights[0] < heights[1] < heights[2]


def test_relative_robustness_colours_ignore_flagged_models_and_stay_within_0_and_2():
    from perturblab.studies.robustness.summary import relative_robustness_figures

    models = ["minilm-l6", "minilm-l3", "tfidf-lr"]
    values = {("minilm-l6", "leet_letters"): 0.2, ("minilm-l3", "negate"): 1.3,
              **{("tfidf-lr", p): 3.85 for p in PERTS}}  # a chance-level model's ratio of tiny scores
    (fig,) = relative_robustness_figures(robustness_summary(models, {"tfidf-lr"}, values), "h").values()
    ax, bar = fig.axes
    norm = ax.images[0].norm
    assert norm.vmin == pytest.approx(0.2) and norm.vmax == pytest.approx(1.8)  # set by the unflagged models
    assert bar.get_ylabel().startswith("relative robustness") and "1 = unaffected" in bar.get_ylabel()
    assert ax.images[0].colorbar.extend == "max"  # 3.85 is beyond the scale: the bar says so
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "tfidf-lr\n(chance-level)"
    assert any("flagged" in t.get_text() and "tfidf-lr" in t.get_text() for t in ax.texts)
    assert "m_c: clean score, m_p: perturbed score" in ax.get_title()
    plt.close(fig)
    (fig,) = relative_robustness_figures(robustness_summary(["a", "b"], values={("a", "negate"): 5.0}), "h").values()
    norm = fig.axes[0].images[0].norm
    assert (norm.vmin, norm.vmax) == (pytest.approx(0.0), pytest.approx(2.0))  # capped at 0 to 2
    plt.close(fig)


def layer_rows(na, nb, a="sentence-transformers/all-MiniLM-L6-v2-finetuned-sst2", b="minilm-l3", measure="linear_cka"):
    import numpy as np

    rng = np.random.default_rng(0)
    return [{"measure": measure, "a": a, "b": b, "n": 2000, "layer_a": i, "layer_b": j, "value": float(rng.uniform())}
            for i in range(na) for j in range(nb)]


@pytest.mark.parametrize("na,nb", [(7, 4), (4, 4), (13, 13)])
def test_layer_heatmap_fits_its_title_names_and_note(na, nb):
    from perturblab.report.layer_plots import layer_heatmap_figures

    a = "sentence-transformers/all-MiniLM-L6-v2-finetuned-sst2"
    (fig,) = layer_heatmap_figures(layer_rows(na, nb, a=a)).values()
    ax, bar = fig.axes
    r = laid_out(fig)
    assert ax.get_ylabel() == f"{short_name(a)} layer" and bar.get_ylabel() == "linear_cka (similarity)"
    for artist in [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]:
        assert inside(artist.get_window_extent(r), fig), artist.get_text()
    assert any(t.get_text().replace("\n", "").endswith(a) for t in ax.texts)  # the full name, under the axes
    assert fig.get_size_inches()[0] >= 5.2
    plt.close(fig)
    (fig,) = layer_heatmap_figures(layer_rows(na, nb, measure="pwcca_distance")).values()
    assert fig.axes[1].get_ylabel() == "pwcca_distance"  # not "pwcca_distance (distance)"
    plt.close(fig)


def test_layer_curves_keep_the_legend_off_the_lines_and_the_title_in_the_figure():
    from perturblab.report.layer_plots import layer_curves_figure

    series = {"CKA(pre, ft)": [0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.4], "STIR(ft|pre)": [0.9] * 7,
              "STIR(pre|ft)": [0.8] * 7, "STIR(pre|pre) ceiling": [1.0] * 7}
    title = ("minilm-l6 vs /home/me/finetunes/minilm-l6-rotten_tomatoes-seed0 on rotten_tomatoes "
             "(250 steps, max_seconds); n=1000")
    fig = layer_curves_figure(series, title=title, errors={"STIR(ft|pre)": [0.02] * 7}, ylabel="CKA / STIR")
    ax = fig.axes[0]
    r = laid_out(fig)
    legend = ax.get_legend()
    assert not overlap(legend.get_window_extent(r), ax.get_window_extent(r))
    assert inside(legend.get_window_extent(r), fig) and inside(ax.title.get_window_extent(r), fig)
    assert legend.get_title().get_text() == "bands: ± 1 s.d."
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(7)]
    lines = ax.get_lines()  # STIR(ft|pre), STIR(pre|ft) and the ceiling coincide: each shows round the next
    assert all(a.get_linewidth() > b.get_linewidth() and a.get_markersize() > b.get_markersize()
               for a, b in zip(lines, lines[1:]))
    plt.close(fig)


def test_the_probe_drop_colours_start_at_no_drop():
    import numpy as np

    from perturblab.report.layer_plots import probe_drop_figure

    fig = probe_drop_figure(np.array([[-0.02, 0.0, 0.10], [0.05, 0.01, -0.01]]), ["typo", "leet_letters"], title="t")
    ax = fig.axes[0]
    im = ax.images[0]
    assert im.norm.vmin == 0 and im.norm.vmax == pytest.approx(10)  # white is no drop, not the largest gain
    assert im.colorbar.extend == "min"  # gains (negative drops) are beyond the scale's white end
    assert [t.get_text() for t in ax.texts[:3]] == ["-2.0", "0.0", "10.0"]  # the numbers are unchanged
    assert ax.texts[-1].get_text() == "boxed, in bold: each perturbation's 3 largest drops"
    for i, j in [(0, 2), (0, 1), (1, 0)]:  # boxed cells, dark and light: a frame line contrasts with each
        cell = im.cmap(im.norm(100 * [[-0.02, 0.0, 0.10], [0.05, 0.01, -0.01]][i][j]))[:3]
        edges = [p.get_edgecolor()[:3] for p in ax.patches if p.get_xy() == (j - 0.5, i - 0.5)]
        assert edges and max(abs(luminance(e) - luminance(cell)) for e in edges) >= 0.5
    plt.close(fig)


def test_the_grounding_warmup_panels_keep_ticks_apart_and_the_legend_off_the_data():
    import numpy as np

    from perturblab.studies.grounding.plots import specificity_figure

    rng = np.random.default_rng(0)
    same = {m: rng.uniform(size=(12, 12)) for m in ("procrustes", "cka", "pwcca")}
    other = {m: rng.uniform(size=(12, 12)) for m in same}
    fig = specificity_figure(same, other, names=("bert-base-uncased-ft-seed0", "bert-base-uncased-ft-seed1"))
    r = laid_out(fig)
    grid = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    heat = grid[0]
    boxes = [t.get_window_extent(r) for t in heat.get_xticklabels()]
    assert len(boxes) == 24 and not any(overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert heat.get_xlabel() and "|" in heat.get_xlabel()  # the two blocks of columns are named
    legends = [ax.get_legend() for ax in grid if ax.get_legend() is not None]
    assert len(legends) == 1
    for ax in fig.axes:
        assert not overlap(legends[0].get_window_extent(r), ax.get_window_extent(r))
    assert inside(legends[0].get_window_extent(r), fig)
    assert all(ax.get_ylabel() for ax in fig.axes)  # the colour bars say what they show
    plt.close(fig)


def test_the_pc_deletion_legend_explains_the_line_styles_and_stays_off_the_axes():
    from perturblab.studies.grounding.plots import pc_deletion_figure

    ks = [0, 96, 192, 288, 345, 380]
    per = {"procrustes": ([0, 0.1, 0.2, 0.3, 0.5, 0.8], 0.25, 288), "cka": ([0, 0.05, 0.1, 0.2, 0.4, 0.7], 0.3, 345)}
    fig = pc_deletion_figure(ks, [0.8, 0.8, 0.78, 0.7, 0.6, 0.5], per, 384, title="minilm-l6 layer 6")
    r = laid_out(fig)
    ax = fig.axes[0]
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels[:2] == ["procrustes", "cka"] and "seed baseline (dotted)" in labels
    assert "probe accuracy (right axis)" in labels
    for other in fig.axes:
        assert not overlap(legend.get_window_extent(r), other.get_window_extent(r))
    assert inside(legend.get_window_extent(r), fig)
    plt.close(fig)


def test_the_learnability_scatter_keeps_the_point_names_apart_and_the_legend_off_the_points():
    from perturblab.studies.learnability.plots import learnability_figure_set

    models, perts = ["tfidf-lr", "textrnn", "minilm-probe"], PERTS[:8]
    # the points crowd into a third of each axis (one far point stretches the scales), as when most
    # perturbations are about equally learnable
    table = [{"model": m, "perturbation": p, "avg_learnability": 0.3 + 0.05 * i + 0.015 * k,
              "robustness": -0.1 + 0.006 * i - 0.01 * k, "post_aug_delta": 0.01 * i + 0.004 * k}
             for k, m in enumerate(models) for i, p in enumerate(perts)]
    table[-1].update(avg_learnability=1.0, robustness=0.1, post_aug_delta=0.3)
    summary = {"table": table, "spearman": [{"x": "avg_learnability", "y": y, "spearman": 0.3, "p_value": 0.2}
                                            for y in ("robustness", "post_aug_delta")]}
    rows = [{"model": m, "perturbation": p, "metric": "learnability", "p": q, "value": 0.5}
            for m in models for p in perts for q in (0.1, 1.0)]
    figs = learnability_figure_set(rows, summary)
    fig = figs["correlations.png"]
    r = laid_out(fig)
    left, right = fig.axes
    names = [t for t in left.texts]
    assert sorted(t.get_text() for t in names) == sorted(p for _ in models for p in perts)
    boxes = [t.get_window_extent(r) for t in names]
    crowded = sum(overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert crowded <= 2  # 23 names on a small patch: nearly all of them apart
    legend = right.get_legend()
    assert legend is not None and not any(overlap(legend.get_window_extent(r), ax.get_window_extent(r))
                                          for ax in fig.axes)
    heat = figs["robustness_heatmap.png"].axes[0].images[0]
    assert heat.norm.vmin == pytest.approx(-heat.norm.vmax)  # centred on no change
    curves = figs["curves_tfidf-lr.png"]
    r = laid_out(curves)
    assert not overlap(curves.axes[0].get_legend().get_window_extent(r), curves.axes[0].get_window_extent(r))
    for f in figs.values():
        plt.close(f)


def test_the_spider_plot_keeps_its_title_and_axis_names_apart_and_shortens_long_models():
    from perturblab.studies.selfcheck.plots import SPIDER_AXES, spider_figure

    models = ["smollm2-135m", "smollm2-135m-int8", "/home/me/models/HuggingFaceTB-SmolLM2-360M-Instruct"]
    rows = [{"model": m, "metric": a[0], "value": 0.1 + 0.2 * i + 0.1 * k, "main": True}
            for i, m in enumerate(models) for k, a in enumerate(SPIDER_AXES)]
    fig = spider_figure(rows)
    r = laid_out(fig)
    ax = fig.axes[0]
    names = ax.get_xticklabels()
    title = next(t for t in fig.texts if t.get_text() == fig.get_suptitle() != "")
    assert not any(overlap(title.get_window_extent(r), t.get_window_extent(r)) for t in names)
    assert not any(overlap(names[0].get_window_extent(r), line.get_window_extent(r)) for line in ax.get_lines())
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[2].startswith(short_name(models[2]) + ":") and models[2] not in legend[2]
    assert ax.get_legend().get_title().get_text().startswith("raw values: Negation, Toxicity")
    assert any(t.get_text().replace("\n", "").endswith(models[2]) for t in ax.texts)
    for artist in [ax.get_legend(), *ax.texts]:
        assert inside(artist.get_window_extent(r), fig)
    plt.close(fig)


def test_the_ablation_panels_tick_the_settings_measured_and_share_one_legend_beside_them():
    from perturblab.studies.selfcheck.plots import ablation_figure

    rows = [{"model": m, "metric": metric, "setting": f"{key}={v}", "value": 0.1 * v, "stderr": 0.02}
            for m in ("smollm2-135m", "smollm2-135m-int8", LONG)
            for metric, key, values in (("toxicity_generation", "k", (1, 2, 4, 8)),
                                        ("long_range", "swapped", (1, 2, 3)))
            for v in values]
    fig = ablation_figure(rows)
    r = laid_out(fig)
    left, right = fig.axes
    assert [t.get_text() for t in right.get_xticklabels()] == ["1", "2", "3"]  # no 1.5, 2.5
    assert [float(t) for t in left.get_xticks()] == [1, 2, 4, 8]
    assert left.get_legend() is None
    legend = right.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["smollm2-135m", "smollm2-135m-int8", short_name(LONG)]
    assert not any(overlap(legend.get_window_extent(r), ax.get_window_extent(r)) for ax in fig.axes)
    assert inside(legend.get_window_extent(r), fig)
    gap = right.get_window_extent(r).x0 - left.get_window_extent(r).x1
    assert gap < 1.2 * fig.dpi  # the note of full names under the first panel widens no gap
    plt.close(fig)


def test_the_raw_scores_of_one_model_keep_their_values_inside_the_axes():
    from perturblab.studies.selfcheck.plots import SPIDER_AXES, spider_figure

    rows = [{"model": "m", "metric": a[0], "value": 0.3 + 0.2 * k, "main": True} for k, a in enumerate(SPIDER_AXES)]
    fig = spider_figure(rows)
    r = laid_out(fig)
    ax = fig.axes[0]
    frame = ax.get_window_extent(r)
    assert [t.get_text().strip() for t in ax.texts] == ["0.3", "0.5", "0.7", "0.9", "1.1"]
    assert all(t.get_window_extent(r).x1 <= frame.x1 for t in ax.texts)  # the longest bar's value too
    plt.close(fig)


def test_the_grounding_warmup_curves_of_equal_models_both_show():
    import numpy as np

    from perturblab.studies.grounding.plots import specificity_figure

    d = np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0))) / 6  # B is a copy of A: equal distances
    fig = specificity_figure({"procrustes_distance": d}, {"procrustes_distance": d}, names=("minilm-l6", "copy"))
    heat, bottom, bar = fig.axes  # the two panels, then the colour bar
    curves = bottom.get_lines()[:2]
    assert list(curves[0].get_ydata()) == list(curves[1].get_ydata())
    assert curves[0].get_linewidth() > curves[1].get_linewidth() + 1 and curves[0].get_markersize() > \
        curves[1].get_markersize() + 2  # the first shows round the second
    assert bar.get_ylabel() == "procrustes_distance"  # not "procrustes_distance distance"
    plt.close(fig)


def test_the_learnability_curves_of_many_perturbations_stay_apart():
    from perturblab.studies.learnability.plots import learnability_figure_set

    perts = PERTS + ["random_synonym", "random_typo", "random_upper", "shuffle_word"]
    rows = [{"model": "textrnn", "perturbation": p, "metric": "learnability", "p": q, "value": 0.5}
            for p in perts for q in (0.01, 0.1, 1.0)]
    table = [{"model": "textrnn", "perturbation": p, "avg_learnability": 0.5, "robustness": -0.1, "post_aug_delta": 0.0}
             for p in perts]
    summary = {"table": table, "spearman": [{"x": "avg_learnability", "y": y, "spearman": None, "p_value": None}
                                            for y in ("robustness", "post_aug_delta")]}
    figs = learnability_figure_set(rows, summary)
    lines = figs["curves_textrnn.png"].axes[0].get_lines()
    import matplotlib.colors as mcolors

    styles = {(mcolors.to_hex(line.get_color()), line.get_linestyle()) for line in lines}
    assert len(lines) == 16 and len(styles) == 16  # no two perturbations drawn alike
    for f in figs.values():
        plt.close(f)


def test_a_narrow_heatmap_keeps_its_colour_bar_label_inside_the_figure():
    import numpy as np

    from perturblab.report.plots import heatmap_figure

    perts = ["whitespace", "shuffle_word", "duplicate_punctuations", "butter_fingers", "random_upper",
             "insert_abbreviation", "visual_attack_letters", "leet_letters"]
    values = np.array([[-3.5, -3.0], [-3.5, 2.5], [0, 3], [0, -1], [0, -4], [0.5, -0.5], [-10.5, -3.5], [-9, -3]])
    fig = heatmap_figure(values, perts, ["tfidf-lr", "textrnn"], cmap="RdYlGn", fmt="{:.1f}", center=0.0,
                         title="robustness: accuracy change on perturbed test (points)",
                         colorbar_label="accuracy change (points; 0 = unaffected)")
    fig.tight_layout()  # the one pass that save_figure makes
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert inside(ax.get_tightbbox(r), fig)
    plt.close(fig)


def _checkpoint_rows(trials: int, reference: str) -> list[dict]:
    rows = []
    for comparison, percents in (("vs_final", (0, 50, 100)), ("vs_previous", (50, 100))):
        for cap in ("synonym", "typo"):
            for k, p in enumerate(percents):
                r = {"comparison": comparison, "capability": cap, "percent": p, "position": k,
                     "reference": reference, "trials": trials}
                for m in ("gap_iid_acc", "iid_agreement", "ood_agreement", "hard_scope", "soft_scope"):
                    r[m], r[m + "_se"] = 1.0, (0.02 if trials > 1 else None)
                rows.append(r)
    return rows


def _drawn(monkeypatch, draw, *args):
    """The figures the checkpoint plot function ``draw`` saves, kept open instead of written."""
    import perturblab.studies.scope.plots as cp

    figs = []
    monkeypatch.setattr(cp, "save_figure", lambda fig, path: figs.append(fig) or path)
    draw(*args)
    return figs


def test_checkpoint_curves_shorten_the_reference_and_say_what_the_error_bars_are(monkeypatch, tmp_path):
    from matplotlib.container import ErrorbarContainer

    from perturblab.studies.scope.plots import metrics_vs_final, soft_scope_panels

    long_ref = "/home/me/runs/minilm-l3-rotten-tomatoes-seed0/checkpoint-1200"
    for trials in (1, 3):
        rows = _checkpoint_rows(trials, long_ref)
        fig = _drawn(monkeypatch, metrics_vs_final, rows, tmp_path)[0]
        ax = fig.axes[0]
        assert long_ref not in ax.get_title() and "…" in ax.get_title()
        texts = " ".join(t.get_text() for t in ax.texts)
        assert long_ref in texts  # the full name in the note under the axes
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        if trials == 1:  # no standard error: no error bars, and the note says why
            assert bars == [] and "no error bars: one trial" in texts
        else:
            assert len(bars) == 5 and "± 1 s.e. over 3 trials" in texts
        # every metric is 1.0: the lines coincide, and each drawn earlier is broader so all show
        handles, _ = ax.get_legend_handles_labels()
        widths = [(h.lines[0] if isinstance(h, ErrorbarContainer) else h).get_linewidth() for h in handles]
        assert widths == sorted(widths, reverse=True) and len(set(widths)) == 5
        panels = _drawn(monkeypatch, soft_scope_panels, rows, tmp_path / "p.png")[0]
        left, right = panels.axes[:2]
        assert left.get_xlim() == right.get_xlim()  # one x range for both references
        legend = right.get_legend()
        assert legend is not None and legend.get_title().get_text() == "capability"
        fig.canvas.draw()
        assert legend.get_window_extent().x0 >= right.get_window_extent().x1  # beside the axes, not on the data
        plt.close("all")
