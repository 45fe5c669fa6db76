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
