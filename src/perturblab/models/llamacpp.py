"""A GGUF language model run natively by llama.cpp (llama-cpp-python), as its users run it.

The default path for a ``.gguf`` file de-quantises its weights into a float32 copy and runs that
with torch (:func:`~.lm_presets.from_gguf`): the quantised model's weights, with float32
arithmetic. llama.cpp computes with the quantised kernels themselves, and the two differ: on "The
cat sat on the mat because it was tired." the packaged SmolLM2 Q4_1 file gives a mean token NLL
of 4.949 through llama.cpp and 4.983 through the float32 path. ``[backend=llamacpp]`` on a
``.gguf`` file or a GGUF preset (``smollm2-135m[backend=llamacpp]``) scores with llama.cpp.

:class:`LlamaCppLM` is a :class:`~.lm.LanguageModel` with logits of every prompt token
(``logits_all``): per-token log-probabilities, next-token distributions, spans, and greedy or
seeded sampled generation (plain decoding, as the other backends). It has no Hugging Face
tokenizer object, so the tokenization metric (which tokenizes pieces of a text with it) is
refused for it with the capability error. Inputs are scored one at a time (llama.cpp keeps one
sequence in its context here), so results do not depend on batching at all. The fingerprint
names the file's content, llama.cpp (and its version) and the start tokens, so its results are
stored apart from the float32 path's.

Needs the optional extra: ``pip install 'perturblab[llamacpp]'`` (llama-cpp-python, which builds
llama.cpp from source; see the README for the time it takes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from .base import file_fingerprint, fingerprint_of
from .lm import LMInput, _check_generation, input_ids, scored_tokens, span_positions
from .lm_capabilities import ALL_CAPABILITIES

#: what llama.cpp gives: everything but a Hugging Face tokenizer object
LLAMACPP_CAPABILITIES = ALL_CAPABILITIES - {"tokenizer"}


#: why ``[backend=llamacpp]`` cannot run without the optional extra, and the fix
LLAMACPP_MISSING = ("backend=llamacpp needs llama-cpp-python: pip install 'perturblab[llamacpp]' (it builds llama.cpp "
                    "from source, a few minutes), or drop backend=llamacpp to score the GGUF file's weights with torch")


def _llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise InputError(LLAMACPP_MISSING) from None
    return llama_cpp


class LlamaCppLM:
    """A ``.gguf`` file run by llama.cpp as a :class:`~.lm.LanguageModel` (see the module
    docstring). ``n_ctx`` is the context window (default: the model's, at most 4096);
    ``n_threads`` llama.cpp's CPU threads, for the evaluation of a batch of tokens (every score) and
    for generation alike (default: its own choice, half the CPUs to generate and all of them to
    evaluate); ``[backend=llamacpp,n_threads=N]`` in a spec."""

    capabilities: frozenset[str] = LLAMACPP_CAPABILITIES

    def __init__(self, path: str | Path, *, name: str | None = None, n_ctx: int | None = None,
                 n_threads: int | None = None, max_length: int | None = None) -> None:
        llama_cpp = _llama_cpp()
        path = Path(path).expanduser()
        if not path.is_file():
            raise InputError(f"GGUF file {path} does not exist")
        probe = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        meta = probe.metadata  # the file's own context length (a vocabulary-only load reads no weights)
        trained = int(next((v for k, v in meta.items() if k.endswith(".context_length")), 2048))
        del probe
        ctx = int(min(n_ctx or max_length or trained, trained, 4096))
        self._llm = llama_cpp.Llama(model_path=str(path), n_ctx=ctx, logits_all=True, verbose=False,
                                    n_threads=n_threads, n_threads_batch=n_threads, n_batch=min(ctx, 512))
        self.name = name or path.stem
        self.vocab_size = int(self._llm.n_vocab())
        self.max_length = ctx
        plain = self._llm.tokenize(b"Hello world", add_bos=False, special=False)
        full = self._llm.tokenize(b"Hello world", add_bos=True, special=False)
        self.prefix: list[int] = list(full[: len(full) - len(plain)]) if full[len(full) - len(plain):] == plain else []
        self.fingerprint = fingerprint_of("llama.cpp", llama_cpp.__version__, file_fingerprint(path), self.prefix)

    def __repr__(self) -> str:
        return f"LlamaCppLM({self.name!r}, vocab={self.vocab_size}, context={self.max_length})"

    # ------------------------------------------------------------------ tokenizer
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids."""
        return self._llm.detokenize(list(ids)).decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ scoring
    def _logprobs(self, ids: list[int], positions: np.ndarray) -> np.ndarray:
        """(len(positions), vocab) float64 log-softmax of the logits after the tokens of ``ids`` at
        ``positions`` (one evaluation of ``ids``; the log-softmax only where asked)."""
        self._llm.reset()
        self._llm.eval(ids)
        return self._evaluated(positions)

    def _evaluated(self, positions: np.ndarray) -> np.ndarray:
        """(len(positions), vocab) float64 log-softmax of the logits after the evaluated tokens at
        ``positions``."""
        from scipy.special import log_softmax

        return log_softmax(np.asarray(self._llm.scores[positions], dtype=np.float64), axis=1)

    def token_logprobs(self, inputs: Sequence[LMInput]) -> list[np.ndarray]:
        """Per input, float64 log p(t_i | t_<i) of every scored token (the first text token is
        scored only when the model's tokenizer adds a start token, as for the other backends)."""
        seqs, positions, targets = scored_tokens(self, inputs)
        return [self._logprobs(ids, pos)[np.arange(len(pos)), tgt] for ids, pos, tgt in zip(seqs, positions, targets)]

    def next_token_logprobs(self, inputs: Sequence[LMInput]) -> np.ndarray:
        """(n, vocab_size) float32 log-probabilities of the next token after each input."""
        return np.stack([self._logprobs(ids, np.asarray([len(ids) - 1]))[0].astype(np.float32)
                         for ids in input_ids(self, inputs)])

    def span_logprobs(self, inputs: Sequence[LMInput], starts: Sequence[int]) -> list[np.ndarray]:
        """Per input, the next-token log-probs (float32) after each text token from ``starts[i]`` to
        the end (``starts`` index the text tokens, the start tokens not counted)."""
        seqs, positions = span_positions(self, inputs, starts)
        return [self._logprobs(ids, pos).astype(np.float32) for ids, pos in zip(seqs, positions)]

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                 seed: int = 0, temperature: float = 1.0) -> list[str]:
        """Greedy (or, with ``sample``, multinomial at ``temperature`` from ``seed``) continuations,
        stopping at the end-of-sequence token."""
        return self._generate(prompts, max_new_tokens, sample, seed, temperature, first=False)[0]

    def generate_with_next(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                           seed: int = 0, temperature: float = 1.0) -> tuple[list[str], np.ndarray]:
        """:meth:`generate`, and the next-token log-probabilities after each prompt
        (:meth:`next_token_logprobs`) from the same evaluation of the prompt."""
        return self._generate(prompts, max_new_tokens, sample, seed,  # type: ignore[return-value]
                              temperature, first=True)

    def _generate(self, prompts: Sequence[str], max_new_tokens: int, sample: bool, seed: int, temperature: float,
                  *, first: bool) -> tuple[list[str], np.ndarray | None]:
        _check_generation(max_new_tokens, sample, temperature)
        eos = int(self._llm.token_eos())
        seqs = input_ids(self, prompts)
        out = []
        nxt = np.zeros((len(seqs), self.vocab_size), dtype=np.float32) if first else None
        for k, ids in enumerate(seqs):
            rng = np.random.default_rng([seed, k])
            self._llm.reset()
            self._llm.eval(ids)  # then one token at a time, each evaluated once
            if nxt is not None:
                nxt[k] = self._evaluated(np.asarray([len(ids) - 1]))[0]
            new: list[int] = []
            while len(new) < max_new_tokens and len(ids) + len(new) < self.max_length:
                logits = np.asarray(self._llm.scores[self._llm.n_tokens - 1], dtype=np.float64)
                if sample:
                    p = np.exp((logits - logits.max()) / temperature)
                    tok = int(rng.choice(len(p), p=p / p.sum()))
                else:
                    tok = int(logits.argmax())
                if tok == eos:
                    break
                new.append(tok)
                self._llm.eval([tok])
            out.append(self.decode(new))
        return out, nxt
