"""The public functions of the robustness paper's studies, named like their commands:
``robustness`` and ``generation``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...core.entry import run, study_function
from ..models import model_list, renamed
from .config import DEFAULT_PROMPT

if TYPE_CHECKING:  # pragma: no cover
    from .generation import GenerationResult
    from .study import RobustnessResult


@study_function("perturblab.studies.robustness.config:RobustnessArgs")
def robustness(models: Any, *, perturbations: str | Sequence[str] = "robustness",
               data: str = "rotten_tomatoes", text_fields: str | Sequence[str] = (), label_column: str | None = None,
               task: str | None = None, metrics: str | Sequence[str] | None = None, trials: int = 3,
               n_train: int = 2000, n_eval: int = 1000, perturb_field: str = "both",
               label_map: Sequence[str] | Mapping[str, Mapping[str, str]] | None = None, n_boot: int = 1000,
               train_seed: int = 0, out: str | Path | None = None, quiet: bool = False, executor: Any = "local",
               address: str | None = None, num_cpus: int | None = None, seeds: int | None = None,
               n_test: int | None = None) -> "RobustnessResult":
    """Relative robustness of classifiers or regressors to perturbations (robustness paper,
    Tables 1 and 3; the ``robustness`` command).

    ``models`` are specs (presets, trainable zoo models, model directories, hub ids, ``NAME=SOURCE``;
    one comma-separated string or a list) or model objects; ``perturbations`` a list or
    ``robustness`` / ``all`` / ``every``; ``trials`` draws of each random perturbation;
    ``n_eval`` evaluation examples; ``label_map`` ``[MODEL:]LABEL=DATA_LABEL,...`` entries or a
    mapping {model or "*": {model label: data label}}. ``out`` keeps the results store (``None``: a
    temporary directory); ``.save(dir)`` writes what the command writes. ``seeds`` and ``n_test``
    are the old names of ``trials`` and ``n_eval``.

    Example (a classifier that only reads the first word, against dropping the first word)::

        >>> import numpy as np, perturblab as pl
        >>> from perturblab.models import CallableClassifier
        >>> def first_word(texts):
        ...     p = np.array([0.9 if t.split()[0] == "good" else 0.1 for t in texts])
        ...     return np.stack([1 - p, p], axis=1)
        >>> clf = CallableClassifier(first_word, ["neg", "pos"], name="first")
        >>> rows = ["text,label"] + [f"{w} film number {i},{'pos' if w == 'good' else 'neg'}"
        ...                          for i, w in enumerate(["good", "bad"] * 20)]
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
        >>> _ = path.write_text("\\n".join(rows) + "\\n")
        >>> res = pl.robustness([clf], perturbations="drop_first", data=str(path), n_train=8, n_eval=8,
        ...                     metrics="accuracy", quiet=True, n_boot=50)
        >>> (res.rows[0]["clean"], res.rows[0]["perturbed"], res.rows[0]["relative_robustness"])
        (1.0, 0.5, 0.5)
    """
    from .config import RobustnessArgs, label_map_entries
    from .study import RobustnessStudy

    renamed(trials, seeds, 3, "trials", "seeds")
    renamed(n_eval, n_test, 1000, "n_eval", "n_test")
    specs, given = model_list(models)
    maps = {"label_map": label_map_entries(label_map)} if isinstance(label_map, Mapping) else {}
    args = RobustnessArgs.of_call(locals(), models=",".join(specs), **maps)
    return run(RobustnessStudy(args, classifiers=given), out, executor=executor, address=address, num_cpus=num_cpus,
               quiet=quiet)


@study_function("perturblab.studies.robustness.config:GenerationArgs")
def generation(models: Any, *, data: str = "lead:conll2010", source_column: str = "source",
               reference_column: str = "reference", perturbations: str | Sequence[str] = "robustness",
               metrics: str | Sequence[str] = ("rouge1", "rouge2", "rougeL"), n: int = 100, trials: int = 3,
               max_new_tokens: int = 40, prompt: str | None = DEFAULT_PROMPT, seed: int = 0, n_boot: int = 1000,
               out: str | Path | None = None, quiet: bool = False, seeds: int | None = None) -> "GenerationResult":
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
    """
    from .config import GenerationArgs
    from .generation import GenerationStudy

    renamed(trials, seeds, 3, "trials", "seeds")
    specs, given = model_list(models, what="language model", needs=("generate",))
    args = GenerationArgs.of_call(locals(), models=",".join(specs))
    return run(GenerationStudy(args, models=given, progress=not quiet), out, quiet=quiet)
