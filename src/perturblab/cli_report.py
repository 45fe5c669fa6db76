"""CLI command ``perturblab report DIR``: one self-contained HTML report of a study's or a run's
outputs, optionally with a PNG screenshot (registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Callable

from .errors import InputError


def _window(s: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", s)
    if not m or int(m.group(1)) == 0 or int(m.group(2)) == 0:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 1280x2400; got {s!r}")
    return int(m.group(1)), int(m.group(2))


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add the ``report`` command to ``sub``."""
    p = sub.add_parser("report", help="one self-contained HTML report of a study's (or a run's) output directory")
    p.add_argument("dir", help="the --out directory of a study, or a run directory holding study directories")
    p.add_argument("--out", default=None, help="HTML file to write (default: DIR/report.html)")
    p.add_argument("--title", default=None, help="report title (default: from run.json or the directory name)")
    p.add_argument("--screenshot", metavar="PNG", default=None,
                   help="also render the report's top to this PNG with headless Chromium (./setup.sh --browser)")
    p.add_argument("--window", type=_window, default=(1280, 2400), metavar="WxH",
                   help="screenshot size in pixels (default 1280x2400)")


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report (and the screenshot when asked) and print where they are."""
    from .report.html import write_report

    if args.screenshot and not args.screenshot.lower().endswith(".png"):
        raise InputError(f"--screenshot {args.screenshot!r}: the screenshot is a PNG; give a file name ending in .png")
    out = write_report(args.dir, out_path=args.out, title=args.title)
    print(f"report: {Path(out).resolve()}")
    if args.screenshot:
        from .report.screenshot import screenshot

        width, height = args.window
        png = screenshot(out, args.screenshot, width=width, height=height)
        print(f"screenshot: {png}")
    return 0


COMMANDS: dict[str, Callable] = {"report": cmd_report}
