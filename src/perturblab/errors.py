"""Typed errors. Every error names the offending input and says what to do about it."""

from __future__ import annotations


class PerturblabError(Exception):
    """Base class of all errors raised on purpose by perturblab."""


class InputError(PerturblabError, ValueError):
    """Bad user input: a wrong argument, an empty text, a malformed data file."""


class CapabilityError(InputError):
    """A model cannot do what was asked: a method its backend cannot provide (an API language model
    asked for full next-token distributions), or a study metric that needs one. The message names
    the model, the missing capability and what to use instead."""


class UnknownNameError(InputError, KeyError):
    """A name (model preset, capability, perturbation, measure) is not registered."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...]):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(
            f"unknown {kind} {name!r}; known {kind}s: {', '.join(self.known) or '(none)'}"
        )

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return self.args[0]


class AssetMissingError(PerturblabError, FileNotFoundError):
    """An offline asset (model package, corpus, WordNet) is not installed."""

    def __init__(self, asset: str, how: str):
        self.asset, self.how = asset, how
        super().__init__(f"offline asset {asset!r} is not installed. {how}")


class AssetInstallError(PerturblabError, RuntimeError):
    """Fetching or unpacking an offline asset failed; the message says which and why."""
