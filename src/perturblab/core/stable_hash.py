"""Digests of Python values and callables that are the same in every process.

:func:`stable_digest` hashes what a value *is*, never where it lives: a memory address (the
``repr`` of most objects, of code objects, of closures) never enters a digest, and neither does
anything else that differs from process to process (the iteration order of a set of strings).
It is what a result keyed on a user's function (a trainer, a wrapped classifier) is keyed on:

* a function: its module, name, bytecode (nested functions and comprehensions included), the
  names it reads, its default arguments, the values it closes over, its attributes, and the
  module-level functions, classes, objects of those classes and plain constants of its own module
  that it reads (so editing a helper or a constant next to it changes the digest; other globals
  are known by name only);
* a :func:`functools.partial`: its function, positional and keyword arguments;
* a bound method: its function and the object it is bound to;
* a class: its module, name and the code of its own methods and of its bases';
* an object or function with a non-empty ``fingerprint`` string (a model): its class or name
  and that fingerprint;
* numpy arrays and torch tensors: dtype, shape and bytes; a compiled regular expression: its
  pattern and flags;
* any other object: what pickling it would record (its class and ``__getstate__``/``__dict__``
  state, via ``__reduce_ex__``), recursively.

A value whose content cannot be read that way (a lock, an open file, a generator, a socket) has
no stable digest: :class:`NoStableHash` says which part of the value it was, instead of falling
back to a ``repr`` that would change on every run (and so never resume).
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import types
from typing import Any

from ..errors import InputError

_ATOMS = (type(None), bool, int, float, complex, str, bytes, bytearray)


class NoStableHash(InputError):
    """Part of a value has no content a digest could be stable over (``where`` names it)."""

    def __init__(self, where: str, value: Any, why: str = "") -> None:
        self.where, self.kind = where, type(value).__name__
        super().__init__(f"{where} is a {self.kind}, which has no stable content to hash"
                         + (f" ({why})" if why else ""))


def stable_digest(value: Any, what: str = "the value") -> str:
    """The sha256 hex digest of ``value`` (see the module docstring); raises :class:`NoStableHash`,
    naming the part of ``what`` that has no stable content, when there is one."""
    hasher = _Hasher()
    try:
        hasher.feed(value, what)
    except RecursionError:
        raise NoStableHash(what, value, "it is nested too deeply") from None
    return hasher.h.hexdigest()


def _plain_data(value: Any, depth: int = 0) -> bool:
    """True for module-level constants worth hashing: atoms, numpy values and containers of them."""
    if depth > 50:
        return False
    if isinstance(value, _ATOMS):
        return True
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        return value.dtype != object
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_plain_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_plain_data(k, depth + 1) and _plain_data(v, depth + 1) for k, v in value.items())
    return False


def _code_names(code: types.CodeType) -> list[str]:
    """The global (and attribute) names ``code`` and the code nested in it read."""
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += _code_names(c)
    return names


_IMMUTABLE = (tuple, frozenset, types.CodeType)  # identity shared or not, depending on how they were made


class _Hasher:
    def __init__(self, outer: "_Hasher | None" = None) -> None:
        self.h = hashlib.sha256()
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # every object in ``seen`` stays alive, so no id is reused
        self.outer = outer

    def put(self, tag: str, data: bytes = b"") -> None:
        self.h.update(tag.encode())
        self.h.update(len(data).to_bytes(8, "little"))
        self.h.update(data)

    def sub(self, value: Any, where: str) -> bytes:
        """The digest of ``value`` on its own (elements of a set, whose order is not stable)."""
        other = _Hasher(outer=self)
        other.feed(value, where)
        return other.h.digest()

    def ref(self, value: Any) -> str | None:
        """Where ``value`` was met before (this digest's or an enclosing one's), if it was."""
        level, hasher = 0, self
        while hasher is not None:
            if id(value) in hasher.seen:
                return f"{level}:{hasher.seen[id(value)]}"
            level, hasher = level + 1, hasher.outer
        return None

    def feed(self, value: Any, where: str) -> None:  # noqa: C901 - one case per kind of value
        kind = type(value)
        if kind in _ATOMS:
            data = value.encode("utf-8", "surrogatepass") if kind is str else \
                bytes(value) if kind in (bytes, bytearray) else repr(value).encode()
            self.put(kind.__name__, data)
            return
        if not isinstance(value, _IMMUTABLE):
            seen = self.ref(value)
            if seen is not None:  # a shared or cyclic reference: where it was first met
                self.put("ref", seen.encode())
                return
            self.seen[id(value)] = len(self.seen)
            self.keep.append(value)
        np = sys.modules.get("numpy")
        torch = sys.modules.get("torch")
        if kind in (tuple, list):
            self.put(kind.__name__, str(len(value)).encode())
            for i, v in enumerate(value):
                self.feed(v, f"{where}[{i}]")
        elif kind is dict:
            self.put("dict", str(len(value)).encode())
            for k, v in value.items():
                self.feed(k, f"a key of {where}")
                self.feed(v, f"{where}[{k!r}]")
        elif kind in (set, frozenset):
            self.put(kind.__name__, b"".join(sorted(self.sub(v, f"an element of {where}") for v in value)))
        elif isinstance(value, types.ModuleType):
            self.put("module", value.__name__.encode())
        elif np is not None and isinstance(value, (np.ndarray, np.generic)):
            arr = np.asarray(value)
            self.put("ndarray", f"{arr.dtype.str}{arr.shape}".encode())
            if arr.dtype.hasobject:
                self.feed(arr.tolist(), where)
            else:
                self.put("bytes", np.ascontiguousarray(arr).tobytes())
        elif torch is not None and isinstance(value, torch.Tensor):
            try:
                t = value.detach().to("cpu").contiguous()
                data = t.reshape(-1).view(torch.uint8).numpy().tobytes()
            except Exception as e:  # noqa: BLE001 - sparse, quantised or meta tensors
                raise NoStableHash(where, value, str(e)) from None
            self.put("tensor", f"{t.dtype}{tuple(t.shape)}".encode())
            self.put("bytes", data)
        elif isinstance(value, re.Pattern):  # a compiled regular expression: what it matches
            self.put("pattern", f"{value.flags}".encode())
            self.feed(value.pattern, f"the pattern of {where}")
        elif isinstance(value, types.FunctionType):
            self.feed_function(value, where)
        elif isinstance(value, types.CodeType):
            self.feed_code(value, where)
        elif isinstance(value, functools.partial):
            self.put("partial")
            self.feed(value.func, f"the function of {where}")
            self.feed(value.args, f"the arguments of {where}")
            self.feed(value.keywords, f"the keyword arguments of {where}")
        elif isinstance(value, types.MethodType):
            self.put("method")
            self.feed(value.__func__, where)
            self.feed(value.__self__, f"the object {where} is bound to")
        elif isinstance(value, (types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodWrapperType,
                                types.MethodDescriptorType, types.ClassMethodDescriptorType)):
            self.put("builtin", f"{getattr(value, '__module__', None)}.{value.__qualname__}".encode())
            owner = getattr(value, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.feed(owner, f"the object {where} is bound to")
        elif isinstance(value, type):
            self.feed_class(value, where)
        elif isinstance(value, (staticmethod, classmethod)):
            self.put(kind.__name__)
            self.feed(value.__func__, where)
        elif isinstance(value, property):
            self.put("property")
            for part in (value.fget, value.fset, value.fdel):
                self.feed(part, where)
        else:
            self.feed_object(value, where)

    def feed_code(self, code: types.CodeType, where: str) -> None:
        # what the code does, not where it is written: no file name, no line numbers
        self.put("code", code.co_code)
        self.put("exceptions", getattr(code, "co_exceptiontable", b""))
        self.put("names", "\0".join(code.co_names).encode())
        self.put("vars", "\0".join((*code.co_varnames, "|", *code.co_freevars, "|", *code.co_cellvars)).encode())
        self.put("args", f"{code.co_argcount},{code.co_posonlyargcount},{code.co_kwonlyargcount},"
                         f"{code.co_flags}".encode())
        self.put("consts", str(len(code.co_consts)).encode())
        for c in code.co_consts:
            self.feed(c, f"a constant of {where}")

    def feed_function(self, fn: types.FunctionType, where: str) -> None:
        self.put("function", f"{fn.__module__}.{fn.__qualname__}".encode())
        given = fn.__dict__.get("fingerprint")
        if isinstance(given, str) and given:  # its own word on what it computes
            self.put("fingerprint", given.encode())
            return
        self.feed_code(fn.__code__, where)
        self.feed(fn.__defaults__, f"the default arguments of {where}")
        self.feed(fn.__kwdefaults__, f"the keyword defaults of {where}")
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                self.put("empty cell")
                continue
            self.feed(content, f"the value {name!r} that {fn.__qualname__} closes over")
        if fn.__dict__:  # attributes set on it (what a decorator wraps, what it trains with)
            self.feed(dict(fn.__dict__), f"the attributes of {where}")
        self.feed_globals(fn)

    def feed_globals(self, fn: types.FunctionType) -> None:
        """The functions, classes and plain constants of the function's own module that it reads
        (other values are known by name only: the bytecode holds their names)."""
        env = fn.__globals__
        for name in dict.fromkeys(_code_names(fn.__code__)):
            if name not in env:
                continue
            value = env[name]
            own = (isinstance(value, (types.FunctionType, type)) and value.__module__ == fn.__module__
                   or type(value).__module__ == fn.__module__)  # or an object of a class of its module
            if not own and not _plain_data(value):
                continue
            state, n_seen, n_keep = self.h.copy(), len(self.seen), len(self.keep)
            try:
                self.put("global", name.encode())
                self.feed(value, f"the global {name!r}")
            except (NoStableHash, RecursionError):  # a helper that cannot be hashed: known by name only
                self.h = state
                for key in list(self.seen)[n_seen:]:
                    del self.seen[key]
                del self.keep[n_keep:]

    def feed_class(self, cls: type, where: str) -> None:
        self.put("class", f"{cls.__module__}.{cls.__qualname__}".encode())
        if cls.__module__ == "builtins":
            return
        for base in cls.__mro__[1:]:
            if base.__module__ != "builtins":
                self.feed(base, f"a base class of {where}")
        for name, attr in vars(cls).items():
            if isinstance(attr, (types.FunctionType, staticmethod, classmethod, property)):
                self.put("attr", name.encode())
                self.feed(attr, f"{cls.__qualname__}.{name}")

    def feed_object(self, value: Any, where: str) -> None:
        try:
            fp = getattr(value, "fingerprint", None)
        except Exception:  # noqa: BLE001 - a property that fails: no fingerprint
            fp = None
        if isinstance(fp, str) and fp:  # a model: its fingerprint says what its outputs depend on
            self.feed(type(value), where)
            self.put("fingerprint", fp.encode())
            return
        try:
            reduced = value.__reduce_ex__(4)
        except Exception as e:  # noqa: BLE001 - cannot be pickled: no content to hash
            raise NoStableHash(where, value, str(e)) from None
        if isinstance(reduced, str):  # a module-level singleton known by name
            self.put("global object", f"{getattr(value, '__module__', None)}.{reduced}".encode())
            return
        parts = list(reduced) + [None] * (5 - len(reduced))
        make, args, state, items, pairs = parts[:5]
        self.put("object", str(len(reduced)).encode())
        self.feed(make, f"how {where} is made")
        self.feed(args, f"the arguments {where} is made from")
        self.feed(state, f"the state of {where}")
        self.feed(None if items is None else list(items), f"the items of {where}")
        self.feed(None if pairs is None else list(pairs), f"the items of {where}")
