"""CLI commands of the robustness studies: ``perturblab learnability`` and ``perturblab robustness``
(registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .cli import _csv_list as _list
from .cli import data_options as _data_options
from .cli import executor_options as _executor_options
from .cli import show_table


def _floats(s: str) -> list[float]:
    try:
        return [float(x) for x in _list(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated probabilities, e.g. 0.01,0.1,1; got {s!r}") from None


def resolve_perturbations(spec: str) -> list[str]:
    """:func:`perturblab.functions.perturbation_names` (kept for the learnability and generation commands)."""
    from .functions import perturbation_names

    return perturbation_names(spec)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("learnability", help="perturbation learnability, robustness and post-augmentation gain")
    p.add_argument("--models", default="tfidf-lr,textrnn", help="comma list of trainable models (tfidf-lr, "
                   "textrnn, minilm-probe, hf-finetune)")
    p.add_argument("--perturbations", default="all", help="'all' (the learnability paper's eight), 'robustness' "
                   "(the robustness paper's eight), 'every', or a comma list")
    p.add_argument("--data", default="rotten_tomatoes", help="a labelled data set, file, hf:NAME or glue:TASK")
    _data_options(p, task=False)
    p.add_argument("--perturb-field", choices=["a", "b", "both"], default="both",
                   help="for text-pair data: perturb the first text, the second or both (default)")
    p.add_argument("--trials", "--seeds", dest="trials", type=int, default=3,
                   help="repetitions: training seeds of each model and perturbation (--seeds is the old name)")
    p.add_argument("--n-train", type=int, default=2000, help="balanced training subsample")
    p.add_argument("--n-eval", "--n-test", dest="n_eval", type=int, default=500,
                   help="balanced evaluation subsample (--n-test is the old name)")
    p.add_argument("--ps", type=_floats, default=None, help="perturbation probabilities (default: the paper's grid)")
    p.add_argument("--workers", type=int, default=2, help="models trained at once in threads (default 2; each "
                   "gets its share of torch's threads; 1 = one at a time)")
    p.add_argument("--out", required=True, help="output directory (re-running resumes; no model is trained twice)")
    p.add_argument("--quiet", action="store_true")
    _executor_options(p)
    add_robustness_parser(sub)
    add_generation_parser(sub)


def add_robustness_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("robustness", help="relative robustness of classifiers and regressors to perturbations "
                       "(Table 3 style)")
    p.add_argument("--models", required=True, help="comma list of classifiers: presets (minilm-l6, minilm-l3, "
                   "tfidf-lr, ...), trainable models (textrnn, minilm-probe, hf-finetune) or fine-tuned HF "
                   "sequence classifiers (local directory or hub id); on a regression task encoder presets get a "
                   "ridge head, tfidf-ridge, or one-output HF models; NAME=SOURCE gives a short name")
    p.add_argument("--perturbations", default="robustness", help="'robustness' (the robustness paper's eight, "
                   "default), 'all' (the learnability paper's eight), 'every', or a comma list")
    p.add_argument("--data", default="rotten_tomatoes", help="a labelled data set, file, hf:NAME or glue:TASK")
    _data_options(p)
    p.add_argument("--metrics", default=None, help="comma list of accuracy, mcc, f1 (classification; default "
                   "accuracy,mcc) or pearson, spearman (regression; default both)")
    p.add_argument("--trials", "--seeds", dest="trials", type=int, default=3,
                   help="repetitions: draws of each random perturbation (--seeds is the old name)")
    p.add_argument("--n-train", type=int, default=2000, help="training split for presets and trainable models")
    p.add_argument("--n-eval", "--n-test", dest="n_eval", type=int, default=1000,
                   help="evaluation examples (--n-test is the old name)")
    p.add_argument("--perturb-field", choices=["a", "b", "both"], default="both",
                   help="for text-pair data: perturb the first text, the second or both (default)")
    p.add_argument("--label-map", action="append", metavar="[MODEL:]LABEL=DATA_LABEL,...",
                   help="map a model's output labels to the data's labels (repeatable; without MODEL: for "
                        "every model that has these labels); needed only when names do not match")
    p.add_argument("--out", required=True, help="output directory (re-running resumes; nothing is predicted twice)")
    p.add_argument("--quiet", action="store_true")
    _executor_options(p)


def cmd_robustness(args) -> int:
    from .core.lock import output_lock
    from .functions import robustness

    out = Path(args.out)
    with output_lock(out, what="the robustness study"):
        res = robustness(args.models, perturbations=args.perturbations, data=args.data, text_fields=args.text_fields,
                         label_column=args.label_column, task=args.task, metrics=args.metrics, trials=args.trials,
                         n_train=args.n_train, n_eval=args.n_eval, perturb_field=args.perturb_field,
                         label_map=args.label_map, out=out, quiet=args.quiet,
                         executor=getattr(args, "executor_obj", None) or args.executor, address=args.address,
                         num_cpus=args.num_cpus)
        paths = res.save(out)
    show_table(res)
    print(f"outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, results.sqlite")
    return 0


def cmd_learnability(args) -> int:
    from .core.lock import output_lock
    from .functions import learnability

    out = Path(args.out)
    with output_lock(out, what="the learnability study"):
        res = learnability(args.models, perturbations=args.perturbations, data=args.data, text_fields=args.text_fields,
                           label_column=args.label_column, perturb_field=args.perturb_field, trials=args.trials,
                           n_train=args.n_train, n_eval=args.n_eval, ps=args.ps, workers=args.workers, out=out,
                           quiet=args.quiet, executor=getattr(args, "executor_obj", None) or args.executor,
                           address=args.address, num_cpus=args.num_cpus)
        paths = res.save(out)
    summary = res.summary
    print(f"{'model':14s} {'perturbation':24s} {'avg_learn':>10s} {'robustness':>11s} {'post_aug_Δ':>11s}")
    for t in summary["table"]:
        print(f"{t['model']:14s} {t['perturbation']:24s} {t['avg_learnability']:10.3f} {t['robustness']:11.3f} "
              f"{t['post_aug_delta']:11.3f}")
    for c in summary["spearman"]:
        rho = "n/a" if c["spearman"] is None else f"{c['spearman']:.3f} (p={c['p_value']:.2g})"
        print(f"Spearman {c['x']} vs {c['y']}: {rho} over {c['n_pairs']} pairs")
    print(res.sizes())
    print(f"outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, results.sqlite")
    return 0


def add_generation_parser(sub: argparse._SubParsersAction) -> None:
    from .studies.robustness.generation import DEFAULT_PROMPT

    p = sub.add_parser("generation", help="robustness of generated summaries to perturbed sources (ROUGE, Table 4)")
    p.add_argument("--models", required=True, help="comma list of language models: presets (smollm2-135m, "
                   "smollm2-135m-int8), local HF directories, .gguf files, hub ids or api:MODEL@URL")
    p.add_argument("--data", default="lead:conll2010", help="lead:<corpus> (first sentences of a packaged corpus's "
                   "documents as references; see docs) or a CSV/JSONL file of source/reference pairs")
    p.add_argument("--source-column", default="source", help="source column of a data file")
    p.add_argument("--reference-column", default="reference", help="reference column of a data file")
    p.add_argument("--perturbations", default="robustness", help="'robustness' (the robustness paper's eight, "
                   "default), 'all' (the learnability paper's eight), 'every', or a comma list")
    p.add_argument("--metrics", default="rouge1,rouge2,rougeL", help="comma list of rouge1, rouge2, rougeL")
    p.add_argument("--n", type=int, default=100, help="examples (a seeded sample of the data)")
    p.add_argument("--trials", "--seeds", dest="trials", type=int, default=3,
                   help="repetitions: draws of each random perturbation (--seeds is the old name)")
    p.add_argument("--max-new-tokens", type=int, default=40, help="generation length (greedy)")
    p.add_argument("--prompt", default=DEFAULT_PROMPT, help="prompt template with {source}")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample of --n examples")
    p.add_argument("--n-boot", type=int, default=1000, help="paired-bootstrap resamples of the 95%% intervals")
    p.add_argument("--out", required=True, help="output directory (re-running resumes; nothing is generated twice)")
    p.add_argument("--quiet", action="store_true")


def cmd_generation(args) -> int:
    from .core.lock import output_lock
    from .functions import generation

    out = Path(args.out)
    with output_lock(out, what="the generation study"):
        res = generation(args.models, data=args.data, source_column=args.source_column,
                         reference_column=args.reference_column, perturbations=args.perturbations,
                         metrics=args.metrics, n=args.n, trials=args.trials, max_new_tokens=args.max_new_tokens,
                         prompt=args.prompt, seed=args.seed, n_boot=args.n_boot, out=out, quiet=args.quiet)
        paths = res.save(out)
    show_table(res)
    print(f"outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, results.sqlite")
    return 0


COMMANDS: dict[str, Callable] = {"learnability": cmd_learnability, "robustness": cmd_robustness,
                                 "generation": cmd_generation}
