"""The public function of the similarity study, named like its command.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from ...core.entry import run, study_function
from .config import SimilarityArgs

if TYPE_CHECKING:  # pragma: no cover
    from .similarity import SimilarityResult


@study_function(SimilarityArgs)
def similarity(args: "SimilarityArgs", given: Mapping[str, Any]) -> "SimilarityResult":
    """Layer × layer representation similarity of two models on the same inputs (the
    ``similarity`` command): CKA, CCA, PWCCA, Procrustes … for every pair of layers.

    ``a`` and ``b`` are encoder specs (encoder or language-model presets, ``.gguf`` files,
    directories, hub ids) or :class:`~perturblab.models.base.Encoder` objects; ``data`` a data set,
    file or corpus (``text_column`` / ``text_fields`` name a file's text column(s)).

    Example (a tiny encoder against itself: linear CKA 1 on the same layer)::

        >>> import numpy as np, perturblab as pl
        >>> class Words:  # an encoder of its own: two layers from word counts
        ...     fingerprint, num_layers, name = "doctest-words-v3", 1, "words"
        ...     def hidden_states(self, inputs, pooling="mean"):
        ...         x = np.array([[t.count(w) for w in ("a", "e", "o", " ")] for t in inputs], float)
        ...         return [x, np.sqrt(x) + x ** 2]
        >>> texts = [f"text number {i} says {'a' * (i % 5)} and {'o' * (i % 3)}" for i in range(40)]
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
        >>> _ = path.write_text("\\n\\n".join(texts))
        >>> res = pl.similarity(Words(), Words(), data=str(path), n=30, measures="cka", quiet=True)
        >>> [round(r["value"], 6) for r in res.rows if r["layer_a"] == r["layer_b"]]
        [1.0, 1.0]
    """
    from .similarity import SimilarityStudy

    encoders, names = {}, []
    for role, m in (("a", given["a"]), ("b", given["b"])):
        name = m if isinstance(m, str) else str(getattr(m, "name", "") or role)
        if not isinstance(m, str):
            name = name if name not in names else f"{name}-{role}"
            encoders[name] = m
        names.append(name)
    args = replace(args, a=names[0], b=names[1])
    return run(SimilarityStudy(args, encoders=encoders, progress=not args.quiet), given["out"], quiet=args.quiet)
