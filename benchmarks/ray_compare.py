"""The time of one fixed comparison of several targets on the local executor and on Ray with 1, 2
and 4 worker processes, and its speedup over the local run.

Each run is the command a user types, in a fresh process and a fresh output directory (nothing is
read back), with the same options: ``compare --reference REF --targets T1,...,Tk --studies
invariances,robustness --budget B``; on Ray, ``--executor ray --num-cpus N`` starts a local Ray
instance of N CPUs (one worker process per CPU, as each cell asks for one), so its time includes
Ray's start. The plan is the same in every run (the models' speeds are measured once and read
back), so the runs do the same work; every run's outputs are checked to be the local run's, byte
for byte (run ids and times left out). Prints one line per run: the executor, its workers, the
seconds, and the local run's seconds over them::

    .venv/bin/python benchmarks/ray_compare.py [--targets 6] [--budget 2m] [--workers 1,2,4]

On a machine of C cores, more than C workers share the cores (on 2 cores, 4 workers measure the
cost of oversubscription, not a gain).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perturblab.testing import contents


def _run(argv: list[str], out: Path) -> float:
    """Seconds of ``perturblab compare ARGV --out OUT --quiet`` in a fresh process."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "perturblab.cli", "compare", *argv, "--out", str(out), "--quiet"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default="tfidf-lr")
    parser.add_argument("--targets", type=int, default=6, help="targets: copies of the reference, named t0, t1, ...")
    parser.add_argument("--budget", default="2m")
    parser.add_argument("--workers", default="1,2,4", help="Ray worker processes of each Ray run")
    a = parser.parse_args()
    targets = ",".join(f"t{i}={a.reference}" for i in range(a.targets))
    argv = ["--reference", a.reference, "--targets", targets, "--studies", "invariances,robustness",
            "--budget", a.budget]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _run(argv, root / "warm")  # measures the models' speeds once: every run below reads them back
        local = _run(argv, root / "local")
        expected = contents(root / "local")
        print(f"compare of {a.targets} targets against {a.reference}, budget {a.budget}, on {os.cpu_count()} cores")
        print(f"{'executor':<10} {'workers':>7} {'seconds':>8} {'speedup':>8}")
        print(f"{'local':<10} {1:>7} {local:>8.1f} {1.0:>8.2f}")
        for n in (int(x) for x in a.workers.split(",")):
            took = _run([*argv, "--executor", "ray", "--num-cpus", str(n)], root / f"ray{n}")
            same = contents(root / f"ray{n}") == expected
            print(f"{'ray':<10} {n:>7} {took:>8.1f} {local / took:>8.2f}" + ("" if same else "  OUTPUTS DIFFER"))


if __name__ == "__main__":
    main()
