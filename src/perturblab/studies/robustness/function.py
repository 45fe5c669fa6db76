"""The public functions of the robustness paper's studies, named like their commands:
``robustness`` and ``generation``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from ...core.entry import run, study_function
from ..given import model_list
from .config import GenerationArgs, RobustnessArgs

if TYPE_CHECKING:  # pragma: no cover
    from .generation import GenerationResult
    from .study import RobustnessResult


@study_function(RobustnessArgs)
def robustness(args: "RobustnessArgs", given: Mapping[str, Any]) -> "RobustnessResult":
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
        >>> res = pl.robustness([clf], perturbations="drop_first", data=str(path), n_train=8, n_eval=10,
        ...                     metrics="accuracy", quiet=True, n_boot=50)
        >>> (res.rows[0]["clean"], res.rows[0]["perturbed"], res.rows[0]["relative_robustness"])
        (1.0, 0.5, 0.5)
    """
    from .config import label_map_entries
    from .study import RobustnessStudy

    specs, classifiers = model_list(given["models"])
    label_map = given["label_map"]
    maps = {"label_map": label_map_entries(label_map)} if isinstance(label_map, Mapping) else {}
    args = replace(args, models=",".join(specs), **maps)
    return run(RobustnessStudy(args, classifiers=classifiers), given["out"], executor=given["executor"],
               address=args.address, num_cpus=args.num_cpus, quiet=args.quiet)


@study_function(GenerationArgs)
def generation(args: "GenerationArgs", given: Mapping[str, Any]) -> "GenerationResult":
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
    from .generation import GenerationStudy

    specs, models = model_list(given["models"], what="language model", needs=("generate",))
    args = replace(args, models=",".join(specs))
    return run(GenerationStudy(args, models=models, progress=not args.quiet), given["out"], quiet=args.quiet)
