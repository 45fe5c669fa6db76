"""Benchmark of the SCoPE search: perturblab's engine against a naive implementation.

Both run the *same* greedy search (identical perturbations are checked) with ``minilm-l6``
as the reference on Rotten-Tomatoes test sentences:

* fast  — perturblab: searches in lock-step, candidates of a round scored in one batched,
          length-sorted call, the original scored once, a content-addressed cache in front.
* naive — as the public SCoPE code does: one forward per candidate, the original re-scored at
          every step, no cache.

Prints seconds and model forward passes per perturbed sample, the speed-up, and the
framework overhead of the fast path over its pure forward time (the same model inputs, in the
same batches, timed without the search). Usage::

    .venv/bin/python benchmarks/scope_search.py [--n 200] [--naive-n 40] [--orders best-swap,saliency]

With several ``--orders`` the fast path runs once per word order on the same sentences and a last
table compares them: seconds and forwards per sample, perturbed share, and the mean final loss
L(m(x), m(x')) of the samples every order perturbed (lower: a more invariant x' was found).

The naive run is slow, so it covers the first ``--naive-n`` sentences; the speed-up is taken
on exactly those sentences (the fast path is timed on them separately as well).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


class Recorder:
    """Counts forwards and records every batch sent to the wrapped classifier."""

    def __init__(self, inner):
        self.inner, self.labels, self.fingerprint = inner, inner.labels, inner.fingerprint
        self.batches: list[list] = []

    def predict_proba(self, inputs):
        inputs = list(inputs)
        self.batches.append(inputs)
        return self.inner.predict_proba(inputs)

    @property
    def forwards(self) -> int:
        return sum(len(b) for b in self.batches)


def problems(texts, cap, seed=0):
    from perturblab.perturb.goals import InvarianceGoal
    from perturblab.perturb.search import SearchProblem

    return [SearchProblem(fields=(t,), transformation=cap.transformation, constraints=cap.constraints,
                          goal=InvarianceGoal("l1"), rng=np.random.default_rng([seed, i]))
            for i, t in enumerate(texts)]


def run_fast(clf, texts, cap, order="best-swap"):
    from perturblab.models.cache import CachedClassifier
    from perturblab.perturb.engine import run_searches
    from perturblab.perturb.search import GreedySearch

    rec = Recorder(clf)
    cached = CachedClassifier(rec)
    probs = problems(texts, cap)
    t0 = time.perf_counter()
    res = run_searches(probs, GreedySearch(order=order), cached, progress=False)
    return time.perf_counter() - t0, rec, res


def run_naive(clf, texts, cap):
    from perturblab.perturb.engine import run_searches_naive
    from perturblab.perturb.search import GreedySearch

    rec = Recorder(clf)
    probs = problems(texts, cap)
    t0 = time.perf_counter()
    res = run_searches_naive(probs, GreedySearch(), rec)
    return time.perf_counter() - t0, rec, res


def pure_forward_time(clf, batches) -> float:
    t0 = time.perf_counter()
    for b in batches:
        clf.predict_proba(b)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--naive-n", type=int, default=40)
    ap.add_argument("--capabilities", default="synonym,typo")
    ap.add_argument("--orders", default="best-swap",
                    help="comma-separated word orders of the greedy search to compare (the first is the one "
                         "timed against the naive search)")
    args = ap.parse_args()

    import torch

    from perturblab.data.loaders import load_dataset, train_test_split
    from perturblab.models.presets import load_classifier
    from perturblab.perturb.capabilities import get_capability
    from perturblab.perturb.engine import attach_pos

    train, test = train_test_split(load_dataset("rotten_tomatoes"), test_size=0.25, seed=0)
    clf = load_classifier("minilm-l6", train, seed=0, data_name="rotten_tomatoes")
    texts = [e.text for e in test.sample(args.n, seed=0)]
    print(f"torch threads: {torch.get_num_threads()}; {len(texts)} sentences "
          f"(naive on the first {args.naive_n})")
    # warm-up: load WordNet, the tagger and the model's kernels outside the timings
    cap0 = get_capability("synonym")
    attach_pos(problems(texts[:2], cap0))
    clf.predict_proba(texts[:64])
    from perturblab.resources.wordnet import synonyms
    synonyms("movie")

    for name in args.capabilities.split(","):
        cap = get_capability(name)
        t_fast, rec, res = run_fast(clf, texts, cap)
        t_forward = pure_forward_time(clf, rec.batches)
        ok = sum(r.ok for r in res)
        sub = texts[: args.naive_n]
        t_fast_sub, rec_sub, res_sub = run_fast(clf, sub, cap)
        t_naive, rec_naive, res_naive = run_naive(clf, sub, cap)
        same = all(a.perturbed == b.perturbed for a, b in zip(res_sub, res_naive))
        n_sub = len(sub)
        print(f"\n== {name}: {ok}/{len(texts)} perturbed")
        print(f"fast : {t_fast / len(texts):.3f} s/sample, {rec.forwards / len(texts):.1f} forwards/sample "
              f"({len(rec.batches)} model calls)")
        print(f"       pure forward time {t_forward / len(texts):.3f} s/sample -> framework overhead "
              f"{(t_fast - t_forward) / t_fast * 100:.1f} %")
        print(f"naive: {t_naive / n_sub:.3f} s/sample, {rec_naive.forwards / n_sub:.1f} forwards/sample "
              f"(first {n_sub}); fast on the same: {t_fast_sub / n_sub:.3f} s/sample, "
              f"{rec_sub.forwards / n_sub:.1f} forwards/sample")
        print(f"speed-up fast vs naive: {t_naive / t_fast_sub:.1f}x; forward passes saved: "
              f"{rec_naive.forwards / max(rec_sub.forwards, 1):.1f}x; identical perturbations: {same}")
        orders = [o.strip() for o in args.orders.split(",") if o.strip()]
        if len(orders) > 1:
            compare_orders(clf, texts, cap, orders, t_fast if orders[0] == "best-swap" else None, rec, res)


def compare_orders(clf, texts, cap, orders, t_first, rec_first, res_first) -> None:
    """Each word order once on ``texts`` (the first order's run is reused when given)."""
    runs = {}
    for k, order in enumerate(orders):
        reuse = k == 0 and t_first is not None
        runs[order] = (t_first, rec_first, res_first) if reuse else run_fast(clf, texts, cap, order)
    both = [i for i in range(len(texts)) if all(runs[o][2][i].ok for o in orders)]
    base_t = runs[orders[0]][0]
    print(f"   word order    s/sample  forwards/sample  time vs {orders[0]}  perturbed  mean loss ({len(both)} "
          f"perturbed by all)  same x' as {orders[0]}")
    for order in orders:
        t, rec, res = runs[order]
        loss = np.mean([res[i].loss for i in both]) if both else float("nan")
        same = sum(a.perturbed == b.perturbed for a, b in zip(res, runs[orders[0]][2]))
        print(f"   {order:<12}{t / len(texts):>10.3f}{rec.forwards / len(texts):>17.1f}{t / base_t:>17.2f}"
              f"{sum(r.ok for r in res):>11}{loss:>26.4f}{same:>16}/{len(texts)}")


if __name__ == "__main__":
    main()
