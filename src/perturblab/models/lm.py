"""Language models: the :class:`LanguageModel` protocol and its Hugging Face backend.

A language model here answers three questions about token sequences (after
lm-evaluation-harness's three-method interface), plus the tokenizer round trip:

* :meth:`~LanguageModel.token_logprobs` — log p(t_i | t_<i) of every scored token of a text
  (perplexity, the negation metric of the self-supervised evaluation paper, Sec. 4);
* :meth:`~LanguageModel.next_token_logprobs` — the full next-token distribution after a
  prefix (word order, tokenization and toxicity metrics, Sec. 5, 7, 8; SCoPE App. G);
* :meth:`~LanguageModel.span_logprobs` — the next-token distributions at every position of a
  span (long-range context, Sec. 6);
* :meth:`~LanguageModel.generate` — greedy or seeded sampled continuations (Sec. 5);
  :func:`generate_with_next` gives them with the next-token distributions after the prompts, from
  one pass over each prompt where the backend offers it.

Inputs are texts or lists of token ids (``encode(text)`` gives the ids of a text, without
special tokens); ids let a caller control tokenization (the chopped tokenization of Sec. 8,
passages assembled sentence by sentence so that the last sentence has the same ids in both
versions).

**The first token.** A causal LM cannot give the probability of the first token of a text
without some context. :class:`HFCausalLM` puts the tokenizer's own start tokens (its BOS, when
the tokenizer adds one, e.g. Gemma) before every input, so every text token is scored. When the
tokenizer adds none (SmolLM2, GPT-2), the first text token is *not scored*:
``token_logprobs`` returns ``len(ids) - 1`` values and perplexities average over them. Pass
``start_token="<|endoftext|>"`` (any token of the vocabulary) to condition on it instead, or
``start_token=None`` to never add one.

**Batching.** Inputs are sorted by length and right-padded; with causal attention and an
attention mask the real positions never see the padding and position ids are the default
``0..len-1``, so batched and one-at-a-time results agree to float rounding (tests assert
max |Δ log-prob| ≤ 1e-4). Only the logits of the positions a call needs are computed
(``logits_to_keep``). Generation left-pads, as transformers' ``generate`` expects.

**Capabilities.** Not every backend can answer every question: an OpenAI-compatible API gives
per-token log-probs and generations but no full distributions and no tokenizer. A model's
``capabilities`` (a frozenset of :data:`CAPABILITIES` keys; :class:`HFCausalLM` has them all)
say what it can do; :func:`require` and :func:`check_metric_capabilities` turn a missing one
into a :class:`~perturblab.errors.CapabilityError` before a study does any work.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from ..errors import InputError
from .base import fingerprint_of
from .batching import AUTO as AUTO_BUDGET
from .batching import batches, token_budget
from .device import loading, model_dtype, placed, split_on_oom, with_dtype
from .lm_capabilities import (ALL_CAPABILITIES, CAPABILITIES, capabilities_of, check_metric_capabilities,
                              describe_capabilities, require)

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["ALL_CAPABILITIES", "AUTO", "CAPABILITIES", "HFCausalLM", "LMInput", "LanguageModel",
           "capabilities_of", "check_metric_capabilities", "describe_capabilities", "generate_with_next",
           "log_perplexity", "require"]

LMInput = Union[str, Sequence[int]]
DEFAULT_BATCH_SIZE = 32
DEFAULT_BATCH_TOKENS = AUTO_BUDGET  # 2048 on the CPU (batching.CPU_BATCH_TOKENS), from free memory on CUDA
AUTO = "auto"


@runtime_checkable
class LanguageModel(Protocol):
    """Anything that scores token sequences and generates text."""

    name: str
    fingerprint: str
    vocab_size: int
    max_length: int

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids."""
        ...

    def token_logprobs(self, inputs: Sequence[LMInput]) -> list[np.ndarray]:
        """Per input, log p(t_i | t_<i) of every scored token (float64)."""
        ...

    def next_token_logprobs(self, inputs: Sequence[LMInput]) -> np.ndarray:
        """(n, vocab_size) float32 log-probabilities of the token after each input."""
        ...

    def span_logprobs(self, inputs: Sequence[LMInput], starts: Sequence[int]) -> list[np.ndarray]:
        """Per input, (len - start, vocab_size) float32 next-token log-probs at positions start.. ."""
        ...

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                 seed: int = 0, temperature: float = 1.0) -> list[str]:
        """The continuation of each prompt (without the prompt)."""
        ...


