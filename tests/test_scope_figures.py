"""The SCoPE figures say what their error bars are, how many samples each group rests on, what a
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
    plt.close(fig)
    assert short_name("abc") == "abc" and short_name("x" * 40, 10) == "xxxx…xxxxx"
    with pytest.raises(StopIteration):
        error_spans(ax, "nothing")
