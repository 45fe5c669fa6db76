"""Nested draws: a larger sample keeps every item of a smaller one, for every draw a study makes
of examples, sentences, passages or base samples; so a larger ``--n`` or ``--budget`` computes only
the new items."""

from __future__ import annotations

import numpy as np
import pytest

from perturblab.data import Dataset, Example
from perturblab.data.corpus import Corpus
from perturblab.data.draws import nested_draw


@pytest.mark.parametrize("total", [1, 7, 60, 1000, 20_000])
def test_nested_draw_is_sorted_distinct_and_nested(total):
    for seed in (0, 1, [3, 2]):
        previous: set[int] = set()
        for n in sorted({0, 1, 2, total // 7, total // 2, total - 1, total, total + 5}):
            got = nested_draw(total, n, seed)
            assert got == sorted(set(got)) and len(got) == min(n, total)
            assert all(0 <= i < total for i in got)
            assert previous <= set(got), (total, n, seed)
            previous = set(got)
        assert previous == set(range(total))


def test_nested_draw_is_uniform():
    """Each of 20 items is drawn with probability n / total = 5 / 20 = 0.25: over 4,000 seeds its
    count is Binomial(4000, 0.25), s.d. 27.4, so 5 s.d. is 137 (a false alarm about 1 in 10^6 per
    item)."""
    counts = np.zeros(20)
    for seed in range(4000):
        counts[nested_draw(20, 5, seed)] += 1
    assert np.all(np.abs(counts - 1000) < 137), counts


def dataset(n: int) -> Dataset:
    return Dataset([Example(text=f"text number {i}", label=i % 2) for i in range(n)], ["a", "b"], "toy")


def test_dataset_samples_nest_and_keep_data_order():
    ds = dataset(300)
    small, large = ds.sample(20, seed=4), ds.sample(139, seed=4)
    assert len(small) == 20 and len(large) == 139
    assert set(small.texts) <= set(large.texts)
    assert [int(t.split()[-1]) for t in large.texts] == sorted(int(t.split()[-1]) for t in large.texts)
    assert ds.sample(20, seed=5).texts != small.texts  # the seed decides
    assert ds.sample(500, seed=4).texts == ds.texts


def test_corpus_sentences_and_passages_nest():
    sentences = [f"sentence {i} of the corpus ." for i in range(400)]
    corpus = Corpus(sentences, doc_ids=[i // 10 for i in range(400)], name="toy")
    assert set(corpus.sample(30, seed=2)) <= set(corpus.sample(200, seed=2))
    small, large = corpus.sample_passages(15, k=3, seed=2), corpus.sample_passages(120, k=3, seed=2)
    assert len(small) == 15 and set(small) <= set(large)


def test_generation_data_nests(tmp_path):
    from perturblab.data.summaries import load_generation_data

    path = tmp_path / "pairs.csv"
    path.write_text("source,reference\n" + "".join(f"the source text {i},reference {i}\n" for i in range(90)))
    small = load_generation_data(str(path), n=12, seed=1)
    large = load_generation_data(str(path), n=60, seed=1)
    assert len(small) == 12 and len(large) == 60
    assert {e.source for e in small} <= {e.source for e in large}
