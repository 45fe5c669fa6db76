"""Robustness of generation to perturbed sources (robustness paper Sec. 3.3-3.4, Table 4).

For every language model, the sources of a generation task are perturbed with each perturbation
(``seeds`` draws of the random ones), the model generates from the clean and the perturbed
prompts (greedy, ``max_new_tokens``), and ROUGE-1/2/L F against the references gives m_c and m_p;
relative robustness is ``1 − (m_c − m_p) / m_c`` (:func:`~perturblab.measures.learnability.
relative_robustness`). A paired bootstrap over the examples (each resample scores the clean and
the perturbed generations of the same examples) gives a 95 % interval of each cell's mean over
draws.

Every batch of generations is stored in the results store under (model fingerprint, data and
prompt hash, generation length, setting) as soon as it is made, so a killed run resumes and a
re-run with other metrics generates nothing again.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from ...data.summaries import GenerationExample, load_generation_data
from ...errors import InputError
from ...measures.learnability import relative_robustness, relative_robustness_many
from ...measures.stats import percentile_interval
from ...measures.task_metrics import rouge_scores
from ...models.base import fingerprint_of
from ...perturb.catalogue import apply_perturbation
from ...store import ResultStore
from .layer_probes import DEFAULT_PERTURBATIONS as ROBUSTNESS_EIGHT
from .study import perturbation_draws
from .summary import clean_table, relative_robustness_heatmaps, summarise

STUDY = "generation"
ROUGE = ("rouge1", "rouge2", "rougeL")
# With "Summary:" and no line break SmolLM2-Instruct ended half of its answers at once; with this
# prompt none of 16 (and ROUGE-L against the lead sentence rose from 0.14 to 0.32).
DEFAULT_PROMPT = "Summarize the text in one sentence.\n\nText: {source}\n\nOne-sentence summary:\n"


@dataclass
class GenerationConfig:
    """What :func:`run_generation_robustness` evaluates."""

    models: Sequence[str]
    data: str = "lead:conll2010"
    perturbations: Sequence[str] = ROBUSTNESS_EIGHT
    seeds: int = 3  # draws of each random perturbation
    n: int = 100
    sample_seed: int = 0
    metrics: Sequence[str] = ROUGE
    prompt: str = DEFAULT_PROMPT
    max_new_tokens: int = 40
    source_column: str = "source"
    reference_column: str = "reference"
    n_boot: int = 1000

    def validate(self) -> None:
        if not self.models:
            raise InputError("give at least one language model (--models)")
        bad = [m for m in self.metrics if m not in ROUGE]
        if bad:
            raise InputError(f"generation robustness is scored by {', '.join(ROUGE)}; got {bad}")
        if "{source}" not in self.prompt:
            raise InputError("the prompt must contain {source} where the (perturbed) source text goes")
        if self.seeds < 1 or self.max_new_tokens < 1:
            raise InputError(f"seeds and max_new_tokens must be >= 1, got {self.seeds}, {self.max_new_tokens}")


def first_line(text: str) -> str:
    """The generated summary: the continuation up to its first line break, stripped."""
    return text.strip().split("\n", 1)[0].strip()


def run_generation_robustness(config: GenerationConfig, out_dir: str | Path, *,
                              models: Mapping[str, Any] | None = None, progress: bool = True) -> list[dict[str, Any]]:
    """Run (or resume) the study; writes ``results.json``, ``summary.json``, ``table.md``,
    ``examples.csv`` and a heatmap per metric into ``out_dir``, and returns the result rows.
    ``models`` maps names to ready :class:`~perturblab.models.lm.LanguageModel` objects (else
    names are loaded with :func:`~perturblab.models.lm_presets.load_language_model`)."""
    config.validate()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = load_generation_data(config.data, n=config.n, seed=config.sample_seed,
                                source_column=config.source_column, reference_column=config.reference_column)
    refs = [ex.reference for ex in data]
    data_key = fingerprint_of([[ex.source, ex.reference] for ex in data], config.prompt, config.max_new_tokens)
    settings = [("clean", None, 0)] + [(f"{p}|{s}", p, s) for p, s in perturbation_draws(config)]
    perturbed: dict[tuple[str | None, int], tuple[list[str], float | None]] = {}
    rows: list[dict[str, Any]] = []
    intervals: dict[tuple[str, str, str], list[float]] = {}
    generations: dict[str, dict[str, list[str]]] = {}
    sources: dict[str, list[str]] = {}
    rates: dict[tuple[str, str], float | None] = {}
    with ResultStore(out / "results.sqlite") as store:
        for name in config.models:
            lm = (models or {}).get(name)
            if lm is None:
                from ...models.lm_presets import load_language_model

                lm = load_language_model(name)
            gens = {}
            bar = tqdm(settings, desc=f"{name}: generating", disable=not progress, leave=False)
            for setting, pert, seed in bar:
                key = f"{lm.fingerprint}|{data_key}|{setting}"
                hit = store.cell(STUDY, key)
                if hit is None:
                    if (pert, seed) not in perturbed:  # each draw made once, shared by the models
                        perturbed[(pert, seed)] = _sources(data, pert, seed)
                    srcs, rate = perturbed[(pert, seed)]
                    hit = {"sources": srcs, "change_rate": rate, "generations": [first_line(g) for g in lm.generate(
                        [config.prompt.format(source=s) for s in srcs], max_new_tokens=config.max_new_tokens)]}
                    store.add_cell(STUDY, key, hit)
                gens[setting] = hit["generations"]
                sources[setting] = hit["sources"]
                rates[(name, setting)] = hit["change_rate"]
            bar.close()
            generations[name] = gens
            model_rows, model_ci = _model_rows(config, name, refs, gens, rates)
            rows += model_rows
            intervals.update(model_ci)
    summary = summarise(rows, intervals)
    summary["config"] = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in asdict(config).items()}
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / "table.md").write_text(generation_markdown(summary))
    _examples_csv(out / "examples.csv", data, sources, generations)
    relative_robustness_heatmaps(summary, out, "generation_heatmap")
    return rows


def _sources(data: Sequence[GenerationExample], pert: str | None, seed: int) -> tuple[list[str], float | None]:
    """The (perturbed) sources and the share of them the perturbation changed."""
    srcs = [ex.source for ex in data]
    if pert is None:
        return srcs, None
    done = apply_perturbation(pert, srcs, seed=seed)
    return list(done.texts), done.change_rate


def _model_rows(config: GenerationConfig, name: str, refs: list[str], gens: dict[str, list[str]],
                rates: Mapping[tuple[str, str], float | None]) -> tuple[list[dict[str, Any]], dict[tuple[str, str, str], list[float]]]:
    rows, ci = [], {}
    idx = np.random.default_rng(config.sample_seed).integers(0, len(refs), size=(config.n_boot, len(refs)))
    for metric in config.metrics:
        clean = rouge_scores(refs, gens["clean"], metric)
        m_c = float(clean.mean())
        per_draw: dict[str, list[np.ndarray]] = {}
        for pert, seed in perturbation_draws(config):
            scores = rouge_scores(refs, gens[f"{pert}|{seed}"], metric)
            m_p = float(scores.mean())
            rows.append({"model": name, "perturbation": pert, "metric": metric, "seed": seed, "clean": m_c,
                         "perturbed": m_p, "relative_robustness": relative_robustness(m_c, m_p) if m_c > 0 else None,
                         "change_rate": rates[(name, f"{pert}|{seed}")], "n": len(refs)})
            per_draw.setdefault(pert, []).append(relative_robustness_many(clean[idx].mean(axis=1),
                                                                          scores[idx].mean(axis=1)))
        for pert, reps in per_draw.items():
            ci[(name, pert, metric)] = list(percentile_interval(np.mean(reps, axis=0)))
    return rows, ci


def generation_markdown(summary: dict[str, Any]) -> str:
    """Clean ROUGE and relative robustness per perturbation (robustness paper Table 4)."""
    models = list(dict.fromkeys(c["model"] for c in summary["clean"]))
    metrics = list(dict.fromkeys(c["metric"] for c in summary["clean"]))
    perts = list(dict.fromkeys(c["perturbation"] for c in summary["cells"]))
    cell = {(c["model"], c["perturbation"], c["metric"]): c for c in summary["cells"]}
    lines = ["# Generation robustness", "",
             "ROUGE F of the generated summaries against the references; relative robustness "
             "1 − (m_c − m_p) / m_c (robustness paper Sec. 3.4, Table 4), mean ± s.d. over perturbation "
             "draws, [paired-bootstrap 95 % interval over examples].", "", "## Clean ROUGE", ""] + clean_table(summary)
    for metric in metrics:
        lines += ["", f"## Relative robustness, {metric}", "",
                  "| perturbation | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
        for p in perts:
            texts = []
            for m in models:
                c = cell.get((m, p, metric))
                if c is None or math.isnan(c["mean"]):
                    texts.append("n/a")
                    continue
                text = f"{c['mean']:.3f}" + ("" if c["std"] is None else f" ± {c['std']:.3f}")
                if c.get("ci") and not math.isnan(c["ci"][0]):
                    text += f" [{c['ci'][0]:.2f}, {c['ci'][1]:.2f}]"
                texts.append(text)
            lines.append(f"| {p} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


def _examples_csv(path: Path, data: Sequence[GenerationExample], sources: dict[str, list[str]],
                  generations: dict[str, dict[str, list[str]]], limit: int = 20) -> None:
    """The first ``limit`` examples of every model and setting, side by side."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["model", "setting", "uid", "source", "reference", "generation"])
        for model, gens in generations.items():
            for setting, texts in gens.items():
                for i, ex in enumerate(data[:limit]):
                    w.writerow([model, setting, ex.uid, sources[setting][i], ex.reference, texts[i]])

