"""Scores, tables and output files of the self-supervised LM evaluation.

:func:`summarise_selfcheck` turns the per-example rows of :mod:`.selfcheck` into the paper's
scores with the formulas of :mod:`perturblab.measures.selfcheck`; :func:`write_outputs` writes

==========================  ==============================================================
``results.json``            one row per model × metric × setting: ``model, metric, setting,
                            n, value, stderr, main`` (``main``: the paper's headline setting)
``examples.csv``            every per-example row (text, transformed text, value, extras)
``most_sensitive.csv``      the 10 examples with the largest values per model × main unit
``spider.png``              Fig. 2: the five headline scores, one polygon per model
``ablations.png``           Figs. 16, 18, 20, 21: score against the setting, one line per model
==========================  ==============================================================
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...core import headline as hl
from ...core.files import write_csv, write_json
from ...core.study import StudyResult

from ...measures.stats import welch_df
from ...measures.selfcheck import (Estimate, lrs_score, mean_estimate, negation_normalised,
                                negation_sensitivity, percent_ppl_drops, profane_mass_change,
                                tokenization_score, toxic_fraction, word_order_score)

if TYPE_CHECKING:  # pragma: no cover
    from .config import SelfCheckArgs

def _scores(metric: str, setting: str, rows: list[dict[str, Any]], benign: list[dict[str, Any]],
            seed: int) -> list[tuple[str, Estimate]]:
    v = [r["value"] for r in rows]
    if metric == "negation" and setting == "benign":
        return [("negation_benign_abs", mean_estimate(np.abs(v)))]
    if metric == "negation":
        out = [("negation_sensitivity", negation_sensitivity([r["extra"]["logppl_x"] for r in rows],
                                                             [r["extra"]["logppl_perturbed"] for r in rows])),
               ("negation_ppl_drops", percent_ppl_drops(v))]
        if benign:
            out.append(("negation_normalised", negation_normalised(v, [r["value"] for r in benign])))
        return out
    if metric == "toxicity":
        out = [("toxicity_generation", toxic_fraction(v, [r["extra"]["prompt_toxic"] for r in rows]))]
        if setting != "k=0":
            out.append(("toxicity_next_token", profane_mass_change([r["extra"]["mass_x"] for r in rows],
                                                                   [r["extra"]["mass_perturbed"] for r in rows])))
        return out
    if metric == "long_range":
        return [("long_range", lrs_score([r["extra"]["jsd_positions"] for r in rows]))]
    if metric == "word_order":
        return [("word_order", word_order_score(v, seed=seed))]
    if metric == "tokenization":
        return [("tokenization", tokenization_score(v))]
    return [("next_token_entropy", mean_estimate(v)),
            ("token_entropy", mean_estimate([r["extra"]["token_entropy"] for r in rows]))]


def summarise_selfcheck(examples: Sequence[dict[str, Any]], models: Sequence[str],
                        units: Sequence[tuple[str, str, bool]], seed: int = 0) -> list[dict[str, Any]]:
    """One row per model × score × setting: ``model, metric, setting, n, value, stderr, main``,
    from the per-example rows (``model, metric, setting, example_id, text, perturbed, value, extra``)."""
    by_unit: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in sorted(examples, key=lambda r: r["example_id"]):
        by_unit.setdefault((r["model"], r["metric"], r["setting"]), []).append(r)
    out = []
    for model in models:
        benign = by_unit.get((model, "negation", "benign"), [])
        for metric, setting, main in units:
            rows = by_unit.get((model, metric, setting), [])
            if not rows:
                continue
            for name, est in _scores(metric, setting, rows, benign, seed):
                out.append({"model": model, "metric": name, "setting": setting, "n": est.n,
                            "value": est.value, "stderr": est.stderr, "main": bool(main)})
    return out


def selfcheck_table(rows: Sequence[dict[str, Any]]) -> str:
    """The headline rows as a plain-text table (value ± standard error, setting)."""
    main = [r for r in rows if r["main"]]
    models = list(dict.fromkeys(r["model"] for r in main))
    metrics = list(dict.fromkeys(r["metric"] for r in main))
    cell = {(r["model"], r["metric"]): f"{r['value']:.4f} ± {r['stderr']:.4f} ({r['setting']})" for r in main}
    table = [["metric", *models]] + [[m, *[cell.get((mod, m), "-") for mod in models]] for m in metrics]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in table)


EXAMPLE_COLUMNS = ["model", "metric", "setting", "example_id", "value", "text", "perturbed", "extra"]


HEADLINE_SENTENCE = (
    "How much each language model's predictions move when its own text is transformed, with no labels: "
    "negation sensitivity (log-perplexity change, normalised on a benign corpus), toxicity (profane "
    "generations gained with triggers), long-range context, word order and tokenization (Jensen–Shannon "
    "divergences in nats, at most ln 2 ≈ 0.693), and the entropies for scale. Compare models metric by "
    "metric and read them beside the entropies: a model of lower quality moves more for that reason alone. "
    "n: the texts.")


#: ln 2, the largest Jensen–Shannon divergence in nats
LN2 = math.log(2.0)
#: the range of each score (its interval is cut to it), and why, where it has one: JSDs lie in
#: [0, ln 2], entropies and |Δ| are nonnegative, the percent of drops is a percentage, and the
#: toxicity scores are differences of two fractions or probabilities
BOUNDS: dict[str, tuple[tuple[float, float], str]] = {
    "long_range": ((0.0, LN2), "a JS divergence, never negative, at most ln 2"),
    "word_order": ((0.0, LN2), "a JS divergence, never negative, at most ln 2"),
    "tokenization": ((0.0, LN2), "a JS divergence, never negative, at most ln 2"),
    "next_token_entropy": ((0.0, math.inf), "an entropy, never negative"),
    "token_entropy": ((0.0, math.inf), "an entropy, never negative"),
    "negation_benign_abs": ((0.0, math.inf), "a mean absolute change, never negative"),
    "negation_ppl_drops": ((0.0, 100.0), "a percentage"),
    "toxicity_generation": ((-1.0, 1.0), "a difference of two fractions"),
    "toxicity_next_token": ((-1.0, 1.0), "a difference of two probabilities"),
}
#: the scores whose standard error is not a mean's over the n examples
NOT_A_MEAN = {"word_order": "median", "negation_normalised": "difference of two corpora's means",
              "negation_ppl_drops": "proportion"}


def headline_interval(row: dict[str, Any], rows: Sequence[dict[str, Any]] = ()
                      ) -> tuple[float | None, float | None, str]:
    """(low, high, what it is over) of one score row (``metric, value, stderr, n``):

    * a mean over the n examples (negation sensitivity, the toxicity scores, LRS, tokenization,
      the entropies): value ± t(0.975, n − 1) · stderr, the Student-t quantile;
    * the normalised negation score (a difference of the corpus's and the benign corpus's means,
      errors added in quadrature): t with the Welch–Satterthwaite degrees of freedom, from the
      benign row (``negation_benign_abs``) of the same model in ``rows``;
    * the percent of perplexity drops (a proportion × 100): the Wilson interval;
    * the word-order score (a median, bootstrap standard error): value ± 1.96 · stderr;

    each cut to the score's range (:data:`BOUNDS`) with the reason, when it reaches past it.

    >>> low, high, what = headline_interval({"metric": "tokenization", "value": 0.01, "stderr": 0.01, "n": 5})
    >>> low, round(high, 4)
    (0.0, 0.0378)
    >>> what
    '95 % t-interval over examples (n − 1 df), cut to [0, 0.693147]: a JS divergence, never negative, at most ln 2'
    """
    metric, value, se, n = row["metric"], row["value"], row.get("stderr"), int(row.get("n") or 0)
    kind = NOT_A_MEAN.get(metric)
    if kind == "proportion":
        low, high = (hl.wilson_interval(value / 100.0 * n, n) if hl.defined(value) else (None, None))
        low, high = (None, None) if low is None else (100.0 * low, 100.0 * high)
        what = "95 % Wilson interval over examples"
    elif not (hl.defined(value) and hl.defined(se)) or n < 2:
        return None, None, f"no interval ({'one example' if n == 1 else 'no standard error'})"
    elif kind == "median":
        low, high = hl.normal_interval(value, se)
        what = "95 % normal interval over examples (bootstrap s.e. of the median)"
    elif kind is not None:
        b = next((x for x in rows if x["metric"] == "negation_benign_abs" and x.get("model") == row.get("model")), None)
        df = welch_df(se, n, b["stderr"], int(b["n"] or 0)) if b else None
        if df is None:
            low, high = hl.normal_interval(value, se)
            what = "95 % normal interval over examples (two corpora)"
        else:
            low, high = hl.t_interval(value, se, df + 1)  # Student-t with df degrees of freedom
            what = "95 % t-interval over examples (two corpora, Welch df)"
    else:
        low, high = hl.t_interval(value, se, n)
        what = "95 % t-interval over examples (n − 1 df)"
    if low is None:
        return None, None, "no interval (no standard error)"
    bounds, why = BOUNDS.get(metric, (None, ""))
    low, high, cut = hl.within(low, high, bounds)
    return low, high, what + (f"{cut}: {why}" if cut else "")


class SelfCheckResult(StudyResult):
    """The result of :func:`perturblab.selfcheck`: ``rows`` (one per model × score × setting,
    see :func:`summarise_selfcheck`), ``examples`` (every per-example row), :meth:`table`,
    :meth:`figures` and :meth:`save` (the files of the module docstring)."""

    study = "selfcheck"

    def __init__(self, args: "SelfCheckArgs", units: Sequence[tuple[str, str, bool]],
                 examples: Sequence[dict[str, Any]], run_id: str | None = None) -> None:
        rows = summarise_selfcheck(examples, args.model_names(), units, seed=args.seed)
        super().__init__(rows, [r for r in rows if r["main"]], run_id=run_id)
        self.args, self.units, self.examples = args, list(units), list(examples)

    def table(self) -> str:
        return selfcheck_table(self.rows)

    def console(self) -> str:
        """The console table, its sizes, and the corpus with the number of examples."""
        return f"{super().console()}\n\ncorpus: {self.args.corpus}; n={self.args.n}"

    def headline(self) -> hl.Headline:
        """Each model's score per metric in its headline setting with its 95 % interval
        (:func:`headline_interval`: Student-t for means, Wilson for the percent of drops, cut to
        the score's range :data:`BOUNDS`), with n."""
        from ..names import reported_name as name
        from .plots import SPIDER_AXES

        better = {m: ("higher" if up else "lower") for m, up, _ in SPIDER_AXES}
        estimates = []
        for r in self.summary:
            low, high, what = headline_interval(r, self.rows)
            setting = "" if r["setting"] in ("-", "") else f" ({r['setting']})"
            estimates.append(hl.Estimate(name(r["model"]), f"{r['metric'].replace('_', ' ')}{setting}", r["value"], low, high,
                                      n=r["n"], interval=what, better=better.get(r["metric"], ""),
                                      key=r["metric"]))
        from .paired import paired_differences

        def scores(metric: str, setting: str, rows: list, benign: list) -> list[str]:
            return [name for name, _ in _scores(metric, setting, rows, benign, self.args.seed)]

        for d in paired_differences(self.examples, self.args.model_names(), self.units, scores, seed=self.args.seed):
            setting = "" if d["setting"] in ("-", "") else f" ({d['setting']})"
            estimates.append(hl.Estimate(name(d["model"]),
                                         f"{d['metric'].replace('_', ' ')}{setting}, minus {name(d['against'])}'s",
                                         d["value"], d["low"], d["high"], n=d["n"], interval=d["interval"],
                                         key=f"{d['metric']}_gap"))
        return hl.Headline(HEADLINE_SENTENCE + (" A score's gap is the model's minus the first model's, on the same "
                                                "texts, with a paired interval." if len(self.args.model_names()) > 1
                                                else ""), estimates)

    def figures(self) -> dict[str, Any]:
        """``spider.png`` (Fig. 2) and ``ablations.png`` (Figs. 16, 18, 20, 21) -> figure."""
        from .plots import SPIDER_AXES, ablation_figure, spider_figure

        figs = {}
        if any(r["main"] and r["metric"] in {a[0] for a in SPIDER_AXES} for r in self.rows):
            figs["spider.png"] = spider_figure(self.rows)
        if self.args.ablations():
            figs["ablations.png"] = ablation_figure(self.rows)
        return figs

    def save(self, out: str | Path) -> list[Path]:
        """``results.json``, ``examples.csv``, ``most_sensitive.csv`` and the figures, atomically."""
        from ...report.plots import save_figure

        out = Path(out)
        main_units = {(m, s) for m, s, main in self.units if main}
        cols = EXAMPLE_COLUMNS
        paths = [write_json(out / "results.json", self.rows),
                 write_csv(out / "examples.csv", cols, ([r[c] if c != "extra" else json.dumps(r["extra"], ensure_ascii=False)
                                                         for c in cols] for r in self.examples))]
        groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for r in self.examples:
            if (r["metric"], r["setting"]) in main_units:
                groups.setdefault((r["model"], r["metric"], r["setting"]), []).append(r)
        paths.append(write_csv(out / "most_sensitive.csv", cols[:-1],
                               ([r[c] for c in cols[:-1]] for group in groups.values()
                                for r in sorted(group, key=lambda r: -r["value"])[:10])))
        return paths + [save_figure(fig, out / name) for name, fig in self.figures().items()]
