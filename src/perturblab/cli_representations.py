"""CLI commands of the representation studies: ``similarity``, ``finetuning``, ``layer-probes``,
``grounding`` (registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .cli import _csv_list as _list
from .cli import data_options, show_table

POOLINGS = ["mean", "cls", "last"]


def _int_list(s: str) -> list[int]:
    try:
        return [int(x) for x in _list(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated layer numbers, e.g. 4,5,6; got {s!r}") from None


def _float_list(s: str) -> list[float]:
    try:
        return [float(x) for x in _list(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, e.g. 0,0.5,0.9; got {s!r}") from None


def _common(p: argparse.ArgumentParser, *, data: str = "rotten_tomatoes") -> None:
    p.add_argument("--data", default=data,
                   help="data set (rotten_tomatoes, tweets, a CSV/JSONL/Parquet file, hf:NAME[:SPLIT]) or corpus "
                        "(oanc, conll2010, a .txt file)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pooling", choices=POOLINGS, default="mean",
                   help="mean over real tokens, first token (CLS), or last real token (decoders)")
    p.add_argument("--out", required=True, help="output directory (re-running reuses what is done)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _probe_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--probe-c", type=float, default=0.01,
                   help="inverse L2 strength of the logistic-regression probes on standardised states")


def _finetune_args(p: argparse.ArgumentParser, *, epochs: int, seconds: float) -> None:
    p.add_argument("--epochs", type=int, default=epochs, help="fine-tuning epochs")
    p.add_argument("--max-seconds", type=float, default=seconds, help="fine-tuning time budget (CPU), seconds")
    p.add_argument("--lr", type=float, default=5e-5, help="fine-tuning learning rate")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add the four commands to the main parser's subcommands."""
    p = sub.add_parser("similarity", help="layer x layer representation similarity of two models")
    p.add_argument("--a", required=True, help="model A: encoder or LM preset, .gguf, local HF dir or hub id")
    p.add_argument("--b", required=True, help="model B")
    p.add_argument("--measures", default="cka,pwcca,procrustes",
                   help="comma list or 'all': linear_cka (cka), linear_cka_unbiased, rbf_cka, cca_mean (cca), "
                        "r2cca, pwcca_distance (pwcca), procrustes_distance (procrustes)")
    p.add_argument("--n", type=int, default=2000, help="inputs (CCA measures need more inputs than dimensions)")
    p.add_argument("--pooling-b", choices=POOLINGS, default=None, help="pooling of model B (default: --pooling)")
    p.add_argument("--text-column", default=None, help="text column of a data file (default: 'text')")
    p.add_argument("--text-fields", type=_list, default=[], metavar="A[,B]",
                   help="text column(s) of a data file: one, or two for a text pair (replaces --text-column)")
    _common(p)

    p = sub.add_parser("finetuning", help="pretrained vs fine-tuned encoder per layer: CKA, STIR both ways, probes")
    p.add_argument("--base", default="minilm-l6", help="the pretrained encoder")
    p.add_argument("--finetuned", default=None,
                   help="an existing fine-tuned copy of --base (directory or hub id); default: fine-tune one here")
    p.add_argument("--n-train", type=int, default=3000)
    p.add_argument("--n-eval", type=int, default=1000)
    p.add_argument("--k", type=int, default=20, help="STIR: random halves")
    p.add_argument("--text-stir", action="store_true", help="also text-space STIR (synonym search on the pretrained model)")
    _probe_arg(p)
    _finetune_args(p, epochs=2, seconds=900.0)
    _common(p)
    data_options(p, task=False)

    from .studies.robustness.layer_probes import DEFAULT_PERTURBATIONS

    p = sub.add_parser("layer-probes", help="per-layer probes on clean vs perturbed inputs; top affected layers")
    p.add_argument("--model", default="minilm-l6")
    p.add_argument("--perturbations", default=",".join(DEFAULT_PERTURBATIONS),
                   help="comma list of catalogue perturbations (default: the robustness paper's eight)")
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-eval", type=int, default=1000)
    p.add_argument("--top", type=int, default=3)
    p.add_argument("--perturb-field", choices=["a", "b", "both"], default="both",
                   help="for text-pair data: perturb the first text, the second or both (default)")
    _probe_arg(p)
    _common(p)
    data_options(p, task=False)

    from .studies.grounding.config import PC_FRACTIONS

    p = sub.add_parser("grounding", help="rank correlation of similarity measures with probe accuracy (Table 1)")
    p.add_argument("--variants", default="minilm-l6,minilm-l6-int8,minilm-l3,ft:0,ft:1",
                   help="comma list of encoders; ft:<seed> = --base fine-tuned with that seed")
    p.add_argument("--base", default="minilm-l6")
    p.add_argument("--measures", default="procrustes,cka,pwcca")
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-eval", type=int, default=1000)
    p.add_argument("--pc-layers", type=_int_list, default=[4, 5, 6], help="layers for the PC-deletion benchmark")
    p.add_argument("--pc-fractions", type=_float_list, default=list(PC_FRACTIONS),
                   help="fractions of the principal components deleted (smallest first) in the PC-deletion benchmark")
    p.add_argument("--include-embeddings", action="store_true",
                   help="count the embedding layer as a member of the layer-depth set (the paper leaves it out)")
    p.add_argument("--warmup", type=_list, default=None, metavar="A,B",
                   help="the pair of equally deep variants of the warm-up tests (default: the first two ft:<seed>)")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples for the 95%% intervals")
    _probe_arg(p)
    _finetune_args(p, epochs=1, seconds=300.0)
    _common(p)
    data_options(p, task=False)


