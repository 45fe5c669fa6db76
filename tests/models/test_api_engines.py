"""The answer shapes of serving engines behind the OpenAI-compatible completions endpoint, served by
the local test server: vLLM's ``echo`` with ``logprobs`` (legacy OpenAI format: ``tokens``,
``token_logprobs`` with a null first entry, ``text_offset``, ``top_logprobs``), vLLM's
``prompt_logprobs`` extension (per prompt token ``null`` or ``{token_id: {logprob, rank,
decoded_token}}``), and the refusals of servers without prompt log-probabilities (llama.cpp's
``llama-server`` answers HTTP 400 to ``echo``; TGI's completions route answers without
``logprobs``). The per-token log-probs are known in advance, so the scores are checked exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("httpx")

from helpers.completions import CompletionsServer  # noqa: E402

from perturblab.errors import ApiError, CapabilityError  # noqa: E402
from perturblab.models.api_client import ApiClient, ApiConfig  # noqa: E402
from perturblab.models.api_lm import ApiLanguageModel  # noqa: E402

TEXTS = ["The cat sat on the mat.", "Rain fell all night long over the quiet town."]


def tokens(text):
    """A word-level tokenizer: each token keeps its leading space."""
    return re.findall(r"\s*\S+", text)


def logprob(j):
    """The served log-prob of the j-th token of any text (j >= 1; the first has no context)."""
    return -(0.5 + 0.25 * j)


def expected(text):
    return np.array([logprob(j) for j in range(1, len(tokens(text)))])


def vllm(seen=None, *, ids=False, alternatives=False):
    """Answers like vLLM's /v1/completions: echo + logprobs (legacy format; with max_tokens=0 the
    prompt only, else one generated token after it), or prompt_logprobs (the prompt token's entry,
    with ``alternatives`` also a top-1 alternative, with ``ids`` the prompt's token ids)."""

    def respond(body):
        if seen is not None:
            seen.append(body)
        toks = tokens(body["prompt"])
        offsets = np.cumsum([0] + [len(t) for t in toks[:-1]]).tolist()
        usage = {"prompt_tokens": len(toks), "completion_tokens": int(body["max_tokens"])}
        if "prompt_logprobs" in body:
            entries = [None]
            for j, tok in enumerate(toks[1:], start=1):
                entry = {str(100 + j): {"logprob": logprob(j), "rank": 2, "decoded_token": tok}}
                if alternatives:
                    entry["7"] = {"logprob": -0.01, "rank": 1, "decoded_token": " the"}
                entries.append(entry)
            choice = {"index": 0, "text": " and", "logprobs": None, "finish_reason": "length",
                      "prompt_logprobs": entries}
            if ids:
                choice["prompt_token_ids"] = [100 + j for j in range(len(toks))]
            return {"object": "text_completion", "model": body["model"], "choices": [choice], "usage": usage}
        values = [None] + [logprob(j) for j in range(1, len(toks))]
        tops = [None] + [{t: logprob(j)} for j, t in enumerate(toks) if j]
        if body["max_tokens"]:  # the generated token follows the prompt
            toks, values = toks + [" and"], values + [-0.7]
            offsets, tops = offsets + [len(body["prompt"])], tops + [{" and": -0.7}]
        lp = {"tokens": toks, "token_logprobs": values, "text_offset": offsets, "top_logprobs": tops}
        return {"object": "text_completion", "model": body["model"],
                "choices": [{"index": 0, "text": body["prompt"], "logprobs": lp, "finish_reason": "length"}],
                "usage": usage}

    return respond


def lm(server, **kw):
    client = ApiClient(ApiConfig(base_url=server.url, model="served", api_key_env=None, timeout=5.0, max_retries=0))
    return ApiLanguageModel(client, **kw)


@pytest.mark.parametrize("score_max_tokens", [0, 1])
def test_vllm_echo_with_logprobs(score_max_tokens):
    seen = []
    with CompletionsServer(respond=vllm(seen)) as server:
        got = lm(server, score_max_tokens=score_max_tokens).token_logprobs(TEXTS)
    for g, text in zip(got, TEXTS):
        np.testing.assert_array_equal(g, expected(text))  # exact: the served numbers, the generated one dropped
    assert seen[0]["prompt"] == ApiLanguageModel.PROBE  # the alignment probe, then one request per text
    assert all(b["echo"] is True and b["logprobs"] == 1 and b["max_tokens"] == score_max_tokens for b in seen[1:])


@pytest.mark.parametrize("ids,alternatives", [(False, False), (True, True)])
def test_vllm_prompt_logprobs(ids, alternatives):
    seen = []
    with CompletionsServer(respond=vllm(seen, ids=ids, alternatives=alternatives)) as server:
        model = lm(server, scoring="prompt_logprobs")
        got = model.token_logprobs(TEXTS)
    for g, text in zip(got, TEXTS):
        np.testing.assert_array_equal(g, expected(text))  # the prompt token's entry, never the alternative
    assert all(b["prompt_logprobs"] == 0 and b["max_tokens"] == 1 and "echo" not in b for b in seen)
    assert model.fingerprint != lm(server).fingerprint


def test_prompt_logprobs_with_alternatives_and_no_ids_is_refused():
    with CompletionsServer(respond=vllm(alternatives=True)) as server:
        with pytest.raises(ApiError, match="prompt_logprobs=0"):
            lm(server, scoring="prompt_logprobs").token_logprobs(TEXTS[:1])


def test_prompt_logprobs_spec_from_the_command_line():
    from perturblab.models.resolve import load_model

    with CompletionsServer(respond=vllm()) as server:
        model = load_model(f"big=api:served@{server.url}[api_key_env=none,scoring=prompt_logprobs,max_length=8192]",
                           "language_model")
        got = model.token_logprobs(TEXTS[:1])
    assert isinstance(model, ApiLanguageModel) and model.name == "big" and model.max_length == 8192
    assert model.scoring == "prompt_logprobs" and model.client.config.api_key_env is None
    np.testing.assert_array_equal(got[0], expected(TEXTS[0]))


def test_server_refusing_echo_is_a_capability_error():
    """llama.cpp's llama-server answers a request with echo by HTTP 400."""

    with CompletionsServer({"*": ["400"] * 3}) as server:
        with pytest.raises(CapabilityError, match="refused a prompt-scoring request"):
            lm(server).token_logprobs(TEXTS)


def test_server_ignoring_echo_is_a_capability_error():
    """A completions route that answers with text only (TGI's OpenAI-compatible completions)."""

    def respond(body):
        return {"object": "text_completion", "choices": [{"index": 0, "text": " and", "logprobs": None,
                                                          "finish_reason": "length"}]}

    with CompletionsServer(respond=respond) as server:
        with pytest.raises(CapabilityError, match="without log-probabilities"):
            lm(server).token_logprobs(TEXTS)
        with pytest.raises(CapabilityError, match="without prompt_logprobs"):
            lm(server, scoring="prompt_logprobs").token_logprobs(TEXTS)
