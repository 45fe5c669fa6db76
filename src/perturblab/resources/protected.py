"""Protected-category word lists for the Fairness capability.

SCoPE (App. C) swaps words naming protected groups, after the 71 target groups in 6
stereotype domains of Sotnikova et al. (2021). perturblab ships its own lists
(``resources/data/protected_categories.json``): more than 71 categories in the domains
gender, race_ethnicity, religion, nationality, age and sexual_orientation. Each category
lists its surface words by grammatical number::

    {"category": "woman", "singular": ["woman"], "plural": ["women"]}
    {"category": "chinese", "invariant": ["chinese"]}

A swap replaces a word by words of the *other* categories of the *same* domain with the
same number where the lists allow (singular -> singular, else invariant; plural -> plural,
else invariant; invariant -> invariant, else singular).

The lists in use are, first match wins: the ``path`` given to :meth:`ProtectedCategories.load`,
the file named by ``$PERTURBLAB_PROTECTED_CATEGORIES``, ``paths.data_home()/protected_categories.json``,
the packaged default. :func:`write_default` copies the default out for editing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InputError, UnknownNameError

ENV_VAR = "PERTURBLAB_PROTECTED_CATEGORIES"
FILENAME = "protected_categories.json"
NUMBERS: tuple[str, ...] = ("singular", "plural", "invariant")
_PREFERENCE = {"singular": ("singular", "invariant"), "plural": ("plural", "invariant"),
               "invariant": ("invariant", "singular")}
_TOP_KEYS = {"version", "description", "domains"}
_CATEGORY_KEYS = {"category", *NUMBERS}


class ProtectedWord(NamedTuple):
    """Where a word belongs: its domain, its category and its grammatical number."""

    domain: str
    category: str
    number: str


@dataclass(frozen=True)
class Category:
    """One protected category: its name and its words per grammatical number."""

    domain: str
    name: str
    words: dict[str, tuple[str, ...]]

    def all_words(self) -> list[str]:
        return [w for number in NUMBERS for w in self.words.get(number, ())]

    def words_for(self, number: str) -> list[str]:
        """The words to use in place of a word of ``number`` (see the module doc)."""
        for choice in _PREFERENCE[number]:
            if self.words.get(choice):
                return list(self.words[choice])
        return self.all_words()


def _default_text() -> str:
    return resources.files("perturblab.resources").joinpath("data", FILENAME).read_text("utf-8")


def user_path(path: str | Path | None = None) -> Path | None:
    """The user file that overrides the packaged lists, or None to use the default."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise InputError(f"protected-category file {str(p)!r} does not exist; check the path "
                             "or create one with perturblab.resources.protected.write_default")
        return p
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise InputError(f"${ENV_VAR} names {env!r}, which is not a file; fix or unset it")
        return p
    from ..paths import data_home

    p = data_home() / FILENAME
    return p if p.is_file() else None


def write_default(path: str | Path, *, overwrite: bool = False) -> Path:
    """Copy the packaged lists to ``path`` (a file, or a directory to put ``FILENAME`` in).

    Place the edited copy at ``paths.data_home()/protected_categories.json``, name it in
    ``$PERTURBLAB_PROTECTED_CATEGORIES`` or pass it to :meth:`ProtectedCategories.load`.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        target = target / FILENAME
    if target.exists() and not overwrite:
        raise InputError(f"{str(target)!r} exists; pass overwrite=True to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_default_text(), encoding="utf-8")
    return target


def _check_keys(obj: dict, allowed: set[str], what: str) -> None:
    """Raise naming the keys of ``obj`` that are not ``allowed``."""
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise InputError(f"{what} {unknown}; allowed: {', '.join(sorted(allowed))}")


def _parse(data: Any, source: str) -> dict[str, list[Category]]:
    """Validate the JSON structure; every error names ``source`` and the offending part."""
    if not isinstance(data, dict) or not isinstance(data.get("domains"), dict):
        raise InputError(f"{source}: expected an object with a 'domains' object mapping each "
                         "domain to a list of categories")
    _check_keys(data, _TOP_KEYS, f"{source}: unknown top-level key(s)")
    domains: dict[str, list[Category]] = {}
    owner: dict[str, str] = {}
    for domain, entries in data["domains"].items():
        if not isinstance(entries, list):
            raise InputError(f"{source}: domain {domain!r} must be a list of categories")
        if len(entries) < 2:
            raise InputError(f"{source}: domain {domain!r} has {len(entries)} category; a swap "
                             "needs at least 2 categories per domain")
        cats: list[Category] = []
        for k, entry in enumerate(entries):
            where = f"{source}: domain {domain!r}, category #{k + 1}"
            if not isinstance(entry, dict):
                raise InputError(f"{where} must be an object like "
                                 '{"category": "woman", "singular": ["woman"], "plural": ["women"]}')
            _check_keys(entry, _CATEGORY_KEYS, f"{where}: unknown key(s)")
            name = entry.get("category")
            if not isinstance(name, str) or not name.strip():
                raise InputError(f"{where}: 'category' must be a non-empty name")
            if any(c.name == name for c in cats):
                raise InputError(f"{where}: category {name!r} appears twice in the domain")
            where = f"{source}: {domain}/{name}"
            words: dict[str, tuple[str, ...]] = {}
            for number in NUMBERS:
                items = entry.get(number, [])
                if not isinstance(items, list) or not all(isinstance(w, str) for w in items):
                    raise InputError(f"{where}: {number!r} must be a list of words")
                for w in items:
                    if not w or w != w.strip() or any(ch.isspace() for ch in w):
                        raise InputError(f"{where}: {w!r} is not a single word (no spaces)")
                    key = w.lower()
                    if key in owner:
                        raise InputError(f"{source}: word {w!r} is in both {owner[key]} and "
                                         f"{domain}/{name}; a word may belong to one category")
                    owner[key] = f"{domain}/{name}"
                if items:
                    words[number] = tuple(items)
            if not words:
                raise InputError(f"{where}: no words; give at least one of {', '.join(NUMBERS)}")
            cats.append(Category(domain, name, words))
        domains[domain] = cats
    if not domains:
        raise InputError(f"{source}: no domains")
    return domains


def _match_case(template: str, word: str) -> str:
    """``word`` written with the capitalisation pattern of ``template``."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template.islower() or not template[:1].isupper():
        return word.lower()
    if template.istitle():
        return "-".join(part[:1].upper() + part[1:].lower() for part in word.split("-"))
    return word[:1].upper() + word[1:].lower()


