"""Tables: console rendering and the perturbed-examples CSV (SCoPE Table 3 / App. L style)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence


def mark_changes(text: str, changes: Sequence[Sequence[Any]]) -> str:
    """The perturbed text with every changed word wrapped in ``[[ ]]``."""
    from ...perturb.text import WordText

    wt = WordText.from_text(text)
    changed = {int(c[0]) for c in changes}
    if not changed:
        return text
    words = [f"[[{w}]]" if i in changed else w for i, w in enumerate(wt.words)]
    return WordText(tuple(words), wt.seps).text


def _is_pair(record: dict[str, Any]) -> bool:
    """Whether a search record holds text pairs (the JSON lists of their two texts), whose
    changed words are not marked; records without ``pair`` (older ones) are told by their form."""
    pair = record.get("pair")
    return str(record["original"]).startswith("[") if pair is None else bool(pair)


def write_examples_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """One line per (capability, trial, sample) with the original, the marked perturbation,
    the changed words, the reference loss L(m(x), m(x')), each model's prediction on the
    original and the perturbed text (``minilm-l6: pos → pos; minilm-l3: pos → neg``), the gold
    label, and per target whether it changed its prediction where the reference kept its own
    (``changed: <target>``: ``yes``, ``no``, or empty when the reference changed its own or the
    search found no perturbation), so a click on that column's name brings the broken invariances
    first."""
    from ...core.files import write_csv

    reference = next((r.get("reference") for r in rows if r.get("reference")), None)
    targets = list(dict.fromkeys(m for r in rows for m in (r.get("predictions") or {}) if m != reference))

    def changed(r: dict[str, Any], target: str) -> str:
        preds = r.get("predictions") or {}
        if reference not in preds or target not in preds or preds[reference][0] != preds[reference][1]:
            return ""
        return "yes" if preds[target][0] != preds[target][1] else "no"

    lines = []
    for r in rows:
        pert = r.get("perturbed")
        shown = pert if pert is None or _is_pair(r) else mark_changes(pert, r["changes"])
        lines.append([r["capability"], r["trial"], r["sample_id"], r["status"], r["original"],
                      shown or "", "; ".join(f"{c[1]}->{c[2]}" for c in r["changes"]),
                      "" if r["ref_loss"] is None else f"{r['ref_loss']:.6f}",
                      "" if r["argmax_invariant"] is None else int(r["argmax_invariant"]),
                      "; ".join(f"{m}: {a} → {b}" for m, (a, b) in (r.get("predictions") or {}).items()),
                      r.get("gold", ""), *(changed(r, t) for t in targets)])
    return write_csv(path, ["capability", "trial", "sample_id", "status", "original", "perturbed",
                            "changed_words", "reference_loss", "reference_argmax_invariant", "predictions", "gold",
                            *(f"changed: {t}" for t in targets)], lines)


def fmt(v: float, se: float | None = None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if se is None or math.isnan(se):
        return f"{v:.3f}"
    return f"{v:.3f}±{se:.3f}"


#: what the flags of the console table mean (:mod:`perturblab.measures.quality`)
FLAG_LEGEND = ("flags: 'one-class' = the model predicts one class on every base sample (it then keeps its prediction "
               "under any perturbation: Hard-SCoPE 1 by construction); 'chance-level' = neither its accuracy is above "
               "the majority-class rate by more than 2 s.e., nor its MCC above 0 by more than 2 s.e. The SCoPE numbers "
               "of a flagged pair mean nothing.")


def render_table(summary: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table of the summary rows (mean ± s.e. over trials), with a ``flags``
    column and its legend when a target or the reference is flagged (one class, chance level)."""
    cols = ["target", "capability", "n", "n_perturbed", "gap_iid_acc", "iid_agreement",
            "ood_agreement", "hard_scope", "soft_scope"]
    flagged = any(r.get("flags") for r in summary)
    lines = [[c for c in cols] + (["flags"] if flagged else [])]
    for r in summary:
        line = [str(r["target"]), str(r["capability"]), str(r["n"]), f"{r['n_perturbed']:.0f}"]
        line += [fmt(r[m], r.get(m + "_se")) for m in cols[4:]]
        lines.append(line + ([", ".join(r.get("flags") or [])] if flagged else []))
    cols += ["flags"] if flagged else []
    widths = [max(len(l[i]) for l in lines) for i in range(len(cols))]
    table = "\n".join("  ".join(s.ljust(w) for s, w in zip(l, widths)) for l in lines)
    return table + ("\n" + FLAG_LEGEND if flagged else "")


def write_examples_table(rows: Sequence[dict[str, Any]], path: str | Path, trial: int = 0) -> Path:
    """Side-by-side table (SCoPE App. L, Table 3 style): one line per base sample of
    ``trial`` with the original and its perturbation under each capability."""
    caps = list(dict.fromkeys(r["capability"] for r in rows))
    by_sample: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r["trial"] != trial:
            continue
        line = by_sample.setdefault(r["sample_id"], {"original": r["original"]})
        pert = r.get("perturbed")
        if r["status"] == "perturbed" and pert is not None:
            line[r["capability"]] = pert if _is_pair(r) else mark_changes(pert, r["changes"])
    from ...core.files import write_csv

    return write_csv(path, ["sample_id", "original"] + caps,
                     ([sid, by_sample[sid]["original"]] + [by_sample[sid].get(c, "") for c in caps]
                      for sid in sorted(by_sample)))
