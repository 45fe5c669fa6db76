"""Wall time of the learnability grid, with a breakdown into perturbing, training and scoring.

Runs the learnability study (``perturblab.studies.learnability_study``) for ``--models``
(default ``tfidf-lr,textrnn``) × the learnability paper's eight perturbations × the p grid ×
``--seeds`` (default 3) on 2,000 / 500 balanced Rotten-Tomatoes sentences, in a fresh output
directory (nothing reused), and prints the total wall time against the target (20 minutes
for the full grid on 2 cores) with the time spent in ``apply_perturbation``, in ``fit`` and in
``predict_proba``, per model. Usage::

    .venv/bin/python benchmarks/learnability.py [--models tfidf-lr,textrnn] [--seeds 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time

TARGET_S = 20 * 60


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="tfidf-lr,textrnn")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None, help="output directory (default: a new temporary one)")
    args = ap.parse_args()

    import perturblab.studies.learnability as lcurve
    import perturblab.studies.learnability_study as study
    from perturblab.models.zoo import get_trainer

    spent: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    current = {"model": "-"}

    def timed(fn, what, owner=None):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[owner or current["model"]][what] += time.perf_counter() - t0
        return wrapper

    def scored(model):
        model.predict_proba = timed(model.predict_proba, "scoring")
        return model

    def trainer(name):
        fit = get_trainer(name)

        def run(texts, labels, seed):
            current["model"] = name
            return scored(timed(fit, "training")(texts, labels, seed))
        return run

    for module in (lcurve, study):  # both modules perturb through their own reference
        module.apply_perturbation = timed(module.apply_perturbation, "perturbing", owner="(all models)")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    cfg = study.LearnabilityConfig(models=models, seeds=args.seeds)
    out = args.out or tempfile.mkdtemp(prefix="learnability-bench-")
    t0 = time.perf_counter()
    study.run_learnability(cfg, out, trainers={m: trainer(m) for m in models}, progress=True)
    total = time.perf_counter() - t0
    grid = len(models) * len(cfg.perturbations) * len(cfg.ps) * args.seeds
    print(f"grid: {len(models)} models x {len(cfg.perturbations)} perturbations x {len(cfg.ps)} p x {args.seeds} seeds "
          f"= {grid} learnability models (+ {len(models) * args.seeds} clean and "
          f"{len(models) * len(cfg.perturbations) * args.seeds} augmented models)")
    full = len(models) >= 2 and args.seeds >= 3
    verdict = ("met" if total <= TARGET_S else "NOT met") if full else "not judged: this is a partial grid"
    print(f"total wall time {total / 60:.1f} min (target for the full grid of 2 models x 3 seeds: "
          f"{TARGET_S / 60:.0f} min: {verdict})")
    for model, c in spent.items():
        print(f"  {model:12s} " + "  ".join(f"{k} {v:.0f} s" for k, v in sorted(c.items())))
    print(f"outputs in {out}")


if __name__ == "__main__":
    main()
