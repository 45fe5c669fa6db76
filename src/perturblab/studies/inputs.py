"""The inputs of the representation studies: unlabelled samples and labelled train/eval splits."""

from __future__ import annotations

from ..data.examples import Dataset
from ..errors import InputError
from ..models.base import TextInput


def study_inputs(data: str, n: int, seed: int = 0) -> list[TextInput]:
    """``n`` inputs (seeded sample) of a data set (texts or pairs) or of a corpus (sentences).

    Data-set names, files and ``hf:`` specs go to :func:`perturblab.data.load_dataset`; corpus
    names (``oanc``, ``conll2010``) and ``.txt`` files to :func:`perturblab.data.corpus.load_corpus`.
    """
    from ..data.corpus import CORPORA, load_corpus
    from ..data.loaders import load_dataset
    from ..models.head import dataset_inputs

    if n < 4:
        raise InputError(f"n must be at least 4 inputs, got {n}")
    if data in CORPORA or str(data).endswith(".txt"):
        corpus = load_corpus(data)
        return list(corpus.sample(min(n, len(corpus)), seed=seed))
    ds = load_dataset(data)
    return dataset_inputs(ds.sample(n, seed=seed))


def labelled_split(data: str, n_train: int, n_eval: int, seed: int = 0) -> tuple[Dataset, Dataset]:
    """A stratified train/eval split of a labelled data set (25 % held out, as the design notes'
    3k/1k split of Rotten Tomatoes), each part then sampled down to ``n_train`` / ``n_eval``
    (seeded; all when fewer)."""
    from ..data.loaders import load_dataset, train_test_split

    if n_train < 4 or n_eval < 4:
        raise InputError(f"n_train and n_eval must be at least 4, got {n_train} and {n_eval}")
    ds = load_dataset(data)
    if not ds.label_names:
        raise InputError(f"data set {data!r} has no class labels; the probes and fine-tuning need a "
                         "classification data set (e.g. rotten_tomatoes)")
    train, test = train_test_split(ds, test_size=0.25, seed=seed)
    return train.sample(n_train, seed=seed), test.sample(n_eval, seed=seed)
