"""Data files (CSV, TSV, JSONL, JSON, Parquet) and pandas frames -> :class:`Dataset`.

Label rules for classification (also used for Hugging Face data sets):

* ``label_names`` given: labels equal to a name (compared as strings) map to its index;
  otherwise integer labels in ``0..len(label_names)-1`` are kept as indices.
* no ``label_names``: integer labels ``0..k-1`` (every one present) are kept as they are
  (class names ``"0".."k-1"``); other labels (strings, negative integers such as ``-1/1``,
  integers with gaps such as ``1/5``) map to their sorted distinct values (numeric order for
  integers), so ``{1, 5}`` are two classes named ``"1"`` and ``"5"``, never six.
* a missing, empty or ``NaN`` label (any case) is an error naming its rows: it is no class.

Regression labels become floats. Texts are stripped; a text that is missing or empty is an
error naming the first offending rows (1-based data rows, header not counted) unless
``drop_empty=True``. A file with a header but no data rows is an error, and so is a column the
data set uses (text, text b, label, id) whose name the header holds more than once.
"""

from __future__ import annotations

import bz2
import gzip
import json
import logging
import lzma
import re
from pathlib import Path
from typing import Any, Literal, Sequence

from ..errors import InputError
from .examples import Dataset, Example

log = logging.getLogger(__name__)

Task = Literal["classification", "regression"]
TASKS: tuple[str, ...] = ("classification", "regression")
FORMATS: dict[str, str] = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl",
                           ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet",
                           ".pq": "parquet"}
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_INT = re.compile(r"[+-]?\d+")
_SHOW = 10  # offending rows / values named in an error
_MANGLED = re.compile(r"(.+)\.\d+")  # pandas' name for the second, third... column of a repeated name


def infer_format(path: Path, fmt: str | None = None) -> str:
    """The format name of ``path``: ``fmt`` when given, else from the suffix (``.csv.gz`` ok)."""
    names = sorted(set(FORMATS.values()))
    if fmt is not None:
        key = fmt.lower().lstrip(".")
        if key not in names:
            raise InputError(f"unknown data format {fmt!r}; use one of {', '.join(names)}")
        return key
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _OPENERS | {".zip": None, ".zst": None}:
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in FORMATS:
        return FORMATS[suffixes[-1]]
    raise InputError(f"cannot tell the format of {path.name} from its suffix; rename it to end in one of "
                     f"{', '.join(sorted(FORMATS))}")


def _read_json(path: Path, fmt: str, encoding: str) -> list[dict[str, Any]] | dict[str, list]:
    opener = _OPENERS.get(path.suffix.lower(), open)
    with opener(path, "rt", encoding=encoding) as f:
        if fmt == "json":
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise InputError(f"{path.name} is not valid JSON: {e}; fix the file") from e
            if isinstance(data, list) and all(isinstance(r, dict) for r in data):
                return data
            if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
                return data
            raise InputError(f"{path.name} must hold a list of records or an object of "
                             "column lists; write one object per line as JSONL otherwise")
        records = []
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path.name} line {lineno} is not valid JSON: {e.msg} "
                                 f"(column {e.colno}); fix or remove the line") from e
            if not isinstance(record, dict):
                raise InputError(f"{path.name} line {lineno} is a {type(record).__name__}, "
                                 "not a JSON object; write one object per line")
            records.append(record)
        return records


def read_frame(path: Path, fmt: str, encoding: str = "utf-8-sig"):
    """Read ``path`` into a pandas DataFrame; parser failures become :class:`InputError`."""
    import pandas as pd

    try:
        if fmt in ("csv", "tsv"):
            sep = "," if fmt == "csv" else "\t"
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""], encoding=encoding)
            names = [str(c) for c in frame.columns]
            if any((m := _MANGLED.fullmatch(c)) and m.group(1) in names for c in names):
                # pandas renamed a repeated name (text, text -> text, text.1): keep the header as written
                raw = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False,
                                  encoding=encoding)
                frame.attrs["header"] = [str(v) for v in raw.iloc[0].tolist()]
            return frame
        if fmt == "parquet":
            return pd.read_parquet(path)
        return pd.DataFrame(_read_json(path, fmt, encoding))
    except InputError:
        raise
    except (ValueError, OSError) as e:  # pandas/pyarrow parser errors, decoding errors
        hint = (f"save it as UTF-8 text (it was read as {encoding!r})"
                if isinstance(e, UnicodeDecodeError) else "check the file's format and contents")
        raise InputError(f"cannot read {path.name} as {fmt.upper()}: {e}; {hint}") from e


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _rows(indices: Sequence[int]) -> str:
    shown = ", ".join(str(i + 1) for i in indices[:_SHOW])
    return shown + (f", ... ({len(indices)} in all)" if len(indices) > _SHOW else "")


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return int(value.strip()) if _INT.fullmatch(value.strip()) else None
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        return None
    return int(as_float) if as_float.is_integer() else None


