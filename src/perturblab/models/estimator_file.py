"""A file format for fitted scikit-learn models that runs no code when it is read.

A pickle can name any callable, and reading it calls that callable: whoever can write a file
that perturblab reads (a trained head under ``paths.heads_dir()``) could make it run their code.
So :class:`~.sklearn_backend.SklearnClassifier` and :class:`~.regression.SklearnRegressor` are
written as plain data instead:

* one ``.npz`` archive (read with ``numpy.load(..., allow_pickle=False)``, which refuses
  object arrays, the only part of the format that could hold a pickle);
* ``__meta__``: a JSON document with the format name and version, the scikit-learn version, the
  model's kind, and a tree describing the object: ``None``, booleans, numbers, strings, lists,
  tuples, sets, dictionaries, numpy scalar types (``dtype=np.float64``), and estimators;
* one entry per array (``a0``, ``a1``, ...): every ``numpy.ndarray`` and numpy scalar of the tree.

An estimator is stored as its class's dotted name and its ``__getstate__`` dictionary. When it is
read back, the class must be a subclass of ``sklearn.base.BaseEstimator`` defined in a
``sklearn.*`` module (nothing else is imported); it is created with ``cls.__new__`` and its
state given to ``__setstate__``, which is what unpickling it would do, minus any call the file
itself names. A file written by another scikit-learn version is refused (the attributes of a
fitted estimator change between versions; scikit-learn itself warns on such pickles).

Only data, never behaviour, round-trips: an estimator holding a function (a custom
``tokenizer=``, a ``FunctionTransformer``) or an object of another library cannot be written,
and :func:`save_model` says which attribute is in the way.
"""

from __future__ import annotations

import importlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["FORMAT", "FORMAT_VERSION", "load_model", "save_model", "write_npz"]

FORMAT = "perturblab-sklearn"
FORMAT_VERSION = 1
_MODULE = re.compile(r"sklearn(\.[A-Za-z_][A-Za-z0-9_]*)+")
_MAX_DEPTH = 64


#: the modification time written for every member of an archive (the earliest a zip file holds)
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def write_npz(path: str | Path, arrays: dict[str, Any], *, compress: bool = False) -> Path:
    """Write ``arrays`` to ``path`` as an ``.npz`` archive that ``numpy.load(allow_pickle=False)``
    reads, atomically (a temporary file, then a rename) and byte-reproducibly: members in the
    given order, each with a fixed time stamp. ``numpy.savez`` stamps every member with the time
    of writing, so a model trained and saved again would never give the same file twice.

    Raises:
        ValueError: an array holds Python objects (it could only be stored as a pickle).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    tmp = path.with_name(path.name + ".tmp.npz")
    with zipfile.ZipFile(tmp, "w", compression=method, allowZip64=True) as zf:
        for name, value in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME)
            info.compress_type = method
            info.external_attr = 0o600 << 16  # -rw------- as zipfile gives its own members
            zf.writestr(info, buf.getvalue())
    tmp.replace(path)
    return path


class _Unstorable(Exception):
    """An attribute the format cannot hold (becomes an :class:`InputError` naming it)."""


class _Corrupt(Exception):
    """The file's tree is not what :class:`_Writer` writes."""


def _sklearn_version() -> str:
    import sklearn

    return sklearn.__version__


def _base_estimator() -> type:
    from sklearn.base import BaseEstimator

    return BaseEstimator


