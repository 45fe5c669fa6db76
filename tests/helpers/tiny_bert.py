"""Tiny BERT encoders built from a config (no download), word-level BERT tokenizers, and a toy
sentiment data set: shared by the tests of the representation studies on the study core and of
the model backends."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

POS = "good great fun lovely charming superb".split()
NEG = "bad awful boring dull tedious poor".split()
FILL = "the film movie plot actors story was is very and it".split()
WORDS = sorted(set(POS + NEG + FILL))


def word_tokenizer(words):
    """A word-level BERT tokenizer: ids 0 to 4 the special tokens [PAD], [UNK], [CLS], [SEP] and
    [MASK], then ``words`` in their order."""
    import transformers

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    return transformers.BertTokenizer(vocab=vocab)


def tokenizer():
    """A word-level BERT tokenizer over :data:`WORDS`."""
    return word_tokenizer(WORDS)


def bert(seed: int, layers: int = 2, head: bool = False):
    """A random BERT (hidden size 16) with ``layers`` layers, seeded; ``head``: with a 2-class head."""
    import torch
    import transformers

    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=layers,
                                  num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                                  num_labels=2)
    cls = transformers.BertForSequenceClassification if head else transformers.BertModel
    return cls(cfg).eval()


def encoder(seed: int, layers: int = 2, name: str = "tiny"):
    """An :class:`~perturblab.models.hf.HFEncoder` of :func:`bert`."""
    from perturblab.models.hf import HFEncoder

    return HFEncoder(bert(seed, layers), tokenizer(), batch_size=64, name=name)


def save_bert(path: Path, seed: int, layers: int = 2) -> Path:
    """A model directory (with a 2-class head, so that its classifier loads the same every time)."""
    bert(seed, layers, head=True).save_pretrained(path)
    tokenizer().save_pretrained(path)
    return path


def rows(n: int, seed: int = 0) -> list[tuple[int, str]]:
    """``n`` (label, text) pairs: two sentiment words of the label's side among four fillers."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = i % 2
        words = list(rng.choice(POS if y else NEG, size=2)) + list(rng.choice(FILL, size=4))
        rng.shuffle(words)
        out.append((y, " ".join(words)))
    return out


def dataset(n: int, seed: int = 0):
    """:func:`rows` as a :class:`~perturblab.data.Dataset` (labels negative, positive)."""
    from perturblab.data import Dataset, Example

    return Dataset([Example(t, y) for y, t in rows(n, seed)], ["negative", "positive"], name="toy")


def splits(n: int = 160, train: int = 120, seed: int = 0):
    """:func:`dataset` cut into its first ``train`` examples and the rest."""
    ds = dataset(n, seed)
    return ds[:train], ds[train:]


def write_csv(path: Path, n: int, seed: int = 0) -> str:
    """:func:`rows` as a CSV file (columns label, text)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        w.writerows(rows(n, seed))
    return str(path)
