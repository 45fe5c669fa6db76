"""What a shared-invariance study returns and the files it writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...core.files import atomic_write_text, write_json
from ...core.study import StudyResult
from ...measures.scope import METRICS
from ...core.headline import Headline
from .analysis import metric_correlations, sample_complexity_curves, scope_headline, summarise

if TYPE_CHECKING:  # pragma: no cover
    from .config import ScopeArgs

#: the files :meth:`ScopeResult.save` writes besides the figures
FILES = ("results.json", "summary.json", "perturbed_examples.csv", "examples_table.csv", "metrics.csv",
         "correlations.json", "sample_complexity.json", "headline.json")


class ScopeResult(StudyResult):
    """The result of :func:`perturblab.scope`.

    * ``rows`` — one dict per reference × target × capability × trial (the metrics of Sec. 3.3,
      counts, bootstrap intervals, mean reference loss); ``to_pandas()`` gives them as a table;
    * ``summary`` — mean ± standard error over trials per target and capability;
    * ``perturbations`` — every search result (original, perturbed text, changed words, reference loss;
      ``pair`` true when the inputs are text pairs, each held as the JSON list of its two texts);
    * ``correlations`` — Pearson r between Soft-SCoPE and the other metrics (Sec. 3.4);
    * ``sample_complexity`` — App. H curves per target (trial 0);
    * :meth:`figures` — the bar charts and curves as matplotlib figures; :meth:`save` writes
      every file the ``scope`` command writes.
    """

    study = "scope"

    def __init__(self, args: "ScopeArgs", rows: Sequence[dict[str, Any]],
                 perturbations: Sequence[dict[str, Any]],
                 terms: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]], run_id: str | None = None,
                 outcomes: dict[tuple[str, str], dict[str, float]] | None = None):
        super().__init__(rows, summarise(rows), run_id=run_id)
        self.args = args
        self._outcomes = dict(outcomes or {})
        self.perturbations = list(perturbations)
        self.correlations = metric_correlations(self.summary)
        self.sample_complexity: dict[str, dict[str, list[dict]]] = {}
        for target in args.target_names():
            if target == args.reference:
                continue
            curves = {}
            for cap in args.capability_plan():
                hard, soft = terms.get((target, cap, 0), (np.zeros(0), np.zeros(0)))
                for metric, pts in sample_complexity_curves(hard, soft).items():
                    curves[f"{cap} {metric}"] = pts
            self.sample_complexity[target] = curves

    def table(self) -> str:
        """The console table (mean ± s.e. over trials) with the sizes it was computed on."""
        from .tables import render_table

        return render_table(self.summary)

    def console(self) -> str:
        """The console table, its sizes, and the reference with the number of trials and base
        samples."""
        n = max((r["n_base"] for r in self.rows), default=0)
        return f"{super().console()}\n\nreference: {self.args.reference}; {self.args.trials} trial(s) of n={n}"

    def headline(self) -> Headline:
        """Hard- and Soft-SCoPE of each target per capability with their intervals and n
        (:func:`~.analysis.scope_headline`)."""
        return scope_headline(self.rows, self.args.reference)

    def outcomes(self) -> dict[tuple[str, str], dict[str, float]]:
        """(target, estimate key) -> example id (``"<trial>:<sample id>"``) -> term: the per-example
        terms of Hard- and Soft-SCoPE per capability, agreement and the accuracy gap, whose means
        are the headline's estimates (pooled over trials); a history compares two releases paired
        on them."""
        return self._outcomes

    def broken(self, target: str, capability: str, trial: int = 0, k: int = 3) -> list[dict[str, Any]]:
        """Up to ``k`` examples (in sample order) of ``capability`` in ``trial`` on which the
        reference keeps its prediction under its perturbation and ``target`` changes its own:
        the invariances Hard-SCoPE counts as not shared. Each is a dict of ``original``,
        ``perturbed`` (changed words in ``[[ ]]``), ``reference`` (its label on both),
        ``target`` (its labels on the original and the perturbed text) and ``gold`` (the example's
        label; None for unlabelled data)."""
        from .tables import _is_pair, mark_changes

        out = []
        for r in self.perturbations:
            preds = r.get("predictions") or {}
            if (r["capability"], r["trial"]) != (capability, trial) or target not in preds \
                    or self.args.reference not in preds:
                continue
            (ra, rb), (ta, tb) = preds[self.args.reference], preds[target]
            if ra == rb and ta != tb:
                shown = r["perturbed"] if _is_pair(r) else mark_changes(r["perturbed"], r["changes"])
                out.append({"sample_id": r["sample_id"], "original": r["original"], "perturbed": shown,
                            "reference": ra, "target": [ta, tb], "gold": r.get("gold")})
                if len(out) == k:
                    break
        return out

    def metric_rows(self) -> list[dict[str, Any]]:
        """One row per (reference, target, capability, trial, metric): the long form of ``rows``."""
        out = [{"run_id": self.run_id, "reference": r["reference"], "target": r["target"],
                "capability": r["capability"], "trial": r["trial"], "metric": m, "value": r[m], "n": r["n"]}
               for r in self.rows for m in METRICS]
        return sorted(out, key=lambda r: (r["reference"], r["target"], r["capability"], r["trial"], r["metric"]))

    def figures(self) -> dict[str, Any]:
        """File name -> matplotlib figure: ``scope_<target>.png`` (Fig. 3) and
        ``sample_complexity_<target>.png`` (App. H). Close them with ``matplotlib.pyplot.close``."""
        from ...report.plots import has_curve, safe_name, sample_complexity_figure, scope_bar_figures, short_name

        figs = scope_bar_figures(self.summary, self.rows)
        for target, curves in self.sample_complexity.items():
            if has_curve(curves):  # one sample size (a small n) is a point, not a curve: no figure
                figs[f"sample_complexity_{safe_name(target)}.png"] = sample_complexity_figure(
                    curves, title=f"reference {short_name(self.args.reference)} → target {short_name(target)}")
        return figs

    def save(self, out: str | Path) -> list[Path]:
        """Write every output file of the ``scope`` command into ``out`` (each atomically);
        returns their paths."""
        import pandas as pd

        from ...report.plots import save_figure
        from .tables import write_examples_csv, write_examples_table

        out = Path(out)
        paths = [write_json(out / "results.json", self.rows), write_json(out / "summary.json", self.summary),
                 write_examples_csv(self.perturbations, out / "perturbed_examples.csv"),
                 write_examples_table(self.perturbations, out / "examples_table.csv"),
                 atomic_write_text(out / "metrics.csv", pd.DataFrame(self.metric_rows()).to_csv(index=False)),
                 write_json(out / "correlations.json", self.correlations),
                 write_json(out / "sample_complexity.json", self.sample_complexity)]
        paths += [save_figure(fig, out / name) for name, fig in self.figures().items()]
        return paths
