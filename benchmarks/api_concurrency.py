"""Requests in flight against what a server does with them: wall time of an API model's work at
``concurrency`` 1, 2, 4, 8 and 16, and the speed-up over one request at a time.

Two servers on loopback ports:

* ``latency``: a stand-in completions endpoint that answers every request after ``--latency``
  seconds and serves any number at once (threads): a hosted API or a batching engine (vLLM, TGI),
  where the time of a request is mostly waiting on the network and the queue. What the client's
  concurrency buys when the server has room.
* ``llama.cpp``: llama-cpp-python's own server (``python -m llama_cpp.server``) with the packaged
  SmolLM2 GGUF, when the llamacpp extra is installed. It runs one request at a time (one model
  context behind a lock) on this machine's cores, so requests in flight queue there instead.

Each setting generates ``--max-new-tokens`` tokens greedily after each of ``--n`` prompts
(:meth:`ApiLanguageModel.generate`, one request per prompt); the stand-in also scores ``--n``
texts (:meth:`ApiLanguageModel.token_logprobs`, echo with log-probs). Best of ``--repeats``.
Usage::

    python benchmarks/api_concurrency.py [--n 32] [--latency 0.1] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from perturblab.models.api_client import ApiClient, ApiConfig  # noqa: E402
from perturblab.models.api_lm import ApiLanguageModel  # noqa: E402

PROMPTS = ["The old bridge was", "Children were playing", "Water boils at", "She said the", "In the morning we",
           "The committee decided", "Rain fell over the", "My brother is a"]
LEVELS = (1, 2, 4, 8, 16)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def latency_server(latency: float) -> tuple[ThreadingHTTPServer, str]:
    """A completions endpoint answering every request after ``latency`` seconds, any number at once:
    echo requests with a log-prob per word (aligned: greedy tokens are their position's best)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency)
            prompt = body["prompt"]
            if body.get("echo"):
                toks = re.findall(r"\s*\S+", prompt) + [" x"] * int(body.get("max_tokens") or 0)
                offs, at = [], 0
                for t in toks:
                    offs.append(min(at, len(prompt)))
                    at += len(t)
                values = [None] + [-1.0] * (len(toks) - 1)
                tops = [None] + [{t: -1.0} for t in toks[1:]]
                lp = {"tokens": toks, "token_logprobs": values, "text_offset": offs, "top_logprobs": tops}
                choice = {"text": prompt, "logprobs": lp}
            else:
                choice = {"text": " x" * int(body["max_tokens"])}
            data = json.dumps({"choices": [choice], "usage": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        request_queue_size = 128  # the default backlog of 5 drops connections at 16 in flight

    server = Server(("127.0.0.1", _free_port()), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def llama_cpp_server() -> tuple[subprocess.Popen, str] | None:
    try:
        import llama_cpp.server.app  # noqa: F401
    except ImportError:
        return None
    from perturblab.models.lm_presets import smollm2_gguf

    import httpx

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()), "--host",
                             "127.0.0.1", "--port", str(port), "--model_alias", "smollm2", "--n_ctx", "2048"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("llama_cpp.server did not start")


def timed(url: str, model: str, concurrency: int, work: str, n: int, max_new: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        api = ApiLanguageModel(ApiClient(ApiConfig(base_url=url, model=model, api_key_env=None, timeout=120.0,
                                                   concurrency=concurrency)), score_max_tokens=1)
        prompts = [f"{PROMPTS[i % len(PROMPTS)]} ({i})" for i in range(n)]  # distinct: none served twice
        if work == "token_logprobs":
            api.token_logprobs(prompts[:1])  # the one-off alignment probe, outside the timing
        t0 = time.perf_counter()
        if work == "generate":
            api.generate(prompts, max_new_tokens=max_new)
        else:
            api.token_logprobs(prompts[1:])
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=32, help="prompts per setting (default 32)")
    ap.add_argument("--latency", type=float, default=0.1, help="the stand-in's seconds per request (default 0.1)")
    ap.add_argument("--max-new-tokens", type=int, default=8, help="tokens generated per prompt (default 8)")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs (default 3)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    rows = []
    server, url = latency_server(args.latency)
    try:
        for work in ("generate", "token_logprobs"):
            base = None
            for c in LEVELS:
                s = timed(url, "stand-in", c, work, args.n, args.max_new_tokens, args.repeats)
                base = base or s
                rows.append(dict(server=f"stand-in, {args.latency * 1000:.0f} ms a request", work=work,
                                 concurrency=c, seconds=s, speedup=base / s))
    finally:
        server.shutdown()
    started = llama_cpp_server()
    if started is None:
        print("llama-cpp-python's server is not installed (./setup.sh --llamacpp): its rows are left out")
    else:
        proc, url = started
        try:
            base = None
            for c in LEVELS[:4]:
                s = timed(url, "smollm2", c, "generate", args.n, args.max_new_tokens, args.repeats)
                base = base or s
                rows.append(dict(server="llama_cpp.server, SmolLM2-135M Q4_1, CPU", work="generate", concurrency=c,
                                 seconds=s, speedup=base / s))
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(f"{'server':<44} {'work':<15} {'concurrency':>11} {'seconds':>8} {'speed-up':>8}")
    for r in rows:
        print(f"{r['server']:<44} {r['work']:<15} {r['concurrency']:>11} {r['seconds']:>8.2f} {r['speedup']:>7.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
