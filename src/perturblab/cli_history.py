"""CLI command ``perturblab history``: the releases a history holds (``list``), a release
checked against its baseline (``check``), a baseline accepted (``accept``) and the trend page
(``report``) (registered by :mod:`perturblab.cli`; docs/history.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

from .cli_report import _window
from .core.arguments import Parser
from .errors import InputError

DB_HELP = "the history: a database file (SQLite) or a URL (postgresql://user@host/db)"


def _margin(text: str) -> tuple[str, float]:
    from .studies.compare.config import threshold

    try:
        return threshold(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add ``history`` and its commands to ``sub``."""
    p = sub.add_parser("history", help="the history of releases that compare --history writes: list, check, accept, "
                                       "report")
    hs = p.add_subparsers(dest="history_command", required=True, parser_class=Parser)
    q = hs.add_parser("list", help="the releases of a history, oldest first")
    q.add_argument("db", help=DB_HELP)
    q = hs.add_parser("check", help="compare a release with its baseline, paired on the shared examples, and test the "
                                    "drift over the last releases; exit 1 on a failed check")
    q.add_argument("db", help=DB_HELP)
    q.add_argument("--release", required=True, metavar="LABEL", help="the release to check")
    q.add_argument("--baseline", default="accepted", metavar="accepted|LABEL",
                   help="the release to compare with: the last accepted one before it, or a label (default: accepted)."
                        " With no accepted release of its setup yet (a history's first run), nothing is compared "
                        "and the check passes, unless --require-baseline")
    q.add_argument("--accept-first", action="store_true",
                   help="when no release of its setup is accepted yet, accept this release as the first baseline "
                        "(unless the check fails)")
    q.add_argument("--require-baseline", action="store_true",
                   help="exit 2 when no release of its setup is accepted yet, instead of passing with nothing "
                        "compared")
    q.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when an estimate regressed beyond noise or drifts (5%% family-wise error rate)")
    q.add_argument("--equivalent", action="append", type=_margin, default=[], metavar="METRIC=MARGIN",
                   help="exit 1 unless the change of each matching estimate is shown within ±MARGIN (two one-sided "
                        "tests at 5%%; repeatable), e.g. agreement=0.02")
    q.add_argument("--min-change", type=float, default=0.01, metavar="D",
                   help="the smallest change counted as a regression (and the smallest drift over the window): "
                        "0.01 is one point of a share; 0 counts every change beyond noise (default: 0.01)")
    q.add_argument("--window", type=int, default=5, metavar="K",
                   help="the drift test looks at the last K releases of the setup, this one included "
                        "(default: 5; under 3: no drift test)")
    q.add_argument("--json", default=None, metavar="FILE", help="also write the check as JSON to FILE")
    q = hs.add_parser("accept", help="mark a release as an accepted baseline")
    q.add_argument("db", help=DB_HELP)
    q.add_argument("label", help="the release to accept")
    q = hs.add_parser("report", help="the trend page: each estimate over releases, with intervals, baselines and "
                                     "regressions (one self-contained HTML file)")
    q.add_argument("db", help=DB_HELP)
    q.add_argument("--out", default="history.html", help="the HTML file to write (default: history.html)")
    q.add_argument("--title", default=None, help="the page's title (default: from the history's name)")
    q.add_argument("--screenshot", metavar="PNG", default=None,
                   help="also render the page's top to this PNG with headless Chromium (./setup.sh --browser)")
    q.add_argument("--window", type=_window, default=(1280, 2400), metavar="WxH",
                   help="screenshot size in pixels (default 1280x2400; a phone: 390x1600)")


def _existing(db: str) -> str:
    """``db`` when it names a database URL or an existing file (reading commands never create one)."""
    if "://" not in db and not Path(db).expanduser().is_file():
        raise InputError(f"history {db}: no such file; give the --history file of `perturblab compare` or a "
                         "database URL")
    return db


def _labels_checked(args: argparse.Namespace) -> None:
    """Each label the command names follows the rule of labels (1 to 200 characters, no control
    characters; :func:`~perturblab.history.release.label_problem`), before the history is opened."""
    from .history.release import check_label

    if args.history_command == "accept":
        check_label(args.label, "label")
    if args.history_command == "check":
        check_label(args.release, "--release")
        if args.baseline != "accepted":
            check_label(args.baseline, "--baseline")


def cmd_history(args: argparse.Namespace) -> int:
    """Run one ``history`` command. Its messages show the history as
    :attr:`~perturblab.history.store.History.where` does: a URL's password hidden."""
    from .history.store import open_history

    _labels_checked(args)
    with open_history(_existing(args.db)) as h:
        db = h.where
        if args.history_command == "list":
            rels = h.releases(estimates=True)
            if not rels:
                print(f"{db}: no releases yet")
            for r in rels:
                models = "; ".join(r.models_of().values())  # the specs as given (NAME=SOURCE)
                print(f"{r.label}\t{len(r.estimates)} estimates\t{models}\tagainst {r.reference}"
                      + ("\taccepted" if r.accepted is not None else ""))
            return 0
        if args.history_command == "accept":
            r = h.accept(args.label)
            print(f"release {r.label} accepted as a baseline in {db}")
            return 0
        if args.history_command == "report":
            from .history.trend import write_trend

            if args.screenshot and not args.screenshot.lower().endswith(".png"):
                raise InputError(f"--screenshot {args.screenshot!r}: the screenshot is a PNG; give a file name "
                                 "ending in .png")
            path = write_trend(h, args.out, args.title)
            print(f"trend page: {Path(path).resolve()}")
            if args.screenshot:
                from .report.screenshot import screenshot

                width, height = args.window
                print(f"screenshot: {screenshot(path, args.screenshot, width=width, height=height)}")
            return 0
        from .history.check import check_release

        if args.accept_first and args.baseline != "accepted":
            raise InputError(f"--accept-first accepts a first baseline, but --baseline {args.baseline} names one; "
                             "drop one of them")
        if args.accept_first and args.require_baseline:
            raise InputError("--accept-first passes a check with no baseline, --require-baseline refuses it; give one "
                             "of them")
        result = check_release(h, args.release, args.baseline, equivalent=args.equivalent, window=args.window,
                               min_change=args.min_change, require_baseline=args.require_baseline)
        print(result.console())
        code = result.exit_code(args.fail_on_regression)
        if result.baseline is None:
            if args.accept_first and code == 0:
                h.accept(result.release)
                result.notes.append(f"release {result.release} accepted as the first baseline of its setup")
                print(f"{result.notes[-1]} in {db}")
            else:
                print(f"accept a baseline with `perturblab history accept {db} LABEL` (or check with "
                      "--accept-first); later releases are then compared with it")
        if args.json:
            from .core.files import atomic_write_text, json_safe

            atomic_write_text(Path(args.json), json.dumps(json_safe(result.to_json()), indent=2))
        return code


COMMANDS: dict[str, Callable] = {"history": cmd_history}
