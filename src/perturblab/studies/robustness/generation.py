"""Robustness of generation to perturbed sources (robustness paper Sec. 3.3-3.4, Table 4).

For every language model, the sources of a generation task are perturbed with each perturbation
(``trials`` draws of the random ones), the model generates from the clean and the perturbed
prompts (greedy, ``max_new_tokens``), and ROUGE-1/2/L F against the references gives m_c and m_p;
relative robustness is ``1 − (m_c − m_p) / m_c`` (:func:`~perturblab.measures.learnability.
relative_robustness`). A paired bootstrap over the examples (each resample scores the clean and
the perturbed generations of the same examples) gives a 95 % interval of each cell's mean over
draws.

The study runs on the study core (:class:`GenerationStudy`, its options
:class:`~.config.GenerationArgs`): every model's generations in one
setting are one cell of the results store, keyed on the model's fingerprint, the examples, the
prompt, the generation length and the setting, and stored as soon as they are made, so a killed
run resumes, a re-run with other metrics generates nothing again, and another model under the
same name generates afresh.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Hashable, Iterator, Mapping, Sequence

import numpy as np

from ...core.boundary import Inputs
from ...core.files import atomic_write_text, save_figure, write_csv, write_json
from ...core.keys import content_key, model_fingerprint
from ...core.headline import Headline
from ...core.study import Phase, RunContext, Study, StudyResult, Task
from ...data.summaries import GenerationExample, load_generation_data
from ...errors import InputError
from ...measures.learnability import relative_robustness, relative_robustness_many
from ...measures.stats import percentile_interval
from ...measures.task_metrics import rouge_scores
from ...models.base import fingerprint_of
from ...perturb.catalogue import apply_perturbation
from .config import GenerationArgs
from .study import perturbation_draws
from .headline import robustness_headline
from .summary import _undefined, clean_table, relative_robustness_figures, summarise

STUDY = "generation"


def first_line(text: str) -> str:
    """The generated summary: the continuation up to its first line break, stripped."""
    return text.strip().split("\n", 1)[0].strip()


class GenerationResult(StudyResult):
    """The result of :func:`perturblab.generation`: one row per model × perturbation × metric ×
    draw (``clean``, ``perturbed``, ``relative_robustness``, ``change_rate``, ``n``); the summary
    with paired-bootstrap intervals; the first examples of every model and setting side by side."""

    study = STUDY

    def __init__(self, rows: Sequence[dict[str, Any]], summary: dict[str, Any], *,
                 examples: Sequence[Sequence[str]] = (), run_id: str | None = None) -> None:
        super().__init__(rows, summary, run_id=run_id)
        self.examples = [list(e) for e in examples]

    def table(self) -> str:
        """The Markdown of ``table.md`` (Table 4 style)."""
        return generation_markdown(self.summary)

    def figures(self) -> dict[str, Any]:
        """``generation_heatmap_<metric>.png`` -> figure."""
        return relative_robustness_figures(self.summary, "generation_heatmap")

    def headline(self) -> Headline:
        """Each model's relative robustness per perturbation and metric, with intervals and n
        (:func:`~.headline.robustness_headline`)."""
        return robustness_headline(self.summary, self.rows, more=(
            "Scores are of the generations against the reference texts; a perturbation is applied to "
            "the source only."))

    def save(self, out: str | Path) -> list[Path]:
        """``results.json``, ``summary.json``, ``table.md``, ``examples.csv`` and one heatmap per
        metric, each written atomically."""
        out = Path(out)
        paths = [write_json(out / "results.json", self.rows), write_json(out / "summary.json", self.summary),
                 atomic_write_text(out / "table.md", self.table()),
                 write_csv(out / "examples.csv", EXAMPLE_COLUMNS, self.examples)]
        return paths + [save_figure(fig, out / name) for name, fig in self.figures().items()]


class GenerationStudy(Study):
    """Robustness of generated summaries to perturbed sources (robustness paper Sec. 3.3-3.4,
    Table 4; the ``generation`` command): ROUGE F of greedy generations from clean and perturbed
    prompts, relative robustness 1 − (m_c − m_p) / m_c with paired-bootstrap intervals.

    ``models`` are language-model specs (presets, directories, ``.gguf`` files, hub ids,
    ``NAME=SOURCE``; one comma-separated string or a list) or objects with ``generate(prompts,
    max_new_tokens)``, ``name`` and ``fingerprint``; ``data`` is ``lead:<corpus>`` or a file of
    source/reference pairs; ``prompt`` a template with ``{source}`` (default: the study's);
    ``trials`` draws of each random perturbation (``seeds`` is its old name); ``seed`` the sample
    of ``n`` examples. ``out`` keeps the results store, so calling again generates only what is
    missing (``None``: a temporary directory); ``.save(dir)`` writes what the command writes.

    Example (a "model" that copies the source, against dropping the first word)::

        >>> import perturblab as pl, pathlib, tempfile
        >>> class Copier:
        ...     name, fingerprint = "copier", "doctest-copier-v1"
        ...     def generate(self, prompts, max_new_tokens=40):
        ...         return [" " + p.split("Text: ")[1].split("\\n")[0] + "\\n" for p in prompts]
        >>> lines = ["source,reference"] + [f"the film number {i} was good,the film number {i} was good"
        ...                                 for i in range(6)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.csv"
        >>> _ = path.write_text("\\n".join(lines) + "\\n")
        >>> res = pl.generation([Copier()], data=str(path), perturbations="drop_first", metrics="rouge1",
        ...                     n_boot=50, quiet=True)
        >>> r = res.rows[0]
        >>> (r["perturbation"], r["clean"], round(r["perturbed"], 3), r["n"])
        ('drop_first', 1.0, 0.909, 6)

    (The study: one task per model and setting (clean, or one draw of one perturbation), keyed on
    the model's fingerprint, the examples, the prompt, the generation length and the setting. The
    perturbed sources are made only for tasks that must run, each draw once for all models.
    ``models`` maps names to ready :class:`~perturblab.models.lm.LanguageModel` objects, else the
    names are loaded as language-model specs.)
    """

    name = command = STUDY
    help = "robustness of generated summaries to perturbed sources (ROUGE, Table 4)"
    Args = GenerationArgs
    Result = GenerationResult
    example = dict(models="smollm2-135m", data="lead:conll2010", perturbations="drop_first", metrics="rouge1", n=2,
                   trials=1, max_new_tokens=4, n_boot=50)

    @classmethod
    def of(cls, args: GenerationArgs, inputs: Inputs) -> "GenerationStudy":
        """The study of ``args``; a model object without a ``generate`` method is refused (it
        could not generate a summary)."""
        for i, name in enumerate(args.model_names()):
            model = inputs.model(name)
            if model is not None and not callable(getattr(model, "generate", None)):
                raise InputError(f"--models: item {i} ({type(model).__name__}) is not a language model: give a "
                                 "spec (a preset name, a directory or a hub id) or an object with a `fingerprint` "
                                 "string and generate()")
        return cls(args, models=inputs.models, progress=not args.quiet)

    def __init__(self, args: GenerationArgs, *, models: Mapping[str, Any] | None = None,
                 progress: bool = True) -> None:
        self.args, self.progress = args, progress
        self.perturbations, self.metrics = args.perturbation_list(), args.metric_list()
        self.prompt = args.prompt_template()
        self._given = dict(models or {})
        self._perturbed: dict[tuple[str | None, int], tuple[list[str], float | None]] = {}
        self._lock = threading.Lock()

    def prepare(self, ctx: RunContext) -> None:
        from ...models.resolve import load_model
        from ...models.spec import ModelSpec

        args = self.args
        with ctx.step("loading the data"):
            self.data = load_generation_data(args.data, n=args.n, seed=args.seed, source_column=args.source_column,
                                             reference_column=args.reference_column)
        self.models: dict[str, Any] = {}
        for spec in args.model_names():
            name = spec if spec in self._given else ModelSpec.parse(spec).name
            if name in self.models:
                raise InputError(f"two language models are named {name!r}; give one another name (NAME=SOURCE)")
            if spec in self._given:
                self.models[name] = self._given[spec]
            else:
                with ctx.step(f"loading language model {name}"):
                    self.models[name] = load_model(spec, "language_model")
        self.data_key = fingerprint_of([[ex.source, ex.reference] for ex in self.data], self.prompt,
                                       args.max_new_tokens)
        self.settings = [("clean", None, 0)] + [(f"{p}|{s}", p, s) for p, s in self.draws()]

    def draws(self) -> list[tuple[str, int]]:
        """Every (perturbation, draw) of the study (:func:`~.study.perturbation_draws`)."""
        return perturbation_draws(self.perturbations, self.args.trials)

    def identity(self) -> dict[str, Any]:
        opts = {k: v for k, v in self.args.study_options().items() if k != "models"}
        return {"options": opts, "models": {n: model_fingerprint(m) for n, m in self.models.items()},
                "data": self.data_key}

    def key(self, model: str, setting: str) -> str:
        """The content key of one model's generations in one setting."""
        return content_key(STUDY, model_fingerprint(self.models[model]), self.data_key, setting)

    def sources(self, pert: str | None, seed: int) -> tuple[list[str], float | None]:
        """The (perturbed) sources of one setting and the share the perturbation changed (made once)."""
        with self._lock:
            if (pert, seed) not in self._perturbed:
                self._perturbed[(pert, seed)] = _sources(self.data, pert, seed)
            return self._perturbed[(pert, seed)]

    def _generate(self, model: Hashable, settings: list[tuple[str, str | None, int]]) -> list[dict[str, Any]]:
        out = []
        for _, pert, seed in settings:
            srcs, rate = self.sources(pert, seed)
            prompts = [self.prompt.format(source=s) for s in srcs]
            gens = self.models[str(model)].generate(prompts, max_new_tokens=self.args.max_new_tokens)
            out.append({"sources": srcs, "change_rate": rate, "generations": [first_line(g) for g in gens]})
        return out

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        tasks = [Task(self.key(name, setting[0]), setting, group=name) for name in self.models
                 for setting in self.settings]
        self._phase = Phase("generation", tasks, self._generate, label="generations per model and setting")
        yield self._phase

    def finish(self, ctx: RunContext) -> "GenerationResult":
        refs = [ex.reference for ex in self.data]
        rows: list[dict[str, Any]] = []
        intervals: dict[tuple[str, str, str], list[float]] = {}
        generations: dict[str, dict[str, list[str]]] = {}
        sources: dict[str, list[str]] = {}
        rates: dict[tuple[str, str], float | None] = {}
        for name in self.models:
            gens = {}
            for setting, _, _ in self.settings:
                hit = self._phase.results[self.key(name, setting)]
                gens[setting] = hit["generations"]
                sources[setting] = hit["sources"]
                rates[(name, setting)] = hit["change_rate"]
            generations[name] = gens
            model_rows, model_ci = _model_rows(self, name, refs, gens, rates)
            rows += model_rows
            intervals.update(model_ci)
        summary = summarise(rows, intervals)
        summary["config"] = self.args.study_options()
        return GenerationResult(rows, summary, examples=_examples(self.data, sources, generations), run_id=ctx.run_id)


def _sources(data: Sequence[GenerationExample], pert: str | None, seed: int) -> tuple[list[str], float | None]:
    """The (perturbed) sources and the share of them the perturbation changed."""
    srcs = [ex.source for ex in data]
    if pert is None:
        return srcs, None
    done = apply_perturbation(pert, srcs, seed=seed)
    return list(done.texts), done.change_rate


def _model_rows(study: GenerationStudy, name: str, refs: list[str], gens: dict[str, list[str]],
                rates: Mapping[tuple[str, str], float | None],
                ) -> tuple[list[dict[str, Any]], dict[tuple[str, str, str], list[float]]]:
    """One model's rows (per metric and draw) and its paired-bootstrap intervals (``n_boot``
    resamples of the examples, seeded by ``seed``) of the mean over draws."""
    rows, ci = [], {}
    idx = np.random.default_rng(study.args.seed).integers(0, len(refs), size=(study.args.n_boot, len(refs)))
    for metric in study.metrics:
        clean = rouge_scores(refs, gens["clean"], metric)
        m_c = float(clean.mean())
        per_draw: dict[str, list[np.ndarray]] = {}
        for pert, seed in study.draws():
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
                if c is None or _undefined(c["mean"]):  # NaN here, null when read back from summary.json
                    texts.append("n/a")
                    continue
                text = f"{c['mean']:.3f}" + ("" if _undefined(c.get("std")) else f" ± {c['std']:.3f}")
                ci = c.get("ci") or [None, None]
                if not (_undefined(ci[0]) or _undefined(ci[1])):
                    text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
                texts.append(text)
            lines.append(f"| {p} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


EXAMPLE_COLUMNS = ["model", "setting", "uid", "source", "reference", "generation"]


def _examples(data: Sequence[GenerationExample], sources: dict[str, list[str]],
              generations: dict[str, dict[str, list[str]]], limit: int = 20) -> list[list[str]]:
    """The first ``limit`` examples of every model and setting, side by side (``examples.csv``)."""
    return [[model, setting, ex.uid, sources[setting][i], ex.reference, texts[i]]
            for model, gens in generations.items() for setting, texts in gens.items()
            for i, ex in enumerate(data[:limit])]
