"""What a study's part in a comparison reads of the comparison's data: its column options, and
how many samples the data holds for it (the cap of its size, :attr:`~.part.Part.available`)."""

from __future__ import annotations

from typing import Any

__all__ = ["compare_data", "corpus_columns", "corpus_sentences", "data_columns", "data_examples", "split_sizes"]


# -- the comparison's data, read with its columns ----------------------------------------------------
def data_columns(args: Any, labels: bool = True) -> dict[str, Any]:
    """The column options of the comparison's ``--data`` that were given (``text_fields`` from
    ``--text-fields`` or ``--text-column``, and with ``labels`` ``label_column``), for a study's
    options; none given: an empty dict, so the study keeps its defaults (``text``, ``label``)."""
    from .inputs import text_columns

    out: dict[str, Any] = {}
    fields = text_columns(getattr(args, "text_fields", None), getattr(args, "text_column", None))
    if fields:
        out["text_fields"] = fields
    if labels and getattr(args, "label_column", None):
        out["label_column"] = args.label_column
    return out


def corpus_columns(args: Any) -> dict[str, Any]:
    """``text_column`` of the comparison's ``--corpus`` file when one was given, for a study's options."""
    return {"text_column": args.text_column} if getattr(args, "text_column", None) else {}


def compare_data(args: Any) -> Any:
    """The comparison's ``--data`` as its studies read it (with its column options)."""
    from .inputs import load_study_data

    cols = data_columns(args)
    return load_study_data(args.data, text_fields=cols.get("text_fields", ()), label_column=cols.get("label_column"))


# -- what the data holds ------------------------------------------------------------------------------
def split_sizes(args: Any, test_size: float = 0.25) -> tuple[int, int]:
    """(training, test) examples of the comparison's ``--data`` as the studies split it
    (:func:`~perturblab.data.loaders.train_test_split`), from one reading of the data."""
    from ..data.loaders import train_test_split

    train, test = train_test_split(compare_data(args), test_size=test_size, seed=args.seed)
    return len(train), len(test)


def data_examples(args: Any, test_size: float | None = None) -> tuple[int, str]:
    """(examples, what they are) of the comparison's ``--data``: all of them, or with ``test_size``
    its test split as the studies draw it (:func:`split_sizes`)."""
    if test_size is None:
        return len(compare_data(args)), f"--data {args.data}"
    return split_sizes(args, test_size)[1], f"the test split of --data {args.data}"


def corpus_sentences(args: Any, words: tuple[int, int] | None = None) -> tuple[int, str] | None:
    """(sentences, what they are) of the comparison's ``--corpus`` when it is a text file (with
    ``words``: those of that many words); None for a packaged corpus (thousands of sentences,
    more than any study takes)."""
    from ..data.corpus import CORPORA, load_corpus

    if args.corpus in CORPORA:
        return None
    corpus = load_corpus(args.corpus, **corpus_columns(args))
    if words is not None:
        corpus = corpus.filter(*words)
    return len(corpus.sentences), f"--corpus {args.corpus}" + (f" (sentences of {words[0]} to {words[1]} words)"
                                                                 if words else "")