class _Writer:
    """Turns an object into the JSON tree, collecting its arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def _array(self, a: np.ndarray) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = a
        return name

    def tree(self, obj: Any, where: str, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _Unstorable(f"{where} is nested more than {_MAX_DEPTH} levels deep")
        if obj is None or type(obj) in (bool, str, int, float):
            return obj
        if type(obj) is np.ndarray:
            if obj.dtype.hasobject:
                return {"t": "objarray", "shape": list(obj.shape),
                        "items": [self.tree(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj.ravel())]}
            return {"t": "nd", "a": self._array(obj)}
        if isinstance(obj, np.generic):
            if obj.dtype.hasobject:
                raise _Unstorable(f"{where} is a numpy object scalar")
            return {"t": "npscalar", "a": self._array(np.asarray(obj))}
        if isinstance(obj, np.dtype):
            if obj.hasobject:
                raise _Unstorable(f"{where} is the object dtype")
            return {"t": "dtype", "v": obj.str}
        if isinstance(obj, type) and issubclass(obj, np.generic):
            if obj is np.object_ or np.dtype(obj).hasobject:
                raise _Unstorable(f"{where} is numpy's object type")
            return {"t": "dtype_type", "v": np.dtype(obj).str}
        if type(obj) in (list, tuple, set, frozenset):
            items = list(obj) if type(obj) in (list, tuple) else sorted(obj, key=repr)
            return {"t": type(obj).__name__,
                    "v": [self.tree(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(items)]}
        if isinstance(obj, dict):
            if type(obj) is not dict:
                raise _Unstorable(f"{where} is a {type(obj).__qualname__}, not a plain dict")
            keys = list(obj)
            vals = list(obj.values())
            if keys and all(type(k) is str for k in keys):
                packed = self._packed_values(vals)
                if packed is not None:  # e.g. a vectorizer's vocabulary_: {term: column}
                    return {"t": "strmap", "k": keys, **packed}
            return {"t": "dict", "k": [self.tree(k, f"{where} key", depth + 1) for k in keys],
                    "v": [self.tree(v, f"{where}[{k!r}]", depth + 1) for k, v in zip(keys, vals)]}
        if isinstance(obj, _base_estimator()):
            return self._estimator(obj, where, depth)
        raise _Unstorable(f"{where} is a {type(obj).__module__}.{type(obj).__qualname__}")

    def _packed_values(self, vals: list[Any]) -> dict[str, Any] | None:
        """The values of a str-keyed dict as one array when they are all ints (or all numpy
        scalars of one dtype); ``None`` otherwise."""
        if all(type(v) is int for v in vals):
            try:
                return {"a": self._array(np.asarray(vals, dtype=np.int64)), "py": True}
            except OverflowError:
                return None
        first = vals[0]
        if isinstance(first, np.generic) and not first.dtype.hasobject \
                and all(type(v) is type(first) and v.dtype == first.dtype for v in vals):
            return {"a": self._array(np.asarray(vals, dtype=first.dtype)), "py": False}
        return None

    def _estimator(self, obj: Any, where: str, depth: int) -> dict[str, Any]:
        cls = type(obj)
        name = f"{cls.__module__}.{cls.__qualname__}"
        if not _MODULE.fullmatch(cls.__module__) or "." in cls.__qualname__:
            raise _Unstorable(f"{where} is a {name}; only scikit-learn's own estimators can be stored")
        state = obj.__getstate__()
        if not isinstance(state, dict):
            raise _Unstorable(f"{where} ({name}) has a state that is not a dictionary")
        state = {k: v for k, v in state.items() if k != "_sklearn_version"}
        if not all(type(k) is str for k in state):
            raise _Unstorable(f"{where} ({name}) has non-string attribute names")
        return {"t": "est", "cls": name,
                "state": {k: self.tree(v, f"{where}.{k}", depth + 1) for k, v in state.items()}}


class _Reader:
    """Rebuilds an object from the JSON tree and the arrays; refuses anything else."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays

    def _array(self, name: Any) -> np.ndarray:
        if not isinstance(name, str) or name not in self.arrays:
            raise _Corrupt(f"it names an array {name!r} that is not in the file")
        return self.arrays[name]

    def obj(self, node: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _Corrupt("it is nested too deeply")
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("t"), str):
            raise _Corrupt(f"it holds an untagged value {str(node)[:60]!r}")
        t = node["t"]
        if t == "nd":
            return self._array(node["a"])
        if t == "npscalar":
            a = self._array(node["a"])
            if a.shape != ():
                raise _Corrupt("a numpy scalar entry is not 0-dimensional")
            return a[()]
        if t in ("dtype", "dtype_type"):
            dt = np.dtype(str(node["v"]))
            if dt.hasobject:
                raise _Corrupt("it names the object dtype")
            return dt if t == "dtype" else dt.type
        if t in ("list", "tuple", "set", "frozenset"):
            items = [self.obj(v, depth + 1) for v in node["v"]]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[t](items)
        if t == "objarray":
            items = [self.obj(v, depth + 1) for v in node["items"]]
            out = np.empty(len(items), dtype=object)
            for i, v in enumerate(items):
                out[i] = v
            return out.reshape(tuple(int(s) for s in node["shape"]))
        if t == "strmap":
            keys, vals = node["k"], self._array(node["a"])
            if not all(isinstance(k, str) for k in keys) or vals.shape != (len(keys),):
                raise _Corrupt("a packed dictionary does not match its keys")
            return dict(zip(keys, vals.tolist() if node.get("py") else list(vals)))
        if t == "dict":
            keys = [self.obj(k, depth + 1) for k in node["k"]]
            return dict(zip(keys, (self.obj(v, depth + 1) for v in node["v"]), strict=True))
        if t == "est":
            return self._estimator(node, depth)
        raise _Corrupt(f"it holds an unknown entry type {t!r}")

    def _estimator(self, node: dict[str, Any], depth: int) -> Any:
        name = node.get("cls")
        module, _, qualname = str(name).rpartition(".")
        if not _MODULE.fullmatch(module) or not qualname.isidentifier():
            raise _Corrupt(f"it names {name!r}, which is not a scikit-learn estimator")
        try:
            cls = getattr(importlib.import_module(module), qualname, None)
        except ImportError as e:
            raise _Corrupt(f"it names {name!r}, which this scikit-learn does not have") from e
        if not (isinstance(cls, type) and issubclass(cls, _base_estimator()) and cls.__module__ == module):
            raise _Corrupt(f"it names {name!r}, which is not a scikit-learn estimator")
        state = node.get("state")
        if not isinstance(state, dict):
            raise _Corrupt(f"the state of {name} is not a dictionary")
        obj = cls.__new__(cls)
        obj.__setstate__({**{k: self.obj(v, depth + 1) for k, v in state.items()},
                          "_sklearn_version": _sklearn_version()})
        return obj


