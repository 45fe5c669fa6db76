"""The public function of the learnability study, named like its command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...core.entry import run, study_function
from ...errors import InputError
from .config import LearnabilityArgs

if TYPE_CHECKING:  # pragma: no cover
    from .study import LearnabilityResult


@study_function(LearnabilityArgs)
def learnability(args: "LearnabilityArgs", given: Mapping[str, Any]) -> "LearnabilityResult":
    """Perturbation learnability, robustness and post-augmentation gain (learnability paper,
    Tables 2-3; the ``learnability`` command).

    ``models`` are trainable model names (``tfidf-lr``, ``textrnn``, ``minilm-probe``,
    ``hf-finetune``), or names given a ``fit(texts, labels, seed)`` function in ``trainers``;
    ``perturbations`` a list or ``all`` (the paper's eight) / ``robustness`` / ``every``; ``ps`` the
    perturbation probabilities (default: the paper's grid); ``trials`` training seeds;
    ``n_eval`` evaluation examples; ``n_boot`` bootstrap resamples of the Spearman intervals.
    ``workers`` models train at once in threads.
    ``out`` keeps the results store (``None``: a temporary directory). ``seeds`` and ``n_test``
    are the old names of ``trials`` and ``n_eval``.

    Example (a trainer of your own: a bag-of-words logistic regression)::

        >>> import numpy as np, perturblab as pl, pathlib, tempfile
        >>> from perturblab.models.sklearn_backend import SklearnClassifier
        >>> from sklearn.feature_extraction.text import CountVectorizer
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.pipeline import make_pipeline
        >>> def fit(texts, labels, seed):
        ...     pipe = make_pipeline(CountVectorizer(), LogisticRegression()).fit(texts, labels)
        ...     return SklearnClassifier(pipe, labels=["0", "1"])
        >>> rng = np.random.default_rng(0)
        >>> words = "good bad film plot actor scene music story".split()
        >>> lines = ["text,label"] + [" ".join(rng.choice(words, 6)) + f",{i % 2}" for i in range(80)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
        >>> _ = path.write_text("\\n".join(lines) + "\\n")
        >>> res = pl.learnability(["bow"], trainers={"bow": fit}, perturbations="leet_letters", data=str(path),
        ...                       trials=1, n_train=40, n_eval=20, ps=[0.1, 1.0], workers=1, quiet=True)
        >>> sorted({r["metric"] for r in res.rows})[:3]
        ['acc_augmented', 'acc_clean', 'acc_perturbed']
    """
    from .study import LearnabilityStudy

    workers = given["workers"]
    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a positive integer, got {workers!r}")
    return run(LearnabilityStudy(args, trainers=dict(given["trainers"] or {})), given["out"],
               executor=given["executor"], address=args.address, num_cpus=args.num_cpus, workers=workers,
               quiet=args.quiet)
