"""Toy sentiment splits and two lexicon classifiers (a reference and a target) with known
answers: the SCoPE study's test data, shared with the API-classifier and quality-flag tests."""

from __future__ import annotations

import numpy as np

from conftest import LexiconClassifier
from perturblab.data import Dataset, Example

WORDS = ["good", "great", "bad", "awful", "movie", "film", "story", "acting", "plot", "music",
         "terrible", "wonderful", "boring", "exciting", "director"]


def make_splits(n_train=40, n_test=60, seed=0):
    rng = np.random.default_rng(seed)
    def ex(i):
        words = rng.choice(WORDS, size=6).tolist()
        score = sum({"good": 1, "great": 2, "wonderful": 2, "exciting": 1, "bad": -1,
                     "awful": -2, "terrible": -2, "boring": -1}.get(w, 0) for w in words)
        return Example(text="the " + " ".join(words) + " .", label=int(score > 0), uid=str(i))
    data = [ex(i) for i in range(n_train + n_test)]
    names = ["negative", "positive"]
    return Dataset(data[:n_train], names), Dataset(data[n_train:], names)


def models():
    ref = LexiconClassifier({"good": 1, "great": 2, "wonderful": 2, "exciting": 1, "bad": -1,
                             "awful": -2, "terrible": -2, "boring": -1}, name="ref")
    tgt = LexiconClassifier({"good": 1.5, "great": 1, "wonderful": 3, "bad": -1, "awful": -1,
                             "terrible": -3, "boring": -0.5, "movie": 0.3}, bias=0.2, name="tgt")
    return {"ref": ref, "tgt": tgt}