def input_ids(lm: Any, inputs: Sequence[LMInput], min_tokens: int = 1) -> list[list[int]]:
    """Per input, ``lm.prefix`` (its start tokens) + the input's ids (a text through
    ``lm.encode``), refusing a single string, an input of fewer than ``min_tokens`` tokens and one
    longer than ``lm.max_length``, each with the input's index and the fix."""
    if isinstance(inputs, str):
        raise InputError("inputs must be a list of texts or id lists, not a single string; wrap it in a list")
    out = []
    for i, x in enumerate(inputs):
        ids = lm.encode(x) if isinstance(x, str) else [int(t) for t in x]
        if len(ids) < min_tokens:
            raise InputError(f"inputs[{i}] has {len(ids)} token(s); at least {min_tokens} needed "
                             "(drop empty texts before scoring)")
        full = lm.prefix + ids
        if len(full) > lm.max_length:
            raise InputError(f"inputs[{i}] has {len(full)} tokens, longer than the context window of "
                             f"{lm.name} ({lm.max_length}); shorten or filter long texts first")
        out.append(full)
    return out


def scored_tokens(lm: Any, inputs: Sequence[LMInput]) -> tuple[list[list[int]], list[np.ndarray], list[np.ndarray]]:
    """What :meth:`LanguageModel.token_logprobs` scores, per input: its ids (:func:`input_ids`),
    the positions whose next-token distribution is read (all but the last) and the tokens read
    there (all but the first); an input of one token, with no start token before it, is refused."""
    seqs = input_ids(lm, inputs, min_tokens=1)
    for i, s in enumerate(seqs):
        if len(s) < 2:
            hint = " or start_token=<a token>" if hasattr(lm, "start_token") else ""
            raise InputError(f"inputs[{i}] has a single token and {lm.name} adds no start token, "
                             f"so no token can be scored; use longer texts{hint}")
    return seqs, [np.arange(len(s) - 1) for s in seqs], [np.asarray(s[1:]) for s in seqs]


def span_positions(lm: Any, inputs: Sequence[LMInput], starts: Sequence[int]) -> tuple[list[list[int]], list[np.ndarray]]:
    """What :meth:`LanguageModel.span_logprobs` reads, per input: its ids and the positions of its
    text tokens from ``starts[i]`` on (``starts`` index the text tokens, start tokens not
    counted), each start checked to lie within the text."""
    seqs = input_ids(lm, inputs)
    if len(starts) != len(seqs):
        raise InputError(f"starts has {len(starts)} entries for {len(seqs)} inputs; give one per input")
    k = len(lm.prefix)
    positions = []
    for i, (s, st) in enumerate(zip(seqs, starts)):
        if not 0 <= int(st) < len(s) - k:
            raise InputError(f"starts[{i}] = {st} is outside the {len(s) - k} text tokens of inputs[{i}]")
        positions.append(np.arange(k + int(st), len(s)))
    return seqs, positions


def log_perplexity(token_logprobs: np.ndarray) -> float:
    """log ppl = −mean log p(t_i | t_<i) over the scored tokens (paper Sec. 4)."""
    lp = np.asarray(token_logprobs, dtype=np.float64)
    if lp.size == 0:
        raise InputError("no scored tokens: the text has one token and the model adds no start token; "
                         "use longer texts or start_token=<a vocabulary token>")
    return float(-lp.mean())


