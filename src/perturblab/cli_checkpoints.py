"""CLI command ``checkpoints``: SCoPE over the checkpoints of a training run (SCoPE App. D,
Figs. 9-10; registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

from .cli import _csv_list as _list
from .cli import SEARCH_FIELDS, search_data_options
from .cli import search_trial_options
from .errors import InputError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add the ``checkpoints`` command to the main parser's subcommands."""
    p = sub.add_parser("checkpoints", help="shared invariances over training checkpoints (SCoPE App. D, Figs. 9-10)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoints", default=None,
                     help="comma-separated classifier directories in training order (the last is the final "
                          "model), or one fine-tune directory holding checkpoint-* subdirectories")
    src.add_argument("--finetune", default=None, metavar="BASE",
                     help="fine-tune this encoder (preset such as minilm-l3, or a local directory) here, "
                          "saving checkpoints at --fractions (cached under the data home)")
    p.add_argument("--fractions", default="0,0.2,0.4,0.6,0.8,1",
                   help="with --finetune: checkpoints as fractions of the training steps (0 = initialised model)")
    p.add_argument("--epochs", type=int, default=1, help="with --finetune: training epochs")
    p.add_argument("--max-seconds", type=float, default=300.0, help="with --finetune: training time budget (CPU)")
    p.add_argument("--lr", type=float, default=5e-5, help="with --finetune: learning rate")
    p.add_argument("--n-train", type=int, default=None,
                   help="with --finetune: training examples (seeded sample of the training split; default all)")
    p.add_argument("--capabilities", default="synonym,typo", help="comma-separated capabilities")
    p.add_argument("--comparisons", default="vs_final,vs_previous",
                   help="vs_final (reference: the final checkpoint), vs_previous (reference: m_{t-1}), or both")
    search_data_options(p)
    search_trial_options(p, n=200)


def _fractions(s: str) -> list[float]:
    try:
        return [float(x) for x in _list(s)]
    except ValueError:
        raise InputError(f"--fractions takes comma-separated numbers in [0, 1], e.g. 0,0.5,1; got {s!r}") from None


def cmd_checkpoints(args) -> int:
    from .cli import _load_splits
    from .models.finetune import FinetuneConfig
    from .report.tables import fmt
    from .studies.checkpoints import CheckpointConfig, CheckpointStudy, checkpoints_from_dirs, finetune_checkpoints

    cfg = CheckpointConfig(capabilities=_list(args.capabilities), data=args.data, n=args.n, trials=args.trials,
                           seed=args.seed, max_words=args.max_words, patience=args.patience,
                           max_candidates=args.max_candidates, comparisons=tuple(_list(args.comparisons)),
                           perturb_field=SEARCH_FIELDS[args.perturb_field])
    t0 = time.time()
    splits = _load_splits(args, test_size=cfg.test_size)
    if args.finetune:
        train = splits[0] if args.n_train is None else splits[0].sample(args.n_train, seed=args.seed)
        ft = FinetuneConfig(epochs=args.epochs, max_seconds=args.max_seconds, lr=args.lr)
        checkpoints = finetune_checkpoints(args.finetune, train, seed=args.seed, fractions=_fractions(args.fractions),
                                           config=ft, progress=not args.quiet)
    else:
        checkpoints = checkpoints_from_dirs(_list(args.checkpoints))
    study = CheckpointStudy(cfg, args.out, checkpoints, splits=splits, progress=not args.quiet)
    rows = study.run()
    print(f"{'comparison':12s} {'capability':10s} {'checkpoint':28s} {'%':>6s} {'hard_scope':>14s} "
          f"{'soft_scope':>14s} {'ood_agreement':>14s}")
    for r in rows:
        pct = "" if r["percent"] is None else f"{r['percent']:.0f}"
        print(f"{r['comparison']:12s} {r['capability']:10s} {r['checkpoint'][-28:]:28s} {pct:>6s} "
              f"{fmt(r['hard_scope'], r['hard_scope_se']):>14s} {fmt(r['soft_scope'], r['soft_scope_se']):>14s} "
              f"{fmt(r['ood_agreement'], r['ood_agreement_se']):>14s}")
    pngs = sorted(p.name for p in Path(args.out).glob("checkpoints_*.png"))
    print(f"\n{len(study.checkpoints)} checkpoints; {cfg.trials} trial(s) of n={cfg.n}; {time.time() - t0:.0f} s")
    print(f"outputs in {Path(args.out).resolve()}: results.json, trials.json, table.md, checkpoints.json, "
          f"results.sqlite, {', '.join(pngs)}")
    return 0


COMMANDS: dict[str, Callable] = {"checkpoints": cmd_checkpoints}
