"""What the fine-tuning study returns and the files it writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ....core.files import write_json
from ....core.headline import Estimate, Headline, normal_interval
from ....core.study import StudyResult
from ....measures.stir import stir_interval

if TYPE_CHECKING:  # pragma: no cover
    from .config import FinetuningArgs

#: the files :meth:`FinetuningResult.save` writes
FILES = ("results.json", "finetuning.png", "probes.png", "finetune.json", "headline.json")
#: measure -> its label in ``finetuning.png``
SHOWN = {"cka": "CKA(pre, ft)", "stir_ft|pre": "STIR(ft|pre)", "stir_pre|ft": "STIR(pre|ft)",
         "stir_pre|pre": "STIR(pre|pre) ceiling", "stir_text_ft|pre": "text STIR(ft|pre)",
         "stir_text_pre|pre": "text STIR(pre|pre) ceiling"}


def per_layer(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per layer (``layer`` and each measure's value), then one with ``layer`` None for
    the measures without a layer (when there are any)."""
    layers: dict[Any, dict[str, Any]] = {}
    for r in rows:
        layers.setdefault(r["layer"], {"layer": r["layer"]})[r["measure"]] = r["value"]
    return [layers[k] for k in sorted(k for k in layers if k is not None)] + (
        [layers[None]] if None in layers else [])


class FinetuningResult(StudyResult):
    """The result of :func:`perturblab.studies.robustness.finetuning.finetuning`.

    * ``rows`` — ``a, b, layer, measure, value, std`` (see :mod:`.study` for the measures);
    * ``summary`` — one dict per layer with every measure's value (and one with ``layer`` None for
      ``classifier_acc_ft`` / ``text_counterparts``);
    * ``finetune`` — the fine-tune's provenance (steps, stop reason, losses; or "given");
    * ``args`` — the study's options;
    * :meth:`figures` — ``finetuning.png`` (Fig. 1 style) and ``probes.png``; :meth:`save` writes
      what the ``finetuning`` command writes.
    """

    study = "finetuning"

    def __init__(self, args: "FinetuningArgs", rows: Sequence[dict[str, Any]], finetune: dict[str, Any], *,
                 ft_name: str, n_eval: int, run_id: str | None = None) -> None:
        super().__init__(rows, per_layer(rows), run_id=run_id)
        self.args, self.finetune, self.ft_name, self.n_eval = args, dict(finetune), ft_name, n_eval
        #: what ``finetune.json`` records of the study: its options, the STIR pool and every setting
        #: of the fine-tune (set by the study)
        self.study_options: dict[str, Any] = args.study_options()

    def series(self, measure: str) -> list[float]:
        """The per-layer values of ``measure`` (empty when it was not computed)."""
        return [r["value"] for r in self.rows if r["measure"] == measure]

    def table(self) -> str:
        """The console table: one line per layer, then the measures without a layer."""
        measures = list(dict.fromkeys(r["measure"] for r in self.rows if r["layer"] is not None))
        lines = ["layer  " + "  ".join(f"{m:>16s}" for m in measures)]
        for s in self.summary:
            if s["layer"] is not None:
                lines.append(f"{s['layer']:5d}  " + "  ".join(f"{s.get(m, float('nan')):16.3f}" for m in measures))
        lines += [f"{r['measure']}: {r['value']:.3f}" for r in self.rows if r["layer"] is None]
        return "\n".join(lines)

    def figures(self) -> dict[str, Any]:
        """File name -> matplotlib figure: ``finetuning.png`` (CKA and STIR per layer) and
        ``probes.png`` (probe accuracy per layer of both models)."""
        from ....report.layer_plots import layer_curves_figure

        args, meta = self.args, self.finetune
        curves = {label: self.series(m) for m, label in SHOWN.items() if self.series(m)}
        errs = {SHOWN[m]: [r["std"] for r in self.rows if r["measure"] == m] for m in SHOWN
                if m.startswith("stir") and self.series(m)}
        title = (f"{args.base} vs {self.ft_name} on {args.data} ({meta.get('steps')} steps, "
                 f"{meta.get('stop_reason')}); n={self.n_eval}")
        return {"finetuning.png": layer_curves_figure(curves, title=title, errors=errs, ylabel="CKA / STIR"),
                "probes.png": layer_curves_figure(
                    {"pretrained": self.series("probe_acc_pre"), "fine-tuned": self.series("probe_acc_ft")},
                    title=f"per-layer probe accuracy on {args.data} (n={self.n_eval})", ylabel="probe accuracy")}

    def headline(self) -> Headline:
        """At the last layer: CKA of the two models' states (no interval: one value on the
        evaluation examples), STIR in both directions and its ceiling (half-sampling t-intervals
        over the examples, :func:`~perturblab.measures.stir.stir_interval`), and both probes'
        accuracy (± 1.96 binomial standard errors); the fine-tuned classifier's own accuracy when
        there is one."""
        last = max((r["layer"] for r in self.rows if r["layer"] is not None), default=None)
        pair = f"{self.args.base} vs {self.ft_name}"
        labels = {"cka": "CKA(pre, ft)", "stir_ft|pre": "STIR(ft|pre)", "stir_pre|ft": "STIR(pre|ft)",
                  "stir_pre|pre": "STIR(pre|pre), the ceiling", "probe_acc_pre": "probe accuracy, pretrained",
                  "probe_acc_ft": "probe accuracy, fine-tuned", "classifier_acc_ft": "fine-tuned classifier accuracy"}
        n, k = self.n_eval, int(self.args.k)
        estimates = []
        for r in self.rows:
            if r["measure"] not in labels or r["layer"] not in (last, None):
                continue
            m, v = r["measure"], r["value"]
            if m.startswith("stir"):
                # the halves overlap: the half-sampling rule, not s.d. / √k
                low, high, what = stir_interval(v, r.get("std"), k)
            elif "acc" in m:
                low, high = normal_interval(v, (v * (1 - v) / n) ** 0.5 if n else None, bounds=(0.0, 1.0))
                what = "95 % normal interval over examples (binomial)"
            else:
                low = high = None
                what = "no interval (one value over the evaluation examples)"
            where = "" if r["layer"] is None else f" (layer {r['layer']})"
            estimates.append(Estimate(pair, labels[m] + where, v, low, high, n=n, interval=what,
                                      better="higher" if "acc" in m else "", key=m))
        return Headline(
            "How far fine-tuning moved the representations, at the last layer: CKA(pre, ft) is 1 for states "
            "equal up to rotation and scale; STIR(ft|pre) is how much of the pretrained model's invariances the "
            "fine-tuned one shares (read it against STIR(pre|pre), the most it can be on these inputs); the "
            "probes say how much of the task each layer's states hold. n: the evaluation examples.", estimates)

    def save(self, out: str | Path) -> list[Path]:
        """Write ``results.json``, ``finetune.json`` (the study's options and the fine-tune's
        provenance) and the figures into ``out`` (each atomically); returns their paths."""
        from ....report.plots import save_figure

        out = Path(out)
        paths = [write_json(out / "results.json", self.rows),
                 write_json(out / "finetune.json", {"study": self.study_options, "finetune": self.finetune})]
        paths += [save_figure(fig, out / name) for name, fig in self.figures().items()]
        return paths
