"""A twelfth study, written as docs/adding_a_study.md describes: how often a classifier keeps its
prediction when the last word of a text is dropped. One module here stands for the package
``studies/<name>/`` (args, study, result, function); the test suite registers it with one line,
runs it from the command line, a config and Python, and puts it through the conformance checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from perturblab.core.entry import run, study_function
from perturblab.core.files import write_json
from perturblab.core.keys import content_key, model_fingerprint
from perturblab.core.headline import Estimate, Headline
from perturblab.core.options import option
from perturblab.core.study import Phase, RunContext, Study, StudyResult, Task
from perturblab.studies.args import Args


# -- args: the one declaration of the options (command line, config entry, Python keywords) -----
@dataclass(kw_only=True)
class TruncationArgs(Args):
    command_help = "how often a classifier keeps its prediction without the last word"

    models: str | None = option(required=True, role="classifier", help="comma list of classifiers")
    data: str = option("rotten_tomatoes", data=True, help="a labelled data set or file")
    n: int = option(40, min=4, help="examples (a seeded sample of the held-out split)")
    seed: int = option(0, min=0, help="seed of the split and the sample")
    n_boot: int = option(200, min=1, help="bootstrap resamples of the 95% interval")


def drop_last_word(text: str) -> str:
    words = text.split()
    return " ".join(words[:-1]) if len(words) > 1 else text


# -- study: phases of content-keyed tasks ---------------------------------------------------------
class TruncationStudy(Study):
    name = "truncation"

    def __init__(self, args: TruncationArgs, models: list[str]) -> None:
        self.args, self.names = args, models
        self.models: dict[str, Any] = {}

    def prepare(self, ctx: RunContext) -> None:
        from perturblab.models.resolve import load_model
        from perturblab.studies.inputs import labelled_split

        a = self.args
        self.train, self.test = labelled_split(a.data, n_train=400, n_eval=a.n, seed=a.seed)
        for spec in self.names:
            with ctx.step(f"loading {spec}"):
                self.models[spec] = load_model(spec, "classifier", train=self.train, seed=a.seed)

    def identity(self) -> dict[str, Any]:
        return {"models": {n: model_fingerprint(m) for n, m in self.models.items()},
                "texts": [ex.text for ex in self.test]}

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        tasks = [Task(content_key("truncation", model_fingerprint(m), ex.text), ex.text, group=name)
                 for name, m in self.models.items() for ex in self.test]
        self.phase = Phase("kept", tasks, self._compute, batch_size=64, label="truncation")
        yield self.phase

    def _compute(self, name: str, texts: list[str]) -> list[bool]:
        model = self.models[name]
        before = np.asarray(model.predict_proba(texts)).argmax(1)
        after = np.asarray(model.predict_proba([drop_last_word(t) for t in texts])).argmax(1)
        return [bool(x) for x in before == after]

    def finish(self, ctx: RunContext) -> "TruncationResult":
        from perturblab.measures.stats import bootstrap_ci

        rows = []
        for name, m in self.models.items():
            kept = np.array([self.phase.results[content_key("truncation", model_fingerprint(m), ex.text)]
                             for ex in self.test], dtype=float)
            low, high = bootstrap_ci(lambda idx: float(kept[idx].mean()), len(kept), n_boot=self.args.n_boot,
                                     seed=self.args.seed)
            rows.append({"model": name, "kept": float(kept.mean()), "ci": [low, high], "n": len(kept)})
        return TruncationResult(rows)


# -- result: what the command prints and writes ---------------------------------------------------
class TruncationResult(StudyResult):
    study = "truncation"

    def table(self) -> str:
        return "\n".join(f"{r['model']:<12} kept {r['kept']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
                         for r in self.rows)

    def headline(self) -> Headline:
        return Headline("The share of test texts whose prediction survives dropping the last word "
                        "(1 = every one). n: the test texts.",
                        [Estimate(r["model"], "kept without the last word", r["kept"], *r["ci"], n=r["n"],
                                  interval="95 % bootstrap over examples", key="kept") for r in self.rows])

    def save(self, out: str | Path) -> list[Path]:
        return [write_json(Path(out) / "results.json", self.rows)]


# -- function: pl.truncation, checked against its options by the one entry ----------------------
@study_function(TruncationArgs)
def truncation(models: Any, *, data: str = "rotten_tomatoes", n: int = 40, seed: int = 0, n_boot: int = 200,
               out: str | Path | None = None, quiet: bool = False) -> TruncationResult:
    """How often each classifier keeps its prediction when the last word is dropped.

    Example::

        >>> res = truncation("tfidf-lr", n=8, n_boot=20, quiet=True)  # doctest: +SKIP
        >>> res.rows[0]["n"]  # doctest: +SKIP
        8
    """
    from perturblab.studies.models import model_list

    names, _ = model_list(models)
    args = TruncationArgs.of_call(locals(), models=",".join(names))
    return run(TruncationStudy(args, names), out, quiet=quiet)
