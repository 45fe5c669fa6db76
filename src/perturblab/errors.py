"""Typed errors and warnings. Every error names the offending input and says what to do about it."""

from __future__ import annotations


class PerturblabError(Exception):
    """Base class of all errors raised on purpose by perturblab."""


class InputError(PerturblabError, ValueError):
    """Bad user input: a wrong argument, an empty text, a malformed data file."""


class PerturblabWarning(UserWarning):
    """Base class of the warnings perturblab gives on purpose: something a caller should know (a
    conflict, an old name, a left-out item). The command line says each as one line,
    ``<label>: <message>`` (:func:`perturblab.core.console.warnings_as_lines`)."""

    #: the word that starts the command line's line
    label = "warning"


def warn(message: str, category: type[Warning]) -> None:
    """:func:`warnings.warn` ``message`` as a ``category``, naming the first caller outside
    perturblab (the user's call) as where it comes from."""
    import sys
    import warnings

    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "perturblab":
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class CapabilityError(InputError):
    """A model cannot do what was asked: a method its backend cannot provide (an API language model
    asked for full next-token distributions), or a study metric that needs one. The message names
    the model, the missing capability and what to use instead."""


#: plurals that do not follow the rules of :func:`plural`
_IRREGULAR = {"corpus": "corpora", "child": "children", "index": "indices"}


def plural(noun: str) -> str:
    """The English plural of ``noun`` (its last word): ``capability`` -> ``capabilities``,
    ``corpus`` -> ``corpora``, ``data set`` -> ``data sets``, ``match`` -> ``matches``."""
    head, sep, last = noun.rpartition(" ")
    low = last.lower()
    if low in _IRREGULAR:
        word = _IRREGULAR[low]
    elif len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        word = last[:-1] + "ies"
    elif low.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    else:
        word = last + "s"
    return head + sep + word


class UnknownNameError(InputError, KeyError):
    """A name (model preset, capability, perturbation, measure) is not registered."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...]):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(
            f"unknown {kind} {name!r}; known {plural(kind)}: {', '.join(self.known) or '(none)'}"
        )

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return self.args[0]


class AssetMissingError(PerturblabError, FileNotFoundError):
    """An offline asset (model package, corpus, WordNet) is not installed."""

    def __init__(self, asset: str, how: str):
        self.asset, self.how = asset, how
        super().__init__(f"offline asset {asset!r} is not installed. {how}")


class AssetLoadError(AssetMissingError):
    """An offline asset is installed but cannot be read: a corrupt or truncated file, or one the
    reading library refuses (nltk >= 3.9 refuses a hard-linked corpus file). The one-line message
    names the asset, where it is, the reason and the fix. A subclass of :class:`AssetMissingError`,
    so code that falls back when an asset is missing does the same when it is unreadable."""

    def __init__(self, asset: str, where: object, reason: BaseException | str, how: str):
        self.asset, self.how, self.where = asset, how, where
        if isinstance(reason, BaseException):
            lines = str(reason).strip().splitlines()
            reason = f"{type(reason).__name__}: {lines[0] if lines else ''}".rstrip(": ")
        self.reason = reason
        super(AssetMissingError, self).__init__(  # skips AssetMissingError's "is not installed" message
            f"offline asset {asset!r} at {where} could not be loaded ({reason}). {how}")


class AssetInstallError(PerturblabError, RuntimeError):
    """Fetching or unpacking an offline asset failed; the message says which and why."""


class ApiError(PerturblabError):
    """A request to a model behind an HTTP API failed for good: a refusal that retrying cannot fix
    (``status`` is its HTTP status), retries exhausted, a whole-request deadline passed on every
    attempt, or an answer larger than the client accepts. The message carries no secret: server
    texts in it are redacted (:func:`perturblab.models.api_client.redact`)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiResponseTooLargeError(ApiError):
    """An API answer exceeded the client's size limit (``max_response_bytes``); it is refused
    after at most that many bytes were read, and not retried (the same request would get the same
    answer)."""
