"""Models on CUDA against the CPU, and bfloat16 against float32: seconds per sample, tokens per
second, peak memory and how far the scores move.

For each model, the forward passes the studies make are timed on ``cpu`` / ``float32`` (left out
with ``--no-cpu`` or for models over 500M parameters), ``cuda`` / ``float32`` and ``cuda`` /
``bfloat16`` (each after one warm-up pass, best of ``--repeats``):

* a causal language model (``--lm``: a model directory, ``.gguf`` file or preset, or
  ``llama-<size>`` for a Llama of SmolLM2's tokenizer and layout with random weights, sizes
  ``135m`` / ``1b``): per-token log-probabilities of ``--n`` sentences
  (``token_logprobs``: LM SCoPE's accuracy, selfcheck's negation and entropies) and their
  next-token distributions (``next_token_logprobs``: LM SCoPE, word order, tokenization);
* an encoder (``--encoder``: a model directory or preset): every layer's mean-pooled states
  (``hidden_states``: similarity, SCoPE's classifiers).

Agreement is against the ``cuda`` / ``float32`` scores: the largest and mean absolute difference
of the log-probabilities (and of the pooled states, relative to their largest magnitude), and
for language models the share of sentences whose top-1 next token is the same. Random weights
give flat next-token distributions, where the top-1 agreement of bfloat16 means little: read the
log-probability differences there. Peak memory is ``torch.cuda.max_memory_allocated`` on CUDA,
the growth of the process's resident set on the CPU.

On a machine without CUDA it says so and exits 0. Usage::

    python benchmarks/gpu.py [--lm smollm2-135m] [--encoder minilm-l6] [--n 256] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

SENTENCES = [
    "April is the fourth month of the year and comes between March and May.",
    "The cat was tired, so it slept on the warm mat all afternoon.",
    "Paris is the capital of France and lies on the river Seine.",
    "The committee were not sure whether the report was finished.",
    "She said the weather was lovely, but the wind was cold.",
    "Water boils at one hundred degrees at sea level.",
    "The old bridge was built of stone in the twelfth century.",
    "Children were playing in the park while their parents talked.",
    "He opened the letter slowly and read it twice before he answered.",
    "The museum will close early on Friday because of the holiday.",
    "Most of the students finished the exam before the bell rang.",
    "A small boat drifted along the coast in the morning fog.",
]
RANDOM_LLAMA = {  # SmolLM2-135M's layout, and a 1B-class one, with SmolLM2's vocabulary
    "135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                 num_key_value_heads=3),
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8),
}
SETTINGS = (("cpu", "float32"), ("cuda", "float32"), ("cuda", "bfloat16"))


def sentences(n: int) -> list[str]:
    """``n`` distinct sentences: the list above, then each with a numbered clause."""
    return [s if i < len(SENTENCES) else f"{s[:-1]}, as note {i} says."
            for i, s in ((i, SENTENCES[i % len(SENTENCES)]) for i in range(n))]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_lm(spec: str, tokenizer: str | None, device: str, dtype: str):
    from perturblab.models.lm import HFCausalLM

    if spec.startswith("llama-"):
        import torch
        from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

        tok = AutoTokenizer.from_pretrained(tokenizer)
        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=len(tok), max_position_embeddings=2048, initializer_range=0.02,
                          **RANDOM_LLAMA[spec.split("-", 1)[1]])
        with torch.device("meta"):  # nothing allocated until the weights are made where they run
            model = LlamaForCausalLM(cfg)
        model = model.to_empty(device=device).to(getattr(torch, dtype))
        gen = torch.Generator().manual_seed(0)  # on the CPU: the same weights on every device
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32).mul_(0.02))
        return HFCausalLM(model.eval(), tok, name=spec, batch_size=32)
    from perturblab.models.resolve import load_model

    return load_model(f"{spec}[device={device},dtype={dtype}]", "language_model")


def time_it(fn, repeats: int) -> tuple[float, object]:
    fn()  # warm-up: kernels, allocator, caches
    best, out = float("inf"), None
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, out


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def each_setting(args: argparse.Namespace, load, measure) -> list[tuple[dict, object]]:
    """For each of :data:`SETTINGS` (the CPU unless ``--no-cpu``): ``load(device, dtype)`` a model
    (None: leave this setting out), ``measure(model)`` it into (row, scores), and add the peak
    memory; then each row's differences from the ``cuda``/``float32`` scores (``measure``'s
    ``compare(scores, reference)``)."""
    import torch

    out = []
    for device, dtype in SETTINGS:
        if device == "cpu" and args.no_cpu:
            continue
        torch.cuda.reset_peak_memory_stats()
        before = rss_mb()
        model = load(device, dtype)
        if model is None:
            continue
        row, scores = measure(model)
        row = {"device": device, "dtype": dtype, **row,
               "peak_memory_mb": torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else rss_mb() - before}
        out.append((row, scores))
        model = None  # free it before the next setting loads
        torch.cuda.empty_cache()
    return out


def with_differences(rows: list[tuple[dict, object]], compare) -> list[dict]:
    """Each row with ``compare(its scores, the cuda/float32 scores)`` added."""
    ref = next((scores for row, scores in rows if (row["device"], row["dtype"]) == ("cuda", "float32")), None)
    for row, scores in rows:
        if ref is not None:
            row.update(compare(scores, ref))
    return [r for r, _ in rows]


def bench_lm(args: argparse.Namespace) -> list[dict]:
    import numpy as np

    texts = sentences(args.n)

    def load(device: str, dtype: str):
        lm = load_lm(args.lm, args.tokenizer, device, dtype)
        return None if device == "cpu" and sum(p.numel() for p in lm.model.parameters()) > 500e6 else lm

    def measure(lm) -> tuple[dict, object]:
        tokens = sum(len(lm.encode(t)) for t in texts)
        t_tok, tok_lp = time_it(lambda: lm.token_logprobs(texts), args.repeats)
        t_next, next_lp = time_it(lambda: lm.next_token_logprobs(texts), args.repeats)
        row = {"model": args.lm, "params_m": round(sum(p.numel() for p in lm.model.parameters()) / 1e6, 1),
               "n": len(texts), "tokens": tokens, "token_logprobs_s_per_sample": t_tok / len(texts),
               "tokens_per_s": tokens / t_tok, "next_token_s_per_sample": t_next / len(texts)}
        return row, (np.concatenate([np.asarray(x, np.float64) for x in tok_lp]), np.asarray(next_lp, np.float64))

    def compare(scores, ref) -> dict:
        d_tok, d_next = np.abs(scores[0] - ref[0]), np.abs(scores[1] - ref[1])
        return dict(token_logprob_max_abs_diff=float(d_tok.max()), token_logprob_mean_abs_diff=float(d_tok.mean()),
                    next_logprob_max_abs_diff=float(d_next.max()),
                    top1_agreement=float((scores[1].argmax(1) == ref[1].argmax(1)).mean()))

    return with_differences(each_setting(args, load, measure), compare)


def bench_encoder(args: argparse.Namespace) -> list[dict]:
    import numpy as np

    from perturblab.models.hf import HFEncoder
    from perturblab.models.presets import PRESETS

    texts = sentences(args.n)

    def load(device: str, dtype: str):
        if args.encoder in PRESETS:
            from perturblab.core.placement import placement
            from perturblab.models.presets import load_encoder

            with placement(device, dtype):
                return load_encoder(args.encoder, fresh=True)
        return HFEncoder(args.encoder, batch_size=64, device=device, dtype=dtype)

    def measure(enc) -> tuple[dict, object]:
        t, states = time_it(lambda: enc.hidden_states(texts), args.repeats)
        row = {"model": args.encoder, "params_m": round(sum(p.numel() for p in enc.model.parameters()) / 1e6, 1),
               "n": len(texts), "s_per_sample": t / len(texts)}
        return row, np.stack([np.asarray(s, np.float64) for s in states])

    def compare(flat, ref) -> dict:
        scale = float(np.abs(ref).max())
        return dict(states_max_abs_diff_rel=float(np.abs(flat - ref).max() / scale),
                    states_mean_abs_diff_rel=float(np.abs(flat - ref).mean() / scale))

    return with_differences(each_setting(args, load, measure), compare)


def show(rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lm", default="smollm2-135m", help="a language model spec, or llama-135m / llama-1b (random)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer directory for llama-<size>")
    ap.add_argument("--encoder", default="minilm-l6", help="an encoder spec; '' leaves it out")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-cpu", action="store_true", help="measure CUDA only")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here (torch.cuda.is_available() is False): nothing to measure on a GPU")
        return 0
    print(f"{torch.cuda.get_device_name(0)}; torch {torch.__version__}", flush=True)
    rows = []
    for name, bench in (("lm", bench_lm), ("encoder", bench_encoder)):
        if getattr(args, name):
            part = bench(args)
            show(part)
            rows += part
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