class ProtectedCategories:
    """Protected-category word lists: look words up and list their same-domain swaps."""

    def __init__(self, domains: dict[str, list[Category]], source: str = "<lists>"):
        self.source = source
        self._domains = domains
        self._index: dict[str, tuple[Category, str]] = {}
        for cats in domains.values():
            for cat in cats:
                for number, words in cat.words.items():
                    for w in words:
                        self._index[w.lower()] = (cat, number)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "ProtectedCategories":
        """The lists in use: ``path``, ``$PERTURBLAB_PROTECTED_CATEGORIES``, the user file in
        ``paths.data_home()``, or the packaged default (first that is set)."""
        p = user_path(path)
        if p is None:
            return cls.from_dict(json.loads(_default_text()), f"(packaged) {FILENAME}")
        try:
            data = json.loads(p.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"cannot read protected-category file {str(p)!r}: {e}; fix it or "
                             "start again from write_default()") from e
        return cls.from_dict(data, str(p))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> "ProtectedCategories":
        """Validate and build from the JSON structure (see the module doc)."""
        return cls(_parse(data, source), source)

    @property
    def domains(self) -> list[str]:
        """Domain names in file order."""
        return list(self._domains)

    def _domain(self, domain: str) -> list[Category]:
        if domain not in self._domains:
            raise UnknownNameError("protected domain", domain, self.domains)
        return self._domains[domain]

    def categories(self, domain: str) -> list[str]:
        """Category names of ``domain`` in file order."""
        return [c.name for c in self._domain(domain)]

    def words(self, domain: str | None = None) -> list[str]:
        """All surface words, of one domain or of all."""
        doms = [domain] if domain is not None else self.domains
        return [w for d in doms for c in self._domain(d) for w in c.all_words()]

    def count(self, domain: str | None = None) -> int:
        """Number of categories, of one domain or of all."""
        if domain is not None:
            return len(self._domain(domain))
        return sum(len(cats) for cats in self._domains.values())

    def lookup(self, word: str) -> ProtectedWord | None:
        """``(domain, category, number)`` of ``word`` (case-insensitive), or None."""
        hit = self._index.get(word.lower())
        return None if hit is None else ProtectedWord(hit[0].domain, hit[0].name, hit[1])

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word.lower() in self._index

    def swaps(self, word: str) -> list[str]:
        """Words of the other categories of ``word``'s domain, same number where possible,
        written with ``word``'s capitalisation; empty when ``word`` is not listed."""
        hit = self._index.get(word.lower())
        if hit is None:
            return []
        cat, number = hit
        out: list[str] = []
        for other in self._domains[cat.domain]:
            if other.name != cat.name:
                out.extend(_match_case(word, w) for w in other.words_for(number))
        return list(dict.fromkeys(out))

    def __repr__(self) -> str:
        return f"ProtectedCategories({self.count()} categories in {len(self._domains)} domains " \
               f"from {self.source})"
