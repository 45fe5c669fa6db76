"""The data model: an :class:`Example` has one or two text fields and a label.

A label is a class index (``int``) for classification or a number (``float``) for
regression; a :class:`Dataset` keeps the class names. Pairs (``text_b``) travel through
every layer so that sentence-pair tasks need no special cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from ..errors import InputError


@dataclass(frozen=True)
class Example:
    """One input: ``text`` (and optionally ``text_b`` for pair tasks) and its label."""

    text: str
    label: int | float | None = None
    text_b: str | None = None
    uid: str | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The text fields, in order (one or two)."""
        return (self.text,) if self.text_b is None else (self.text, self.text_b)


@dataclass
class Dataset:
    """A list of :class:`Example` with the names of the classes (empty for regression)."""

    examples: list[Example]
    label_names: list[str] = field(default_factory=list)
    name: str = "dataset"

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[Example]:
        return iter(self.examples)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Dataset(self.examples[i], list(self.label_names), self.name)
        return self.examples[i]

    @property
    def texts(self) -> list[str]:
        return [e.text for e in self.examples]

    @property
    def is_pair(self) -> bool:
        return any(e.text_b is not None for e in self.examples)

    def inputs(self) -> list[str | tuple[str, str]]:
        """The model inputs of the examples: texts, or ``(text, text_b)`` pairs for a pair task."""
        return [e.text if e.text_b is None else (e.text, e.text_b) for e in self.examples]

    @property
    def labels(self) -> np.ndarray:
        if any(e.label is None for e in self.examples):
            raise InputError(f"data set {self.name!r} has unlabelled examples; give a label column")
        dtype = int if self.label_names else float
        return np.asarray([e.label for e in self.examples], dtype=dtype)

    def subset(self, idx: Iterable[int]) -> "Dataset":
        return Dataset([self.examples[i] for i in idx], list(self.label_names), self.name)

    def sample(self, n: int, seed: int) -> "Dataset":
        """``n`` examples drawn without replacement by a seeded generator (all if n >= len),
        in data order; a larger ``n`` keeps every example of a smaller (:func:`nested_draw`)."""
        from .draws import nested_draw

        return self.subset(nested_draw(len(self), n, seed))
