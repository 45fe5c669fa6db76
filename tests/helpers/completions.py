"""A completions endpoint on 127.0.0.1 in a thread (:class:`CompletionsServer`), with faults and
hostile answers on demand, and :func:`serving`, a ``respond`` for it that answers from a local
classifier: shared by the API client, classifier, language-model, engine and runs tests."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

WORDS = {"negative": " Negative", "positive": " positive"}  # label -> answer token (case and space vary)


class CompletionsServer:
    """A completions endpoint on 127.0.0.1 in a thread. ``respond(body) -> dict`` makes a normal
    answer (default: the prompt reversed as the completion); ``plan[prompt]`` (``plan["*"]``: any
    prompt without its own entry) lists the faults
    (``429``, ``500``, ``503``, ``400``, ``timeout``, ``malformed``, ``retry-after:S``) its
    successive requests get first, and the hostile answers: ``echo-headers:STATUS`` (the request's
    headers, the key among them, reflected in the body), ``drip`` (a valid answer sent one byte per
    ``drip`` seconds), ``huge`` (``huge`` bytes announced by Content-Length) and ``huge-stream``
    (``huge`` bytes with no length, until the connection closes), ``gzip`` (a valid answer,
    gzip-compressed although not asked for) and ``gzip-huge`` (``huge`` spaces, gzip-compressed to
    a few KiB); ``sent`` counts the body bytes the server got out."""

    def __init__(self, plan: dict[str, list[str]] | None = None, hang: float = 3.0, respond=None,
                 drip: float = 0.2, huge: int = 64 * 2 ** 20):
        self.plan, self.hang, self.respond = plan or {}, hang, respond
        self.drip, self.huge = drip, huge
        self.counts: Counter = Counter()
        self.auth: set[str] = set()
        self.sent = 0
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Server(ThreadingHTTPServer):
    """The HTTP server of a :class:`CompletionsServer` (its ``owner``)."""

    daemon_threads = True
    owner: CompletionsServer

    def handle_error(self, request, client_address):
        """A client that hung up (a stopped batch) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """One request to the :class:`CompletionsServer` of ``self.server.owner``."""

    def log_message(self, *a):  # keep test output clean
        pass

    def do_POST(self):
        outer = self.server.owner
        size = int(self.headers["Content-Length"])
        raw = self.rfile.read(size)
        if len(raw) < size:  # the client hung up while sending (its batch was stopped)
            self.close_connection = True
            return
        body = json.loads(raw)
        prompt = body["prompt"]
        with outer.lock:
            n = outer.counts[prompt]
            outer.counts[prompt] += 1
            outer.auth.add(self.headers.get("Authorization", ""))
        faults = outer.plan.get(prompt, outer.plan.get("*", []))  # "*": every other prompt
        action = faults[n] if n < len(faults) else "ok"
        if action == "timeout":
            time.sleep(outer.hang)
            action = "ok"
        if action.startswith("echo-headers"):  # a proxy that reflects what it was sent
            status = int(action.split(":")[1]) if ":" in action else 401
            sent = sorted(self.headers.items(), key=lambda kv: kv[0].lower() != "authorization")  # key first
            self._send(status, json.dumps({"error": "denied", "you_sent": dict(sent),
                                           "raw": str(self.headers)}).encode())
        elif action == "drip":
            self._drip(json.dumps({"choices": [{"text": prompt[::-1]}]}).encode())
        elif action in ("gzip", "gzip-huge"):
            import gzip

            data = (json.dumps({"choices": [{"text": prompt[::-1]}]}).encode() if action == "gzip"
                    else b" " * outer.huge)
            self._send(200, gzip.compress(data), {"Content-Encoding": "gzip"})
        elif action in ("huge", "huge-stream"):
            self._huge(announce=action == "huge")
        elif action.startswith("retry-after"):
            self._send(429, b"slow down", {"Retry-After": action.split(":")[1]})
        elif action in ("429", "500", "503", "400"):
            self._send(int(action), b"injected fault")
        elif action == "malformed":
            self._send(200, b'{"choices": [ {"text": ')
        else:
            answer = outer.respond(body) if outer.respond else {
                "model": body.get("model"), "choices": [{"text": prompt[::-1]}],
                "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 1}}
            self._send(200, json.dumps(answer).encode())

    def _drip(self, data):
        outer = self.server.owner
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            t_end = time.monotonic() + outer.hang
            for byte in data:
                if time.monotonic() > t_end:
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(outer.drip)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _huge(self, announce):
        outer = self.server.owner
        block = b"x" * 2 ** 16
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if announce:
                self.send_header("Content-Length", str(outer.huge))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            left = outer.huge
            while left > 0:
                n = min(left, len(block))
                self.wfile.write(block[:n])
                with outer.lock:
                    outer.sent += n
                left -= n
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, status, data, headers=None):
        try:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass


def serving(model, *, logprobs: bool = True, distractor: bool = True):
    """``respond`` for :class:`CompletionsServer`: the first prompt line is the text; answers from
    ``model`` (a classifier with ``labels`` and ``predict_proba``)."""

    def respond(body):
        text = body["prompt"].split("\n")[0]
        p = model.predict_proba([text])[0]
        usage = {"prompt_tokens": len(body["prompt"].split()), "completion_tokens": 1}
        if "logprobs" in body:
            if not logprobs:
                return {"choices": [{"text": WORDS[model.labels[int(p.argmax())]]}], "usage": usage}
            top = {WORDS[lab]: math.log(max(q, 1e-300)) for lab, q in zip(model.labels, p)}
            if distractor:
                top[" The"] = math.log(0.3)  # a token that names no label
            return {"choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}], "usage": usage}
        rng = np.random.default_rng(zlib.crc32(body["prompt"].encode()))
        draws = rng.choice(len(model.labels), size=body["n"], p=p)
        texts = [f"{WORDS[model.labels[k]]}." if i % 10 else " I am not sure" for i, k in enumerate(draws)]
        return {"choices": [{"text": t} for t in texts], "usage": usage}

    return respond
