"""Encoder-decoder (seq2seq) language models, e.g. T5 and BART, for generation studies.

The generation tasks of the robustness paper (Sec. 3.3, Table 4: XSum summarisation, CommonGen,
SQuAD question generation) are run with GPT-2 *and* T5, a seq2seq model. :class:`HFSeq2SeqLM`
wraps a transformers ``AutoModelForSeq2SeqLM`` so that
:func:`perturblab.generation` (``perturblab generation --models DIR``; the study
:class:`~perturblab.studies.robustness.generation.GenerationStudy`) generates with it exactly as with a causal
:class:`~.lm.HFCausalLM`:

* **The prompt is the encoder input**, tokenized with the tokenizer's own special tokens (T5
  appends ``</s>``, BART wraps the text in ``<s> … </s>``), as the model saw inputs in training.
  The decoder starts from the model's ``decoder_start_token_id``; the result is the decoded
  output without special tokens, cut at the first end-of-sequence token. Put a task prefix in
  the study's prompt where a checkpoint expects one (``--prompt "summarize: {source}"`` for T5).
* **Decoding** is greedy by default, or sampling with ``seed`` (``sample=True``, plain
  multinomial sampling at ``temperature``, no top-k/top-p), as :meth:`.HFCausalLM.generate`.
  A checkpoint's own decoding settings for beam search, minimum length, n-gram blocking and
  repetition penalty (summarisation checkpoints such as BART-CNN ship them) are overridden, so
  every model of a study decodes the same way; forced start/end tokens (mBART's language
  token) are kept.
* **Batching.** Encoder inputs are sorted by length and right-padded under an attention mask
  (the encoder attends to real tokens only, positions start at 0 in every row), so batched
  and one-at-a-time greedy generations agree.

**What it does not claim.** The scoring methods of the :class:`~.lm.LanguageModel` protocol
(``token_logprobs``, ``next_token_logprobs``, ``span_logprobs``) are defined for a causal LM:
log p(t_i | t_<i) of a text. A seq2seq model scores a *target given a source*; scoring a text
as the decoder target of an empty source is not a meaningful perplexity, so those methods raise
:class:`~perturblab.errors.CapabilityError` and ``capabilities`` holds only ``encode``,
``decode``, ``tokenizer`` and ``generate``: the self-supervised and SCoPE language-model studies
refuse the model before any work. What such a model does give, teacher-forced, is
:meth:`HFSeq2SeqLM.target_logprobs`: log p(target token j | source, target tokens < j).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import CapabilityError, InputError
from .base import fingerprint_of
from .batching import AUTO
from .device import loading, placed, with_dtype
from .lm import LocalLanguageModel, _check_generation

__all__ = ["SEQ2SEQ_CAPABILITIES", "HFSeq2SeqLM"]

DEFAULT_BATCH_SIZE = 32
DEFAULT_BATCH_TOKENS = AUTO  # 4096 on the CPU (batching.CPU_BATCH_TOKENS), from free memory on CUDA
DEFAULT_MAX_LENGTH = 512
#: What :class:`HFSeq2SeqLM` can do (keys of :data:`~.lm_capabilities.CAPABILITIES`).
SEQ2SEQ_CAPABILITIES: frozenset[str] = frozenset({"encode", "decode", "tokenizer", "generate"})


class HFSeq2SeqLM(LocalLanguageModel):
    """A transformers encoder-decoder model (``AutoModelForSeq2SeqLM``: T5, BART …) for
    generation studies (see the module docstring).

    ``model`` is a model instance (then pass ``tokenizer``), a local directory or a hub id
    (loaded when constructed, never at import). ``max_length`` caps the encoder input in tokens
    (at most the model's learned positions, e.g. BART's 1024; default that limit, or 512 for
    relative positions as in T5); longer prompts raise :class:`InputError`.
    ``batch_size`` and ``batch_tokens`` bound a batch's rows and padded encoder tokens.
    """

    capabilities: frozenset[str] = SEQ2SEQ_CAPABILITIES

    def __init__(self, model: Any, tokenizer: Any = None, *, name: str | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, batch_tokens: int | str = DEFAULT_BATCH_TOKENS,
                 max_length: int | None = None, fingerprint: str | None = None, device: str | None = None,
                 dtype: str | None = None) -> None:
        self._source = str(model) if isinstance(model, (str, Path)) else None
        if self._source is not None:
            from transformers import AutoConfig, AutoModelForSeq2SeqLM

            config = AutoConfig.from_pretrained(self._source)
            self._check_encoder_decoder(config, self._source)
            model = AutoModelForSeq2SeqLM.from_pretrained(self._source, config=config, **loading(device, dtype))
        model = placed(model, device, dtype, loaded=self._source is not None)
        self._check_encoder_decoder(model.config, self._source or type(model).__name__)
        self._setup_model(model, tokenizer, name, batch_size, batch_tokens, kind="seq2seq")
        cfg = model.config
        learned = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        # learned positions cap the input; relative ones (T5) do not, there the default is 512
        self.max_length = int(min(learned, max_length or learned) if learned else max_length or DEFAULT_MAX_LENGTH)
        if self.max_length < 2:
            raise InputError(f"max_length must be >= 2, got {self.max_length}")
        # learned decoder positions (BART) bound the output; relative ones (T5) do not
        self._decoder_limit: int | None = getattr(cfg, "max_position_embeddings", None)
        from .hf import _files_fingerprint

        # the weight files as loaded, not as they are when the fingerprint is first asked for
        self._files = None if fingerprint else _files_fingerprint(self._source)
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id
        self._pad = int(pad if pad is not None else (eos if eos is not None else 0))
        start = getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None)
        if start is None:
            start = getattr(cfg, "decoder_start_token_id", None)
        if isinstance(start, (list, tuple)):
            start = start[0] if start else None
        self._start = None if start is None else int(start)
        # computed now, from the model and tokenizer as loaded, so it never moves with use
        self._fingerprint: str = with_dtype(fingerprint or self._computed_fingerprint(), self.model)

    @staticmethod
    def _check_encoder_decoder(config: Any, what: str) -> None:
        if not getattr(config, "is_encoder_decoder", False):
            raise InputError(f"{what} is not an encoder-decoder model (config.is_encoder_decoder is false); "
                             "use HFCausalLM (or load_language_model) for decoder-only models")

    def __repr__(self) -> str:
        return f"HFSeq2SeqLM({self.name!r}, vocab={self.vocab_size}, max_length={self.max_length})"

    def _computed_fingerprint(self) -> str:
        """Weights, tokenizer and the decoding tokens of the generation config, as loaded."""
        from .hf import _model_fingerprint, _tokenizer_fingerprint

        gen = getattr(self.model, "generation_config", None)
        tokens = [getattr(gen, k, None) for k in ("decoder_start_token_id", "eos_token_id",
                                                 "forced_bos_token_id", "forced_eos_token_id")]
        return fingerprint_of(type(self).__name__, _model_fingerprint(self.model, self._files),
                              _tokenizer_fingerprint(self.tokenizer), tokens)

    @property
    def fingerprint(self) -> str:
        """Changes whenever outputs could: weights, tokenizer, decoder start and end tokens.
        Computed once, when the model is loaded."""
        return self._fingerprint

    def _source_ids(self, texts: Sequence[str], what: str) -> list[list[int]]:
        """Encoder input ids of each text (with the tokenizer's special tokens), validated."""
        if isinstance(texts, str):
            raise InputError(f"{what} must be a list of texts, not a single string; wrap it in a list")
        out = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"{what}[{i}] is a {type(text).__name__}; give texts")
            ids = list(self.tokenizer(text, add_special_tokens=True)["input_ids"])
            if not ids:
                raise InputError(f"{what}[{i}] has no tokens; drop empty texts first")
            if len(ids) > self.max_length:
                raise InputError(f"{what}[{i}] has {len(ids)} tokens, longer than the encoder input limit of "
                                 f"{self.name} ({self.max_length}); shorten or filter long texts first")
            out.append(ids)
        return out

    # ------------------------------------------------------------------ what it does not claim
    def _cannot(self, what: str) -> CapabilityError:
        return CapabilityError(
            f"{self.name} cannot give {what}: it is an encoder-decoder (seq2seq) model, which scores a target "
            "given a source, not a text on its own; seq2seq models serve generation studies only (perturblab "
            "generation). Use a causal language model (a preset, a decoder-only Hugging Face directory or a "
            ".gguf file) for it, or target_logprobs(sources, targets) for teacher-forced target scores")

    def token_logprobs(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """Not available for a seq2seq model (:class:`CapabilityError`; see the module docstring)."""
        raise self._cannot("per-token log-probabilities of a text")

    def next_token_logprobs(self, inputs: Sequence[Any]) -> np.ndarray:
        """Not available for a seq2seq model (:class:`CapabilityError`; see the module docstring)."""
        raise self._cannot("next-token distributions after a text")

    def span_logprobs(self, inputs: Sequence[Any], starts: Sequence[int]) -> list[np.ndarray]:
        """Not available for a seq2seq model (:class:`CapabilityError`; see the module docstring)."""
        raise self._cannot("next-token distributions along a span of a text")

    # ------------------------------------------------------------------ batching
    def _padded(self, seqs: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ids and their attention mask, on the model's device."""
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.tensor(list(s), dtype=torch.long)
            mask[r, : len(s)] = 1
        device = next(self.model.parameters()).device
        return ids.to(device), mask.to(device)

    # ------------------------------------------------------------------ scoring a target
    def target_logprobs(self, sources: Sequence[str], targets: Sequence[str | Sequence[int]], *,
                        with_eos: bool = False) -> list[np.ndarray]:
        """Per pair, float64 log p(y_j | source, y_<j) of every target token, teacher-forced.

        The source is the encoder input (with the tokenizer's special tokens, as in
        :meth:`generate`); the target tokens y are ``encode(target)`` (or the given ids) and the
        decoder reads the decoder start token followed by y_<j. ``with_eos=True`` appends the
        end-of-sequence token to y, so its probability (the target ending there) is scored too.
        Results do not depend on batching (to float rounding).
        """
        srcs = self._source_ids(sources, "sources")
        if isinstance(targets, str) or len(targets) != len(srcs):
            raise InputError(f"give one target per source: {len(srcs)} sources, "
                             f"{'a single string' if isinstance(targets, str) else len(targets)} targets")
        if self._start is None:
            raise InputError(f"{self.name} has no decoder_start_token_id in its config; set it to score targets")
        eos = self.tokenizer.eos_token_id
        if with_eos and eos is None:
            raise InputError(f"{self.name}'s tokenizer has no end-of-sequence token; use with_eos=False")
        tgts = []
        for i, t in enumerate(targets):
            ids = self.encode(t) if isinstance(t, str) else [int(x) for x in t]
            ids = ids + [int(eos)] if with_eos else ids
            if not ids:
                raise InputError(f"targets[{i}] has no tokens; drop empty targets first")
            if self._decoder_limit is not None and len(ids) > self._decoder_limit:
                raise InputError(f"targets[{i}] has {len(ids)} tokens, more than the {self._decoder_limit} "
                                 f"decoder positions of {self.name}; shorten it")
            tgts.append(ids)
        out: list[np.ndarray] = [np.zeros(0)] * len(srcs)
        with torch.inference_mode():
            for idx in self._batches([len(s) + len(t) for s, t in zip(srcs, tgts)]):
                ids, mask = self._padded([srcs[i] for i in idx])
                dec, dec_mask = self._padded([[self._start] + tgts[i][:-1] for i in idx])
                logits = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec,
                                    decoder_attention_mask=dec_mask).logits.float()
                logp = torch.log_softmax(logits, dim=-1)
                for r, i in enumerate(idx):
                    tgt = torch.as_tensor(tgts[i], dtype=torch.long, device=logp.device)
                    out[i] = logp[r, : len(tgts[i])].gather(1, tgt[:, None])[:, 0].double().cpu().numpy()
        return out

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                 seed: int = 0, temperature: float = 1.0) -> list[str]:
        """The output of each prompt as the encoder input (greedy by default; ``sample=True``
        draws with ``seed``), decoded without special tokens and cut at end-of-sequence.

        Greedy results do not depend on batching. Sampled ones depend on ``seed`` and on the
        batch an input falls into (the sampler draws for a whole batch); the global torch RNG
        is left as it was.
        """
        _check_generation(max_new_tokens, sample, temperature)
        if self._decoder_limit is not None and max_new_tokens + 1 > self._decoder_limit:
            raise InputError(f"max_new_tokens ({max_new_tokens}) plus the decoder start token exceed the "
                             f"{self._decoder_limit} decoder positions of {self.name}")
        seqs = self._source_ids(prompts, "prompts")
        eos = self.tokenizer.eos_token_id
        out = [""] * len(seqs)
        kw = self._decoding(max_new_tokens, sample, temperature, self._pad)
        with torch.inference_mode(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for idx in self._batches([len(s) for s in seqs]):
                ids, mask = self._padded([seqs[i] for i in idx])
                gen = self.model.generate(input_ids=ids, attention_mask=mask, **kw)
                for r, i in enumerate(idx):
                    new = gen[r, 1:].tolist()  # position 0 is the decoder start token
                    if eos is not None and eos in new:
                        new = new[: new.index(eos)]
                    out[i] = self.tokenizer.decode(new, skip_special_tokens=True)
        return out
