"""A study of another package, built as a wheel and installed from it, takes part in ``compare``
like a built-in study: its key is a share kept (declared on its part,
:class:`~perturblab.studies.part.Key`), so each target's rate of changed behaviour is graded
against the thresholds, a ``--fail-under`` beyond its range is refused, and ``--equivalent`` takes
it. The study asks on how many upper-cased texts a target predicts the reference's label."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perturblab.core.headline import wilson_interval
from perturblab.measures.stats import holm

STUDY = '''
"""Upper-cased texts: does a target predict the label the reference predicts?"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from perturblab.core.boundary import Inputs
from perturblab.core.files import write_json
from perturblab.core.headline import Estimate, Headline, wilson_interval
from perturblab.core.keys import content_key, model_fingerprint
from perturblab.core.options import option
from perturblab.core.study import Phase, RunContext, Study, StudyResult, Task
from perturblab.studies.args import Args
from perturblab.studies.names import display_name
from perturblab.studies.part import CLASSIFIER, SHARE, Cost, Key, Part


@dataclass(kw_only=True)
class UpperArgs(Args):
    models: str | None = option(required=True, role="classifier", many=True, positional=True,
                                python="str | Sequence[Any]", help="the reference, then the targets")
    data: str = option("rotten_tomatoes", data=True, help="a labelled data set or file")
    n: int = option(40, min=4, help="test texts")
    seed: int = option(0, min=0, help="seed of the split and the sample")


class UpperResult(StudyResult):
    study = "upper"

    def table(self) -> str:
        return "\\n".join(f"{r['model']}: {r['same']} of {r['n']}" for r in self.rows)

    def headline(self) -> Headline:
        return Headline("The share of upper-cased test texts on which a target predicts the reference's label.",
                        [Estimate(r["model"], "same label, upper-cased", r["same"] / r["n"],
                                  *wilson_interval(r["same"], r["n"]), n=r["n"], key="same_upper",
                                  interval=f"95 % Wilson interval over the {r['n']} examples") for r in self.rows])

    def save(self, out: str | Path) -> list[Path]:
        return [write_json(Path(out) / "results.json", self.rows)]


PART = Part("upper", (CLASSIFIER,), {CLASSIFIER: Cost("n", per_unit=0.01, fixed=2.0, share=0.1, least=80, most=80)},
            keys=(Key("same_upper", SHARE, 0.0, 1.0, rate_of="upper-cased inputs labelled otherwise",
                      sequence="share"),),
            options=lambda args, size, plan, target=None: {
                "models": ",".join([args.reference, *args.target_names()]), "data": args.data, "n": size,
                "seed": args.seed})


class UpperStudy(Study):
    """Whether each target predicts the reference's label on upper-cased texts.

    Example::

        >>> import perturblab as pl
        >>> pl.upper("tfidf-lr,twin=tfidf-lr", n=8, quiet=True).rows[0]["same"]
        8
    """

    name = command = "upper"
    help = "the reference's labels on upper-cased texts"
    Args, Result, part = UpperArgs, UpperResult, PART
    example = dict(models="tfidf-lr,twin=tfidf-lr", n=8)

    def __init__(self, args: UpperArgs, inputs: Inputs) -> None:
        self.args, self.names, self.models = args, args.models.split(","), {}

    def prepare(self, ctx: RunContext) -> None:
        from perturblab.models.resolve import load_model
        from perturblab.studies.inputs import labelled_split

        self.train, self.test = labelled_split(self.args.data, n_train=200, n_eval=self.args.n, seed=self.args.seed)
        for spec in self.names:
            self.models[spec] = load_model(spec, "classifier", train=self.train, seed=self.args.seed)

    def identity(self) -> dict[str, Any]:
        return {"models": {n: model_fingerprint(m) for n, m in self.models.items()},
                "texts": [ex.text for ex in self.test]}

    def key(self, model: Any, text: str) -> str:
        return content_key("upper", model_fingerprint(model), text)

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        tasks = [Task(self.key(m, ex.text), ex.text, group=name) for name, m in self.models.items() for ex in self.test]
        self.phase = Phase("labels", tasks, self._labels, batch_size=64, label="upper-cased")
        yield self.phase

    def _labels(self, name: str, texts: list[str]) -> list[int]:
        return [int(x) for x in np.asarray(self.models[name].predict_proba([t.upper() for t in texts])).argmax(1)]

    def finish(self, ctx: RunContext) -> "UpperResult":
        labels = {n: [self.phase.results[self.key(m, ex.text)] for ex in self.test] for n, m in self.models.items()}
        reference, *targets = self.names
        rows = []
        for t in targets:
            same = sum(a == b for a, b in zip(labels[reference], labels[t]))
            rows.append({"model": display_name(t), "same": same, "n": len(self.test)})
        return UpperResult(rows)
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "upper-study"
version = "1.0"