#: Decoding settings a checkpoint may carry that would turn greedy/sampled decoding into something
#: else; generation resets them to these neutral values.
_PLAIN_DECODING: dict[str, Any] = {"num_beams": 1, "min_length": 0, "min_new_tokens": None,
                                   "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
                                   "repetition_penalty": 1.0, "length_penalty": 1.0}


def generate_with_next(lm: Any, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                       seed: int = 0, temperature: float = 1.0) -> tuple[list[str], np.ndarray]:
    """``lm.generate(prompts, ...)`` and ``lm.next_token_logprobs(prompts)`` together: from one pass
    over each prompt where the model offers it (a ``generate_with_next`` method: the local
    backends), else from the two calls.

    >>> texts, logprobs = generate_with_next(lm, ["The cat"], max_new_tokens=8)  # doctest: +SKIP
    >>> logprobs.shape  # doctest: +SKIP
    (1, 49152)
    """
    kw: dict[str, Any] = dict(max_new_tokens=max_new_tokens, sample=sample, seed=seed, temperature=temperature)
    own = getattr(lm, "generate_with_next", None)
    if callable(own):
        return own(prompts, **kw)
    return lm.generate(prompts, **kw), lm.next_token_logprobs(prompts)


def _check_generation(max_new_tokens: int, sample: bool, temperature: float) -> None:
    """Refuse generation settings no backend can honour."""
    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if sample and temperature <= 0:
        raise InputError(f"temperature must be > 0 when sampling, got {temperature}")


class LocalLanguageModel:
    """What the local (Hugging Face) language-model backends share: their set-up around a loaded
    model, and ``encode`` / ``decode`` through its tokenizer."""

    model: Any
    tokenizer: Any
    _source: str | None

    def _setup_model(self, model: Any, tokenizer: Any, name: str | None, batch_size: int, batch_tokens: int | str,
                     kind: str = "language_model") -> None:
        """Keep ``model`` (placed, put in eval mode), its tokenizer (``tokenizer`` or the source's),
        name, batch limits (``batch_tokens="auto"`` sized where the model is placed,
        :mod:`.batching`; ``kind`` picks the CPU budget) and vocabulary size (the output head's
        width)."""
        from .hf import _load_tokenizer

        self.model = model.eval()
        self.tokenizer = _load_tokenizer(tokenizer, self._source)
        self.name = name or self._source or type(model).__name__
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        head = model.get_output_embeddings()
        self.vocab_size = int(getattr(head, "out_features", None) or model.config.vocab_size)
        width = int(min(getattr(model.config, "max_position_embeddings", None) or 4096, 4096))
        self.batch_size = int(batch_size)
        self.batch_tokens = token_budget(batch_tokens, model, kind, max_length=width, vocab=self.vocab_size)

    def _batches(self, widths: Sequence[int]) -> Iterator[list[int]]:
        """Indices per batch of sequences of these lengths: widest first, ≤ batch_size rows and
        ≤ batch_tokens padded tokens (:func:`~.batching.batches`)."""
        return batches(widths, self.batch_size, self.batch_tokens)

    @staticmethod
    def _decoding(max_new_tokens: int, sample: bool, temperature: float, pad: int) -> dict[str, Any]:
        """``generate`` keywords of plain greedy (or, with ``sample``, plain multinomial) decoding,
        whatever decoding settings a checkpoint ships (beams, minimum length, n-gram blocking,
        repetition penalty, top-k/top-p), so every model of a study decodes the same way."""
        kw: dict[str, Any] = dict(_PLAIN_DECODING, max_new_tokens=max_new_tokens, do_sample=sample,
                                  pad_token_id=pad)
        kw.update(dict(temperature=temperature, top_k=0, top_p=1.0) if sample else
                  dict(temperature=None, top_k=None, top_p=None))
        return kw

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids (special tokens kept, no clean-up of spaces)."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=False,
                                     clean_up_tokenization_spaces=False)


