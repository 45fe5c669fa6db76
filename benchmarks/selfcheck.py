"""Benchmark of the self-supervised LM evaluation: perturblab's study against a naive loop.

Both paths score the *same* examples (built by :class:`~perturblab.studies.selfcheck.study.Examples`
and the transformations of :mod:`perturblab.perturb.selfcheck`) with ``smollm2-135m`` on the
packaged ``conll2010`` corpus, headline settings only (negation ``not`` and, unless
``--no-benign``, ``benign`` on ``oanc``; toxicity ``k=2``; long_range ``swapped=2``;
word_order ``swaps=1``; tokenization ``stride=5``):

* fast  — perturblab: ``SelfCheckStudy`` with ``no_ablations`` in a temporary directory
          (chunks, batched length-sorted right-padded forwards with the output layer only at
          the positions needed,
          batched left-padded generation, a memo of original-text results shared by the
          metrics, the results store and output files). Every ``Scorer`` call is timed.
* naive — written here, independent of perturblab's LM code: one unpadded sequence per
          ``model(input_ids=...)`` call, full logits, ``torch.log_softmax`` in float64, the
          formulas written out again, greedy ``model.generate`` one prompt at a time, the
          original text re-scored for every metric, no batching, no memo.

Prints per unit the seconds of both paths, the speed ratio, the max |Δ| of the per-example
values (and extras) and of every aggregate score. Usage::

    .venv/bin/python benchmarks/selfcheck.py [--n 200] [--naive-n 200] [--max-new-tokens 32]
                                             [--metrics negation,toxicity,...] [--no-benign]

With ``--naive-n k < n`` the naive loop covers the first k examples of each unit; its time
is extrapolated per example to the fast path's example count (marked ``*``), and values
and scores are compared on those k examples (the fast scores recomputed on them).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np

MODEL = "smollm2-135m"
HEADLINE = ["negation", "toxicity", "long_range", "word_order", "tokenization"]


# ------------------------------------------------------------------ the naive reference
class Naive:
    """One example at a time with the raw transformers model and tokenizer."""

    def __init__(self, model, tokenizer, cfg, profane: np.ndarray) -> None:
        import torch

        self.torch, self.model, self.tok, self.cfg = torch, model, tokenizer, cfg
        self.profane = torch.as_tensor(profane, dtype=torch.long)

    def ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def logp(self, ids: list[int]):
        """(len, V) float64 log-softmax of the full logits of one unpadded sequence."""
        torch = self.torch
        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids], dtype=torch.long)).logits[0]
        return torch.log_softmax(logits.double(), dim=-1)

    def logppl(self, text: str) -> float:
        ids = self.ids(text)  # SmolLM2 adds no start token: tokens 2..n are scored
        lp = self.logp(ids)[:-1].gather(1, self.torch.tensor(ids[1:])[:, None])[:, 0]
        return float(-lp.mean())

    def next_logp(self, ids: list[int]):
        return self.logp(ids)[-1]

    def jsd(self, lp, lq):
        """JSD in nats over the last axis, 0 · log 0 = 0."""
        torch = self.torch
        p, q = lp.exp(), lq.exp()
        lm = torch.log(0.5 * (p + q))
        kl_p = torch.where(p > 0, p * (lp - lm), torch.zeros_like(p)).sum(-1)
        kl_q = torch.where(q > 0, q * (lq - lm), torch.zeros_like(q)).sum(-1)
        return 0.5 * kl_p + 0.5 * kl_q

    def generate(self, prompt: str) -> str:
        torch = self.torch
        ids = torch.tensor([self.ids(prompt)], dtype=torch.long)
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      max_new_tokens=self.cfg.max_new_tokens,
                                      pad_token_id=self.tok.eos_token_id)
        new = out[0, ids.shape[1]:].tolist()
        if self.tok.eos_token_id in new:
            new = new[: new.index(self.tok.eos_token_id)]
        return self.tok.decode(new, skip_special_tokens=True)

    # one method per metric: example index, example -> row like the study's
    def negation(self, setting, i, x):
        from perturblab.perturb.selfcheck import Negate

        a, b = self.logppl(x), self.logppl(Negate()(x))
        return {"value": b - a, "logppl_x": a, "logppl_perturbed": b}

    def toxicity(self, setting, i, x):
        from perturblab.perturb.selfcheck import AppendTriggers
        from perturblab.resources.profanity import contains_profanity

        k = int(setting.split("=")[1])
        xp = AppendTriggers(k)(x) if k > 0 else x
        mx = float(self.next_logp(self.ids(x))[self.profane].exp().sum())
        mp = float(self.next_logp(self.ids(xp))[self.profane].exp().sum())
        g = self.generate(xp)
        return {"value": float(contains_profanity(g)), "prompt_toxic": bool(contains_profanity(x)),
                "generation": g, "mass_x": mx, "mass_perturbed": mp}

    def long_range(self, setting, i, example):
        from perturblab.perturb.selfcheck import ReplaceContext

        passage, donor = example
        spans = []
        for version in (passage, ReplaceContext(int(setting.split("=")[1])).replace(passage, donor)):
            ids = self.ids(version[0]) + [t for s in version[1:] for t in self.ids(" " + s)]
            start = len(ids) - len(self.ids(" " + version[-1]))
            spans.append(self.logp(ids)[start:])  # distributions after each last-sentence token
        d = self.jsd(spans[0], spans[1])
        return {"value": float(d.mean()), "jsd_positions": d.tolist()}

    def word_order(self, setting, i, x):
        from perturblab.perturb.selfcheck import SwapWords

        k = int(setting.split("=")[1])
        xp = SwapWords(k)(x, np.random.default_rng([self.cfg.seed, 3, k, i]))
        return {"value": float(self.jsd(self.next_logp(self.ids(x)), self.next_logp(self.ids(xp))))}

    def tokenization(self, setting, i, x):
        from perturblab.perturb.selfcheck import chop_token_ids

        chopped = chop_token_ids(x, self.tok, int(setting.split("=")[1]))
        return {"value": float(self.jsd(self.next_logp(self.ids(x)), self.next_logp(chopped)))}


def naive_scores(metric, setting, rows, benign, seed):
    """The paper's aggregates, written out again (numpy) from naive rows: {score: value}."""
    v = np.array([r["value"] for r in rows], dtype=np.float64)
    if metric == "negation" and setting == "benign":
        return {"negation_benign_abs": np.abs(v).mean()}
    if metric == "negation":
        out = {"negation_sensitivity": v.mean(), "negation_ppl_drops": 100.0 * (v < 0).mean()}
        if benign:
            out["negation_normalised"] = v.mean() - np.abs([r["value"] for r in benign]).mean()
        return out
    if metric == "toxicity":
        out = {"toxicity_generation": (v - np.array([r["prompt_toxic"] for r in rows], float)).mean()}
        if setting != "k=0":
            out["toxicity_next_token"] = np.mean([r["mass_perturbed"] - r["mass_x"] for r in rows])
        return out
    if metric == "long_range":
        return {"long_range": v.mean()}
    if metric == "word_order":
        return {"word_order": float(np.median(v))}
    return {"tokenization": v.mean()}


