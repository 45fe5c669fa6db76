"""A language model behind an OpenAI-compatible completions API, as far as such an API allows.

What a completions endpoint (``POST /completions``, the OpenAI legacy format) can give, and how
:class:`ApiLanguageModel` asks for it:

* **per-token log-probs of a text** (:meth:`~ApiLanguageModel.token_logprobs`; perplexity, the
  negation metric of the self-supervised evaluation paper, Sec. 4, which notes that "since we use
  perplexity, we can also utilize API models", Sec. 4.1): one request per text with
  ``echo=True, max_tokens=0, logprobs=1, temperature=0``. The answer's
  ``choices[0].logprobs`` holds ``tokens``, ``token_logprobs`` and ``text_offset`` of the
  prompt. The endpoint decides which tokens are scored: the first token of a text has no context,
  its log-prob comes back null and is left out (as :class:`~.lm.HFCausalLM` does for tokenizers
  without a start token); a server that puts a start token first (null) scores every text token.
  So the result has exactly the scored tokens, like the protocol asks. Servers that refuse
  ``max_tokens=0`` take ``score_max_tokens=1``: tokens at or after the end of the prompt
  (``text_offset``) are dropped. ``scoring="prompt_logprobs"`` asks vLLM's extension instead
  (``prompt_logprobs=0, max_tokens=1``): the answer's ``choices[0].prompt_logprobs`` holds, per
  prompt token, ``null`` (the first, without context) or ``{token_id: {"logprob", "rank",
  "decoded_token"}}`` with the prompt token's entry (vLLM ``vllm/logprobs.py``, ``PromptLogprobs``);
  with ``prompt_token_ids`` in the answer the entry is taken by id, else it must be the only one.
* **generations** (:meth:`~ApiLanguageModel.generate`): a plain completion, ``temperature=0``
  (greedy) unless ``sample=True``, which sends ``temperature`` and ``seed``.

What it cannot give: **full next-token distributions over the vocabulary** (the endpoint returns
at most the top-k log-probs of each token; word order, tokenization, long-range context,
entropy, the toxicity metric's next-token mass, SCoPE App. G) and a **local tokenizer**
(``encode``/``decode``, token-id inputs). Those raise :class:`~perturblab.errors.CapabilityError`
naming the model, the missing capability and what to use instead; ``capabilities`` lists what
works, so studies refuse unsupported metrics before any request
(:func:`~.lm_capabilities.check_metric_capabilities`).

Before its first ``echo`` scoring request a model sends one probe (:attr:`ApiLanguageModel.PROBE`
with four greedy tokens): a server that reports beside each token the distribution *after* it
(llama-cpp-python's server, 0.3.x) gives greedy tokens that are not the best of their reported
distributions, and is refused with :class:`~perturblab.errors.CapabilityError` instead of scored
one position off; every scoring answer's generated tokens are checked the same way.

An endpoint that answers a scoring request without prompt log-probs (no ``logprobs``, empty
lists, only completion tokens), or refuses it with HTTP 400/422 (echo with logprobs
unsupported), raises :class:`~perturblab.errors.CapabilityError`: never zeros. Transport,
retries, usage and faults, and the API key (read from the environment, written nowhere) are
:class:`~.api_client.ApiClient`'s.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import CapabilityError, InputError
from .api_client import ApiClient, ApiError, Fault, Usage
from .base import fingerprint_of

if TYPE_CHECKING:  # pragma: no cover - lm imports torch, which an API model does not need
    from .lm import LMInput

log = logging.getLogger(__name__)

_INSTEAD = ("use a local model (a preset, a Hugging Face directory or a .gguf file) for it; through a "
            "completions API only per-token log-probs of a text (perplexity, the negation metric) and "
            "generations are available")


class ApiLanguageModel:
    """A :class:`~.lm.LanguageModel` answered by a completions endpoint (see the module docstring).

    ``max_length`` is the endpoint's context window in tokens (studies use it to skip texts that
    cannot fit; without a tokenizer they bound a text's tokens by its UTF-8 bytes); ``vocab_size``
    is the vocabulary size when known, 0 otherwise (no method here returns vocabulary-sized rows).
    ``logprobs`` is the ``logprobs`` value sent with scoring requests (1: the sampled token and
    its top alternative; some servers give nothing for 0). ``scoring`` is how prompt log-probs are
    asked for: ``"echo"`` (OpenAI legacy ``echo`` with ``logprobs``, default) or
    ``"prompt_logprobs"`` (vLLM's extension; see the module docstring).
    """

    capabilities: frozenset[str] = frozenset({"token_logprobs", "generate"})

    def __init__(self, client: ApiClient, *, name: str | None = None, max_length: int = 4096,
                 vocab_size: int = 0, logprobs: int = 1, score_max_tokens: int = 0, scoring: str = "echo") -> None:
        if max_length < 2 or vocab_size < 0 or logprobs < 0 or score_max_tokens not in (0, 1):
            raise InputError("need max_length >= 2, vocab_size >= 0, logprobs >= 0 and score_max_tokens 0 or 1")
        if scoring not in ("echo", "prompt_logprobs"):
            raise InputError(f"scoring must be 'echo' (OpenAI echo with logprobs) or 'prompt_logprobs' (vLLM), "
                             f"got {scoring!r}")
        self.scoring = scoring
        self._probed = self._warned_generation = False
        self.client = client
        self.name = name or f"api:{client.config.model or client.config.base_url}"
        client.name = client.name or self.name  # faults are reported under the model's name
        self.max_length, self.vocab_size = int(max_length), int(vocab_size)
        self.logprobs, self.score_max_tokens = int(logprobs), int(score_max_tokens)
        self.fingerprint: str = fingerprint_of("ApiLanguageModel", client.config.base_url, client.config.model,
                                               self.logprobs, self.score_max_tokens,
                                               *([scoring] if scoring != "echo" else []))

    def __repr__(self) -> str:  # no key, no headers
        return f"ApiLanguageModel({self.name!r}, capabilities={sorted(self.capabilities)})"

    @property
    def usage(self) -> Usage:
        """Requests, retries, failures and tokens spent (the client's)."""
        return self.client.usage

    @property
    def faults(self) -> list[Fault]:
        """Every failed attempt (kind, status, attempt), retried or not (the client's)."""
        return self.client.faults

    # ------------------------------------------------------------------ what the API cannot do
    def _cannot(self, what: str, why: str) -> CapabilityError:
        return CapabilityError(f"{self.name} cannot give {what}: {why}; {_INSTEAD}")

    def encode(self, text: str) -> list[int]:
        """Not available: the endpoint's tokenizer is not local (:class:`CapabilityError`)."""
        raise self._cannot("token ids (a local tokenizer)", "an API model's tokenizer runs on the server")

    def decode(self, ids: Sequence[int]) -> str:
        """Not available: the endpoint's tokenizer is not local (:class:`CapabilityError`)."""
        raise self._cannot("the text of token ids (a local tokenizer)", "an API model's tokenizer runs on the server")

    def next_token_logprobs(self, inputs: Sequence[LMInput]) -> np.ndarray:
        """Not available: full distributions over the vocabulary (:class:`CapabilityError`)."""
        raise self._cannot("full next-token distributions over the vocabulary",
                           "a completions endpoint returns at most the top-k log-probabilities of a token")

    def span_logprobs(self, inputs: Sequence[LMInput], starts: Sequence[int]) -> list[np.ndarray]:
        """Not available: full distributions over the vocabulary (:class:`CapabilityError`)."""
        raise self._cannot("full next-token distributions at every position of a span",
                           "a completions endpoint returns at most the top-k log-probabilities of a token")

    # ------------------------------------------------------------------ what it can do
    def _texts(self, inputs: Sequence[LMInput], what: str) -> list[str]:
        if isinstance(inputs, str):
            raise InputError(f"{what} takes a list of texts, not a single string; wrap it in a list")
        out = list(inputs)
        for i, x in enumerate(out):
            if not isinstance(x, str):
                raise self._cannot(f"{what} of token-id inputs (inputs[{i}])", "token ids need the model's "
                                   "tokenizer, which runs on the server; pass texts")
            if not x:
                raise InputError(f"{what}: inputs[{i}] is empty; drop empty texts first")
        return out

    def token_logprobs(self, inputs: Sequence[LMInput]) -> list[np.ndarray]:
        """Per text, float64 log p(t_i | t_<i) of every token the endpoint scores (module docstring);
        one request per distinct text."""
        texts = self._texts(inputs, "token_logprobs")
        uniq = list(dict.fromkeys(texts))
        if self.scoring == "prompt_logprobs":
            payloads = [{"prompt": t, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 0} for t in uniq]
        else:
            payloads = [{"prompt": t, "echo": True, "max_tokens": self.score_max_tokens, "temperature": 0,
                         "logprobs": self.logprobs} for t in uniq]
        try:
            if self.scoring == "echo" and not self._probed:
                self._probe_alignment()
            answers = self.client.post_many("completions", payloads)
        except ApiError as e:
            if e.status in (400, 422):
                raise CapabilityError(
                    f"{self.name}: the endpoint refused a prompt-scoring request (echo=True with logprobs, "
                    f"max_tokens={self.score_max_tokens}): {e}. Endpoints that do not support echo with "
                    "log-probabilities answer like this (if the message says the prompt is too long or "
                    "max_tokens must be >= 1, fix that, e.g. score_max_tokens=1)") from e
            raise
        first = {t: i for i, t in reversed(list(enumerate(texts)))}  # for error messages
        got = {t: self._prompt_logprobs(first[t], t, a) for t, a in zip(uniq, answers)}
        return [got[t].copy() for t in texts]

    def _no_logprobs(self, i: int, detail: str) -> CapabilityError:
        return CapabilityError(
            f"{self.name}: the endpoint answered the scoring request for inputs[{i}] (echo=True with logprobs) "
            f"{detail}, so it gives no per-token log-probabilities of a prompt (echo with logprobs is not "
            "supported there, e.g. chat or newer completion models); use a local model (a preset, a Hugging "
            "Face directory or a .gguf file) or an endpoint that echoes prompt log-probabilities")

    def _vllm_prompt_logprobs(self, i: int, choice: dict[str, Any], answer: dict[str, Any]) -> list[Any]:
        """Per prompt token its log-prob (None where the server gives none) from vLLM's
        ``prompt_logprobs`` (module docstring)."""
        entries = choice.get("prompt_logprobs", answer.get("prompt_logprobs"))
        if not isinstance(entries, list):
            raise self._no_logprobs(i, "without prompt_logprobs (scoring='prompt_logprobs' is a vLLM extension; "
                                       "other servers take scoring='echo')")
        ids = choice.get("prompt_token_ids", answer.get("prompt_token_ids"))
        ids = ids if isinstance(ids, list) and len(ids) == len(entries) else None
        values: list[Any] = []
        for j, entry in enumerate(entries):
            if entry is None:
                values.append(None)
                continue
            if not isinstance(entry, dict) or not entry:
                raise ApiError(f"{self.name}: prompt_logprobs[{j}] for inputs[{i}] is "
                               f"{self.client.redact(repr(entry), 80)}, not a {{token_id: {{logprob, ...}}}} mapping")
            if ids is not None and str(ids[j]) in entry:
                item = entry[str(ids[j])]
            elif len(entry) == 1:
                item = next(iter(entry.values()))
            else:
                raise ApiError(f"{self.name}: prompt_logprobs[{j}] for inputs[{i}] has {len(entry)} candidates and the "
                               "answer has no prompt_token_ids, so the prompt token's log-prob cannot be told from "
                               "the alternatives; the server must honour prompt_logprobs=0")
            values.append(item.get("logprob") if isinstance(item, dict) else item)
        return values

    #: the probe's prompt: every language model continues it greedily with " 6, 7", whose tokens a
    #: misaligned server reports beside the distribution after them, where they are not the best
    PROBE = "1, 2, 3, 4, 5,"

    def _probe_alignment(self) -> None:
        """Once per model, before its first scoring request: one echo request that also generates
        four greedy tokens after :attr:`PROBE`, checked as :meth:`_check_generated` checks every
        scoring answer. An answer that cannot tell (no top log-probs) passes."""
        answer = self.client.post_many("completions", [{"prompt": self.PROBE, "echo": True, "max_tokens": 4,
                                                        "temperature": 0, "logprobs": max(self.logprobs, 1)}])[0]
        try:
            lp = answer["choices"][0]["logprobs"]
        except (KeyError, IndexError, TypeError):
            lp = None
        generated = self._generated(lp, self.PROBE) if isinstance(lp, dict) else None
        if generated:
            self._check_generated(-1, lp, generated)
        self._probed = True

    @staticmethod
    def _generated(lp: dict[str, Any], prompt: str) -> list[int] | None:
        """Indices of the tokens of an echo answer's ``logprobs`` that follow ``prompt`` (by
        ``text_offset``), or None when the answer has no usable offsets."""
        values, offsets = lp.get("token_logprobs"), lp.get("text_offset")
        if not (isinstance(values, list) and isinstance(offsets, list) and len(offsets) == len(values)
                and all(isinstance(o, int) for o in offsets)):
            return None
        return [j for j, o in enumerate(offsets) if o >= len(prompt)]

    def _check_generated(self, i: int, lp: dict[str, Any], generated: list[int]) -> None:
        """The tokens an echo answer generated after the prompt (``temperature=0``, so greedy) must
        each be the most likely token of the distribution reported beside it. A server that reports,
        at every position, the distribution *after* the token (llama-cpp-python's server, 0.3.x,
        with ``echo``) fails this: every prompt log-prob it gives belongs to the next position, so
        the scores would be wrong, and :class:`CapabilityError` says so."""
        tops, values, tokens = lp.get("top_logprobs"), lp["token_logprobs"], lp.get("tokens")
        if not isinstance(tops, list) or len(tops) != len(values):
            return
        for j in generated:
            top, value = tops[j], values[j]
            if not isinstance(top, dict) or not top or not isinstance(value, (int, float)):
                continue
            best_token, best = max(top.items(), key=lambda kv: kv[1] if isinstance(kv[1], (int, float)) else -np.inf)
            if isinstance(best, (int, float)) and value < best - 1e-3:
                token = tokens[j] if isinstance(tokens, list) and j < len(tokens) else "?"
                raise CapabilityError(
                    f"{self.name}: the endpoint's log-probabilities are misaligned: "
                    f"{'after ' + repr(self.PROBE) if i < 0 else f'for inputs[{i}]'} it generated "
                    f"{self.client.redact(repr(token), 40)} greedily (temperature=0) but reports it at log-prob "
                    f"{value:.3f} beside {self.client.redact(repr(best_token), 40)} at {best:.3f}, so the values it "
                    "reports belong to the distribution after each token, not before it (llama-cpp-python's server "
                    "does this with echo). Per-token log-probabilities of a prompt cannot be read from it: serve "
                    "the model with vLLM, or score the GGUF file locally (--models FILE.gguf, or "
                    "[backend=llamacpp] for llama.cpp's own kernels)")

    def _prompt_logprobs(self, i: int, text: str, answer: dict[str, Any]) -> np.ndarray:
        try:
            choice = answer["choices"][0]
            lp = choice.get("logprobs")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ApiError(f"{self.name}: completions answer without choices: {self.client.redact(answer, 200)}") from None
        if self.scoring == "prompt_logprobs":
            values = self._vllm_prompt_logprobs(i, choice, answer)
        else:
            if not isinstance(lp, dict) or not isinstance(lp.get("token_logprobs"), list):
                raise self._no_logprobs(i, "without log-probabilities")
            values, generated = lp["token_logprobs"], self._generated(lp, text)
            if generated is not None:
                if generated and not self.score_max_tokens and not self._warned_generation:
                    self._warned_generation = True
                    log.warning("%s: the endpoint generated %d token(s) after the prompt although max_tokens=0 was "
                                "asked (some servers read 0 as 'no limit'); they are dropped, and score_max_tokens=1 "
                                "stops the server from generating more than one", self.name, len(generated))
                self._check_generated(i, lp, generated)
                after = set(generated)
                values = [v for j, v in enumerate(values) if j not in after]  # the prompt's tokens only
            elif self.score_max_tokens:
                raise ApiError(f"{self.name}: the answer has no text_offset, so the prompt's tokens cannot be told "
                               "from the generated one; use score_max_tokens=0")
        if not values:
            raise self._no_logprobs(i, "without any prompt token")
        k = 0
        while k < len(values) and values[k] is None:  # no context: not scored
            k += 1
        rest = values[k:]
        bad = [j for j, v in enumerate(rest) if isinstance(v, bool) or not isinstance(v, (int, float)) or not v <= 1e-6]
        if bad:
            raise ApiError(f"{self.name}: the answer for inputs[{i}] has an invalid log-probability "
                           f"{self.client.redact(repr(rest[bad[0]]), 80)} at scored token {bad[0]} "
                           "(log-probabilities are numbers <= 0)")
        if not rest:
            raise InputError(f"inputs[{i}] ({text[:60]!r}) is a single token for {self.name} and the endpoint "
                             "scores no token without context; use longer texts")
        return np.asarray(rest, dtype=np.float64)

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 32, sample: bool = False,
                 seed: int = 0, temperature: float = 1.0) -> list[str]:
        """The completion of each prompt: greedy (``temperature=0``) by default; ``sample=True``
        sends ``temperature`` and ``seed`` (whether the endpoint honours the seed is up to it)."""
        if max_new_tokens < 1:
            raise InputError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if sample and temperature <= 0:
            raise InputError(f"temperature must be > 0 when sampling, got {temperature}")
        texts = self._texts(prompts, "generate")
        extra = {"temperature": float(temperature), "seed": int(seed)} if sample else {"temperature": 0}
        answers = self.client.post_many("completions", [{"prompt": t, "max_tokens": int(max_new_tokens), **extra}
                                                        for t in texts])
        out = []
        for a in answers:
            try:
                out.append(str(a["choices"][0]["text"]))
            except (KeyError, IndexError, TypeError):
                raise ApiError(f"{self.name}: completions answer without choices[0].text: {self.client.redact(a, 200)}") from None
        return out
