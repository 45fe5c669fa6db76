"""The registry of named whole-text perturbations (used without search).

Modules that define perturbations register them here with :func:`register_perturbation`;
:mod:`.catalogue` imports every such module, so looking a name up there finds all of them.
"""

from __future__ import annotations

from typing import Callable

from ..registry import Registry
from .transformations import Transformation

PERTURBATIONS: Registry[Transformation] = Registry("perturbation")


def register_perturbation(name: str, *, overwrite: bool = False) -> Callable:
    """Decorator registering a factory ``(**params) -> Transformation`` under ``name``."""
    return PERTURBATIONS.register(name, overwrite=overwrite)
