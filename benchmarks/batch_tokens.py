"""The CPU token budget: seconds and peak memory of an encoder's forward passes by ``batch_tokens``.

The packaged MiniLM-L6 encoder (``minilm-l6``) gives every layer's mean-pooled states
(``hidden_states``, what similarity and SCoPE's classifiers ask) of ``--n`` texts of two kinds:
short (Rotten Tomatoes sentences) and long (four of them joined, about 120-200 tokens), with
``batch_size`` 64 rows and each ``batch_tokens`` budget (``rows only``: no budget, 64 rows
whatever their width, as before budgets). Each setting runs in a fresh process (peak resident
memory is the process's), best of ``--repeats``; the ratio is the time against ``rows only``.
Also checks that every budget returns the same states to 1e-5 of the largest. Usage::

    python benchmarks/batch_tokens.py [--n 512] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BUDGETS = ["rows", 2048, 4096, 8192, 16384, 32768]

CHILD = r"""
import json, resource, sys, time
import numpy as np, torch
torch.set_num_threads(int(sys.argv[4]))
from perturblab.data.loaders import load_dataset
from perturblab.models.hf import HFEncoder
from perturblab.models.onnx_convert import tokenizer_dir
budget, kind, n, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[5])
texts = [t for t in load_dataset("rotten_tomatoes").texts]
if kind == "long":
    texts = [" ".join(texts[i:i + 4]) for i in range(0, 4 * n, 4)]
texts = texts[:n]
enc = HFEncoder(tokenizer_dir(), batch_tokens=10**9 if budget == "rows" else int(budget))
enc.hidden_states(texts[:8])
best = float("inf")
for _ in range(repeats):
    t0 = time.perf_counter(); states = enc.hidden_states(texts); best = min(best, time.perf_counter() - t0)
np.save(sys.argv[6], np.stack(states))
widths = [len(e["input_ids"]) for e in enc._tokenize(texts)]
print(json.dumps(dict(seconds=best, rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      tokens=sum(widths), batches=sum(1 for _ in __import__("perturblab.models.batching",
                      fromlist=["batches"]).batches(widths, enc.batch_size, enc.batch_tokens)))))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import tempfile

    import numpy as np

    src = str(Path(__file__).resolve().parents[1] / "src")
    print(f"{'texts':<6} {'batch_tokens':>12} {'batches':>8} {'seconds':>8} {'ratio':>6} {'peak RSS MB':>11} {'max |Δ|':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("short", "long"):
            base = ref = None
            for budget in BUDGETS:
                out = Path(tmp) / f"{kind}-{budget}.npy"
                r = subprocess.run([sys.executable, "-c", CHILD, str(budget), kind, str(args.n), str(args.threads),
                                    str(args.repeats), str(out)], capture_output=True, text=True,
                                   env={**__import__("os").environ, "PYTHONPATH": src})
                if r.returncode:
                    raise SystemExit(r.stderr[-3000:])
                row = json.loads(r.stdout.strip().splitlines()[-1])
                states = np.load(out)
                base, ref = base or row["seconds"], states if ref is None else ref
                delta = float(np.abs(states - ref).max() / np.abs(ref).max())
                print(f"{kind:<6} {budget!s:>12} {row['batches']:>8} {row['seconds']:>8.2f} "
                      f"{row['seconds'] / base:>6.2f} {row['rss_mb']:>11.0f} {delta:>9.1e}")


if __name__ == "__main__":
    main()
