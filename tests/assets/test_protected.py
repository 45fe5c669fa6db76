"""Protected-category word lists: packaged default, lookups, swaps, user overrides, validation."""

from __future__ import annotations

import json

import pytest

from perturblab.errors import InputError, UnknownNameError
from perturblab.resources import protected
from perturblab.resources.protected import ENV_VAR, ProtectedCategories, write_default

DOMAINS = {"gender", "race_ethnicity", "religion", "nationality", "age", "sexual_orientation"}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    return tmp_path / "home"


@pytest.fixture
def lists() -> ProtectedCategories:
    return ProtectedCategories.load()


def small(**domains) -> dict:
    return {"version": 1, "domains": domains}


def test_default_size_and_domains(lists):
    assert DOMAINS <= set(lists.domains)
    assert lists.count() >= 71
    assert all(lists.count(d) >= 2 for d in lists.domains)
    assert "(packaged)" in lists.source
    assert len(lists.words()) == len(set(w.lower() for w in lists.words()))


def test_lookup_case_insensitive(lists):
    assert lists.lookup("women") == ("gender", "woman", "plural")
    assert lists.lookup("WoMeN") == lists.lookup("women")
    assert lists.lookup("Muslim").domain == "religion"
    assert lists.lookup("chinese").number == "invariant"
    assert lists.lookup("table") is None and lists.swaps("table") == []
    assert "Women" in lists and "table" not in lists


def test_swaps_women_are_other_plural_gender_words(lists):
    swaps = lists.swaps("women")
    assert swaps and "women" not in swaps and "woman" not in swaps
    assert {"men", "girls", "mothers"} <= set(swaps)
    for word in swaps:
        hit = lists.lookup(word)
        assert hit.domain == "gender" and hit.category != "woman"
        assert hit.number in ("plural", "invariant")
    assert len(swaps) == len(set(swaps))


def test_swaps_keep_number_and_case(lists):
    singular = lists.swaps("Woman")
    assert "Man" in singular and "Men" not in singular
    assert all(w[0].isupper() for w in singular)
    assert all(w.isupper() for w in lists.swaps("MUSLIMS"))
    assert "Native-American" in lists.swaps("African-American")
    jewish = lists.swaps("jewish")  # invariant: adjective-like forms, never plurals
    assert "christian" in jewish and "christians" not in jewish and "jewish" not in jewish
    assert "american" in lists.swaps("chinese")
    assert all(lists.lookup(w).domain == "nationality" for w in lists.swaps("french"))


def test_categories_and_unknown_domain(lists):
    assert {"man", "woman"} <= set(lists.categories("gender"))
    with pytest.raises(UnknownNameError, match="known protected domains"):
        lists.categories("hair_colour")


def test_user_file_by_path_env_and_data_home(tmp_path, monkeypatch, isolated_home):
    data = small(colour=[{"category": "red", "singular": ["red"], "plural": ["reds"]},
                         {"category": "blue", "singular": ["blue"], "plural": ["blues"]}])
    user = tmp_path / "mine.json"
    user.write_text(json.dumps(data))
    by_path = ProtectedCategories.load(user)
    assert by_path.domains == ["colour"] and by_path.swaps("Reds") == ["Blues"]
    monkeypatch.setenv(ENV_VAR, str(user))
    assert ProtectedCategories.load().source == str(user)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing.json"))
    with pytest.raises(InputError, match=ENV_VAR):
        ProtectedCategories.load()
    monkeypatch.delenv(ENV_VAR)
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / protected.FILENAME).write_text(json.dumps(data))
    assert ProtectedCategories.load().domains == ["colour"]
    with pytest.raises(InputError, match="does not exist"):
        ProtectedCategories.load(tmp_path / "nope.json")


def test_write_default_round_trips(tmp_path):
    path = write_default(tmp_path)
    assert path.name == protected.FILENAME
    copy = ProtectedCategories.load(path)
    assert copy.count() == ProtectedCategories.load().count()
    with pytest.raises(InputError, match="overwrite=True"):
        write_default(path)
    assert write_default(path, overwrite=True) == path


@pytest.mark.parametrize("data, message", [
    (small(g=[{"category": "a", "singular": ["a"], "gender": "f"},
              {"category": "b", "singular": ["b"]}]), r"unknown key\(s\) \['gender'\]"),
    ({"domains": {}, "extra": 1}, r"unknown top-level key\(s\) \['extra'\]"),
    (small(g=[{"category": "a", "singular": ["same"]},
              {"category": "b", "plural": ["Same"]}]), r"'Same' is in both g/a and g/b"),
    (small(g=[{"category": "a", "singular": ["a"]},
              {"category": "b", "singular": ["b"]}],
           h=[{"category": "c", "singular": ["a"]}, {"category": "d", "singular": ["d"]}]),
     r"in both g/a and h/c"),
    (small(g=[{"category": "a", "singular": ["a"]}]), r"domain 'g' has 1 category"),
    (small(g=[{"category": "a", "singular": ["two words"]},
              {"category": "b", "singular": ["b"]}]), r"not a single word"),
    (small(g=[{"category": "a"}, {"category": "b", "singular": ["b"]}]), r"g/a: no words"),
    (small(g=[{"category": "a", "plural": "as"}, {"category": "b", "singular": ["b"]}]),
     r"'plural' must be a list"),
    ([1, 2], r"expected an object with a 'domains' object"),
])
def test_invalid_files(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=message) as err:
        ProtectedCategories.load(path)
    assert "bad.json" in str(err.value)


def test_unparsable_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"domains": ')
    with pytest.raises(InputError, match="cannot read protected-category file .*broken.json"):
        ProtectedCategories.load(path)
