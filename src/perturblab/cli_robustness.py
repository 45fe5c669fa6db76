"""CLI command of the learnability study: ``perturblab learnability`` (registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .cli import _csv_list as _list


def _floats(s: str) -> list[float]:
    try:
        return [float(x) for x in _list(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated probabilities, e.g. 0.01,0.1,1; got {s!r}") from None


def resolve_perturbations(spec: str) -> list[str]:
    """``all`` = the learnability paper's eight, ``robustness`` = the robustness paper's eight,
    ``every`` = every registered perturbation; otherwise a comma list of names."""
    from .perturb.catalogue import PERTURBATIONS
    from .studies.layer_probes import DEFAULT_PERTURBATIONS as ROBUSTNESS_EIGHT
    from .studies.learnability_study import NOISE

    named = {"all": list(NOISE), "robustness": list(ROBUSTNESS_EIGHT), "every": PERTURBATIONS.names()}
    return named.get(spec.strip().lower(), _list(spec))


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("learnability", help="perturbation learnability, robustness and post-augmentation gain")
    p.add_argument("--models", default="tfidf-lr,textrnn", help="comma list of trainable models (tfidf-lr, "
                   "textrnn, minilm-probe, hf-finetune)")
    p.add_argument("--perturbations", default="all", help="'all' (the learnability paper's eight), 'robustness' "
                   "(the robustness paper's eight), 'every', or a comma list")
    p.add_argument("--data", default="rotten_tomatoes", help="a labelled data set or file")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--n-train", type=int, default=2000, help="balanced training subsample")
    p.add_argument("--n-test", type=int, default=500, help="balanced test subsample")
    p.add_argument("--ps", type=_floats, default=None, help="perturbation probabilities (default: the paper's grid)")
    p.add_argument("--out", required=True, help="output directory (re-running resumes; no model is trained twice)")
    p.add_argument("--quiet", action="store_true")


def cmd_learnability(args) -> int:
    from .measures.learnability import LEARNABILITY_GRID
    from .studies.learnability_study import LearnabilityConfig, run_learnability

    cfg = LearnabilityConfig(models=_list(args.models), perturbations=resolve_perturbations(args.perturbations),
                             data=args.data, n_train=args.n_train, n_test=args.n_test, seeds=args.seeds,
                             ps=args.ps or LEARNABILITY_GRID)
    run_learnability(cfg, args.out, progress=not args.quiet)
    import json

    summary = json.loads((Path(args.out) / "summary.json").read_text())
    print(f"{'model':14s} {'perturbation':24s} {'avg_learn':>10s} {'robustness':>11s} {'post_aug_Δ':>11s}")
    for t in summary["table"]:
        print(f"{t['model']:14s} {t['perturbation']:24s} {t['avg_learnability']:10.3f} {t['robustness']:11.3f} "
              f"{t['post_aug_delta']:11.3f}")
    for c in summary["spearman"]:
        rho = "n/a" if c["spearman"] is None else f"{c['spearman']:.3f} (p={c['p_value']:.2g})"
        print(f"Spearman {c['x']} vs {c['y']}: {rho} over {c['n_pairs']} pairs")
    print(f"outputs in {Path(args.out).resolve()}: results.json, summary.json, curves_*.png, correlations.png, "
          "robustness_heatmap.png")
    return 0


COMMANDS: dict[str, Callable] = {"learnability": cmd_learnability}
