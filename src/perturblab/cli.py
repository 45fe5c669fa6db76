"""Command-line interface: ``perturblab <command> ...``.

Errors the user can fix (bad names, missing files or assets) print one ``error:`` line and
exit with status 2; they never end in a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from .errors import PerturblabError

from .core.options import count_or_all, csv_list as _csv_list  # noqa: F401  (kept for the command modules)


def search_data_options(p: argparse.ArgumentParser) -> None:
    """``--data``, its columns and ``--perturb-field`` of the commands that search perturbations of
    labelled data (scope, checkpoints); read by :func:`_load_splits`."""
    p.add_argument("--data", default="rotten_tomatoes",
                   help="data set name (rotten_tomatoes, tweets), a CSV/JSONL/Parquet file, hf:NAME[:SPLIT], "
                        "glue:TASK or next:CORPUS")
    p.add_argument("--text-column", default=None, help="text column of a data file")
    data_options(p, task=False)
    p.add_argument("--perturb-field", choices=["a", "b", "both"], default="a",
                   help="for text pairs: search perturbations of the first text (default), the second, or the words "
                        "of both")


def show_table(result: Any) -> None:
    """Print a study result's console table and the number of examples it was computed on."""
    print(result.table())
    sizes = result.sizes()
    if sizes:
        print(sizes)


def data_options(p: argparse.ArgumentParser, *, task: bool = True) -> None:
    """``--text-fields``, ``--label-column`` (and ``--task``): which columns of a data file the
    study reads (:func:`perturblab.studies.inputs.load_study_data`)."""
    p.add_argument("--text-fields", type=_csv_list, default=[], metavar="A[,B]",
                   help="text column(s) of a data file: one, or two for a text-pair task (e.g. premise,hypothesis); "
                        "default: the column 'text'")
    p.add_argument("--label-column", default=None, help="label column of a data file (default: 'label')")
    if task:
        p.add_argument("--task", choices=["classification", "regression"], default=None,
                       help="classification (class labels) or regression (numeric targets, scored by pearson/"
                            "spearman); default: classification for files, the task's own for glue:NAME")


def executor_options(p: argparse.ArgumentParser, *, default: str | None = "local",
                     help: str = "run the work cells here (default) or on Ray") -> None:
    """``--executor``, ``--address``, ``--num-cpus``: where a study's work cells run."""
    p.add_argument("--executor", choices=["local", "ray"], default=default, help=help)
    p.add_argument("--address", default=None, help="Ray cluster address ('auto', 'ray://host:10001'); default: "
                   "start a local Ray instance")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray instance")


def _add_selfcheck_args(p: argparse.ArgumentParser) -> None:
    from .studies.selfcheck.study import METRICS

    p.add_argument("--models", required=True,
                   help="comma-separated language models: presets (smollm2-135m, smollm2-135m-int8, gemma3-270m), "
                        "local HF directories, .gguf files or hub ids")
    p.add_argument("--corpus", default="conll2010",
                   help="oanc, conll2010 (Wikipedia sentences), a .txt/.jsonl/.csv/.parquet file or hf:NAME[:SPLIT]")
    p.add_argument("--benign-corpus", default="oanc",
                   help="corpus for the normalised negation score ('none' to leave it out)")
    p.add_argument("--text-column", default="text", help="text column of a JSONL/CSV/Parquet/HF corpus")
    p.add_argument("--n", type=int, default=1000, help="examples per metric and setting")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metrics", default=",".join(METRICS), help=f"comma-separated subset of {', '.join(METRICS)}")
    p.add_argument("--no-ablations", action="store_true",
                   help="only the headline setting of each metric (much faster)")
    p.add_argument("--max-new-tokens", type=int, default=32, help="generation length of the toxicity metric")
    p.add_argument("--chunk", type=int, default=128, help="examples scored and stored together (smaller: less "
                   "lost to a crash; the scores do not depend on it)")
    p.add_argument("--out", required=True, help="output directory (re-running with the same options resumes)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _add_scope_lm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference", required=True, help="reference language model (e.g. smollm2-135m)")
    p.add_argument("--targets", required=True,
                   help="comma-separated target language models sharing the reference's vocabulary "
                        "(e.g. smollm2-135m-int8)")
    p.add_argument("--capabilities", default="synonym,typo", help="comma-separated capabilities")
    p.add_argument("--corpus", default="oanc", help="corpus of base sentences (as for selfcheck)")
    search_trial_options(p, n=100, what="base sentences")
    p.add_argument("--loss", choices=["l1", "kl"], default="l1", help="goal objective L (Eq. 1 / App. I)")
    p.add_argument("--search", choices=["greedy", "beam"], default="greedy")
    p.add_argument("--beam-width", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=None,
                   help="Soft-SCoPE decay: full weight up to this distance (default 0)")
    p.add_argument("--cutoff", type=float, default=None,
                   help="Soft-SCoPE decay: zero weight from this distance (default 2, the largest L1 distance of two "
                        "distributions)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of the SCoPE intervals")


