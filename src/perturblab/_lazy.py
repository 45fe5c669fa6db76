"""Lazy re-exports for package ``__init__`` modules (PEP 562)."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, namespace: dict[str, Any],
                 exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` importing ``package.<exports[name]>`` on first use of
    ``name`` and caching the value in the package's ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def study_exports(package: str, namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` serving the registered studies by the name of their Python
    function (``pl.scope``; the studies of installed packages too), imported at the first use of a
    name and cached in ``namespace``; ``__all__`` lists them."""

    def studies() -> dict[str, Any]:
        return importlib.import_module(f"{package}.studies.registry").function_names()

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return ["__version__", *sorted(studies())]
        study = None if name.startswith("__") else studies().get(name)
        if study is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = study.load_function()
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(studies()))

    return __getattr__, __dir__
