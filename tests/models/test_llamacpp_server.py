"""The OpenAI-compatible path end to end against a real server: llama-cpp-python's own server
(``python -m llama_cpp.server``) with the packaged SmolLM2 GGUF on a loopback port.

What that server returns, checked against the same file run in-process by llama.cpp
(:class:`~perturblab.models.llamacpp.LlamaCppLM`):

* the log-prob of a token it generates (no ``echo``) is right: log p(token | prompt);
* with ``echo`` every prompt token comes back beside the distribution *after* it,
  log p(t_i | t_<=i) instead of log p(t_i | t_<i) (llama-cpp-python 0.3.x), so it cannot give a
  text's per-token log-probabilities: perturblab's alignment probe finds this and the negation
  metric is refused with one line, before anything is written;
* it reads ``max_tokens=0`` as "no limit";
* full next-token distributions (every other selfcheck metric, scope-lm) no completions endpoint
  gives: refused before any request.

Needs the llamacpp extra with its server (``./setup.sh --llamacpp``); skipped without it unless
``PERTURBLAB_REQUIRE_LLAMACPP=1`` (set by CI).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

if os.environ.get("PERTURBLAB_REQUIRE_LLAMACPP") == "1":
    import llama_cpp.server.app  # noqa: F401 - a missing extra fails here
else:
    pytest.importorskip("llama_cpp.server.app", reason="the llamacpp extra with its server is not installed "
                                                       "(./setup.sh --llamacpp)")

import httpx  # noqa: E402

from perturblab.cli import main  # noqa: E402
from perturblab.errors import CapabilityError  # noqa: E402
from perturblab.models.api_client import ApiClient, ApiConfig  # noqa: E402
from perturblab.models.api_lm import ApiLanguageModel  # noqa: E402
from perturblab.models.lm_presets import smollm2_gguf  # noqa: E402

SENTENCE = "The cat sat on the mat because it was tired."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The server's base URL; the server is stopped after the module."""
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()),
                                 "--host", "127.0.0.1", "--port", str(port), "--model_alias", "smollm2",
                                 "--logits_all", "true", "--n_ctx", "2048", "--n_threads", "2"],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _post(url: str, body: dict) -> dict:
    r = httpx.post(f"{url}/completions", json={"model": "smollm2", **body}, timeout=60.0)
    r.raise_for_status()
    return r.json()


def test_what_the_server_returns_against_the_same_file_in_process(server, native):
    ids = native.encode(SENTENCE)
    # a generated token's log-prob (no echo) is log p(token | prompt): right
    prompt = "The cat sat on the mat because it was"
    lp = _post(server, {"prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 1})["choices"][0]["logprobs"]
    want = native.next_token_logprobs([prompt])[0]
    token = int(want.argmax())
    assert lp["tokens"][0] == native.decode([token])
    assert lp["token_logprobs"][0] == pytest.approx(float(want[token]), abs=2e-3)  # float32 logits, two builds' batching

    # with echo, prompt token i comes back with log p(t_i | t_<=i): the distribution one step later
    lp = _post(server, {"prompt": SENTENCE, "echo": True, "max_tokens": 1, "temperature": 0,
                        "logprobs": 1})["choices"][0]["logprobs"]
    echoed = np.asarray(lp["token_logprobs"][1:len(ids)], dtype=np.float64)
    dists = native.span_logprobs([SENTENCE], [0])[0]  # row j: after token j
    after = np.array([dists[j][ids[j]] for j in range(1, len(ids))])  # log p(t_j | t_<=j)
    right = native.token_logprobs([SENTENCE])[0]  # log p(t_j | t_<j)
    np.testing.assert_allclose(echoed, after, rtol=0, atol=2e-3)
    assert np.abs(echoed - right).max() > 1.0  # not the text's log-probs: off by whole nats

    # max_tokens=0 reads as "no limit": tokens are generated after the prompt
    lp = _post(server, {"prompt": SENTENCE, "echo": True, "max_tokens": 0, "temperature": 0,
                        "logprobs": 1})["choices"][0]["logprobs"]
    assert max(lp["text_offset"]) >= len(SENTENCE)


def test_the_api_model_refuses_the_misaligned_log_probs(server):
    for score_max_tokens in (0, 1):
        api = ApiLanguageModel(ApiClient(ApiConfig(base_url=server, model="smollm2", api_key_env=None, timeout=60.0)),
                               score_max_tokens=score_max_tokens)
        with pytest.raises(CapabilityError, match=r"misaligned: after '1, 2, 3, 4, 5,' it generated"):
            api.token_logprobs([SENTENCE])
        assert api.usage.requests == 1  # the probe only: no text was scored
    assert api.generate(["The old bridge was"], max_new_tokens=4)[0]  # generations come back


def test_selfcheck_and_scope_lm_against_the_server_say_what_it_cannot_return(server, tmp_path, capsys):
    spec = f"srv=api:smollm2@{server}[api_key_env=none,score_max_tokens=1,timeout=60]"
    out = tmp_path / "sc"
    assert main(["selfcheck", "--models", spec, "--metrics", "negation", "--n", "8", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].startswith("error: srv: the endpoint's log-probabilities are misaligned")
    assert "Traceback" not in err
    assert sorted(p.name for p in out.rglob("*.*")) == ["faults.json", "results.sqlite"]  # no result written

    out = tmp_path / "sc2"  # metrics that need full distributions: refused before any request
    assert main(["selfcheck", "--models", spec, "--metrics", "negation,word_order", "--n", "8", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot compute 'word_order'" in err and "metrics it supports: negation" in err and "Traceback" not in err

    out = tmp_path / "lm"
    assert main(["scope-lm", "--reference", "smollm2-135m", "--targets", spec, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "srv cannot compute" in err and "full next-token distributions" in err and "Traceback" not in err
