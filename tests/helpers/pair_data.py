"""Toy text-pair files: a premise/hypothesis classification set and an STS-like numeric one;
shared by the text-pair command-line tests and the executor tests."""

from __future__ import annotations

import csv

import numpy as np

WORDS = ["window", "garden", "kitchen", "yellow", "morning", "river", "basket", "pencil", "summer", "forest"]


def pair_csv(path, n=160):
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["premise", "hypothesis", "gold"])
        for i in range(n):
            w.writerow([" ".join(rng.choice(WORDS, 6)),
                        " ".join([*rng.choice(WORDS, 4), "wonderful" if i % 2 else "terrible"]), i % 2])
    return path


def score_csv(path, n=120):
    """s1, s2, score: score = 1.25 × the number of "bright" words in s2 (0..3), an STS-like numeric
    target a bag-of-words regressor can learn."""
    rng = np.random.default_rng(1)
    bright, other = WORDS[:4], WORDS[4:]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["s1", "s2", "score"])
        for i in range(n):
            k = i % 4
            b = list(rng.choice(bright, k, replace=False)) + list(rng.choice(other, 4 - k, replace=False))
            w.writerow([" ".join(rng.choice(other, 5)), " ".join(rng.permutation(b)), f"{k * 1.25:.2f}"])
    return path
