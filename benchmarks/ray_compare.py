"""The time of one fixed comparison of several targets on the local executor and on Ray with 1, 2
and 4 worker processes, its speedup, and the same for its SCoPE searches.

Each run is the command a user types, in a fresh process and a fresh output directory (nothing is
read back), with the same options: ``compare --reference REF --targets T1,...,Tk --studies
invariances,robustness --budget B``; on Ray, ``--executor ray --num-cpus N`` starts a local Ray
instance of N CPUs (one worker process per CPU, as each cell asks for one), so its time includes
Ray's start and each worker's loading of the reference. The plan is the same in every run (the
models' speeds are measured once, by a first run, and read back), so the runs do the same work.

Prints one line per run: the executor, its workers, the seconds of the whole command and the
local run's seconds over them, then the seconds of the searches phase alone (from the driver's
``phase scope.search: ... in S s`` line, ``-v``: from the first cell sent to the last result
stored, so without Ray's start and the models' loading in the driver), its speedup over the local
run and over Ray with 1 worker, and how the run's outputs (run ids and times left out) agree with
the local run's: the same bytes, or the largest difference of a number where only numbers differ
(a Ray cell computes with one thread, the local run with all cores, and a transformer's
probabilities move in their last bits with the threads: docs/cluster.md)::

    .venv/bin/python benchmarks/ray_compare.py [--reference minilm-l3] [--target tfidf-lr] [--targets 6]
        [--budget 2m] [--workers 1,2,4]

The default reference is a transformer, so that the searches are the model's arithmetic; the
targets are copies of ``--target`` under names of their own. On a machine of C cores the local
run already computes with C threads, and more than C workers share the cores (on 2 cores, 4
workers measure the cost of oversubscription, not a gain).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from perturblab.testing import contents


def _run(argv: list[str], out: Path) -> tuple[float, float]:
    """Seconds of ``perturblab -v compare ARGV --out OUT --quiet`` in a fresh process, and of its
    searches phase (0 when it stored every search already)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "perturblab.cli", "-v", "compare", *argv, "--out", str(out),
                           "--quiet"], capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
    searches = sum(float(m.group(1)) for m in re.finditer(r"phase scope\.search: .* in ([0-9.]+) s", done.stderr))
    return took, searches


def _numbers(x: Any) -> list:
    """The numbers of a JSON value, in order, and its shape with them left out."""
    if isinstance(x, dict):
        return [(k, _numbers(v)) for k, v in sorted(x.items())]
    if isinstance(x, list):
        return [_numbers(v) for v in x]
    return ["#", float(x)] if isinstance(x, (int, float)) and not isinstance(x, bool) else [x]


def _number(cell: str) -> Any:
    """A CSV cell as a number where it reads as one."""
    try:
        return float(cell)
    except ValueError:
        return cell


def _largest_difference(a: Any, b: Any) -> float:
    """The largest absolute difference of two JSON values' numbers; inf when they differ in
    anything else."""
    if isinstance(a, list) and isinstance(b, list) and len(a) == 2 and a[:1] == ["#"] == b[:1]:
        x, y = a[1], b[1]
        return 0.0 if x == y or (math.isnan(x) and math.isnan(y)) else abs(x - y)
    if type(a) is not type(b) or (isinstance(a, (list, tuple)) and len(a) != len(b)):
        return math.inf
    if isinstance(a, (list, tuple)):
        return max((_largest_difference(x, y) for x, y in zip(a, b)), default=0.0)
    return 0.0 if a == b else math.inf


def _agreement(got: dict[str, str | None], want: dict[str, str | None]) -> str:
    """``same bytes``; or the largest difference of a number where only numbers differ (JSON and
    CSV files; any other file must be the same); or ``OUTPUTS DIFFER``."""
    if got == want:
        return "same bytes"
    if got.keys() != want.keys():
        return "OUTPUTS DIFFER (files)"
    worst = 0.0
    for name in want:
        if got[name] == want[name]:
            continue
        if name.endswith(".json"):
            mine, theirs = json.loads(got[name]), json.loads(want[name])
        elif name.endswith(".csv"):
            mine, theirs = (list(csv.reader(io.StringIO(t))) for t in (got[name], want[name]))
            mine, theirs = ([[_number(c) for c in row] for row in rows] for rows in (mine, theirs))
        else:
            return f"OUTPUTS DIFFER ({name})"
        worst = max(worst, _largest_difference(_numbers(mine), _numbers(theirs)))
    return f"numbers within {worst:.1e}" if math.isfinite(worst) else "OUTPUTS DIFFER"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default="minilm-l3")
    parser.add_argument("--target", default="tfidf-lr", help="the model each target copies")
    parser.add_argument("--targets", type=int, default=6, help="targets: copies of --target, named t0, t1, ...")
    parser.add_argument("--budget", default="2m")
    parser.add_argument("--workers", default="1,2,4", help="Ray worker processes of each Ray run")
    a = parser.parse_args()
    targets = ",".join(f"t{i}={a.target}" for i in range(a.targets))
    argv = ["--reference", a.reference, "--targets", targets, "--studies", "invariances,robustness",
            "--budget", a.budget]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _run(argv, root / "warm")  # measures the models' speeds once: every run below reads them back
        local, local_search = _run(argv, root / "local")
        expected = contents(root / "local")
        runs = [("local", 1, local, local_search, "")]
        for n in (int(x) for x in a.workers.split(",")):
            took, search = _run([*argv, "--executor", "ray", "--num-cpus", str(n)], root / f"ray{n}")
            runs.append(("ray", n, took, search, _agreement(contents(root / f"ray{n}"), expected)))
    ray1 = next((r for r in runs if r[:2] == ("ray", 1)), None)
    print(f"compare of {a.targets} targets ({a.target}) against {a.reference}, budget {a.budget}, "
          f"on {os.cpu_count()} cores")
    print(f"{'executor':<8} {'workers':>7} {'seconds':>8} {'speedup':>8} {'searches s':>11} {'speedup':>8} "
          f"{'over ray 1':>10}  outputs against the local run's")
    for name, n, took, search, agreement in runs:
        over = f"{ray1[3] / search:.2f}" if ray1 and name == "ray" and search else ""
        print(f"{name:<8} {n:>7} {took:>8.1f} {local / took:>8.2f} {search:>11.1f} "
              f"{local_search / search if search else float('nan'):>8.2f} {over:>10}  {agreement}")


if __name__ == "__main__":
    main()