def save_model(path: str | Path, kind: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (a dict of estimators and plain values) to ``path`` atomically.

    ``kind`` (e.g. ``"SklearnClassifier"``) is recorded and checked by :func:`load_model`.

    Raises:
        InputError: an attribute of the payload is a function or an object this format cannot
            hold; the message names it.
    """
    path = Path(path)
    writer = _Writer()
    try:
        tree = {k: writer.tree(v, k) for k, v in payload.items()}
    except _Unstorable as e:
        raise InputError(f"cannot save {kind} to {path}: {e}. The saved format holds scikit-learn "
                         "estimators with numbers, strings, arrays and containers of them (no functions, "
                         "so that loading it runs no code); use built-in options instead of custom ones") from e
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "sklearn": _sklearn_version(), "kind": kind, "tree": tree}
    return write_npz(path, {"__meta__": np.asarray(json.dumps(meta)), **writer.arrays}, compress=True)


def load_model(path: str | Path, kind: str) -> dict[str, Any]:
    """The payload that :func:`save_model` wrote to ``path`` for ``kind``.

    Reading runs no code from the file: arrays are read with ``allow_pickle=False`` and only
    scikit-learn estimator classes are looked up.

    Raises:
        InputError: the file is missing, not in this format (an older pickled model included),
            corrupt, of another kind, or written by another scikit-learn version; the message
            names the file and says to delete it and retrain (or save the model again).
    """
    path = Path(path)
    fix = "delete it and retrain, or save the model again with this version of perturblab"
    try:
        with open(path, "rb") as fh:
            is_pickle = fh.read(1) == b"\x80"  # the opcode every pickle of protocol >= 2 starts with
        if not is_pickle:
            loaded = np.load(path, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise ValueError("a single array, not an .npz archive")
            with loaded as z:
                arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise InputError(f"{path} is not a saved {kind} ({e}); {fix}") from e
    if is_pickle:
        raise InputError(f"{path} is a pickle, which perturblab does not load (unpickling runs code that the "
                         f"file names); {fix}")
    try:
        meta = json.loads(str(arrays.pop("__meta__")[()]))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise _Corrupt("its format is not " + FORMAT)
        if meta.get("version") != FORMAT_VERSION:
            raise _Corrupt(f"it is format version {meta.get('version')!r}, this perturblab reads {FORMAT_VERSION}")
        if meta.get("kind") != kind:
            raise _Corrupt(f"it holds a {meta.get('kind')!r}")
        if meta.get("sklearn") != _sklearn_version():
            raise _Corrupt(f"it was written with scikit-learn {meta.get('sklearn')}, this is {_sklearn_version()}")
        tree = meta["tree"]
        if not isinstance(tree, dict):
            raise _Corrupt("its tree is not a dictionary")
        reader = _Reader(arrays)
        return {str(k): reader.obj(v) for k, v in tree.items()}
    except (_Corrupt, KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"{path} is not a saved {kind}: {e}; {fix}") from e
