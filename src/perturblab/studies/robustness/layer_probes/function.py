"""The public function of the layer-probe study, named like its command (``layer-probes``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from ....core.entry import run, study_function
from ....data.examples import Dataset
from ....errors import InputError
from .config import LayerProbesArgs
from .result import LayerProbeResult
from .study import LayerProbeStudy


def model_name(model: Any, role: str) -> str:
    """A spec as it is; a model object by its ``name`` (``role`` when it has none). An object
    without a ``fingerprint`` is refused (its results are keyed on it)."""
    if isinstance(model, str):
        return model
    if not isinstance(getattr(model, "fingerprint", None), str):
        raise InputError(f"--{role} is a {type(model).__name__} without a fingerprint; give a model spec (a preset "
                         "name, a directory or a hub id) or an encoder object with a `fingerprint` string")
    return str(getattr(model, "name", "") or role)


def data_splits(data: "str | Dataset | tuple[Dataset, Dataset]", n_train: int, n_eval: int,
                seed: int) -> tuple[str, tuple[Dataset, Dataset] | None]:
    """The data's name, and (train, eval) when ``data`` is given as objects: a pair as it is, one
    :class:`Dataset` split 3:1 and sampled like a data spec (:func:`~..inputs.labelled_split`)."""
    from ...inputs import labelled_split

    if isinstance(data, tuple):
        if len(data) != 2 or not all(isinstance(d, Dataset) for d in data):
            raise InputError("data as a tuple must be (train, eval) Dataset objects; or give a data spec or one "
                             "Dataset (split and sampled by n_train / n_eval)")
        return data[1].name or "data", data
    if isinstance(data, Dataset):
        return data.name or "data", labelled_split(data, n_train, n_eval, seed)
    return str(data), None


@study_function(LayerProbesArgs)
def layer_probes(args: LayerProbesArgs, given: Mapping[str, Any]) -> LayerProbeResult:
    """Which layers each perturbation affects (the ``layer-probes`` command; robustness paper
    Sec. 4.4): a probe per layer trained on clean states, scored on clean and perturbed inputs.

    ``model`` is an encoder spec (preset, directory, hub id) or an encoder object (``hidden_states``,
    ``fingerprint``, ``name``); ``data`` a data spec, a :class:`~perturblab.data.Dataset` (split 3:1
    and sampled to ``n_train`` / ``n_eval``) or a ready ``(train, eval)`` pair. ``out`` keeps the
    results store, so calling again recomputes only what changed (``None``: a temporary
    directory). Nothing but the store is written until you call ``.save(dir)``.

    Example (an encoder of two "layers" counting words, on data of your own)::

        >>> import numpy as np
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.studies.robustness.layer_probes import layer_probes
        >>> class Counts:
        ...     name, fingerprint, num_layers = "counts", "doctest-counts-v1", 1
        ...     def hidden_states(self, texts, pooling="mean"):
        ...         h = np.array([[t.split().count(w) for w in ("good", "bad", "a")] for t in texts], np.float32)
        ...         return [h, 2 * h]
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 8], ["negative", "positive"])
        >>> res = layer_probes(Counts(), perturbations="drop_first", data=data, n_train=30, n_eval=12,
        ...                    top=1, quiet=True)
        >>> [r["value"] for r in res.rows if r["metric"] == "clean_acc"]
        [1.0, 1.0]
        >>> res.summary[0]["perturbation"], len(res.summary[0]["top_layers"])
        ('drop_first', 1)
    """
    model = given["model"]
    name = model_name(model, "model")
    data_name, splits = data_splits(given["data"], args.n_train, args.n_eval, args.seed)
    args = replace(args, model=name, data=data_name)
    study = LayerProbeStudy(args, encoder=None if isinstance(model, str) else model, splits=splits,
                            progress=not args.quiet, perturbation_params=given["perturbation_params"])
    result = run(study, given["out"], quiet=args.quiet)
    assert isinstance(result, LayerProbeResult)
    return result