class HFCausalLM(LocalLanguageModel):
    """A transformers causal LM (``AutoModelForCausalLM``) as a :class:`LanguageModel`.

    ``model`` is a model instance (then pass ``tokenizer``), a local directory or a hub id
    (fetched only when constructed). ``start_token`` is ``"auto"`` (the tokenizer's own
    start tokens), a vocabulary token, or None; see the module docstring.
    """

    capabilities: frozenset[str] = ALL_CAPABILITIES

    def __init__(self, model: Any, tokenizer: Any = None, *, name: str | None = None,
                 start_token: str | None = AUTO, batch_size: int = DEFAULT_BATCH_SIZE,
                 batch_tokens: int | str = DEFAULT_BATCH_TOKENS, max_length: int | None = None,
                 fingerprint: str | None = None, device: str | None = None, dtype: str | None = None) -> None:
        self._source = str(model) if isinstance(model, (str, Path)) else None
        if self._source is not None:
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(self._source, **loading(device, dtype))
        model = placed(model, device, dtype, loaded=self._source is not None)
        self._setup_model(model, tokenizer, name, batch_size, batch_tokens)
        self.prefix = self._start_ids(start_token)
        limit = getattr(model.config, "max_position_embeddings", None) or 1024
        self.max_length = int(min(limit, max_length or limit))
        from .hf import _files_fingerprint, _model_fingerprint, _tokenizer_fingerprint

        # the weight files as loaded, not as they are when the fingerprint is first asked for
        self._files = None if fingerprint else _files_fingerprint(self._source)
        self._keep = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._gather: bool | None = None
        self.start_token = start_token  # as given ("auto", a token or None); prefix is the result
        # computed now, from the model and tokenizer as loaded, so it never moves with use
        self._fingerprint: str = with_dtype(fingerprint or fingerprint_of(
            type(self).__name__, _model_fingerprint(self.model, self._files), _tokenizer_fingerprint(self.tokenizer),
            self.prefix), self.model)

    def __repr__(self) -> str:
        return f"HFCausalLM({self.name!r}, vocab={self.vocab_size}, start={self.prefix})"

    # ------------------------------------------------------------------ tokenizer
    def _start_ids(self, start_token: str | None) -> list[int]:
        if start_token is None:
            return []
        if start_token == AUTO:
            probe = "Hello world"
            plain = self.tokenizer(probe, add_special_tokens=False)["input_ids"]
            full = self.tokenizer(probe, add_special_tokens=True)["input_ids"]
            for i in range(len(full) - len(plain) + 1):
                if full[i:i + len(plain)] == plain:
                    return list(full[:i])
            return []
        tid = self.tokenizer.convert_tokens_to_ids(start_token)
        if tid is None or tid == getattr(self.tokenizer, "unk_token_id", None):
            raise InputError(f"start_token {start_token!r} is not in the vocabulary of {self.name}; "
                             "pass a token such as the model's BOS or end-of-text token, 'auto' or None")
        return [int(tid)]

    @property
    def fingerprint(self) -> str:
        """Changes whenever outputs could: weights, tokenizer, start tokens. Computed once, when
        the model is loaded."""
        return self._fingerprint

    def _ids(self, inputs: Sequence[LMInput], min_tokens: int = 1) -> list[list[int]]:
        """Model input ids (start tokens + text ids) per input, validated (:func:`input_ids`)."""
        return input_ids(self, inputs, min_tokens)

    # ------------------------------------------------------------------ forward passes
    def _head_path(self) -> bool:
        """Whether logits can be computed as output layer(decoder states) at chosen positions.

        True when the model has a decoder and an output layer and that computation (with the
        config's final logit soft-capping, if any) reproduces ``model(...).logits`` on a probe;
        otherwise every call falls back to ``logits_to_keep`` over the batch's positions.
        """
        import torch

        if self._gather is None:
            self._gather = False
            decoder = getattr(self.model, "get_decoder", lambda: None)()
            head = self.model.get_output_embeddings()
            if decoder is not None and head is not None:
                device = next(self.model.parameters()).device
                probe = torch.tensor([self.prefix + self.encode("Hello world, this is a probe.")], device=device)
                with torch.inference_mode():
                    want = self.model(input_ids=probe).logits.float()
                    got = self._head_logits(decoder(input_ids=probe).last_hidden_state[0]).float()
                # the same computation agrees to round-off: float32's, or a few of bfloat16's (2**-8)
                tol = 1e-4 if model_dtype(self.model) == torch.float32 else 2e-2
                self._gather = bool(torch.allclose(got, want[0], atol=tol, rtol=tol))
        return self._gather

    def _head_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self._capped(self.model.get_output_embeddings()(hidden))

    def _capped(self, logits: torch.Tensor) -> torch.Tensor:
        """The output layer's ``logits`` with the config's final soft-capping, if any."""
        import torch

        cap = getattr(self.model.config, "final_logit_softcapping", None)
        return torch.tanh(logits / cap) * cap if cap else logits

    def _logprobs_at(self, seqs: list[list[int]], positions: list[np.ndarray],
                     targets: list[np.ndarray] | None = None) -> Iterator[tuple[int, torch.Tensor]]:
        """Per input, batch by batch: (index, float32 log-softmax at its ``positions``, shape (m, V)),
        or with ``targets`` only the log-probabilities of those tokens, shape (m,)."""
        import torch

        device = next(self.model.parameters()).device
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else int(pad)
        gather = self._head_path()

        def forward(idx: Sequence[int]) -> list[torch.Tensor]:
            width = max(len(seqs[i]) for i in idx)
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(seqs[i])] = torch.tensor(seqs[i])
                mask[r, : len(seqs[i])] = 1
            ids, mask = ids.to(device), mask.to(device)
            sizes = [len(positions[i]) for i in idx]
            rows = torch.repeat_interleave(torch.arange(len(idx)), torch.tensor(sizes)).to(device)
            cols = torch.as_tensor(np.concatenate([positions[i] for i in idx]), dtype=torch.long, device=device)
            if gather:  # the output layer only where asked: each row's own positions
                hidden = self.model.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state
                logits = self._head_logits(hidden[rows, cols]).float()
            else:
                union, inverse = torch.unique(cols, return_inverse=True)
                kw: dict[str, Any] = {"logits_to_keep": union} if self._keep and len(union) < width else {}
                full = self.model(input_ids=ids, attention_mask=mask, **kw).logits
                logits = (full if kw else full[:, union])[rows, inverse].float()
            if targets is not None:
                tgt = torch.as_tensor(np.concatenate([targets[i] for i in idx]), dtype=torch.long, device=device)
                out = logits.gather(1, tgt[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
            else:
                out = torch.log_softmax(logits, dim=-1)
            return list(torch.split(out, sizes))

        with torch.inference_mode():
            for idx in self._batches([len(x) for x in seqs]):
                yield from zip(idx, split_on_oom(idx, forward, what=self.name))

    def token_logprobs(self, inputs: Sequence[LMInput]) -> list[np.ndarray]:
        """Per input, float64 log p(t_i | t_<i) of every scored token (see *The first token*)."""
        seqs, positions, targets = scored_tokens(self, inputs)
        out: list[np.ndarray] = [np.zeros(0)] * len(seqs)
        for i, lp in self._logprobs_at(seqs, positions, targets):
            out[i] = lp.double().cpu().numpy()
        return out

    def next_token_logprobs(self, inputs: Sequence[LMInput]) -> np.ndarray:
        """(n, vocab_size) float32 log-probabilities of the next token after each input."""
        seqs = self._ids(inputs)
        out = np.zeros((len(seqs), self.vocab_size), dtype=np.float32)
        for i, lp in self._logprobs_at(seqs, [np.asarray([len(s) - 1]) for s in seqs]):
            out[i] = lp[0].cpu().numpy()
        return out

    def span_logprobs(self, inputs: Sequence[LMInput], starts: Sequence[int]) -> list[np.ndarray]:
        """Per input, the next-token log-probs after each text token from ``starts[i]`` to the end.

        ``starts`` index the input's text tokens (``encode`` ids, not counting start tokens);
        row j of the result is the distribution after text token ``starts[i] + j``.
        """
        seqs, positions = span_positions(self, inputs, starts)
        out: list[np.ndarray] = [np.zeros((0, self.vocab_size), np.float32)] * len(seqs)
        for i, lp in self._logprobs_at(seqs, positions):
            out[i] = lp.cpu().numpy()
        return out

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                 seed: int = 0, temperature: float = 1.0) -> list[str]:
        """Continuations of ``prompts`` (greedy by default; ``sample=True`` draws with ``seed``).

        Greedy results do not depend on batching. Sampled ones depend on ``seed`` and on the
        batch an input falls into (the sampler draws for a whole batch); the global torch RNG
        is left as it was.
        """
        return self._generate(prompts, max_new_tokens, sample, seed, temperature, first=False)[0]

    def generate_with_next(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                           seed: int = 0, temperature: float = 1.0) -> tuple[list[str], np.ndarray]:
        """:meth:`generate`, and the (n, vocab_size) float32 next-token log-probabilities after each
        prompt (:meth:`next_token_logprobs`) read from the generation's own first forward, so each
        prompt goes through the model once, not twice. They equal ``next_token_logprobs(prompts)`` to
        float rounding (left- instead of right-padded batches); a model whose logits are not its
        output layer applied to its decoder states (see ``_head_path``) answers with the two calls."""
        if not self._head_path():
            return self.generate(prompts, max_new_tokens=max_new_tokens, sample=sample, seed=seed,
                                 temperature=temperature), self.next_token_logprobs(prompts)
        return self._generate(prompts, max_new_tokens, sample, seed,  # type: ignore[return-value]
                              temperature, first=True)

    def _generate(self, prompts: Sequence[str], max_new_tokens: int, sample: bool, seed: int, temperature: float,
                  *, first: bool) -> tuple[list[str], np.ndarray | None]:
        """Continuations of ``prompts``, batch by batch (left-padded), and with ``first`` the
        float32 log-softmax of the logits of each batch's first forward at its last position: the
        output layer's first output, caught by a hook, with the config's soft-capping."""
        import torch

        _check_generation(max_new_tokens, sample, temperature)
        seqs = self._ids(list(prompts))
        for i, s in enumerate(seqs):
            if len(s) + max_new_tokens > self.max_length:
                raise InputError(f"prompts[{i}] ({len(s)} tokens) + max_new_tokens ({max_new_tokens}) exceed the "
                                 f"context window of {self.name} ({self.max_length})")
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id
        pad = int(pad if pad is not None else (eos if eos is not None else 0))
        device = next(self.model.parameters()).device
        out = [""] * len(seqs)
        nxt = np.zeros((len(seqs), self.vocab_size), dtype=np.float32) if first else None
        caught: list[torch.Tensor] = []

        def catch(module: Any, args: Any, logits: torch.Tensor) -> None:
            if not caught:
                caught.append(logits[:, -1])

        kw = self._decoding(max_new_tokens, sample, temperature, pad)
        hook = self.model.get_output_embeddings().register_forward_hook(catch) if first else None
        try:
            with torch.inference_mode(), torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                for idx in self._batches([len(x) for x in seqs]):
                    width = max(len(seqs[i]) for i in idx)
                    ids = torch.full((len(idx), width), pad, dtype=torch.long)
                    mask = torch.zeros((len(idx), width), dtype=torch.long)
                    for r, i in enumerate(idx):
                        ids[r, width - len(seqs[i]):] = torch.tensor(seqs[i])
                        mask[r, width - len(seqs[i]):] = 1
                    caught.clear()
                    gen = self.model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), **kw)
                    if nxt is not None:
                        nxt[idx] = torch.log_softmax(self._capped(caught[0]).float(), dim=-1).cpu().numpy()
                    for r, i in enumerate(idx):
                        new = gen[r, width:].tolist()
                        if eos is not None and eos in new:
                            new = new[: new.index(eos)]
                        out[i] = self.tokenizer.decode(new, skip_special_tokens=True)
        finally:
            if hook is not None:
                hook.remove()
        return out, nxt
