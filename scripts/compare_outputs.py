"""Run one perturblab command with two source trees and compare what each writes.

A change that must keep today's numbers is checked by running the same command (same seeds)
with the code before and after it, and comparing every JSON, CSV and Markdown output file byte
for byte. Columns or keys that name a run (``run_id``) or time it (``seconds``, ``created``)
differ by nature and are left out of the comparison (:func:`perturblab.testing.normalised`, read
from this script's own source tree, so the sides' trees may be older than it).

    git worktree add /tmp/before <commit before the change>
    python scripts/compare_outputs.py --before /tmp/before/src --after src -- \\
        scope --reference minilm-l3 --targets tfidf-lr --capabilities typo --n 40 --trials 2

The command gets ``--out`` (a new directory per side) and ``--quiet`` added. For
``run CONFIG`` the whole run directory is compared. Exit status 0 when every file matches, 1 when
one differs (each difference is listed), 2 when a side failed to run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

COMPARED = {".json", ".csv", ".md"}


def _normaliser():
    """:func:`perturblab.testing.outputs.normalised` of this script's own source tree (the ``src`` beside
    ``scripts``), loaded from its file alone (its top level needs the standard library only), so
    neither side's tree nor an installed perturblab is imported here."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "src" / "perturblab" / "testing" / "outputs.py"
    spec = importlib.util.spec_from_file_location("_compare_outputs_testing", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.normalised


normalised = _normaliser()


def run(src: str, command: list[str], out: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
    argv = [sys.executable, "-m", "perturblab.cli", *command, "--out", str(out), "--quiet"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{src}: exit {done.returncode}\n{done.stderr[-2000:]}", file=sys.stderr)
    return done.returncode


def compare(before: Path, after: Path) -> list[str]:
    """Differences between the output trees (missing files, files whose content differs)."""
    files = lambda root: {p.relative_to(root) for p in root.rglob("*") if p.suffix in COMPARED and p.is_file()
                          and p.name not in ("run.json",)}
    a, b = files(before), files(after)
    diffs = [f"only before: {p}" for p in sorted(a - b)] + [f"only after: {p}" for p in sorted(b - a)]
    diffs += [f"differs: {p}" for p in sorted(a & b) if normalised(before / p) != normalised(after / p)]
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="source tree (the src folder) of the code before the change")
    ap.add_argument("--after", default="src", help="source tree of the code after the change")
    ap.add_argument("--keep", default=None, help="keep both output directories under this folder")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the perturblab command after --")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the perturblab command after --")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="compare-outputs-"))
    sides = {"before": args.before, "after": args.after}
    for side, src in sides.items():
        if run(src, command, root / side) != 0:
            return 2
    diffs = compare(root / "before", root / "after")
    n = len({p for p in (root / "before").rglob("*") if p.suffix in COMPARED})
    print("\n".join(diffs) if diffs else f"{n} output files identical (run ids and times left out); {root}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
