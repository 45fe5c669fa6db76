"""Wall time of the learnability grid, with a breakdown into perturbing, training and scoring.

Runs the learnability study (``perturblab.studies.learnability.study``) for ``--models``
(default ``tfidf-lr,textrnn``) × the learnability paper's eight perturbations × the p grid ×
``--seeds`` (default 3) on 2,000 / 500 balanced Rotten-Tomatoes sentences, in a fresh output
directory (nothing reused), and prints the total wall time against the target (20 minutes
for the full grid on 2 cores) with the time spent in ``apply_perturbation``, in ``fit`` and in
``predict_proba``, per model (summed over the worker threads). ``--workers 1`` gives the
one-model-at-a-time baseline. Usage::

    .venv/bin/python benchmarks/learnability.py [--models tfidf-lr,textrnn] [--seeds 3] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import threading
import time

TARGET_S = 20 * 60


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="tfidf-lr,textrnn")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="models trained at once (threads; default 2)")
    ap.add_argument("--out", default=None, help="output directory (default: a new temporary one)")
    args = ap.parse_args()

    import perturblab.studies.learnability.algorithm as lcurve
    import perturblab.studies.learnability.study as study
    from perturblab.core.entry import run
    from perturblab.models.zoo import get_trainer
    from perturblab.studies.learnability.config import LearnabilityArgs

    spent: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    lock = threading.Lock()

    def timed(fn, what, owner):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                with lock:
                    spent[owner][what] += time.perf_counter() - t0
        return wrapper

    def trainer(name):
        fit = timed(get_trainer(name), "training", name)

        def trained(texts, labels, seed):
            model = fit(texts, labels, seed)
            model.predict_proba = timed(model.predict_proba, "scoring", name)
            return model
        return trained

    for module in (lcurve, study):  # both modules perturb through their own reference
        module.perturb_inputs = timed(module.perturb_inputs, "perturbing", "(all models)")
    options = LearnabilityArgs(models=args.models, trials=args.seeds, workers=args.workers)
    models = options.model_names()
    bench = study.LearnabilityStudy(options, trainers={m: trainer(m) for m in models})
    out = args.out or tempfile.mkdtemp(prefix="learnability-bench-")
    t0 = time.perf_counter()
    run(bench, out, workers=args.workers)
    total = time.perf_counter() - t0
    perts, ps = bench.perturbations, bench.ps
    grid = len(models) * len(perts) * len(ps) * args.seeds
    print(f"grid: {len(models)} models x {len(perts)} perturbations x {len(ps)} p x {args.seeds} seeds "
          f"= {grid} learnability models (+ {len(models) * args.seeds} clean and "
          f"{len(models) * len(perts) * args.seeds} augmented models)")
    full = len(models) >= 2 and args.seeds >= 3
    verdict = ("met" if total <= TARGET_S else "NOT met") if full else "not judged: this is a partial grid"
    print(f"total wall time {total / 60:.1f} min (target for the full grid of 2 models x 3 seeds: "
          f"{TARGET_S / 60:.0f} min: {verdict})")
    print(f"time per model and phase, summed over {args.workers} worker thread(s) (so it can exceed the wall time):")
    for model, c in spent.items():
        print(f"  {model:12s} " + "  ".join(f"{k} {v:.0f} s" for k, v in sorted(c.items())))
    print(f"outputs in {out}")


if __name__ == "__main__":
    main()
