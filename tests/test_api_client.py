"""The OpenAI-compatible API client against a real HTTP server on 127.0.0.1 that injects faults
(429, 500, timeouts, malformed JSON): nothing lost, answers in order, faults recorded, key never leaked."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter

import pytest
from conftest import CompletionsServer

pytest.importorskip("httpx")

from perturblab.errors import InputError  # noqa: E402
from perturblab.models.api_client import ApiClient, ApiConfig, ApiError  # noqa: E402

KEY = "sk-test-SECRET-0123456789"


def client(url, **kw):
    cfg = dict(base_url=url, model="packaged-test", api_key_env="PERTURBLAB_TEST_KEY", timeout=1.0, max_retries=4,
               backoff_base=0.01, backoff_max=0.05, concurrency=4)
    cfg.update(kw)
    return ApiClient(ApiConfig(**cfg), seed=0)


def test_faults_are_retried_nothing_lost_order_kept_key_never_leaked(monkeypatch, caplog):
    monkeypatch.setenv("PERTURBLAB_TEST_KEY", KEY)
    prompts = [f"prompt number {i}" for i in range(16)]
    plan = {prompts[1]: ["429"], prompts[2]: ["500", "503"], prompts[3]: ["timeout"], prompts[4]: ["malformed"],
            prompts[5]: ["429", "malformed", "timeout"]}
    caplog.set_level(logging.DEBUG)
    with CompletionsServer(plan) as server, client(server.url) as api:
        answers = api.post_many("completions", [{"prompt": p, "max_tokens": 1} for p in prompts])
    assert [a["choices"][0]["text"] for a in answers] == [p[::-1] for p in prompts]
    assert all(a["model"] == "packaged-test" for a in answers)
    injected = sum(len(v) for v in plan.values())
    assert api.usage.requests == 16 and api.usage.retries == injected and api.usage.failures == 0
    assert api.usage.prompt_tokens == sum(len(p.split()) for p in prompts) and api.usage.completion_tokens == 16
    kinds = Counter(f.kind for f in api.faults)
    assert kinds == Counter({"status": 4, "timeout": 2, "malformed": 2})
    assert sorted(f.status for f in api.faults if f.kind == "status") == [429, 429, 500, 503]
    assert server.auth == {f"Bearer {KEY}"}  # the key was sent ...
    leaks = [repr(api), repr(api.faults), caplog.text, json.dumps(api.usage.as_dict())]
    assert not any(KEY in text for text in leaks)  # ... and is written nowhere


def test_retry_after_is_honoured(monkeypatch):
    with CompletionsServer({"p": ["retry-after:0.25"]}) as server, client(server.url, backoff_max=1.0) as api:
        t0 = time.perf_counter()
        assert api.post("completions", {"prompt": "p"})["choices"][0]["text"] == "p"
        assert time.perf_counter() - t0 >= 0.25
    assert api.usage.retries == 1 and api.faults[0].status == 429


def test_non_retryable_and_exhausted_retries_raise(monkeypatch):
    with CompletionsServer({"bad": ["400"], "down": ["500"] * 10}) as server, client(server.url, max_retries=2) as api:
        with pytest.raises(ApiError, match="HTTP 400"):
            api.post("completions", {"prompt": "bad"})
        assert server.counts["bad"] == 1  # a bad request is not repeated
        with pytest.raises(ApiError, match="failed 3 times"):
            api.post("completions", {"prompt": "down"})
        assert server.counts["down"] == 3
        with pytest.raises(ApiError):
            api.post_many("completions", [{"prompt": "ok"}, {"prompt": "down"}])
    assert api.usage.failures == 3 and api.usage.requests == 1


def test_config_errors():
    with pytest.raises(InputError, match="http"):
        ApiConfig(base_url="localhost:8000")
    with pytest.raises(InputError, match="concurrency"):
        ApiConfig(base_url="http://127.0.0.1:1", concurrency=0)


def test_connection_refused_is_a_fault_then_an_error():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with client(f"http://127.0.0.1:{port}/v1", max_retries=1) as api:
        with pytest.raises(ApiError, match="connection"):
            api.post("completions", {"prompt": "x"})
    assert [f.kind for f in api.faults] == ["connection", "connection"]
