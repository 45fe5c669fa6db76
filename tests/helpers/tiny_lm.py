"""A tiny causal LM built from a config (no download): byte-level BPE tokenizer trained on a
few sentences, a 2-layer Llama with random weights. Shared by the language-model tests."""

from __future__ import annotations

import functools

SENTENCES = [
    "April is the fourth month of the year and comes between March and May.",
    "The cat was tired, so it slept on the warm mat all afternoon.",
    "Paris is the capital of France and lies on the river Seine.",
    "The committee were not sure whether the report was finished.",
    "Media.Vision would return to the franchise with a new game.",
    "She said the weather was lovely, but the wind was cold.",
    "Water boils at one hundred degrees at sea level.",
    "What the fuck is this, he shouted, and then he left.",
    "The old bridge was built of stone in the twelfth century.",
    "Children were playing in the park while their parents talked.",
]


def train_tokenizer(texts, vocab_size: int = 320, bos: bool = False):
    """A byte-level BPE tokenizer trained on ``texts`` (ids 0 = ``<|endoftext|>``, 1 = ``<s>``);
    ``bos=True`` makes it prepend ``<s>`` like Llama/Gemma."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   bos_token="<s>")


@functools.lru_cache(maxsize=None)
def tiny_tokenizer(vocab_size: int = 320, bos: bool = False):
    """:func:`train_tokenizer` on :data:`SENTENCES` (cached)."""
    return train_tokenizer(SENTENCES * 3, vocab_size, bos)


def tiny_causal_model(vocab_size: int, seed: int = 0, max_positions: int = 256, initializer_range: float = 0.02):
    """A 2-layer Llama with random weights drawn after ``torch.manual_seed(seed)``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=4, intermediate_size=64, max_position_embeddings=max_positions,
                      initializer_range=initializer_range, bos_token_id=1, eos_token_id=0, pad_token_id=0)
    return LlamaForCausalLM(cfg).eval()


def save_lm(path, seed: int = 0):
    """The tiny causal LM of ``seed`` saved as a model directory at ``path`` (once); returns the path."""
    from pathlib import Path

    path = Path(path)
    if not path.is_dir():
        lm = tiny_lm(seed=seed)
        lm.model.save_pretrained(path)
        lm.tokenizer.save_pretrained(path)
    return path


def tiny_lm(seed: int = 0, bos: bool = False, **kwargs):
    """An :class:`HFCausalLM` over the tiny model (``kwargs`` go to HFCausalLM)."""
    from perturblab.models.lm import HFCausalLM

    tok = tiny_tokenizer(bos=bos)
    return HFCausalLM(tiny_causal_model(len(tok), seed), tok, name=f"tiny{seed}{'-bos' * bos}", **kwargs)
