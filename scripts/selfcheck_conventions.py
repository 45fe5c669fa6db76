"""Where the self-supervised evaluation's released code and its paper differ, measured on a corpus.

Prints the figures quoted in docs/selfcheck.md ("Paper text and released code") and in
docs/reproductions.md section 3:

* negation: how many sentences of the corpus (3..64 whitespace words and all of them) each
  rule of :class:`~perturblab.perturb.selfcheck.Negate` negates, how many both negate, how many
  of those get the same text, and why the paper's rule leaves out the sentences only the code's
  rule negates (a negation already present; *are* the only verb of the four);
* word order (with ``--model``): on the study's ``word_order`` examples (seed 0, ``--n``), the
  median JSD of the next-token distributions after x and after x' for three x': x re-joined from
  NLTK word tokens with single spaces and no swap (the released code's re-spacing alone), one
  swap as perturblab makes it (words exchanged in place, spacing and punctuation kept) and one
  swap as the released code makes it (two NLTK tokens exchanged, tokens re-joined with spaces,
  Python ``random.Random(42)``).

    .venv/bin/python scripts/selfcheck_conventions.py --corpus oanc
    .venv/bin/python scripts/selfcheck_conventions.py --corpus oanc --model smollm2-135m --n 200
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from perturblab.data.corpus import load_corpus
from perturblab.perturb.selfcheck import Negate, SwapWords, _is_negation
from perturblab.perturb.text import WORD_RE


def negation_counts(sentences: list[str]) -> dict[str, int]:
    """Sentences each rule negates, both, the same text, and why the paper leaves out the rest."""
    paper, code = Negate(rule="paper"), Negate(rule="byod-code")
    p = [paper.applicable(s) for s in sentences]
    c = [code.applicable(s) for s in sentences]
    both = [s for s, a, b in zip(sentences, p, c) if a and b]
    only_code = [s for s, a, b in zip(sentences, p, c) if b and not a]
    negated = sum(any(_is_negation(m.group()) for m in WORD_RE.finditer(s)) for s in only_code)
    return {"sentences": len(sentences), "paper": sum(p), "byod-code": sum(c), "both": len(both),
            "both, same text": sum(paper(s) == code(s) for s in both),
            "paper only": sum(a and not b for a, b in zip(p, c)), "byod-code only": len(only_code),
            "  of which a negation already present": negated,
            "  of which 'are' the only verb of the four": len(only_code) - negated}


def word_order(model: str, corpus_name: str, n: int) -> None:
    from nltk.tokenize import NLTKWordTokenizer  # word_tokenize without the punkt sentence splitter

    from perturblab.measures.divergence import jsd
    from perturblab.models.resolve import load_model
    from perturblab.studies.selfcheck.config import SelfCheckArgs
    from perturblab.studies.selfcheck.scoring import seeded_rng
    from perturblab.studies.selfcheck.study import Examples

    args = SelfCheckArgs(models=model, corpus=corpus_name, n=n, seed=0)
    xs = Examples(args, load_corpus(corpus_name), None).get("word_order", "swaps=1")
    tok, rnd = NLTKWordTokenizer(), random.Random(42)
    respaced, code = [], []
    for x in xs:
        t = tok.tokenize(x)
        respaced.append(" ".join(t))
        a, b = rnd.sample(range(len(t)), 2)
        t[a], t[b] = t[b], t[a]
        code.append(" ".join(t))
    ours = [SwapWords(1)(x, seeded_rng(0, 3, 1, i)) for i, x in enumerate(xs)]  # the study's own x'
    start = time.time()
    lm = load_model(model, "language_model")

    def next_logp(texts: list[str]) -> np.ndarray:
        return np.concatenate([lm.next_token_logprobs(texts[i:i + 25]) for i in range(0, len(texts), 25)])

    base = next_logp(xs)
    print(f"\nword order, {model}: {len(xs)} {corpus_name} sentences (the study's word_order examples, seed 0); "
          f"{sum(r != x for r, x in zip(respaced, xs))} change when re-spaced")
    for name, texts in (("re-spaced, no swap (released code)", respaced), ("1 swap, perturblab", ours),
                        ("1 swap, released code", code)):
        d = jsd(base, next_logp(texts))
        print(f"  median JSD {name}: {np.median(d):.3f} (mean {np.mean(d):.3f})")
    print(f"  ({time.time() - start:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="oanc")
    ap.add_argument("--model", default=None, help="a language model for the word-order part (e.g. smollm2-135m)")
    ap.add_argument("--n", type=int, default=200, help="word-order examples")
    args = ap.parse_args()
    corpus = load_corpus(args.corpus)
    for what, sentences in (("3..64 words (the study's default)", corpus.filter(3, 64).sentences),
                            ("3 words or more, no upper limit", corpus.sentences)):
        print(f"negation, {args.corpus}, {what}:")
        for k, v in negation_counts(list(sentences)).items():
            print(f"  {k}: {v}")
    if args.model:
        word_order(args.model, args.corpus, args.n)


if __name__ == "__main__":
    main()