def cmd_similarity(args) -> int:
    from .core.lock import output_lock
    from .functions import similarity

    out = Path(args.out)
    with output_lock(out, what="the similarity study"):
        res = similarity(args.a, args.b, data=args.data, text_column=args.text_column, text_fields=args.text_fields,
                         n=args.n, seed=args.seed, measures=args.measures, pooling=args.pooling,
                         pooling_b=args.pooling_b, out=out, quiet=args.quiet)
        paths = res.save(out)
    show_table(res)
    print(f"outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, results.sqlite")
    return 0


def cmd_finetuning(args) -> int:
    from .core.lock import output_lock
    from .studies.robustness.finetuning import finetuning

    out = Path(args.out)
    with output_lock(out, what="the finetuning study"):
        res = finetuning(args.base, finetuned=args.finetuned, data=args.data, n_train=args.n_train,
                         n_eval=args.n_eval, k=args.k, text_stir=args.text_stir, probe_c=args.probe_c,
                         epochs=args.epochs, max_seconds=args.max_seconds, lr=args.lr, seed=args.seed,
                         pooling=args.pooling, text_fields=args.text_fields, label_column=args.label_column,
                         out=out, quiet=args.quiet)
        res.save(out)
    show_table(res)
    print(f"outputs in {out.resolve()}: results.json, finetuning.png, probes.png, finetune.json")
    return 0


def cmd_layer_probes(args) -> int:
    from .core.lock import output_lock
    from .studies.robustness.layer_probes import layer_probes

    out = Path(args.out)
    with output_lock(out, what="the layer-probes study"):
        res = layer_probes(args.model, perturbations=args.perturbations, data=args.data, n_train=args.n_train,
                           n_eval=args.n_eval, top=args.top, perturb_field=args.perturb_field, probe_c=args.probe_c,
                           seed=args.seed, pooling=args.pooling, text_fields=args.text_fields,
                           label_column=args.label_column, out=out, quiet=args.quiet)
        res.save(out)
    for p, layers in res.top_layers.items():
        print(f"{p:16s} most affected layers: {layers}")
    print(res.sizes())
    print(f"outputs in {out.resolve()}: results.json, top_layers.csv, probe_drops.png")
    return 0


def cmd_grounding(args) -> int:
    from .core.lock import output_lock
    from .studies.grounding import grounding

    out = Path(args.out)
    with output_lock(out, what="the grounding study"):
        res = grounding(args.variants, base=args.base, measures=args.measures, data=args.data, n_train=args.n_train,
                        n_eval=args.n_eval, pc_layers=args.pc_layers, pc_fractions=args.pc_fractions,
                        include_embeddings=args.include_embeddings, warmup=args.warmup, n_boot=args.n_boot,
                        probe_c=args.probe_c, epochs=args.epochs, max_seconds=args.max_seconds, lr=args.lr,
                        seed=args.seed, pooling=args.pooling, text_fields=args.text_fields,
                        label_column=args.label_column, out=out, quiet=args.quiet)
        paths = res.save(out)
    show_table(res)
    print(f"outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, results.sqlite")
    return 0


COMMANDS: dict[str, Callable] = {"similarity": cmd_similarity, "finetuning": cmd_finetuning,
                                 "layer-probes": cmd_layer_probes, "grounding": cmd_grounding}