# ------------------------------------------------------------------ the two runs
def run_fast(args, lm, corpus, benign, out_dir):
    """The study run and its files saved, with every Scorer call timed:
    (study, wall s, {unit: s}, {unit: {id: row}})."""
    import perturblab.studies.selfcheck.study as sc
    from perturblab.core.entry import run

    times: dict[tuple[str, str], float] = {}

    class TimedScorer(sc.Scorer):
        def __call__(self, metric, setting, items):
            t0 = time.perf_counter()
            out = super().__call__(metric, setting, items)
            times[(metric, setting)] = times.get((metric, setting), 0.0) + time.perf_counter() - t0
            return out

    study = sc.SelfCheckStudy(args, models={MODEL: lm}, corpus=corpus, benign=benign, progress=False)
    original, sc.Scorer = sc.Scorer, TimedScorer
    try:
        t0 = time.perf_counter()
        result = run(study, out_dir, quiet=True)
        result.save(out_dir)
        wall = time.perf_counter() - t0
    finally:
        sc.Scorer = original
    rows = {(m, s): {r["example_id"]: r for r in result.examples
                     if (r["model"], r["metric"], r["setting"]) == (MODEL, m, s)} for m, s, _ in study.units()}
    return study, wall, times, rows


def run_naive(naive, examples, units, k):
    """Every unit's first k examples one at a time: ({unit: s}, {unit: {id: row}})."""
    times, rows = {}, {}
    for metric, setting in units:
        t0 = time.perf_counter()
        rows[(metric, setting)] = {i: getattr(naive, metric)(setting, i, ex)
                                   for i, ex in enumerate(examples.get(metric, setting)[:k])}
        times[(metric, setting)] = time.perf_counter() - t0
    return times, rows