def search_trial_options(p: argparse.ArgumentParser, *, n: int, what: str = "base samples") -> None:
    """``--n``, ``--trials``, ``--seed``, the search limits, ``--out`` and ``--quiet`` of the
    SCoPE-style commands (scope-lm, checkpoints)."""
    p.add_argument("--n", type=count_or_all, default=n, help=f"{what} per trial (a number, or 'all')")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-words", type=int, default=None, help="largest number of changed words")
    p.add_argument("--patience", type=int, default=None, help="stop a search after this many fruitless words")
    p.add_argument("--max-candidates", type=int, default=None, help="cap on candidates per word")
    p.add_argument("--out", required=True, help="output directory (re-running with the same options resumes)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default after its help, unless the help names it already or there is
    none to show (a required option, an unset value, a flag)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.required or action.default is None or action.default is False
                or action.default in ([], (), "", argparse.SUPPRESS)
                or "%(default)" in text or "default" in text.lower()):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class Parser(argparse.ArgumentParser):
    """argparse with every default shown in ``--help`` and a "did you mean" for a mistyped
    command, choice or option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        import difflib
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        super().error(message)

    def _add_action(self, action: argparse.Action) -> argparse.Action:
        if action.help is None and action.option_strings and not (
                action.required or action.default is None or action.default is False
                or action.default in ([], (), "", argparse.SUPPRESS)):
            action.help = "default: %(default)s"  # an option without help still shows its default
        return super()._add_action(action)

    def options(self) -> list[str]:
        """The long options of this parser."""
        return [o for a in self._actions for o in a.option_strings if o.startswith("--")]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    ap = Parser(prog="perturblab", description="Compare NLP models through text perturbations.")
    ap.add_argument("-v", "--verbose", action="store_true", help="log what the study does")
    ap.add_argument("--version", action="version", version=f"perturblab {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    from .studies.registry import entries

    for study in entries():
        study.options().add_arguments(sub.add_parser(study.name, help=study.help), study.defaults)
    _add_selfcheck_args(sub.add_parser("selfcheck", help="self-supervised LM evaluation (five sensitivity scores)"))
    _add_scope_lm_args(sub.add_parser("scope-lm", help="shared invariances of language models (SCoPE App. G)"))
    for module in _command_modules():
        module.add_parsers(sub)
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line parsed; an unknown option names the closest option of its command."""
    import difflib

    ap = build_parser()
    args, extra = ap.parse_known_args(argv)
    if extra:
        sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
        hints = []
        for x in extra:
            if x.startswith("--"):
                close = difflib.get_close_matches(x.split("=", 1)[0], sub.options(), n=1)
                if close:
                    hints.append(f"{x}: did you mean {close[0]}?")
        sub.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else ""))
    return args


