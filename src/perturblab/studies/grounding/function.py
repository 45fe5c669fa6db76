"""The public function of the grounding study, named like its command (``grounding``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from ...core.entry import run, study_function
from ..robustness.layer_probes.function import data_splits
from .config import PC_FRACTIONS, GroundingArgs
from .result import GroundingStudyResult
from .study import GroundingStudy


def _variants(variants: str | Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    """Variant names, and the ready encoder objects among them by name."""
    from ..given import model_list

    return model_list(variants, option="--variants", prefix="variant", what="encoder")


@study_function(GroundingArgs)
def grounding(args: GroundingArgs, given: Mapping[str, Any]) -> GroundingStudyResult:
    """Which similarity measures track functionality (the ``grounding`` command; Ding et al. 2021,
    Table 1 and the warm-up tests of Figs. 1–2).

    ``variants`` are encoder specs, ``ft:<seed>`` (``base`` fine-tuned on the training split with
    that seed: ``epochs``, ``max_seconds`` of CPU time, learning rate ``lr``; saved under
    ``data_home()/finetuned`` and reused) or encoder objects (``hidden_states``, ``fingerprint``,
    ``name``). ``data`` is a data spec, a :class:`~perturblab.data.Dataset` (split 3:1 and sampled
    to ``n_train`` / ``n_eval``) or a ready ``(train, eval)`` pair. ``out`` keeps the results
    store, so calling again recomputes only what changed (``None``: a temporary directory);
    nothing but the store is written until you call ``.save(dir)``.

    Example (three encoders of two "layers" counting words, on data of your own)::

        >>> import numpy as np
        >>> from perturblab import grounding
        >>> from perturblab.data import Dataset, Example
        >>> class Counts:
        ...     num_layers = 2
        ...     def __init__(self, name, noise):
        ...         self.name, self.noise, self.fingerprint = name, noise, f"doctest-grounding-{name}"
        ...     def hidden_states(self, texts, pooling="mean"):
        ...         rng = np.random.default_rng(len(self.name))
        ...         h = np.array([[t.split().count(w) for w in ("good", "bad", "a", "film")] for t in texts], float)
        ...         h = h + self.noise * rng.normal(size=h.shape)
        ...         return [h.astype(np.float32), (h @ rng.normal(size=(4, 4))).astype(np.float32), (2 * h).astype(np.float32)]
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 10], ["negative", "positive"])
        >>> res = grounding([Counts("clean", 0.0), Counts("noisy", 0.5), Counts("noisier", 2.0)], data=data,
        ...                 n_train=40, n_eval=20, measures="cka,procrustes", pc_layers=[2], n_boot=50, quiet=True)
        >>> sorted({(r["benchmark"], r["measure"]) for r in res.summary})
        [('layer_depth', 'linear_cka'), ('layer_depth', 'procrustes_distance'), ('pc_deletion', 'linear_cka'), ('pc_deletion', 'procrustes_distance')]
        >>> [r["n"] for r in res.summary if r["benchmark"] == "layer_depth"]
        [5, 5]
    """
    names, encoders = _variants(given["variants"])
    data_name, splits = data_splits(given["data"], args.n_train, args.n_eval, args.seed)
    if given["pc_fractions"] is None:
        args = replace(args, pc_fractions=GroundingArgs.value("pc_fractions", PC_FRACTIONS))
    args = replace(args, variants=",".join(names), data=data_name)
    study = GroundingStudy(args, encoders=encoders, splits=splits, progress=not args.quiet)
    result = run(study, given["out"], quiet=args.quiet)
    assert isinstance(result, GroundingStudyResult)
    return result