def max_abs(a, b) -> float:
    d = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    return float(d.max()) if d.size else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="examples per unit")
    ap.add_argument("--naive-n", type=int, default=None, help="naive examples per unit (default: --n)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the selfcheck command's")
    ap.add_argument("--metrics", default=",".join(HEADLINE))
    ap.add_argument("--no-benign", action="store_true", help="leave out the benign negation unit")
    args = ap.parse_args()
    t_script = time.perf_counter()

    import torch

    from perturblab.data.corpus import load_corpus
    from perturblab.models.lm_presets import load_language_model
    from perturblab.resources.profanity import contains_profanity
    from perturblab.studies.selfcheck.config import ABLATIONS, SelfCheckArgs
    from perturblab.studies.selfcheck.study import profane_token_ids
    from perturblab.studies.selfcheck.result import _scores

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    bad = [m for m in metrics if m not in HEADLINE]
    if bad:
        ap.error(f"unknown metric(s) {bad}; choose from {', '.join(HEADLINE)}")
    cfg = SelfCheckArgs(models=MODEL, corpus="conll2010", n=args.n, metrics=",".join(metrics), no_ablations=True,
                        benign_corpus="none" if args.no_benign else "oanc")
    if args.max_new_tokens is not None:
        cfg.max_new_tokens = args.max_new_tokens
    cfg.check()
    k_naive = args.n if args.naive_n is None else min(args.naive_n, args.n)
    load0 = os.getloadavg()

    t0 = time.perf_counter()
    lm = load_language_model(MODEL)
    corpus = load_corpus(cfg.corpus)
    benign = load_corpus(cfg.benign_name()) if cfg.benign_name() and "negation" in metrics else None
    print(f"model {MODEL} and corpora loaded in {time.perf_counter() - t0:.1f} s; torch threads: "
          f"{torch.get_num_threads()}; cpu cores: {os.cpu_count()}; load average at start "
          f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print(f"n = {cfg.n} per unit, naive on the first {k_naive}; max_new_tokens = {cfg.max_new_tokens}")

    # warm-up outside every timing: kernels, one generation, the profanity regex
    probe = lm.encode("The warm-up sentence was short.")
    with torch.inference_mode():
        lm.model(input_ids=torch.tensor([probe]))
        lm.model.generate(input_ids=torch.tensor([probe]), attention_mask=torch.ones(1, len(probe), dtype=torch.long),
                          max_new_tokens=4, do_sample=False, pad_token_id=lm.tokenizer.eos_token_id)
    lm.next_token_logprobs(["The warm-up sentence was short.", "Another one."])
    contains_profanity("warm up")

    with tempfile.TemporaryDirectory(prefix="selfcheck-bench-") as out_dir:
        study, t_fast, fast_t, fast_rows = run_fast(cfg, lm, corpus, benign, out_dir)
    units = [(m, s) for m, s, _ in study.units()]

    t0 = time.perf_counter()
    naive = Naive(lm.model, lm.tokenizer, cfg, profane_token_ids(lm))
    t_profane = time.perf_counter() - t0
    naive_t, naive_rows = run_naive(naive, study.examples, units, k_naive)
    toxicity_main = ("toxicity", f"k={ABLATIONS['toxicity'][2]}")
    if toxicity_main in naive_t:
        naive_t[toxicity_main] += t_profane  # its token set is part of the metric

    # ---------------------------------------------------------------- per unit: time and values
    print("\n" + "unit".ljust(20) + "n fast".rjust(7) + "fast s".rjust(9) + "n naive".rjust(8)
          + "naive s".rjust(10) + "naive s (n fast)".rjust(17) + "ratio".rjust(8)
          + "max|Δ| value".rjust(14) + "  other differences")
    tot_fast = tot_naive = 0.0
    extrapolated = False
    for unit in units:
        f, nv = fast_rows[unit], naive_rows[unit]
        ids = sorted(set(f) & set(nv))
        per = naive_t[unit] / max(len(nv), 1)
        scaled = per * len(f)
        extrapolated |= len(nv) < len(f)
        tot_fast, tot_naive = tot_fast + fast_t.get(unit, 0.0), tot_naive + scaled
        other = []
        if len(ids) != len(nv):
            other.append(f"{len(nv) - len(ids)} naive examples not scored by the study (context window)")
        if unit[0] == "negation":
            other.append(f"logppl_x {max_abs([f[i]['extra']['logppl_x'] for i in ids], [nv[i]['logppl_x'] for i in ids]):.1e}")
        if unit[0] == "toxicity":
            gd = sum(f[i]["extra"]["generation"] != nv[i]["generation"] for i in ids)
            other.append(f"generations differ {gd}/{len(ids)}")
            for key in ("mass_x", "mass_perturbed"):
                other.append(f"{key} {max_abs([f[i]['extra'][key] for i in ids], [nv[i][key] for i in ids]):.1e}")
            pt = sum(f[i]["extra"]["prompt_toxic"] != nv[i]["prompt_toxic"] for i in ids)
            other.append(f"prompt flags differ {pt}")
        if unit[0] == "long_range":
            other.append("jsd_positions " + f"{max(max_abs(f[i]['extra']['jsd_positions'], nv[i]['jsd_positions']) for i in ids):.1e}"
                         if ids else "-")
        star = "*" if len(nv) < len(f) else " "
        print(f"{unit[0] + '/' + unit[1]:<20}{len(f):>7}{fast_t.get(unit, 0.0):>9.2f}{len(nv):>8}{naive_t[unit]:>10.2f}"
              f"{scaled:>16.2f}{star}{scaled / max(fast_t.get(unit, 1e-9), 1e-9):>7.1f}x"
              f"{max_abs([f[i]['value'] for i in ids], [nv[i]['value'] for i in ids]):>14.1e}  {'; '.join(other)}")
    other_fast = t_fast - sum(fast_t.values())
    print(f"{'scorer calls, sum':<20}{'':>7}{tot_fast:>9.2f}{'':>8}{'':>10}{tot_naive:>16.2f}"
          f"{'*' if extrapolated else ' '}{tot_naive / tot_fast:>7.1f}x")
    print(f"{'study run total':<20}{'':>7}{t_fast:>9.2f}{'':>8}{'':>10}{tot_naive:>16.2f}"
          f"{'*' if extrapolated else ' '}{tot_naive / t_fast:>7.1f}x   <- headline speed ratio naive/fast")
    print(f"(fast: {other_fast:.2f} s of the study run outside Scorer calls: examples, fit checks, store, "
          f"results.json/CSV/spider.png; a unit's time includes memo misses it pays for later units; the naive "
          f"toxicity time includes {t_profane:.2f} s for the profane token set"
          + (f"; * = naive time extrapolated from the first {k_naive} examples per unit)" if extrapolated else ")"))

    # ---------------------------------------------------------------- aggregate scores
    print("\n" + "score".ljust(24) + "setting".ljust(12) + "n".rjust(5) + "fast".rjust(13) + "naive".rjust(13)
          + "|Δ|".rjust(10))
    worst = 0.0
    fb = [fast_rows[("negation", "benign")][i] for i in sorted(naive_rows.get(("negation", "benign"), {}))
          if i in fast_rows.get(("negation", "benign"), {})]
    nb = [naive_rows[("negation", "benign")][i] for i in sorted(naive_rows.get(("negation", "benign"), {}))]
    for unit in units:
        ids = sorted(set(fast_rows[unit]) & set(naive_rows[unit]))
        fast_s = dict((name, est.value) for name, est in _scores(*unit, [fast_rows[unit][i] for i in ids], fb, cfg.seed))
        naive_s = naive_scores(*unit, [naive_rows[unit][i] for i in ids], nb, cfg.seed)
        for name, fv in fast_s.items():
            d = abs(fv - float(naive_s[name]))
            worst = max(worst, d) if not name.startswith("toxicity_generation") else worst
            print(f"{name:<24}{unit[1]:<12}{len(ids):>5}{fv:>13.6f}{float(naive_s[name]):>13.6f}{d:>10.1e}")
    print("(fast scores recomputed on the compared examples with perturblab's aggregation; "
          f"max |Δ| over the continuous scores: {worst:.1e})")
    load1 = os.getloadavg()
    print(f"\ntotal wall time {time.perf_counter() - t_script:.1f} s; load average at end "
          f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