# Modules that add commands: each has ``add_parsers(sub)`` and ``COMMANDS`` (name -> function).
COMMAND_MODULES = ("cli_catalogue", "cli_representations", "cli_robustness", "cli_report", "cli_run", "cli_checkpoints")


def _command_modules() -> list:
    import importlib

    return [importlib.import_module(f".{m}", __package__) for m in COMMAND_MODULES]


def all_commands() -> dict[str, Callable]:
    """Every command's function by name (this module's and the command modules')."""
    from .studies.registry import entries

    commands: dict[str, Callable] = {e.name: study_command(e.name) for e in entries()}
    commands.update(COMMANDS)
    for module in _command_modules():
        commands.update(module.COMMANDS)
    return commands


def _load_splits(args, test_size: float = 0.25):
    """(train, test) of ``--data`` read with ``--text-column`` / ``--text-fields`` and ``--label-column``;
    ``--perturb-field b`` needs two text fields."""
    from .functions import _splits

    return _splits(args.data, text_column=args.text_column, text_fields=args.text_fields,
                   label_column=args.label_column, perturb_field=args.perturb_field, seed=args.seed,
                   test_size=test_size)


def cmd_selfcheck(args) -> int:
    from .core.lock import output_lock
    from .functions import selfcheck

    out = Path(args.out)
    t0 = time.time()
    with output_lock(out, what="the selfcheck study"):
        res = selfcheck(args.models, corpus=args.corpus, benign_corpus=args.benign_corpus,
                        text_column=args.text_column, n=args.n, seed=args.seed, metrics=args.metrics,
                        no_ablations=args.no_ablations, max_new_tokens=args.max_new_tokens, chunk=args.chunk, out=out, quiet=args.quiet)
        paths = res.save(out)
    show_table(res)
    print(f"\ncorpus: {args.corpus}; n={res.config.n}; {time.time() - t0:.0f} s")
    print(f"outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, results.sqlite")
    return 0


def cmd_scope_lm(args) -> int:
    from .core.lock import output_lock
    from .functions import scope_lm

    out = Path(args.out)
    t0 = time.time()
    with output_lock(out, what="the scope-lm study"):
        res = scope_lm(args.reference, args.targets, capabilities=args.capabilities, corpus=args.corpus, n=args.n,
                       trials=args.trials, seed=args.seed, loss=args.loss, search=args.search,
                       beam_width=args.beam_width, max_words=args.max_words, patience=args.patience,
                       max_candidates=args.max_candidates, tolerance=args.tolerance, cutoff=args.cutoff,
                       n_boot=args.n_boot, out=out, quiet=args.quiet)
        res.save(out)
    cfg = res.config
    show_table(res)
    n = max((r["n"] for r in res.rows), default=0)
    print(f"\nreference: {cfg.reference}; {cfg.trials} trial(s) of n={n}; {time.time() - t0:.0f} s; "
          f"outputs in {out.resolve()}: results.json, results.sqlite")
    return 0


COMMANDS = {"selfcheck": cmd_selfcheck, "scope-lm": cmd_scope_lm}


def study_command(name: str) -> Callable[[argparse.Namespace], int]:
    """The command of the registered study ``name``: its options read from the command line, its
    Python function called under the output directory's lock, the result saved and printed."""

    def command(args: argparse.Namespace) -> int:
        from .core.lock import output_lock
        from .studies.registry import entry

        study = entry(name)
        options = study.options().from_cli(args)
        out = Path(options.out)
        t0 = time.time()
        with output_lock(out, what=f"the {study.name} study"):
            res = study.load_function()(**options.kwargs())
            paths = res.save(out)
        print(res.console())
        print(f"\n{time.time() - t0:.0f} s; outputs in {out.resolve()}: {', '.join(p.name for p in paths)}, "
              "results.sqlite")
        return 0

    return command


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if getattr(args, "quiet", False):
        from .core.driver import quiet_libraries

        quiet_libraries()
    try:
        return all_commands()[args.command](args)
    except PerturblabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
