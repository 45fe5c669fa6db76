"""A fault-tolerant JSON client for OpenAI-compatible HTTP APIs (``/v1/completions``,
``/v1/chat/completions``), the transport under black-box API models.

* **Retries** on HTTP 408, 409, 429 and 5xx, on timeouts and connection errors, and on bodies
  that are not a JSON object: exponential backoff ``min(backoff_max, backoff_base · 2^attempt)``
  with full jitter (a uniform draw below it), or the server's ``Retry-After`` seconds when it
  sends one; at most ``max_retries`` retries, then :class:`ApiError`. Other 4xx answers (a bad
  request, a wrong key) are not retried.
* **Timeouts** per request (``timeout`` seconds); **concurrency**: :meth:`ApiClient.post_many`
  keeps at most ``concurrency`` requests in flight and returns answers in input order.
* **Accounting**: :attr:`ApiClient.usage` sums the ``usage`` blocks of the answers
  (prompt/completion tokens) and counts requests, retries and failures; every fault is kept in
  :attr:`ApiClient.faults` (kind, status, attempt, path), so a study can report them.
* **The API key** is read from the environment variable named by ``api_key_env`` at request
  time and sent as ``Authorization: Bearer``; it never appears in ``repr``, faults, errors or logs.
* **Spec strings** name an API model where a model name is expected: ``api:MODEL@BASE_URL``
  (:func:`parse_api_spec`, :func:`api_config_from_spec`); the key variable is ``OPENAI_API_KEY``
  unless ``PERTURBLAB_API_KEY_ENV`` names another one (:func:`default_api_key_env`).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from ..errors import InputError, PerturblabError

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


class ApiError(PerturblabError):
    """An API request failed for good (after retries, or with an answer that retrying cannot fix).
    ``status`` is the HTTP status of a refused (not retried) request, else None."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class ApiConfig:
    """Where the API is and how to talk to it."""

    base_url: str  # e.g. http://127.0.0.1:8000/v1
    model: str = ""  # the model name sent in every payload that has none
    api_key_env: str | None = "OPENAI_API_KEY"  # None: send no key
    timeout: float = 60.0
    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not str(self.base_url).startswith(("http://", "https://")):
            raise InputError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if self.timeout <= 0 or self.max_retries < 0 or self.backoff_base < 0 or self.concurrency < 1:
            raise InputError("need timeout > 0, max_retries >= 0, backoff_base >= 0 and concurrency >= 1")


#: Where the API key is read from unless ``PERTURBLAB_API_KEY_ENV`` names another variable.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_SPEC = re.compile(r"^api:(?P<model>[^\s@]+(?:@[^\s@]+)*?)@(?P<url>https?://\S+)$")


def parse_api_spec(spec: str) -> tuple[str, str]:
    """``(model, base_url)`` of a spec string ``api:MODEL@BASE_URL``, e.g.
    ``api:gpt-3.5-turbo-instruct@https://api.openai.com/v1``; :class:`InputError` otherwise.

    The URL starts at the first ``@http://`` or ``@https://``, so model names may contain ``/``,
    ``:`` and ``@``. There is no default URL: a spec always says where the texts are sent.
    """
    m = _SPEC.match(str(spec).strip())
    if m is None:
        raise InputError(f"API model spec {spec!r} is not of the form api:MODEL@BASE_URL, e.g. "
                         "api:gpt-3.5-turbo-instruct@https://api.openai.com/v1")
    return m.group("model"), m.group("url").rstrip("/")


def is_api_spec(name: str) -> bool:
    """Whether ``name`` is meant as an API model spec (starts with ``api:``)."""
    return str(name).strip().startswith("api:")


def default_api_key_env() -> str:
    """The environment variable holding the API key: ``$PERTURBLAB_API_KEY_ENV`` if set, else
    ``OPENAI_API_KEY`` (the name is configuration; the key itself is only read at request time)."""
    return os.environ.get("PERTURBLAB_API_KEY_ENV", "").strip() or DEFAULT_API_KEY_ENV


def api_config_from_spec(spec: str, **overrides: Any) -> ApiConfig:
    """An :class:`ApiConfig` for ``api:MODEL@BASE_URL`` with the key variable of
    :func:`default_api_key_env`; ``overrides`` set other fields (timeout, concurrency, ...)."""
    model, url = parse_api_spec(spec)
    overrides.setdefault("api_key_env", default_api_key_env())
    return ApiConfig(base_url=url, model=model, **overrides)


