"""Content keys: what a stored result depends on, hashed.

A work cell's key is :func:`content_key` of everything its result depends on: the examples it
actually uses (their texts and labels after loading, sampling and splitting), the fingerprint of
every model it calls (weights and configuration, or the content of a file or directory), and the
options that change it. Editing the data, retraining a model in place or passing another model
under the same name therefore gives new keys, and only the cells whose inputs changed are
computed again; names (of models, data sets, options) are never part of a key.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

from .files import json_safe

KEY_LENGTH = 32


def _canonical(value: Any) -> str:
    return json.dumps(json_safe(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=_digest_of)


def _digest_of(value: Any) -> dict[str, str]:
    """A part of a key that JSON cannot write (a path, a set, a compiled pattern, a function): its
    :func:`~.stable_hash.stable_digest`, which depends on its content only, never on where it
    lies in memory; what has no stable content is refused (:class:`~.stable_hash.NoStableHash`)."""
    from .stable_hash import stable_digest

    return {"__digest__": stable_digest(value, f"a part of a content key ({type(value).__name__})")}


def content_key(*parts: Any) -> str:
    """A hex digest (32 characters) of ``parts`` in canonical JSON (dict order does not matter;
    NaN, tuples and numpy values are normalised as :func:`~.files.json_safe` does)."""
    return hashlib.sha256(_canonical(list(parts)).encode("utf-8")).hexdigest()[:KEY_LENGTH]


def example_ids(inputs: Iterable[Any], prefix: str = "") -> list[str]:
    """A stable id per input (a text, or a pair of texts): ``prefix`` and 16 hex digits of its
    :func:`content_key`, with ``#2``, ``#3``, ... on its repeats. Two runs that draw the same
    inputs, in any order or number, give them the same ids, so per-example results of two runs
    are paired by content, never by position.

    >>> example_ids(["a film", "a play", "a film"], prefix="0:")
    ['0:6fe9396b4598fa6b', '0:dade89c31eaecd33', '0:6fe9396b4598fa6b#2']
    """
    seen: dict[str, int] = {}
    out = []
    for x in inputs:
        k = prefix + content_key(x)[:16]
        seen[k] = seen.get(k, 0) + 1
        out.append(k if seen[k] == 1 else f"{k}#{seen[k]}")
    return out


def examples_fingerprint(examples: Iterable[Any]) -> str:
    """Hash of examples as used: each one's text (or text pair) and label, in order."""
    h = hashlib.sha256()
    for ex in examples:
        body = [getattr(ex, "text", ex), getattr(ex, "text_b", None), getattr(ex, "label", None)]
        h.update(_canonical(body).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:KEY_LENGTH]


def model_fingerprint(model: Any) -> str:
    """The model's ``fingerprint`` (it changes whenever the model's outputs could)."""
    fp = getattr(model, "fingerprint", None)
    if not isinstance(fp, str) or not fp:
        from ..errors import InputError

        raise InputError(f"{model!r} has no fingerprint; give it a `fingerprint` string that changes with its "
                         "weights (results are keyed on it)")
    return fp
