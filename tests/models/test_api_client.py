"""The OpenAI-compatible API client against a real HTTP server on 127.0.0.1 that injects faults
(429, 500, timeouts, malformed JSON): nothing lost, answers in order, faults recorded, key never leaked."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter

import pytest
from helpers.completions import CompletionsServer

pytest.importorskip("httpx")

from perturblab.errors import InputError  # noqa: E402
from perturblab.models.api_client import ApiClient, ApiConfig, ApiError  # noqa: E402

KEY = "sk-test-SECRET-0123456789"


def client(url, **kw):
    cfg = dict(base_url=url, model="packaged-test", api_key_env="PERTURBLAB_TEST_KEY", timeout=1.0, max_retries=4,
               backoff_base=0.01, backoff_max=0.05, concurrency=4)
    name = kw.pop("name", "")
    cfg.update(kw)
    return ApiClient(ApiConfig(**cfg), seed=0, name=name)


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


# -- secrets, deadlines, failing fast, size limits ----------------------------------------------------

def test_redact_removes_keys_and_credential_values():
    from perturblab.models.api_client import REDACTED, redact

    text = ('{"you_sent": {"Authorization": "Bearer sk-live-abc123", "x-api-key": "k-999"}} '
            "Authorization: Bearer tok.en/1 raw sk-live-abc123 https://user:pw@h.example/v1?key=zz&b=1 "
            "api_key=secret7 [('Authorization', 'Bearer other-token')]")
    out = redact(text, ["sk-live-abc123"])
    for secret in ("sk-live-abc123", "k-999", "tok.en/1", "user:pw", "zz", "secret7", "other-token"):
        assert secret not in out, secret
    assert out.count(REDACTED) == 8 and "b=1" in out and "h.example/v1" in out  # the rest is kept
    assert redact("no secrets: 429 Too Many Requests") == "no secrets: 429 Too Many Requests"


def test_reflected_key_is_redacted_in_errors_faults_and_logs(monkeypatch, caplog):
    """A proxy that echoes the request headers (the key among them) in its error answers."""
    monkeypatch.setenv("PERTURBLAB_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    plan = {"a": ["echo-headers:503"], "b": ["echo-headers:401"]}
    with CompletionsServer(plan) as server, client(server.url) as api:
        assert api.post("completions", {"prompt": "a"})["choices"][0]["text"] == "a"  # retried after the 503
        with pytest.raises(ApiError) as err:
            api.post("completions", {"prompt": "b"})
    assert server.auth == {f"Bearer {KEY}"}
    assert err.value.status == 401 and "you_sent" in str(err.value) and "[REDACTED]" in str(err.value)
    assert [f.status for f in api.faults] == [503, 401] and all("[REDACTED]" in f.detail for f in api.faults)
    texts = [str(err.value), repr(err.value), repr(api.faults), caplog.text, repr(api)]
    assert not any(KEY in t or KEY[:12] in t for t in texts)


def test_slow_drip_times_out_at_the_whole_request_deadline():
    """One byte every 0.1 s: each read is quick, so only a deadline on the whole request ends it."""
    with CompletionsServer({"p": ["drip"]}, hang=10.0, drip=0.1) as server, \
            client(server.url, timeout=0.5, max_retries=0) as api:
        t0 = time.perf_counter()
        with pytest.raises(ApiError, match="timeout"):
            api.post("completions", {"prompt": "p"})
        elapsed = time.perf_counter() - t0
    assert elapsed < 0.5 + 2.0  # the ~30-byte answer would take ~3 s to drip through
    assert api.usage.bytes_received >= 1 and [f.kind for f in api.faults] == ["timeout"]


def test_hung_server_stops_the_batch_at_the_first_permanent_failure():
    """20 inputs against a server that never answers in time: one request's worth of waiting (2
    attempts of 0.3 s), not 20/concurrency of them, and the queued requests are never sent."""
    prompts = [f"prompt {i}" for i in range(20)]
    with CompletionsServer({p: ["timeout"] * 5 for p in prompts}, hang=3.0) as server, \
            client(server.url, timeout=0.3, max_retries=1) as api:
        t0 = time.perf_counter()
        with pytest.raises(ApiError, match="stopped the batch") as err:
            api.post_many("completions", [{"prompt": p} for p in prompts])
        elapsed = time.perf_counter() - t0
        sent = sum(server.counts.values())
    assert "failed 2 times" in str(err.value) and "0 of 20 requests completed" in str(err.value)
    assert elapsed < 2.0  # before: 5 rounds of 4 requests x (2 x 0.3 s + backoff), over 3 s
    assert sent <= 4 * 2  # only the first `concurrency` requests were sent, each at most twice
    # the requests in flight time out together: the first to fail for good stops the batch, but one
    # already past its last attempt at that moment has failed for good too, and is counted as such
    assert 1 <= api.usage.failures <= 4


def test_a_refusal_interrupts_the_requests_in_flight():
    prompts = [f"prompt {i}" for i in range(20)]
    plan = {prompts[0]: ["400"], **{p: ["timeout"] for p in prompts[1:]}}
    with CompletionsServer(plan, hang=3.0) as server, client(server.url, timeout=2.0, max_retries=3) as api:
        t0 = time.perf_counter()
        with pytest.raises(ApiError, match="HTTP 400") as err:
            api.post_many("completions", [{"prompt": p} for p in prompts])
        elapsed = time.perf_counter() - t0
    assert err.value.status == 400 and "stopped the batch" in str(err.value)
    assert elapsed < 1.0  # the three requests in flight would wait 2 s for their deadline
    assert not any(f.kind == "timeout" and f.attempt > 0 for f in api.faults)  # nobody retried


@pytest.mark.parametrize("action", ["huge", "huge-stream", "gzip-huge"])
def test_oversized_answer_is_refused_without_reading_it_all(action):
    from perturblab.errors import ApiResponseTooLargeError

    cap = 2 ** 20
    with CompletionsServer({"p": [action]}, huge=(8 if action == "gzip-huge" else 64) * 2 ** 20) as server, \
            client(server.url, max_response_bytes=cap, timeout=5.0) as api:
        with pytest.raises(ApiResponseTooLargeError, match="max_response_bytes"):
            api.post("completions", {"prompt": "p"})
        assert server.counts["p"] == 1  # not retried
    got = api.usage.bytes_received
    if action == "huge":  # Content-Length announced 64 MiB: refused before the body is read
        assert got == 0
    elif action == "huge-stream":  # read until just past the limit (httpcore reads 64 KiB at a time)
        assert cap < got <= cap + 2 ** 16
    else:  # 8 MiB of spaces gzip to ~8 KiB; inflated at most to the limit
        assert got < cap
    assert api.faults[-1].kind == "too_large" and api.usage.failures == 1


def test_compressed_answer_within_the_limit_is_read():
    with CompletionsServer({"p": ["gzip"]}) as server, client(server.url) as api:
        assert api.post("completions", {"prompt": "p"})["choices"][0]["text"] == "p"


def test_fault_recorder_reports_faults_per_model(tmp_path):
    from perturblab.models.api_client import FaultRecorder

    with CompletionsServer({"a": ["429", "500"]}) as server, FaultRecorder() as rec:
        with client(server.url, name="lm-a") as api:
            api.post("completions", {"prompt": "a"})
        with client(server.url) as quiet:  # used, no faults
            quiet.post("completions", {"prompt": "b"})
    rep = rec.report()
    assert rep["total_faults"] == 2 and list(rep["models"]) == ["lm-a", f"api:packaged-test@{server.url}"]
    assert rep["models"]["lm-a"]["fault_counts"] == {"status 429": 1, "status 500": 1}
    assert rep["models"]["lm-a"]["usage"]["requests"] == 1 and rep["models"]["lm-a"]["usage"]["retries"] == 2
    line = rec.line()
    assert line.startswith("API faults: 2 failed attempts (lm-a: 1 status 429, 1 status 500 in 1 answered requests; ")
    assert json.loads(rec.write(tmp_path / "faults.json").read_text()) == rep


def test_driver_writes_faults_json_also_when_the_run_fails(tmp_path, monkeypatch):
    from perturblab.core.faults import faults_recorded as api_faults_recorded

    monkeypatch.setenv("PERTURBLAB_TEST_KEY", KEY)
    with CompletionsServer({"a": ["echo-headers:500"], "b": ["echo-headers:403"]}) as server:
        with pytest.raises(ApiError, match="HTTP 403"), api_faults_recorded(tmp_path):
            with client(server.url, name="m") as api:
                api.post("completions", {"prompt": "a"})
                api.post("completions", {"prompt": "b"})
    text = (tmp_path / "faults.json").read_text()
    rep = json.loads(text)
    assert rep["total_faults"] == 2 and rep["models"]["m"]["fault_counts"] == {"status 500": 1, "status 403": 1}
    assert KEY not in text and "[REDACTED]" in text
    with api_faults_recorded(tmp_path / "none"):  # no API model used: no file
        pass
    assert not (tmp_path / "none" / "faults.json").exists()
