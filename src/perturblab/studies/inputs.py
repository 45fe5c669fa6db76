"""The inputs of the studies: a data set named with its columns (:func:`load_study_data`),
unlabelled samples and labelled train/eval splits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..data.examples import Dataset
from ..errors import InputError
from ..models.base import TextInput

if TYPE_CHECKING:  # pragma: no cover
    from ..data.corpus import Corpus


def sample_size(n: int | None, available: int, what: str = "examples", option: str = "--n",
                takes_all: bool = True) -> int:
    """The number of examples to draw: ``n``, or all ``available`` when ``n`` is None (``--n all``);
    an ``n`` larger than what there is is an error naming the available count (never silently cut).
    ``takes_all``: the option also takes ``all`` (the message offers it)."""
    if n is None:
        return available
    if n > available:
        alt = f" (or {option} all)" if takes_all else ""
        raise InputError(f"{option} {n} asks for more {what} than the {available} there are; use {option} "
                         f"{available}{alt}, or give more data")
    return n


def study_inputs(data: str, n: int, seed: int = 0, *, text_fields: Sequence[str] = ()) -> list[TextInput]:
    """``n`` inputs (seeded sample) of a data set (texts or pairs) or of a corpus (sentences).

    Data-set names, files and ``hf:`` specs go to :func:`load_study_data` (``text_fields`` names
    the text column, or two for pairs; labels are not needed); corpus names (``oanc``,
    ``conll2010``) and ``.txt`` files to :func:`perturblab.data.corpus.load_corpus`.
    """
    from ..data.corpus import CORPORA, load_corpus

    if n < 4:
        raise InputError(f"n must be at least 4 inputs, got {n}")
    if data in CORPORA or str(data).endswith(".txt"):
        corpus = load_corpus(data)
        return list(corpus.sample(min(n, len(corpus)), seed=seed))
    ds = load_study_data(data, text_fields=text_fields, labelled=False)
    return ds.sample(n, seed=seed).inputs()


def text_columns(text_fields: Sequence[str] | str | None, text_column: str | None) -> list[str]:
    """The text column(s) a data file is read with: ``--text-fields`` (one or two names), else
    ``[--text-column]``, else none (the loader's default). The options refuse both at once."""
    from ..core.options import csv_list

    fields = (csv_list(text_fields) if isinstance(text_fields, str) else [str(f) for f in text_fields]) \
        if text_fields else []
    return fields or ([text_column] if text_column else [])


def text_option(text_fields: Sequence[str] | str | None, text_column: str | None) -> str:
    """The option that named the text column (:func:`text_columns`), for an error to name what
    the user typed: ``--text-column`` when only it was given, else ``--text-fields``."""
    return "--text-column" if text_column and not text_fields else "--text-fields"


def load_study_data(data: str, *, text_fields: Sequence[str] = (), label_column: str | None = None,
                    task: str | None = None, labelled: bool = True, text_option: str = "--text-fields") -> Dataset:
    """The data set ``data`` (:func:`perturblab.data.load_dataset`) read with the given columns.

    ``text_fields`` names one text column, or two for a text-pair task (``premise, hypothesis``;
    the CLI's ``--text-fields``); ``label_column`` the label column and ``task`` ``classification``
    or ``regression`` (numeric targets). Unset options keep the loader's own defaults (``text``,
    ``label``; a GLUE task knows its own columns). ``labelled=False``: a study that reads only the
    texts, so a data file is read without its labels (a file whose label column has another name,
    or none, is read all the same). ``text_option``: the option that named the text column
    (:func:`text_option`), which the error of a column the file lacks names.
    """
    from ..data.loaders import DATASETS, load_dataset

    fields = [str(f).strip() for f in text_fields if str(f).strip()]
    if len(fields) > 2 or len(fields) != len(list(text_fields)):
        raise InputError(f"text_fields takes one or two column names (A or A,B), got {list(text_fields)!r}")
    kw: dict[str, str] = {}
    if fields:
        kw["text_column"] = fields[0]
    if len(fields) == 2:
        kw["text_b_column"] = fields[1]
    if label_column:
        kw["label_column"] = label_column
    spec = str(data).strip()
    a_file = spec not in DATASETS and not spec.lower().startswith(("hf:", "glue:", "next:"))
    if not labelled and a_file:
        kw["label_column"] = None  # its texts alone
    if task:
        kw["task"] = task
    if fields and text_option != "--text-fields" and a_file:
        kw["text_option"] = text_option  # its error names the option given
    return load_dataset(data, **kw)


def labelled_split(data: "str | Dataset", n_train: int, n_eval: int, seed: int = 0, *, text_fields: Sequence[str] = (),
                   label_column: str | None = None, task: str | None = None,
                   regression: bool = False) -> tuple[Dataset, Dataset]:
    """A stratified train/eval split of a labelled data set (25 % held out, as the design notes'
    3k/1k split of Rotten Tomatoes), each part then sampled down to ``n_train`` / ``n_eval``
    (seeded; all when fewer). The data options go to :func:`load_study_data`; a regression data
    set (numeric targets, plain seeded split) is accepted only with ``regression=True``. ``data``
    may also be a :class:`~perturblab.data.Dataset` (split the same way; the column options unused)."""
    from ..data.loaders import train_test_split

    if n_train < 4 or n_eval < 4:
        raise InputError(f"n_train and n_eval must be at least 4, got {n_train} and {n_eval}")
    ds = data if isinstance(data, Dataset) else load_study_data(data, text_fields=text_fields,
                                                                label_column=label_column, task=task)
    if not ds.label_names and not regression:
        name = ds.name if isinstance(data, Dataset) else data
        raise InputError(f"data set {name!r} has no class labels; the probes and fine-tuning need a "
                         "classification data set (e.g. rotten_tomatoes)")
    train, test = train_test_split(ds, test_size=0.25, seed=seed)
    return train.sample(n_train, seed=seed), test.sample(n_eval, seed=seed)


def given_splits(data: "Dataset | tuple[Dataset, Dataset] | None", n_train: int, n_eval: int,
                 seed: int) -> tuple[Dataset, Dataset] | None:
    """(train, eval) of a labelled data object given in Python: a pair as it is, one
    :class:`Dataset` split 3:1 and sampled like a data spec (:func:`labelled_split`); None when
    none was given (the study loads its data spec)."""
    if data is None:
        return None
    if isinstance(data, tuple):
        if len(data) != 2 or not all(isinstance(d, Dataset) for d in data):
            raise InputError("data as a tuple must be (train, eval) Dataset objects; or give a data spec or one "
                             "Dataset (split and sampled by n_train / n_eval)")
        return data
    if isinstance(data, Dataset):
        return labelled_split(data, n_train, n_eval, seed)
    raise InputError(f"data: give a data set name, a file, a Dataset or a (train, eval) pair of them, not a "
                     f"{type(data).__name__}")


def search_splits(data: "str | Dataset | tuple[Dataset, Dataset]", *, text_column: str | None,
            text_fields: Sequence[str] | str, label_column: str | None, perturb_field: str, seed: int,
            test_size: float) -> "tuple[Dataset, Dataset]":
    """The (train, test) split of a search study's data: a spec read with its columns, or a
    :class:`Dataset` (split 3:1 as a spec's is, ``test_size`` held out), or a ready
    ``(train, test)`` pair as it is. ``--perturb-field b`` or ``both`` needs pairs."""
    from ..data.loaders import train_test_split

    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(d, Dataset) for d in data):
        ds, splits = data[1], data
    else:
        if isinstance(data, Dataset):
            ds = data
        else:  # --text-fields with --text-column is refused by the options' rules (one_text_option)
            ds = load_study_data(str(data), text_fields=text_columns(text_fields, text_column),
                                 label_column=label_column)
        splits = None
    if perturb_field in ("b", "both") and not ds.is_pair:
        raise InputError(f"--perturb-field {perturb_field} needs the two texts of a pair, but the data have one "
                         "text field; name two columns with --text-fields A,B or use --perturb-field a")
    return splits or train_test_split(ds, test_size=test_size, seed=seed)


def given_corpora(inputs: Any, hint: str = "") -> "dict[str, Corpus]":
    """The corpora a Python call gave as objects (``inputs.data`` by option: ``corpus``,
    ``benign_corpus``); anything else there is an :class:`InputError` naming the option (``hint``
    ends it with what else the study takes)."""
    from ..core.readers import option_name
    from ..data.corpus import Corpus

    for field, value in inputs.data.items():
        if not isinstance(value, Corpus):
            raise InputError(f"{option_name(field)}: give a corpus name, a file or a perturblab.data.corpus.Corpus, "
                             f"not a {type(value).__name__}{hint}")
    return dict(inputs.data)
