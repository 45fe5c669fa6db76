"""A binary sentiment classifier from a word lexicon, and toy sentiment splits with two such
classifiers (a reference and a target) of known answers: the SCoPE study's test data, shared
with the API-classifier, search and quality-flag tests."""

from __future__ import annotations

import re

import numpy as np

WORDS = ["good", "great", "bad", "awful", "movie", "film", "story", "acting", "plot", "music",
         "terrible", "wonderful", "boring", "exciting", "director"]


class LexiconClassifier:
    """Binary sentiment from a word lexicon: p(pos) = sigmoid(bias + sum of word weights).

    Deterministic and cheap, so searches on it have hand-checkable answers.
    """

    def __init__(self, weights: dict[str, float], bias: float = 0.0, name: str = "lexicon"):
        self.weights, self.bias = weights, bias
        self.labels = ["negative", "positive"]
        self.fingerprint = f"{name}-{sorted(weights.items())}-{bias}"
        self.calls = 0
        self.inputs_scored = 0

    def score(self, text: str) -> float:
        if isinstance(text, tuple):
            text = " ".join(text)
        return self.bias + sum(self.weights.get(w.lower(), 0.0) for w in re.findall(r"\w+", text))

    def predict_proba(self, inputs):
        inputs = list(inputs)
        self.calls += 1
        self.inputs_scored += len(inputs)
        s = np.array([self.score(t) for t in inputs], dtype=np.float64)
        p = 1.0 / (1.0 + np.exp(-s))
        return np.stack([1 - p, p], axis=1)


def make_splits(n_train=40, n_test=60, seed=0):
    from perturblab.data import Dataset, Example

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
