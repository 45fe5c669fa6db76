"""An offline sentence-pair task built from a packaged corpus: ``next:<corpus>``.

The papers' pair tasks (MNLI, QQP, MRPC, … through :mod:`perturblab.data.glue`) need the
Hugging Face hub. To exercise and demonstrate the pair path offline, :func:`next_sentence_pairs`
derives a coherence task from the documents of a corpus (``conll2010``: CoNLL-2010 Wikipedia
articles): for every two consecutive sentences (s_i, s_i+1) of a document, a seeded coin keeps
the pair as a positive (label ``next``) or replaces s_i+1 by a random sentence of another document
(label ``not_next``). Every sentence position is the first text of one pair only, so a model
cannot score by remembering first sentences across a train/test split (the corpus repeats a
few sentences verbatim: 7 of 2,209 first texts in ``conll2010``).

Limits: the negatives are topical mismatches (another article), so the task is mostly "do these
two sentences share a topic", easier than a real next-sentence task and unlike entailment or
paraphrase; it is a test bed for pair handling and pair perturbations (``--perturb-field``), not a
benchmark. ``conll2010`` gives 2,209 pairs (49 % positive).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .examples import Dataset, Example

LABELS = ["not_next", "next"]


def next_sentence_pairs(corpus: str = "conll2010", seed: int = 0) -> Dataset:
    """The ``next:<corpus>`` pair task (see the module docstring): ``text`` = s_i, ``text_b`` = the
    next sentence of its document or a random sentence of another one; labels ``not_next`` /
    ``next``; ``uid`` = ``<document>:<sentence>`` of s_i. Deterministic for a seed."""
    from .corpus import load_corpus

    docs = [d for d in load_corpus(corpus).documents() if len(d) >= 2]
    if len(docs) < 2:
        raise InputError(f"corpus {corpus!r} has {len(docs)} document(s) of two or more sentences; the "
                         "next-sentence task needs at least 2 (blank lines separate documents in a .txt file)")
    rng = np.random.default_rng(seed)
    rows = []
    for di, doc in enumerate(docs):
        for i in range(len(doc) - 1):
            if rng.random() < 0.5:
                rows.append((doc[i], doc[i + 1], 1, f"{di}:{i}"))
            else:
                dj = int(rng.integers(len(docs) - 1))
                dj += dj >= di  # any document but this one
                rows.append((doc[i], docs[dj][int(rng.integers(len(docs[dj])))], 0, f"{di}:{i}"))
    order = rng.permutation(len(rows))
    examples = [Example(rows[k][0], rows[k][2], text_b=rows[k][1], uid=rows[k][3]) for k in order]
    return Dataset(examples, list(LABELS), f"next:{corpus}")
