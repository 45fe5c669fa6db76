"""A toy labelled CSV whose label is marked by one word ("good" or "bad") among random filler
words: the data of the report and SCoPE input tests (the ``marker_csv`` fixture writes it)."""

from __future__ import annotations

import csv

import numpy as np

FILLER = "film story actor scene plot music light dark city river road dream night day house".split()


def write_marker_csv(path, n: int, seed: int = 0, n_words: int = 6):
    """A labelled CSV (columns label, text): ``n_words`` random filler words and "good" (label 1)
    or "bad" (label 0), shuffled, then "!"; rows alternate 0, 1."""
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for i in range(n):
            words = list(rng.choice(FILLER, size=n_words)) + [("good" if i % 2 else "bad")]
            rng.shuffle(words)
            w.writerow([i % 2, " ".join(words) + "!"])
    return path