def class_labels(values: Sequence[Any], label_names: Sequence[str] | None,
                 where: str) -> tuple[list[int], list[str]]:
    """Class indices and class names for raw label ``values`` (rules in the module doc)."""
    ints = [_as_int(v) for v in values]
    keys = [str(i) if i is not None else str(v).strip() for v, i in zip(values, ints)]
    if label_names is not None:
        names = [str(n) for n in label_names]
        if len(set(names)) != len(names) or not names:
            raise InputError(f"label_names {names} must be non-empty and distinct")
        index = {n: i for i, n in enumerate(names)}
        if all(k in index for k in keys):
            return [index[k] for k in keys], names
        if all(i is not None and 0 <= i < len(names) for i in ints):
            return [int(i) for i in ints], names  # type: ignore[arg-type]
        unknown = sorted({k for k in keys if k not in index})
        raise InputError(f"label value(s) {unknown[:_SHOW]} in {where} are not among the class names "
                         f"{names}; use those names or integer labels 0..{len(names) - 1}")
    if not values:
        raise InputError(f"{where} has no labels; give at least one labelled row")
    if all(i is not None for i in ints):
        if set(ints) == set(range(max(ints) + 1)):  # type: ignore[type-var, operator]
            return [int(i) for i in ints], [str(c) for c in range(max(ints) + 1)]  # type: ignore
        classes: list[Any] = sorted(set(ints))
    else:
        classes = sorted(set(keys))
        ints = keys  # type: ignore[assignment]
    position = {c: i for i, c in enumerate(classes)}
    return [position[v] for v in ints], [str(c) for c in classes]


