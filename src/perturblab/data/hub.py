"""Data sets of the Hugging Face hub (``hf:<name>[:<split>]``, and the GLUE tasks through it)."""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import InputError
from .examples import Dataset
from .files import Task, from_frame


def load_hf(name: str, split: str = "train", text_column: str = "text",
            label_column: str | None = "label", text_b_column: str | None = None, *,
            config: str | None = None, label_names: Sequence[str] | None = None,
            task: Task = "classification", drop_empty: bool = False,
            id_column: str | None = None, limit: int | None = None,
            **load_kwargs: Any) -> Dataset:
    """A Hugging Face data set through ``datasets.load_dataset(name, config, split=split)``.

    Needs the optional ``datasets`` package (``pip install perturblab[hf]``) and the hub or
    its local cache. Class names come from the label column's ``ClassLabel`` feature unless
    ``label_names`` is given; columns and labels are checked as in :func:`from_frame`.
    ``limit`` keeps the first ``limit`` rows; ``load_kwargs`` go to ``load_dataset``.
    """
    try:
        import datasets  # optional dependency
    except ImportError as e:
        raise InputError(f"loading the Hugging Face data set {name!r} needs the 'datasets' "
                         "package; pip install perturblab[hf]") from e
    try:
        hf = datasets.load_dataset(name, config, split=split, **load_kwargs)
    except Exception as e:  # network, unknown name / config / split: keep the library's words
        raise InputError(f"cannot load Hugging Face data set {name!r} (config {config!r}, "
                         f"split {split!r}): {e}") from e
    if label_names is None and task == "classification" and label_column:
        feature = (getattr(hf, "features", None) or {}).get(label_column)
        if getattr(feature, "names", None):
            label_names = list(feature.names)
    if limit is not None:
        hf = hf.select(range(min(int(limit), len(hf))))
    frame = hf.to_pandas()
    return from_frame(frame, source=f"hf:{name}:{split}", text_column=text_column,
                      label_column=label_column, text_b_column=text_b_column,
                      label_names=label_names, task=task, drop_empty=drop_empty,
                      id_column=id_column, name=name)
