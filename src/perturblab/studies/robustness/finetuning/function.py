"""The public function of the fine-tuning study, named like its command (``finetuning``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from ....core.entry import run, study_function
from ..layer_probes.function import data_splits, model_name
from .config import FinetuningArgs
from .result import FinetuningResult
from .study import FinetuningStudy


@study_function(FinetuningArgs)
def finetuning(args: FinetuningArgs, given: Mapping[str, Any]) -> FinetuningResult:
    """How fine-tuning changed each layer of ``base`` (the ``finetuning`` command; robustness paper
    Sec. 3.1, 4.1, Fig. 1): CKA, STIR both ways (and its ceiling), optional text-space STIR, and
    per-layer probe accuracy of the pretrained and the fine-tuned encoder on the evaluation split.

    ``base`` is an encoder spec (preset, directory, hub id) or an encoder object; ``finetuned``
    the fine-tuned copy (a spec or an encoder object), or ``None`` to fine-tune ``base`` here on
    the training split (``epochs``, ``max_seconds`` of CPU time, learning rate ``lr``; saved
    under ``data_home()/finetuned`` and reused). ``data`` is a data spec, a
    :class:`~perturblab.data.Dataset` (split 3:1, sampled to ``n_train`` / ``n_eval``) or a
    ready ``(train, eval)`` pair. ``out`` keeps the results store, so calling again recomputes only
    what changed (``None``: a temporary directory); nothing but the store (and the text-STIR
    counterparts cache) is written until you call ``.save(dir)``.

    Example (two encoders of three "layers" counting words, on data of your own)::

        >>> import numpy as np
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.studies.robustness.finetuning import finetuning
        >>> class Counts:
        ...     num_layers = 2
        ...     def __init__(self, name, words):
        ...         self.name, self.words, self.fingerprint = name, words, f"doctest-counts-{'-'.join(words)}"
        ...     def hidden_states(self, texts, pooling="mean"):
        ...         h = np.array([[t.split().count(w) + 0.1 * len(t) for w in self.words] for t in texts], np.float32)
        ...         return [h, h ** 2, 2 * h]
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 8], ["negative", "positive"])
        >>> pre, ft = Counts("pre", ["a", "film", "plot"]), Counts("ft", ["good", "bad", "a"])
        >>> res = finetuning(pre, finetuned=ft, data=data, n_train=30, n_eval=12, k=3, quiet=True)
        >>> [round(v, 2) for v in res.series("probe_acc_ft")]
        [1.0, 1.0, 1.0]
        >>> all(0 <= v <= 1 for v in res.series("cka")), res.finetune["steps"]
        (True, 'given')
    """
    base, finetuned = given["base"], given["finetuned"]
    base_name = model_name(base, "base")
    ft_name = None if finetuned is None else model_name(finetuned, "finetuned")
    data_name, splits = data_splits(given["data"], args.n_train, args.n_eval, args.seed)
    args = replace(args, base=base_name, finetuned=ft_name, data=data_name)
    study = FinetuningStudy(args, pre=None if isinstance(base, str) else base,
                            ft=None if finetuned is None or isinstance(finetuned, str) else finetuned,
                            splits=splits, progress=not args.quiet)
    result = run(study, given["out"], quiet=args.quiet)
    assert isinstance(result, FinetuningResult)
    return result
