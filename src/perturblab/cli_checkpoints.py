"""CLI command ``checkpoints``: SCoPE over the checkpoints of a training run (SCoPE App. D,
Figs. 9-10; registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

from .cli import search_data_options, search_trial_options


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


def cmd_checkpoints(args) -> int:
    from .core.lock import output_lock
    from .functions import checkpoints
    from .studies.scope.tables import fmt

    out = Path(args.out)
    t0 = time.time()
    with output_lock(out, what="the checkpoints study"):
        res = checkpoints(args.checkpoints, finetune=args.finetune, fractions=args.fractions, epochs=args.epochs,
                          max_seconds=args.max_seconds, lr=args.lr, n_train=args.n_train,
                          capabilities=args.capabilities, comparisons=args.comparisons, data=args.data,
                          text_column=args.text_column, text_fields=args.text_fields, label_column=args.label_column,
                          perturb_field=args.perturb_field, n=args.n, trials=args.trials, seed=args.seed,
                          max_words=args.max_words, patience=args.patience, max_candidates=args.max_candidates,
                          out=out, quiet=args.quiet)
        paths = res.save(out)
    print(f"{'comparison':12s} {'capability':10s} {'checkpoint':28s} {'%':>6s} {'hard_scope':>14s} "
          f"{'soft_scope':>14s} {'ood_agreement':>14s}")
    for r in res.rows:
        pct = "" if r["percent"] is None else f"{r['percent']:.0f}"
        print(f"{r['comparison']:12s} {r['capability']:10s} {r['checkpoint'][-28:]:28s} {pct:>6s} "
              f"{fmt(r['hard_scope'], r['hard_scope_se']):>14s} {fmt(r['soft_scope'], r['soft_scope_se']):>14s} "
              f"{fmt(r['ood_agreement'], r['ood_agreement_se']):>14s}")
    pngs = sorted(p.name for p in paths if p.suffix == ".png")
    n = max((r["n_base"] for r in res.trials), default=0)
    print(f"\n{len(res.manifest['checkpoints'])} checkpoints; {args.trials} trial(s) of n={n}; "
          f"{time.time() - t0:.0f} s")
    print(f"outputs in {out.resolve()}: results.json, trials.json, table.md, checkpoints.json, "
          f"results.sqlite, {', '.join(pngs)}")
    return 0


COMMANDS: dict[str, Callable] = {"checkpoints": cmd_checkpoints}
