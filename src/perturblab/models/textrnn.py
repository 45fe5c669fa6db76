"""A small recurrent text classifier trained from scratch (TextRNN, Liu et al. 2016 style).

The non-pretrained model of the learnability study (Zhang et al., Sec. 4.2): words
(``\\w+|[^\\w\\s]``, case kept unless ``lowercase=True``) → 64-d embeddings → one
bidirectional GRU layer of 64 units per direction → max-pool over the real (non-padding) time
steps → linear → softmax. Case is kept by default, as in the paper's TextRNN, whose
learnability of ``random_upper`` (Table 2) shows it sees capitals.

* Vocabulary: the training texts' words seen at least ``min_count`` (2) times, most frequent
  first, at most ``max_vocab`` ids in all; id 0 is padding, id 1 unknown words. Words seen once
  train the unknown-word embedding, so the model meets unknown words before test time (with
  ``min_count=1`` it never does, and misspelt or re-spelt words at test time all fall on an
  untrained vector). A text pair is joined as
  ``text_a + " [SEP] " + text_b``. Texts are cut to ``max_len`` words; an empty text is
  one padding step (a fixed, input-independent prediction).
* Padded batches run through two unidirectional GRUs (the backward one on each text reversed
  within its length), which equals a packed BiGRU, so a text's output does not depend on the
  other texts in its batch. Training batches group texts of similar length (sorted within
  blocks of 20 batches, blocks and batches in seeded random order) so little time goes to padding.
* :func:`train_textrnn` runs Adam on CPU, ``epochs`` passes of shuffled minibatches (stopping
  early after ``max_seconds`` of wall time when given). Weights come from ``torch.manual_seed(seed)``
  inside ``torch.random.fork_rng`` (under a lock, so threads may train at once; training itself
  draws no torch random numbers) and the order from ``numpy.random.default_rng(seed)``, so the
  caller's RNG state is untouched and a seed gives the same model (on the same machine and
  torch build; a ``max_seconds`` stop depends on the clock).
* Training and prediction run on one torch intra-op thread (:func:`one_torch_thread`). With two
  threads about one process in six trained a different model from the same seed (measured on
  2 cores: the same weights within a process, others across processes); with one thread every
  process agrees. The GRU's small matrix products gain little from a second thread, and the
  studies train several models at once in worker threads instead.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from .base import TextInput
from .head import softmax
from .labels import class_indices

_INIT_LOCK = threading.Lock()  # weight initialisation draws from torch's global generator
TOKEN_RE = re.compile(r"\w+|[^\w\s]")
PAD, UNK = 0, 1
PAIR_SEPARATOR = " [SEP] "


def tokenize(text: str, lowercase: bool = False) -> list[str]:
    """Words and single punctuation marks (lower-cased when asked)."""
    return TOKEN_RE.findall(text.lower() if lowercase else text)


def _as_text(x: TextInput, i: int, what: str) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, tuple) and len(x) == 2 and all(isinstance(t, str) for t in x):
        return x[0] + PAIR_SEPARATOR + x[1]
    raise InputError(f"{what}[{i}] is {type(x).__name__}; expected a text or a (text_a, text_b) pair")


def _texts(inputs: Sequence[TextInput], what: str) -> list[str]:
    if isinstance(inputs, str):
        raise InputError(f"{what} must be a list of texts, not a single string; wrap it in a list")
    return [_as_text(x, i, what) for i, x in enumerate(inputs)]


@dataclass(frozen=True)
class TextRNNConfig:
    """Architecture and preprocessing (part of the fingerprint)."""

    embed_dim: int = 64
    hidden: int = 64
    max_len: int = 64
    max_vocab: int = 20000
    min_count: int = 2
    lowercase: bool = False  # case is kept: capitalisation is a signal (and a perturbation) like any other


class TextRNN(nn.Module):
    """Embedding → BiGRU → masked max-pool over time → linear (logits).

    The two directions are two unidirectional GRUs over right-padded batches: the forward GRU
    reads each text left to right (padding comes after its last word, so it never reaches a real
    step), the backward GRU reads each text reversed *within its own length*. The result equals a
    packed bidirectional ``nn.GRU`` with the same weights (a test checks this) without the
    packing overhead, and a text's output does not depend on the other texts in its batch.
    """

    def __init__(self, vocab_size: int, num_classes: int, cfg: TextRNNConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, cfg.embed_dim, padding_idx=PAD)
        self.forward_gru = nn.GRU(cfg.embed_dim, cfg.hidden, batch_first=True)
        self.backward_gru = nn.GRU(cfg.embed_dim, cfg.hidden, batch_first=True)
        self.out = nn.Linear(2 * cfg.hidden, num_classes)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        e = self.embed(ids)
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        real = pos < lengths.unsqueeze(1)
        # index of step t in the text read backwards; padding steps map to themselves
        rev = torch.where(real, lengths.unsqueeze(1) - 1 - pos, pos).unsqueeze(-1)
        h_fwd = self.forward_gru(e)[0]
        h_bwd = self.backward_gru(torch.gather(e, 1, rev.expand_as(e)))[0]
        h_bwd = torch.gather(h_bwd, 1, rev.expand_as(h_bwd))
        h = torch.cat([h_fwd, h_bwd], dim=-1).masked_fill(~real.unsqueeze(-1), float("-inf"))
        return self.out(h.max(dim=1).values)


class TextRNNClassifier:
    """A trained :class:`TextRNN` with its vocabulary as a :class:`~.base.Classifier`.

    ``predict_proba`` accepts empty texts (unlike most backends). ``fingerprint`` hashes the
    weights, vocabulary, labels and config.
    """

    def __init__(self, model: TextRNN, vocab: dict[str, int], labels: Sequence[str], cfg: TextRNNConfig, *,
                 batch_size: int = 256) -> None:
        self.model = model.eval()
        self.vocab, self.config = dict(vocab), cfg
        self.labels: list[str] = [str(x) for x in labels]
        self.batch_size = int(batch_size)
        h = hashlib.sha256(json.dumps([asdict(cfg), self.labels, sorted(self.vocab.items())]).encode())
        for name, t in model.state_dict().items():
            h.update(name.encode())
            h.update(t.detach().cpu().contiguous().numpy().tobytes())
        self.fingerprint: str = "textrnn-" + h.hexdigest()[:16]

    def __repr__(self) -> str:
        return f"TextRNNClassifier(vocab={len(self.vocab)}, labels={self.labels})"

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, cut to ``max_len`` (may be empty)."""
        return encode(self.vocab, texts, self.config.max_len, self.config.lowercase)

    def logits(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float32 logits in input order."""
        ids = self.encode(_texts(inputs, "inputs"))
        out = np.zeros((len(ids), len(self.labels)), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        with torch.inference_mode(), one_torch_thread():
            for s in range(0, len(order), self.batch_size):
                idx = order[s:s + self.batch_size]
                out[idx] = self.model(*_pad([ids[i] for i in idx])).numpy()
        return out

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float64 softmax probabilities in input order."""
        return softmax(self.logits(inputs))


def encode(vocab: dict[str, int], texts: Sequence[str], max_len: int, lowercase: bool = False) -> list[list[int]]:
    """Token ids per text (unknown words -> ``UNK``), cut to ``max_len``."""
    return [[vocab.get(w, UNK) for w in tokenize(t, lowercase)[:max_len]] for t in texts]


def _pad(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids (b, t), lengths (b,)); an empty sequence is one padding step."""
    lengths = [max(1, len(s)) for s in seqs]
    ids = np.full((len(seqs), max(lengths)), PAD, dtype=np.int64)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = s
    return torch.from_numpy(ids), torch.as_tensor(lengths, dtype=torch.int64)


def length_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator,
                   block: int = 20) -> list[np.ndarray]:
    """One epoch of minibatch indices grouping texts of similar length.

    A random permutation is cut into blocks of ``block * batch_size`` texts; each block is sorted
    by length (stable) and cut into batches; the batches of all blocks are then shuffled. Every
    index appears exactly once.
    """
    order = rng.permutation(len(lengths))
    size = block * batch_size
    batches = []
    for b in range(0, len(order), size):
        chunk = sorted(order[b:b + size].tolist(), key=lambda i: lengths[i])
        batches += [np.asarray(chunk[s:s + batch_size]) for s in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def build_vocab(texts: Sequence[str], max_vocab: int, min_count: int = 1, lowercase: bool = False) -> dict[str, int]:
    """Word → id over ``texts``: words seen >= ``min_count`` times, most frequent first (ties
    alphabetical), ids from 2."""
    counts = Counter(w for t in texts for w in tokenize(t, lowercase))
    kept = [w for w in counts if counts[w] >= min_count]
    words = sorted(kept, key=lambda w: (-counts[w], w))[: max(0, max_vocab - 2)]
    return {w: i + 2 for i, w in enumerate(words)}


_THREADS_LOCK = threading.Lock()
_THREADS_USERS = 0
_THREADS_BEFORE = 1


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block with one torch intra-op thread, restoring the count when the last of the
    threads inside such a block leaves it (safe to nest and to use from worker threads)."""
    global _THREADS_USERS, _THREADS_BEFORE
    with _THREADS_LOCK:
        if _THREADS_USERS == 0:
            _THREADS_BEFORE = torch.get_num_threads()
            torch.set_num_threads(1)
        _THREADS_USERS += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_USERS -= 1
            if _THREADS_USERS == 0:
                torch.set_num_threads(_THREADS_BEFORE)


def train_textrnn(texts: Sequence[TextInput], labels: Sequence[int], seed: int, *, epochs: int = 3,
                  batch_size: int = 64, lr: float = 2e-3, max_len: int = 64, max_seconds: float | None = None,
                  max_vocab: int = 20000, min_count: int = 2, lowercase: bool = False, label_names: Sequence[str] | None = None) -> TextRNNClassifier:
    """Train a :class:`TextRNNClassifier` on ``texts`` (or pairs) with class indices ``labels``.

    Cross-entropy, Adam(``lr``), ``epochs`` passes of minibatches of ``batch_size`` in a
    seeded random order; training stops after the step during which ``max_seconds`` ran out.
    Label names default to ``"0"`` .. ``"k-1"``.
    """
    raw = _texts(texts, "texts")
    y, names = class_indices(labels, len(raw), label_names)
    if epochs < 1 or batch_size < 1 or max_len < 1 or max_vocab < 2 or lr <= 0 or min_count < 1:
        raise InputError("need epochs, batch_size, max_len, min_count >= 1, max_vocab >= 2 and lr > 0")
    cfg = TextRNNConfig(max_len=int(max_len), max_vocab=int(max_vocab), min_count=int(min_count),
                        lowercase=bool(lowercase))
    vocab = build_vocab(raw, cfg.max_vocab, cfg.min_count, cfg.lowercase)
    with one_torch_thread():
        model = _train(raw, y, names, vocab, cfg, seed, epochs, batch_size, lr, max_seconds)
    return TextRNNClassifier(model, vocab, names, cfg)


def _train(raw: list, y: np.ndarray, names: list[str], vocab: dict[str, int], cfg: TextRNNConfig, seed: int,
           epochs: int, batch_size: int, lr: float, max_seconds: float | None) -> TextRNN:
    start = time.perf_counter()
    with _INIT_LOCK, torch.random.fork_rng(devices=[]):  # the only use of torch's global RNG
        torch.manual_seed(seed)
        model = TextRNN(len(vocab) + 2, len(names), cfg)
    ids = encode(vocab, raw, cfg.max_len, cfg.lowercase)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    model.train()
    done = False
    for _ in range(epochs):
        for idx in length_batches([len(x) for x in ids], batch_size, rng):
            loss = nn.functional.cross_entropy(model(*_pad([ids[i] for i in idx])), torch.from_numpy(y[idx]))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if max_seconds is not None and time.perf_counter() - start >= max_seconds:
                done = True
                break
        if done:
            break
    return model
