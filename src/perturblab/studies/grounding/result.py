"""What the grounding study returns and writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...core.files import atomic_write_text, write_csv, write_json
from ...core.headline import Estimate, Headline
from ...core.study import StudyResult

if TYPE_CHECKING:  # pragma: no cover
    from .config import GroundingArgs


#: what the headline's Spearman intervals are over. The members of a benchmark (layers of other
#: depths, the reference with 1, 2, ... principal components deleted) are chosen by design and
#: depend on one another (neighbouring layers, nested deletions), not drawn at random from a
#: population, so resampling them does not give a sampling distribution: the interval shows how
#: much ρ leans on single members, and is indicative only.
INTERVAL = ("95 % percentile bootstrap over the members; indicative: the members are a designed, dependent set, "
            "not a random sample")


class GroundingStudyResult(StudyResult):
    """The result of :func:`perturblab.grounding`.

    ``rows``: one row per benchmark subset and measure (``benchmark, subset, measure, n,
    functionality, spearman, spearman_low, spearman_high, kendall, ...``), then the warm-up rows
    (``warmup_specificity``, ``warmup_detection``); ``members``: one row per member of each set
    (its probe accuracy and its distance to the reference under each measure); ``args`` the
    study's options; :meth:`table` the paper's Table 1; :meth:`figures` Figs. 1–2 of the warm-up
    tests.
    """

    study = "grounding"

    def __init__(self, rows: Sequence[dict[str, Any]], *, members: Sequence[dict[str, Any]],
                 args: "GroundingArgs", finetune: dict[str, Any] | None = None,
                 figure_data: dict[str, tuple] | None = None, run_id: str | None = None) -> None:
        super().__init__(rows, run_id=run_id)
        self.members = list(members)
        self.args, self.finetune = args, dict(finetune or {})
        self._figure_data = dict(figure_data or {})
        self.summary = [r for r in self.rows if r.get("benchmark") in ("layer_depth", "pc_deletion")]

    def table(self) -> str:
        """The Markdown table of :func:`render_table`."""
        return render_table(self.rows)

    def headline(self) -> Headline:
        """Per benchmark subset and measure, Spearman ρ between the members' functional
        differences and their distances under the measure, with its percentile-bootstrap interval
        over the members (:data:`INTERVAL`: indicative only, the members being a designed,
        dependent set) and n."""
        estimates = []
        for r in self.summary:
            subset = "" if r.get("subset") in (None, "", "all") else f", {r['subset']}"
            estimates.append(Estimate(
                r["measure"], f"Spearman ρ, {r['benchmark'].replace('_', ' ')}{subset}", r.get("spearman"),
                r.get("spearman_low"), r.get("spearman_high"), n=r.get("n"), better="higher",
                interval=INTERVAL,
                key=f"spearman:{r['benchmark']}" + (f":{r['subset']}" if subset else "")))
        return Headline(
            "Whether each measure's distance to the reference representation grows with how much worse the "
            "compared representation does the task (Spearman ρ between distance and the drop in probe "
            "accuracy, over the members of each benchmark: layers of other depths, or the reference with "
            "principal components deleted). Higher ρ: the measure is better grounded in function. n: the "
            "members compared.", estimates)

    def figures(self) -> dict[str, Any]:
        """``warmup_layers.png`` (Fig. 1) and ``warmup_pc_deletion_layer<L>.png`` (Fig. 2) -> figure
        (none when the run had no warm-up pair)."""
        from .plots import pc_deletion_figure, specificity_figure

        out = {}
        for name, spec in self._figure_data.items():
            if spec[0] == "specificity":
                _, same, other, names = spec
                out[name] = specificity_figure(same, other, names=names)
            else:
                _, ks, acc, per_measure, dim, title = spec
                out[name] = pc_deletion_figure(ks, acc, per_measure, dim, title=title)
        return out

    def save(self, out: str | Path) -> list[Path]:
        """``results.json``, ``members.csv``, ``config.json`` (the study's options and, under
        ``finetune``, every setting of its fine-tunes), ``table.md`` and
        the warm-up figures, each written atomically."""
        from ...core.files import save_figure
        from .plots import DPI

        out = Path(out)
        paths = [write_json(out / "results.json", self.rows)]
        header = list(self.members[0]) if self.members else []
        paths.append(write_csv(out / "members.csv", header, ([r[h] for h in header] for r in self.members)))
        paths.append(write_json(out / "config.json", {**self.args.study_options(), "finetune": self.finetune}))
        paths.append(atomic_write_text(out / "table.md", self.table()))
        paths += [save_figure(fig, out / name, dpi=DPI) for name, fig in self.figures().items()]
        return paths


def render_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table like the grounding paper's Table 1 (ρ and τ with 95 % intervals; the
    PC-deletion subsets averaged, as the paper does, with each subset's values listed below)."""
    bench = [r for r in rows if r.get("benchmark") in ("layer_depth", "pc_deletion")]
    measures = list(dict.fromkeys(r["measure"] for r in bench))
    lines = ["| benchmark | subset | n | functionality | " + " | ".join(f"{m} ρ [95% CI] | {m} τ" for m in measures) + " |",
             "|" + "---|" * (4 + 2 * len(measures))]
    keys = list(dict.fromkeys((r["benchmark"], r["subset"]) for r in bench))
    for bk, sub in keys:
        cells = {r["measure"]: r for r in bench if (r["benchmark"], r["subset"]) == (bk, sub)}
        first = next(iter(cells.values()))
        vals = " | ".join(f"{c['spearman']:.3f} [{c['spearman_low']:.2f}, {c['spearman_high']:.2f}] | "
                          f"{c['kendall']:.3f}" for c in (cells[m] for m in measures))
        lines.append(f"| {bk} | {sub} | {first['n']} | {first['functionality']} | {vals} |")
    pcs = [r for r in bench if r["benchmark"] == "pc_deletion"]
    if pcs:
        avg = " | ".join(f"{np.mean([r['spearman'] for r in pcs if r['measure'] == m]):.3f} | "
                         f"{np.mean([r['kendall'] for r in pcs if r['measure'] == m]):.3f}" for m in measures)
        lines.append(f"| pc_deletion | average of subsets | | | {avg} |")
    return "\n".join(lines) + "\n"