def from_frame(frame, *, source: str = "data", text_column: str = "text",
               label_column: str | None = "label", text_b_column: str | None = None,
               label_names: Sequence[str] | None = None, task: Task = "classification",
               drop_empty: bool = False, id_column: str | None = None,
               name: str | None = None, text_option: str = "--text-fields") -> Dataset:
    """A :class:`Dataset` from a pandas DataFrame; ``source`` names it in error messages, and
    ``text_option`` the option that named the text column (``--text-column`` or
    ``--text-fields``) in the error of a text column the frame lacks.

    ``label_column=None`` gives unlabelled examples. ``uid`` is the ``id_column`` value or
    the 0-based row position.
    """
    if task not in ("classification", "regression"):
        raise InputError(f"task must be 'classification' or 'regression', not {task!r}")
    columns = [str(c) for c in frame.columns]
    header = [str(c) for c in frame.attrs.get("header") or columns]  # as written (pandas renames repeats)
    for role, col in (("text", text_column), ("text_b", text_b_column),
                      ("label", label_column), ("id", id_column)):
        where = [i + 1 for i, h in enumerate(header) if h == col]
        if len(where) > 1:
            raise InputError(f"{role.replace('_', ' ')} column {col!r} is duplicated in the header of {source} "
                             f"(columns {', '.join(map(str, where[:-1]))} and {where[-1]} of: {', '.join(header)}); "
                             "rename the repeated columns in the file's header line so that each name is used once "
                             "(e.g. text,label)")
    pair = "A,B" if text_option == "--text-fields" else "--text-fields A,B"  # the option the user gave, named
    fix = {"text": f"name the text column with {text_option} A (or {pair} for a text pair)",
           "text_b": "name the two text columns with --text-fields A,B",
           "label": "name the label column with --label-column",
           "id": "name an existing id column"}
    for role, col in (("text", text_column), ("text_b", text_b_column),
                      ("label", label_column), ("id", id_column)):
        if col is not None and col not in columns:
            raise InputError(f"{role.replace('_', ' ')} column {col!r} not in {source}; columns are: "
                             f"{', '.join(columns) or '(none)'}; {fix[role]}")
    if len(frame) == 0:
        raise InputError(f"{source} has no data rows (only a header: {', '.join(columns) or '(none)'}); "
                         "add rows or give another file")
    frame = frame.rename(columns=str)
    text_cols = [c for c in (text_column, text_b_column) if c is not None]
    texts = {c: [None if _missing(v) else (str(v).strip() or None) for v in frame[c].tolist()]
             for c in text_cols}
    bad = [i for i in range(len(frame)) if any(texts[c][i] is None for c in text_cols)]
    keep = list(range(len(frame)))
    if bad:
        what = " or ".join(repr(c) for c in text_cols)
        if not drop_empty:
            raise InputError(f"{len(bad)} row(s) of {source} have an empty {what} (data rows "
                             f"{_rows(bad)}; 1-based, header not counted); fill them in or "
                             "delete those rows")
        dropped = set(bad)
        keep = [i for i in keep if i not in dropped]
        log.debug("%s: dropped %d row(s) with an empty %s", source, len(bad), what)
    labels: list[Any] = [None] * len(keep)
    names: list[str] = [str(n) for n in label_names] if label_names is not None else []
    if label_column is not None:
        raw = frame[label_column].tolist()
        values = [raw[i] for i in keep]
        where = f"label column {label_column!r} of {source}"
        absent = [keep[j] for j, v in enumerate(values)
                  if _missing(v) or (isinstance(v, str) and (not v.strip() or v.strip().lower() == "nan"))]
        if absent:
            raise InputError(f"{len(absent)} row(s) of {source} have no label in column {label_column!r} "
                             f"(data rows {_rows(absent)}); an empty or NaN label is no class: fill them in or delete "
                             "those rows")
        if task == "regression":
            numbers = [_as_float(v) for v in values]
            wrong = [keep[j] for j, x in enumerate(numbers) if x is None]
            if wrong:
                raise InputError(f"{where} has non-numeric value(s) for a regression task (data "
                                 f"rows {_rows(wrong)}); fix them or treat the labels as classes (--task "
                                 "classification)")
            labels, names = numbers, []
        else:
            labels, names = class_labels(values, label_names, where)
    ids = frame[id_column].tolist() if id_column is not None else None
    examples = [Example(text=texts[text_column][i], label=labels[j],  # type: ignore[arg-type]
                        text_b=texts[text_b_column][i] if text_b_column else None,
                        uid=str(ids[i]) if ids is not None else str(i))
                for j, i in enumerate(keep)]
    return Dataset(examples, names, name or source)


def _as_float(value: Any) -> float | None:
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN is not a label


def load_file(path: str | Path, text_column: str = "text", label_column: str | None = "label",
              text_b_column: str | None = None, label_names: Sequence[str] | None = None,
              task: Task = "classification", fmt: str | None = None, *,
              drop_empty: bool = False, id_column: str | None = None,
              encoding: str = "utf-8-sig", name: str | None = None, text_option: str = "--text-fields") -> Dataset:
    """Load a CSV / TSV / JSONL / JSON / Parquet file (format from the suffix or ``fmt``).

    CSV and TSV have a header row and are read as strings (only an empty cell is missing;
    ``"NA"`` stays a text); ``.gz`` / ``.bz2`` / ``.xz`` files are decompressed. JSON holds a
    list of records or an object of column lists; JSONL one object per line. Columns,
    labels and empty texts are handled by :func:`from_frame` (``text_option``: the option its
    errors name for the text column); the data set is named after the file unless ``name`` is
    given.
    """
    path = Path(path).expanduser()
    kind = infer_format(path, fmt)
    if not path.is_file():
        raise InputError(f"data file {str(path)!r} does not exist; check the path")
    frame = read_frame(path, kind, encoding)
    stem = path.name.split(".")[0] or path.name
    return from_frame(frame, source=path.name, text_column=text_column,
                      label_column=label_column, text_b_column=text_b_column,
                      label_names=label_names, task=task, drop_empty=drop_empty,
                      id_column=id_column, name=name or stem, text_option=text_option)