[tool.setuptools]
py-modules = ["upper_study"]

[project.entry-points."perturblab.studies"]
upper = "upper_study:UpperStudy"
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A site directory holding the study, installed by pip from the wheel it builds."""
    src, site, dist = (tmp_path_factory.mktemp(n) for n in ("src", "site", "dist"))
    (src / "upper_study.py").write_text(textwrap.dedent(STUDY))
    (src / "pyproject.toml").write_text(PYPROJECT)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)], check=True,
                   capture_output=True, timeout=300)
    wheel = next(dist.glob("upper_study-1.0-*.whl"))
    subprocess.run(pip + ["install", "--no-deps", "--target", str(site), str(wheel)], check=True, capture_output=True,
                   timeout=300)
    assert (site / "upper_study-1.0.dist-info" / "entry_points.txt").exists()
    return site


def _compare(site: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "perturblab.cli", "compare", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def test_a_plugin_study_from_a_wheel_is_graded_range_checked_and_taken_by_equivalent(site, tmp_path):
    out = tmp_path / "cmp"
    common = ["--reference", "tfidf-lr", "--studies", "upper", "--out", str(out), "--quiet"]
    # a threshold outside the declared range of a share is refused before anything runs
    bad = _compare(site, tmp_path, *common, "--targets", "minilm-l3", "--fail-under", "same_upper=95")
    assert bad.returncode == 2 and "same_upper lies in [0, 1]; for 95 % give 0.95" in bad.stderr, bad.stderr
    assert not out.exists()
    done = _compare(site, tmp_path, *common, "--targets", "minilm-l3,twin=tfidf-lr", "--equivalent",
                    "same_upper=0.1")
    assert done.returncode in (0, 1), done.stderr
    saved = json.loads((out / "compare.json").read_text())
    rows = {r["model"]: r for r in json.loads((out / "upper" / "results.json").read_text())}
    found = {v["target"]: v["severity"] for v in saved["verdicts"] if v["study"] == "upper"}
    # the twin predicts the reference's label on every text: minor, and equivalent within 0.1
    twin = found["twin"][0]
    assert rows["twin"]["same"] == rows["twin"]["n"] == 80
    assert twin["key"] == "same_upper" and twin["what"] == "upper-cased inputs labelled otherwise"
    assert twin["rate"] == 0.0 and twin["level"] == "minor"
    check = next(c for c in saved["checks"] if c["target"] == "twin" and c["key"] == "same_upper")
    assert check["passed"] is True and "equivalent" in json.dumps(check)
    # MiniLM-L3 against tfidf-lr: its rate and level follow from its counts alone (Wilson interval,
    # exact one-sided tests of "rate <= 5 %" and "rate <= 10 %", Holm over the two)
    l3 = found["minilm-l3"][0]
    same, n = rows["minilm-l3"]["same"], rows["minilm-l3"]["n"]
    rate = 1 - same / n
    low, high = wilson_interval(same, n)
    assert abs(l3["rate"] - rate) < 1e-12 and abs(l3["low"] - (1 - high)) < 1e-12
    from scipy.stats import binom

    k = n - same  # texts labelled otherwise
    medium, major = holm([binom.sf(k - 1, n, 0.05), binom.sf(k - 1, n, 0.10)])
    expected = "major" if major <= 0.05 else "medium" if medium <= 0.05 else "minor" if 1 - low < 0.05 else "undecided"
    assert l3["level"] == expected
    assert rate > 0.10 and l3["level"] in ("medium", "major")  # the two models differ on many texts
