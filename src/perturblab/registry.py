"""A tiny name -> factory registry used for capabilities, model presets and perturbations."""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from .errors import InputError, UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories. ``@registry.register("name")`` adds one."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Callable[..., T]] = {}
        self._docs: dict[str, str] = {}

    def register(self, name: str, *, overwrite: bool = False, doc: str | None = None):
        """Decorator registering ``factory`` under ``name``."""

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            self.add(name, factory, overwrite=overwrite, doc=doc)
            return factory

        return deco

    def add(self, name: str, factory: Callable[..., T], *, overwrite: bool = False,
            doc: str | None = None) -> None:
        key = name.strip().lower()
        if not key:
            raise InputError(f"a {self.kind} name must not be empty")
        if key in self._items and not overwrite:
            raise InputError(f"{self.kind} {name!r} is already registered; pass overwrite=True to replace it")
        self._items[key] = factory
        self._docs[key] = (doc or (factory.__doc__ or "")).strip().split("\n")[0]

    def remove(self, name: str) -> None:
        """Forget ``name`` (nothing happens when it is not registered)."""
        key = name.strip().lower()
        self._items.pop(key, None)
        self._docs.pop(key, None)

    def get(self, name: str) -> Callable[..., T]:
        key = name.strip().lower()
        if key not in self._items:
            raise UnknownNameError(self.kind, name, list(self._items))
        return self._items[key]

    def create(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)

    def names(self) -> list[str]:
        return sorted(self._items)

    def describe(self) -> dict[str, str]:
        return {k: self._docs[k] for k in self.names()}

    def __contains__(self, name: str) -> bool:
        return name.strip().lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
