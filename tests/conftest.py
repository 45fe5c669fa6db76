"""Shared test fixtures: small deterministic models that need no download."""

from __future__ import annotations

import re

import numpy as np
import pytest


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


@pytest.fixture
def lexicon():
    return LexiconClassifier({"good": 2.0, "great": 3.0, "bad": -2.0, "awful": -3.0,
                              "movie": 0.1, "film": 0.5, "flick": -0.4, "picture": 0.2})


FILLER = "film story actor scene plot music light dark city river road dream night day house".split()


def write_marker_csv(path, n: int, seed: int = 0, n_words: int = 6):
    """A labelled CSV (columns label, text): ``n_words`` random filler words and "good" (label 1)
    or "bad" (label 0), shuffled, then "!"; rows alternate 0, 1."""
    import csv

    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for i in range(n):
            words = list(rng.choice(FILLER, size=n_words)) + [("good" if i % 2 else "bad")]
            rng.shuffle(words)
            w.writerow([i % 2, " ".join(words) + "!"])
    return path


@pytest.fixture
def marker_csv():
    """``marker_csv(path, n, seed=0, n_words=6)`` writes a toy labelled CSV (see :func:`write_marker_csv`)."""
    return write_marker_csv