@dataclass
class Usage:
    """Tokens and requests spent (summed over every answered request)."""

    requests: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Fault:
    """One failed attempt: ``kind`` is status, timeout, connection or malformed."""

    path: str
    attempt: int
    kind: str
    status: int | None = None
    detail: str = ""


@dataclass
class ApiClient:
    """POSTs JSON payloads to ``config.base_url + path`` with retries (see the module docstring)."""

    config: ApiConfig
    usage: Usage = field(default_factory=Usage)
    faults: list[Fault] = field(default_factory=list)
    seed: int | None = None  # fixes the backoff jitter (tests)

    def __post_init__(self) -> None:
        import httpx

        self._lock = threading.Lock()
        self._rng = random.Random(self.seed)
        self._http = httpx.Client(timeout=self.config.timeout,
                                  limits=httpx.Limits(max_connections=self.config.concurrency))

    def __repr__(self) -> str:  # no key, no headers
        return f"ApiClient({self.config.base_url!r}, model={self.config.model!r}, usage={self.usage.as_dict()})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ApiClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        env = self.config.api_key_env
        if env:
            key = os.environ.get(env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def _fault(self, fault: Fault) -> None:
        with self._lock:
            self.faults.append(fault)
        log.warning("API %s attempt %d failed: %s%s", fault.path, fault.attempt, fault.kind,
                    f" {fault.status}" if fault.status else "")

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        try:
            delay = float(retry_after) if retry_after is not None else None
        except ValueError:
            delay = None
        if delay is None:
            cap = min(self.config.backoff_max, self.config.backoff_base * 2 ** attempt)
            with self._lock:
                delay = self._rng.uniform(0, cap)
        time.sleep(min(max(delay, 0.0), self.config.backoff_max))

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer to one request (retried as the module docstring says)."""
        import httpx

        body = dict(payload)
        if self.config.model and "model" not in body:
            body["model"] = self.config.model
        url = self.config.base_url.rstrip("/") + "/" + path.lstrip("/")
        for attempt in range(self.config.max_retries + 1):
            retry_after = None
            try:
                resp = self._http.post(url, content=json.dumps(body), headers=self._headers())
            except httpx.TimeoutException:
                fault = Fault(path, attempt, "timeout")
            except httpx.TransportError as e:
                fault = Fault(path, attempt, "connection", detail=type(e).__name__)
            else:
                if resp.status_code == 200:
                    try:
                        answer = resp.json()
                    except ValueError:
                        answer = None
                    if isinstance(answer, dict):
                        self._account(answer)
                        return answer
                    fault = Fault(path, attempt, "malformed", 200, resp.text[:80])
                elif resp.status_code in RETRY_STATUS:
                    fault = Fault(path, attempt, "status", resp.status_code, resp.text[:80])
                    retry_after = resp.headers.get("retry-after")
                else:
                    self._fault(Fault(path, attempt, "status", resp.status_code, resp.text[:200]))
                    with self._lock:
                        self.usage.failures += 1
                    raise ApiError(f"{path} answered HTTP {resp.status_code}: {resp.text[:200]} "
                                   "(not retried: check the request, the model name and the API key)",
                                   status=resp.status_code)
            self._fault(fault)
            if attempt < self.config.max_retries:
                with self._lock:
                    self.usage.retries += 1
                self._wait(attempt, retry_after)
        with self._lock:
            self.usage.failures += 1
        raise ApiError(f"{path} failed {self.config.max_retries + 1} times (last: {fault.kind}"
                       f"{' ' + str(fault.status) if fault.status else ''}); see the client's faults")

    def _account(self, answer: dict[str, Any]) -> None:
        usage = answer.get("usage") or {}
        with self._lock:
            self.usage.requests += 1
            self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)

    def post_many(self, path: str, payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answers to ``payloads`` in their order, at most ``concurrency`` requests at a time.
        The first request that fails for good raises :class:`ApiError` once all have ended."""
        if self.config.concurrency == 1 or len(payloads) <= 1:
            return [self.post(path, p) for p in payloads]
        with ThreadPoolExecutor(self.config.concurrency) as pool:
            futures = [pool.submit(self.post, path, p) for p in payloads]
            return [f.result() for f in futures]
