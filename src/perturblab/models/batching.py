"""Which inputs share a forward pass: length-sorted batches bounded by rows and by padded tokens.

Every local Hugging Face backend (encoders, sequence classifiers and regressors, causal and
sequence-to-sequence language models) sorts its inputs by length, longest first, and cuts them
into batches of at most ``batch_size`` rows and at most ``batch_tokens`` padded tokens (rows ×
the batch's widest input): a few long inputs do not make a batch of many rows as wide as they
are, and a batch's memory stays bounded by the budget whatever the lengths (:func:`batches`).

``batch_tokens="auto"`` (the default) sizes the budget where the model runs
(:func:`auto_batch_tokens`): on the CPU a fixed budget (:data:`CPU_BATCH_TOKENS`, measured by
``benchmarks/batch_tokens.py``), on CUDA the device's free memory over what one token costs
(:func:`bytes_per_token`), a third of it, so that the budget grows with the GPU and shrinks
with the model. An estimate that is still too large is not fatal: a batch that runs out of
device memory is halved and run again (:func:`~.device.split_on_oom`).

Which inputs share a batch never changes what an input scores beyond round-off: padded
positions are masked, so a score agrees with the input scored alone to the batch-invariance
tolerance of the dtype (``tests/models/test_batching.py``: float32 to 1e-5 of the largest magnitude,
bfloat16 to the size of a few bfloat16 round-offs). The budget is therefore not part of a
model's fingerprint, and stored results stay valid when it changes.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..errors import InputError

AUTO = "auto"
#: The CPU budgets in padded tokens (``benchmarks/batch_tokens.py`` on 2 cores: no faster above).
CPU_BATCH_TOKENS = {"encoder": 4096, "language_model": 2048, "seq2seq": 4096}
#: Share of the free device memory a batch may take on CUDA (the rest: the allocator's slack,
#: the other models of a run, and the estimate's error).
CUDA_SHARE = 1 / 3
MIN_AUTO_TOKENS, MAX_AUTO_TOKENS = 512, 1 << 20


def check_batch_tokens(value: Any) -> int | str:
    """``value`` as a budget: a positive integer, or ``"auto"``; anything else is an
    :class:`InputError` naming both forms."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if isinstance(value, bool) or n < 1 or (isinstance(value, float) and value != n):
        raise InputError(f"batch_tokens must be a positive number of padded tokens per batch or 'auto', got {value!r}")
    return n


def batches(widths: Sequence[int], max_rows: int, max_tokens: int) -> Iterator[list[int]]:
    """Indices of ``widths`` per batch: widest first, at most ``max_rows`` rows and at most
    ``max_tokens`` padded tokens (rows × the first, widest, width), and never empty (an input
    wider than the budget is a batch of its own)."""
    order = sorted(range(len(widths)), key=lambda i: -widths[i])
    batch: list[int] = []
    for i in order:
        width = widths[batch[0]] if batch else widths[i]
        if batch and (len(batch) >= max_rows or width * (len(batch) + 1) > max_tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def bytes_per_token(config: Any, dtype_bytes: int, *, max_length: int, vocab: int = 0) -> int:
    """An upper estimate of the device memory one token of a batch takes in a forward pass of a
    transformer of ``config``: the hidden states of every layer (kept when every layer is asked
    for), the feed-forward block's intermediate activations, one layer's attention scores over
    ``max_length`` positions, and for a language model its float32 logits and log-probabilities
    over ``vocab`` tokens."""
    get = lambda *names, default=0: next((int(getattr(config, n)) for n in names  # noqa: E731
                                           if isinstance(getattr(config, n, None), int)), default)
    hidden = get("hidden_size", "n_embd", "d_model", default=1024)
    layers = get("num_hidden_layers", "n_layer", "num_layers", default=24)
    inner = get("intermediate_size", "n_inner", "d_ff", "ffn_dim", default=4 * hidden)
    heads = get("num_attention_heads", "n_head", "num_heads", default=16)
    return int(dtype_bytes * ((layers + 1) * hidden + 2 * inner + heads * max_length) + 8 * vocab)


def token_budget(value: Any, model: Any, kind: str, *, max_length: int, vocab: int = 0) -> int:
    """The padded tokens per batch of ``model`` for a ``batch_tokens`` setting ``value``: the
    number given, or for ``"auto"`` :func:`auto_batch_tokens`; anything else is refused
    (:func:`check_batch_tokens`)."""
    budget = check_batch_tokens(value)
    return auto_batch_tokens(model, kind, max_length=max_length, vocab=vocab) if budget == AUTO else int(budget)


def auto_batch_tokens(model: Any, kind: str, *, max_length: int, vocab: int = 0) -> int:
    """The budget ``batch_tokens="auto"`` gives ``model`` (a torch module with a ``config``) where
    it is placed: :data:`CPU_BATCH_TOKENS` on the CPU; on CUDA :data:`CUDA_SHARE` of the free
    memory of the device of its first weights over :func:`bytes_per_token`, between
    :data:`MIN_AUTO_TOKENS` and :data:`MAX_AUTO_TOKENS`. ``kind`` is ``encoder`` (encoders,
    classifiers, regressors), ``language_model`` or ``seq2seq``."""
    param = next(model.parameters(), None)
    if param is None or param.device.type != "cuda":
        return CPU_BATCH_TOKENS[kind]
    import torch

    free, _total = torch.cuda.mem_get_info(param.device)
    per = bytes_per_token(model.config, param.element_size(), max_length=max_length, vocab=vocab)
    return int(min(MAX_AUTO_TOKENS, max(MIN_AUTO_TOKENS, CUDA_SHARE * free // per)))
