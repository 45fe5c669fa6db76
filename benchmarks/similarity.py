"""Benchmark of layer × layer similarity matrices: perturblab's prepared path against a naive loop.

Both compute, for every measure in ``perturblab.measures.layerwise.MEASURES`` (or ``--measures``),
the full matrix of ``minilm-l6`` (embeddings + 6 layers = 7 arrays) against ``minilm-l3``
(4 arrays), mean-pooled hidden states of ``--n`` seeded Rotten-Tomatoes sentences:

* fast  — ``similarity_matrix(layers_a, layers_b, measures)``: each layer normalised once, its
          Gram norm, CCA basis, unbiased-HSIC terms and centred RBF kernel computed once and
          reused for every pair. Timed once with all measures together (the headline) and
          once per measure on its own (the table; these repeat the shared normalisation).
* naive — for every measure and every (layer_a, layer_b) pair, ``PAIRWISE[m](a_i, b_j)``:
          normalisation, SVDs and kernels recomputed per pair.

Encoding both models is timed and printed separately (not part of the ratio). Prints per
measure fast s, naive s, ratio and max |fast − naive|; then the overall ratio naive / fast
(target ≥ 5×) and the overall max difference, all measured in this one run. Usage::

    .venv/bin/python benchmarks/similarity.py [--n 2000] [--seed 0] [--measures all]
                                              [--threads N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

TARGET = 5.0


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="sentences")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measures", default="all", help="comma list of measures (aliases allowed) or 'all'")
    ap.add_argument("--threads", type=int, default=None, help="torch and BLAS threads (default: as is)")
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    args = ap.parse_args()
    if args.threads is not None:  # BLAS reads these when numpy is first imported
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)

    import numpy as np
    import torch

    from perturblab.data.loaders import load_dataset
    from perturblab.measures.layerwise import PAIRWISE, resolve_measures, similarity_matrix
    from perturblab.models.presets import load_encoder

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    measures = resolve_measures(args.measures)

    t0 = time.perf_counter()
    texts = load_dataset("rotten_tomatoes").sample(args.n, seed=args.seed).texts
    enc_a, enc_b = load_encoder("minilm-l6"), load_encoder("minilm-l3")
    for enc in (enc_a, enc_b):  # warm-up outside the timings
        enc.hidden_states(texts[:8], pooling="mean")
    print(f"data and models loaded in {time.perf_counter() - t0:.1f} s; torch threads: {torch.get_num_threads()}; "
          f"cpu cores: {os.cpu_count()}; BLAS env: {os.environ.get('OMP_NUM_THREADS', '-')}/"
          f"{os.environ.get('OPENBLAS_NUM_THREADS', '-')}/{os.environ.get('MKL_NUM_THREADS', '-')} (OMP/OPENBLAS/MKL); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    enc_s = {}
    t0 = time.perf_counter()
    layers_a = enc_a.hidden_states(texts, pooling="mean")
    enc_s["minilm-l6"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    layers_b = enc_b.hidden_states(texts, pooling="mean")
    enc_s["minilm-l3"] = time.perf_counter() - t0
    na, nb = len(layers_a), len(layers_b)
    print(f"n = {len(texts)} sentences; encoding (not in the ratio): minilm-l6 {enc_s['minilm-l6']:.2f} s "
          f"({na} arrays of {layers_a[0].shape}), minilm-l3 {enc_s['minilm-l3']:.2f} s ({nb} arrays of "
          f"{layers_b[0].shape}); peak RSS so far {peak_mib():.0f} MiB")

    # fast: all measures in one call (headline), then each measure on its own (table)
    t0 = time.perf_counter()
    fast = similarity_matrix(layers_a, layers_b, measures)
    fast_total = time.perf_counter() - t0
    fast_s = {}
    for m in measures:
        t0 = time.perf_counter()
        alone = similarity_matrix(layers_a, layers_b, [m])[m]
        fast_s[m] = time.perf_counter() - t0
        assert np.allclose(alone, fast[m], rtol=0, atol=1e-12), m  # same values alone as together
    rss_fast = peak_mib()

    # naive: every measure, every pair, from scratch
    naive_s, diff = {}, {}
    for m in measures:
        fn = PAIRWISE[m]
        mat = np.zeros((na, nb))
        t0 = time.perf_counter()
        for i in range(na):
            for j in range(nb):
                mat[i, j] = fn(layers_a[i], layers_b[j])
        naive_s[m] = time.perf_counter() - t0
        diff[m] = float(np.abs(mat - fast[m]).max())

    print(f"\n{na} x {nb} = {na * nb} pairs per measure")
    print("measure".ljust(22) + "fast s".rjust(9) + "naive s".rjust(10) + "ratio".rjust(9) + "max|fast-naive|".rjust(17))
    for m in measures:
        print(f"{m:<22}{fast_s[m]:>9.3f}{naive_s[m]:>10.2f}{naive_s[m] / fast_s[m]:>8.1f}x{diff[m]:>17.1e}")
    naive_total, fast_sum = sum(naive_s.values()), sum(fast_s.values())
    ratio, worst = naive_total / fast_total, max(diff.values())
    print(f"{'sum, one measure/call':<22}{fast_sum:>9.3f}{naive_total:>10.2f}{naive_total / fast_sum:>8.1f}x")
    print(f"{'all measures, one call':<22}{fast_total:>9.3f}{naive_total:>10.2f}{ratio:>8.1f}x"
          f"{worst:>17.1e}   <- headline")
    print(f"\noverall speed ratio naive / fast: {ratio:.2f}x (target >= {TARGET:.0f}x: "
          f"{'met' if ratio >= TARGET else 'NOT met'}); overall max |fast - naive|: {worst:.1e}")
    top = max(fast_s, key=fast_s.get)
    print(f"slowest fast measure: {top} ({fast_s[top]:.2f} s of {fast_sum:.2f} s summed); peak RSS after the "
          f"fast path {rss_fast:.0f} MiB, at the end {peak_mib():.0f} MiB; load average at end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    if args.json:
        out = {"n": len(texts), "seed": args.seed, "threads": torch.get_num_threads(), "layers": [na, nb],
               "encode_s": enc_s, "measures": {m: {"fast_s": fast_s[m], "naive_s": naive_s[m],
                                                   "ratio": naive_s[m] / fast_s[m], "max_abs_diff": diff[m]}
                                               for m in measures},
               "fast_total_s": fast_total, "fast_sum_s": fast_sum, "naive_total_s": naive_total,
               "ratio": ratio, "target": TARGET, "met": ratio >= TARGET, "max_abs_diff": worst,
               "peak_rss_mib": peak_mib()}
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
        print(f"numbers written to {args.json}")


if __name__ == "__main__":
    main()
