"""How close ``perturblab compare``'s plan comes to the time the comparison takes.

Runs each comparison as a user would (a new process, a new ``--out``), and prints per study the
planned and the actual seconds and their ratio, then the whole command's: the planned total
against the wall time from the command's start to its end (loading, timing the models and
writing the report included). The plan is meant to be within ±30 % of the actual time.

Default: the two comparisons of docs/compare.md (MiniLM-L6 against its int8 copy and MiniLM-L3,
SmolLM2-135M against its int8 copy) at the default budget. Usage::

    .venv/bin/python benchmarks/compare_plan.py [--budget 10m] [--only classifiers|language-models]
        [--keep DIR] [--reference R] [--targets T,U] [-- EXTRA COMPARE OPTIONS]

The timed models' speeds are kept in the cache, so a second run reads them back; the studies'
results are not (each run has a new ``--out``), except the classifier heads and converted weights
that every user's second run finds too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMPARISONS = {
    "classifiers": ["--reference", "minilm-l6", "--targets", "minilm-l6-int8,minilm-l3"],
    "language-models": ["--reference", "smollm2-135m", "--targets", "smollm2-135m-int8"],
}


def run(name: str, options: list[str], out: Path) -> dict:
    """One comparison in a new process: its plan against its times."""
    exe = Path(sys.executable).with_name("perturblab")
    argv = [str(exe), "compare", *options, "--out", str(out), "--quiet"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr[-3000:]}")
    saved = json.loads((out / "compare.json").read_text())
    return {"name": name, "wall": wall, "plan": saved["plan"], "exit": done.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", default="10m", help="the comparisons' --budget (default: 10m)")
    ap.add_argument("--only", choices=sorted(COMPARISONS), help="run only this comparison")
    ap.add_argument("--keep", help="keep the comparisons' output directories under this one")
    ap.add_argument("--reference", help="the classifiers' reference instead of minilm-l6 (tfidf-lr, minilm-l3)")
    ap.add_argument("--targets", help="the classifiers' targets instead of minilm-l6-int8,minilm-l3")
    ap.add_argument("extra", nargs="*", help="more compare options, after --")
    a = ap.parse_args()
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="compare-plan-"))
    comparisons = dict(COMPARISONS)
    if a.reference or a.targets:
        given = comparisons["classifiers"]
        comparisons["classifiers"] = ["--reference", a.reference or given[1], "--targets", a.targets or given[3]]
    for name, options in comparisons.items():
        if a.only and name != a.only:
            continue
        r = run(name, [*options, "--budget", a.budget, *a.extra], root / name)
        print(f"{name} (--budget {a.budget}, exit {r['exit']}):")
        planned = sum(p["estimated_seconds"] for p in r["plan"])
        for p in r["plan"]:
            ratio = p["seconds"] / p["estimated_seconds"] if p["estimated_seconds"] else float("nan")
            print(f"  {p['name']:<24} {p['size']:<16} planned {p['estimated_seconds']:7.1f} s  "
                  f"took {p['seconds']:7.1f} s  actual/planned {ratio:5.2f}")
        print(f"  {'whole command':<24} {'':<16} planned {planned:7.1f} s  took {r['wall']:7.1f} s  "
              f"actual/planned {r['wall'] / planned:5.2f}")


if __name__ == "__main__":
    main()
