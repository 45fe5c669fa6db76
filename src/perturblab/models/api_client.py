"""A fault-tolerant JSON client for OpenAI-compatible HTTP APIs (``/v1/completions``,
``/v1/chat/completions``), the transport under black-box API models.

* **Retries** on HTTP 408, 409, 429 and 5xx, on timeouts and connection errors, and on bodies
  that are not a JSON object: exponential backoff ``min(backoff_max, backoff_base · 2^attempt)``
  with full jitter (a uniform draw below it), or the server's ``Retry-After`` seconds when it
  sends one; at most ``max_retries`` retries, then :class:`ApiError`. Other 4xx answers (a bad
  request, a wrong key) are not retried.
* **A deadline per request**: ``timeout`` seconds bound a whole attempt (connecting, sending,
  the answer's headers and every read of its body), not each read: a server that sends one byte
  a second times out like one that sends nothing. Every network operation waits at most the time
  left until the deadline (an httpcore network backend, :func:`_deadline_backend`), and the body
  loop checks it between reads.
* **A size limit**: answers are streamed and refused (:class:`~perturblab.errors.ApiResponseTooLargeError`,
  not retried) as soon as they exceed ``max_response_bytes`` (16 MiB by default), or before
  any of the body is read when ``Content-Length`` announces more. Compressed answers are not asked
  for; a gzip/deflate answer is inflated under the same limit.
* **Concurrency and failing fast**: :meth:`ApiClient.post_many` keeps at most ``concurrency``
  requests in flight and returns answers in input order. The first request that fails for good
  (a status that is not retried, retries exhausted, an answer too large) stops the batch: queued
  requests are not sent, the others in flight are interrupted and do not retry, and one
  :class:`~perturblab.errors.ApiError` says what failed and how many requests were stopped.
* **Accounting**: :attr:`ApiClient.usage` sums the ``usage`` blocks of the answers
  (prompt/completion tokens) and counts requests, retries, failures and bytes received; every
  fault is kept in :attr:`ApiClient.faults` (kind, status, attempt, path, redacted detail).
  A :class:`~perturblab.core.faults.FaultRecorder` collects the clients used while it is active,
  so the study driver can write every model's faults to ``faults.json``
  (:func:`perturblab.core.driver.run_study`).
* **The API key** is read from the environment variable named by ``api_key_env`` at request
  time and sent as ``Authorization: Bearer``; it never appears in ``repr``, faults, errors or logs.
  Every text a server sends is passed through :func:`~perturblab.core.faults.redact` before it is shown, logged or stored:
  a server or proxy that reflects the request headers cannot put the key on the console or in an
  output file.
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
import socket
import threading
import time
import zlib
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from ..core.faults import REDACTED, FaultRecorder, redact, register_client  # noqa: F401 - FaultRecorder, REDACTED: public here too
from ..errors import ApiError, ApiResponseTooLargeError, InputError

__all__ = ["ApiClient", "ApiConfig", "ApiError", "ApiResponseTooLargeError", "Fault", "FaultRecorder", "Usage",
           "api_config_from_spec", "default_api_key_env", "is_api_spec", "parse_api_spec", "redact"]

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
#: The default of :attr:`ApiConfig.max_response_bytes`: far above any completions answer perturblab
#: asks for (a few KiB; echo with logprobs of a 4k-token text is about 1 MiB).
DEFAULT_MAX_RESPONSE_BYTES = 16 * 2 ** 20
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
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # larger answers are refused

    def __post_init__(self) -> None:
        if not str(self.base_url).startswith(("http://", "https://")):
            raise InputError(f"base_url must start with http:// or https://, got {redact(self.base_url)!r}")
        if self.timeout <= 0 or self.max_retries < 0 or self.backoff_base < 0 or self.concurrency < 1:
            raise InputError("need timeout > 0, max_retries >= 0, backoff_base >= 0 and concurrency >= 1")
        if self.max_response_bytes < 1024:
            raise InputError(f"max_response_bytes must be at least 1024, got {self.max_response_bytes}")


#: Where the API key is read from unless ``PERTURBLAB_API_KEY_ENV`` names another variable.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_SPEC = re.compile(r"^api:(?P<model>[^\s@]+(?:@[^\s@]+)*?)@(?P<url>https?://\S+)$")


def parse_api_spec(spec: str) -> tuple[str, str]:
    """``(model, base_url)`` of a spec string ``api:MODEL@BASE_URL``, e.g.
    ``api:gpt-3.5-turbo-instruct@https://api.openai.com/v1``; :class:`InputError` otherwise.

    The URL starts at the first ``@http://`` or ``@https://``, so model names may contain ``/``,
    ``:`` and ``@``. There is no default URL: a spec always says where the texts are sent.
    A URL that carries credentials (``https://user:pass@host``, ``?key=...``) is refused: the key
    is only read from the environment variable the configuration names.
    """
    m = _SPEC.match(str(spec).strip())
    if m is None:
        raise InputError(f"API model spec {redact(spec)!r} is not of the form api:MODEL@BASE_URL, e.g. "
                         "api:gpt-3.5-turbo-instruct@https://api.openai.com/v1")
    url = m.group("url").rstrip("/")
    if redact(url) != url:
        raise InputError(f"API model spec for {m.group('model')!r}: its URL carries credentials "
                         f"({redact(url)}); secrets are never taken on the command line or in a spec: put the "
                         "key in an environment variable and name it (api_key_env=VARIABLE, or "
                         "PERTURBLAB_API_KEY_ENV)")
    return m.group("model"), url


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
    bytes_received: int = 0  # answer bytes read, refused answers included

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Fault:
    """One failed attempt: ``kind`` is status, timeout, connection, malformed or too_large;
    ``detail`` is the start of the server's text, redacted (:func:`redact`)."""

    path: str
    attempt: int
    kind: str
    status: int | None = None
    detail: str = ""


class _Cancelled(Exception):
    """A request stopped because another request of its batch failed for good (internal)."""


class _Call:
    """One attempt in flight: its deadline (``time.monotonic()``), the batch's stop signal, and the
    network stream it is reading (so a stopped batch can interrupt the read)."""

    __slots__ = ("deadline", "abort", "stream")

    def __init__(self, deadline: float, abort: threading.Event | None) -> None:
        self.deadline, self.abort, self.stream = deadline, abort, None


class _Batch:
    """The requests of one :meth:`ApiClient.post_many` call: the first permanent failure sets
    ``error`` and ``abort`` and interrupts the reads in flight."""

    def __init__(self) -> None:
        self.abort = threading.Event()
        self.error: BaseException | None = None
        self.calls: set[_Call] = set()
        self.lock = threading.Lock()

    def fail(self, error: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = error
            self.abort.set()
            calls = list(self.calls)
        for call in calls:
            stream = call.stream
            if stream is not None:
                stream.interrupt()


_CURRENT = threading.local()  # .call: the _Call this thread is running, if any


def _time_left(timeout: float | None, exc: type[Exception]) -> float | None:
    """The wait allowed for one network operation of this thread's attempt: ``timeout``, at most
    the time left until the attempt's deadline; ``exc`` once it has passed or the batch stopped."""
    call = getattr(_CURRENT, "call", None)
    if call is None:
        return timeout
    if call.abort is not None and call.abort.is_set():
        raise exc("the request's batch was stopped")
    left = call.deadline - time.monotonic()
    if left <= 0:
        raise exc("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def _deadline_backend() -> Any:
    """An httpcore network backend whose every connect, read and write waits at most until the
    deadline of the attempt that runs in the calling thread (httpx itself bounds each operation
    separately, so a server that keeps sending a byte now and then would never time out)."""
    import httpcore

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            wait_s = _time_left(timeout, httpcore.ReadTimeout)
            call = getattr(_CURRENT, "call", None)
            if call is not None:
                call.stream = self
            try:
                return self._inner.read(max_bytes, wait_s)
            finally:
                if call is not None:
                    call.stream = None

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> "Stream":
            return Stream(self._inner.start_tls(ssl_context, server_hostname,
                                                _time_left(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

        def interrupt(self) -> None:
            """Wake a read blocked in another thread (its batch was stopped)."""
            sock = self._inner.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    class Backend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Stream:
            return Stream(self._inner.connect_tcp(host, port, _time_left(timeout, httpcore.ConnectTimeout),
                                                  local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Stream:
            return Stream(self._inner.connect_unix_socket(path, _time_left(timeout, httpcore.ConnectTimeout),
                                                          socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return Backend()


@dataclass(eq=False)
class ApiClient:
    """POSTs JSON payloads to ``config.base_url + path`` with retries (see the module docstring).
    ``name`` is the model the client serves (set by the API models; faults are reported under it)."""

    config: ApiConfig
    usage: Usage = field(default_factory=Usage)
    faults: list[Fault] = field(default_factory=list)
    seed: int | None = None  # fixes the backoff jitter (tests)
    name: str = ""

    def __post_init__(self) -> None:
        import httpx

        self._lock = threading.Lock()
        self._rng = random.Random(self.seed)
        self._http = httpx.Client(timeout=self.config.timeout,
                                  limits=httpx.Limits(max_connections=self.config.concurrency))
        # every pool (the direct one and any proxy's) connects through the deadline backend
        self.deadline_backend = False
        for transport in [self._http._transport, *self._http._mounts.values()]:
            pool = getattr(transport, "_pool", None)
            if pool is not None and hasattr(pool, "_network_backend"):
                pool._network_backend = _deadline_backend()
                self.deadline_backend = True
        if not self.deadline_backend:  # pragma: no cover - another httpx layout
            log.warning("httpx has no pool to put the request deadline on; reads are bounded between chunks only")
        register_client(self)

    def __repr__(self) -> str:  # no key, no headers
        return f"ApiClient({redact(self.config.base_url)!r}, model={self.config.model!r}, usage={self.usage.as_dict()})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ApiClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _key(self) -> str | None:
        env = self.config.api_key_env
        return os.environ.get(env) or None if env else None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def redact(self, text: Any, limit: int | None = None) -> str:
        """``text`` (a server's answer, an error) with this client's key and every credential-like
        value replaced (:func:`redact`), then cut to ``limit`` characters."""
        out = redact(str(text), [self._key()])
        return out if limit is None else out[:limit]

    def _fault(self, fault: Fault) -> None:
        with self._lock:
            self.faults.append(fault)
        log.warning("API %s attempt %d failed: %s%s", fault.path, fault.attempt, fault.kind,
                    f" {fault.status}" if fault.status else "")

    def _failed(self, fault: Fault) -> None:
        self._fault(fault)
        with self._lock:
            self.usage.failures += 1

    def _wait(self, attempt: int, retry_after: str | None, batch: _Batch | None) -> None:
        try:
            delay = float(retry_after) if retry_after is not None else None
        except ValueError:
            delay = None
        if delay is None:
            cap = min(self.config.backoff_max, self.config.backoff_base * 2 ** attempt)
            with self._lock:
                delay = self._rng.uniform(0, cap)
        delay = min(max(delay, 0.0), self.config.backoff_max)
        if batch is None:
            time.sleep(delay)
        elif batch.abort.wait(delay):
            raise _Cancelled()

    def _read(self, url: str, data: bytes, batch: _Batch | None) -> tuple[int, Any, bytes]:
        """One attempt under its deadline: (status, headers, body), the body at most
        ``max_response_bytes`` long (:class:`ApiResponseTooLargeError` past it)."""
        import httpx

        cap = self.config.max_response_bytes
        call = _Call(time.monotonic() + self.config.timeout, batch.abort if batch is not None else None)
        if batch is not None:
            with batch.lock:
                batch.calls.add(call)
        before, _CURRENT.call = getattr(_CURRENT, "call", None), call
        try:
            with self._http.stream("POST", url, content=data, headers=self._headers()) as resp:
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > cap:
                    raise ApiResponseTooLargeError(
                        f"{url} announced an answer of {int(declared)} bytes (Content-Length), more than "
                        f"max_response_bytes={cap}; refused unread (raise max_response_bytes if it is expected)",
                        status=resp.status_code)
                encoding = resp.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("identity", "", "gzip", "deflate"):
                    raise ApiError(f"{url} answered with Content-Encoding {encoding!r} although none was asked "
                                   "for; perturblab reads identity, gzip or deflate answers", status=resp.status_code)
                inflate = zlib.decompressobj(wbits=47) if encoding in ("gzip", "deflate") else None  # 32+15: auto
                chunks: list[bytes] = []
                size = 0
                for raw in resp.iter_raw():
                    with self._lock:
                        self.usage.bytes_received += len(raw)
                    parts = [raw]
                    if inflate is not None:  # never more than the limit allows at once (no zip bombs)
                        parts = [inflate.decompress(raw, cap + 1 - size)]
                        while inflate.unconsumed_tail and size + len(parts[-1]) <= cap:
                            parts.append(inflate.decompress(inflate.unconsumed_tail, cap + 1 - size - len(parts[-1])))
                    for part in parts:
                        size += len(part)
                        chunks.append(part)
                    if size > cap:
                        raise ApiResponseTooLargeError(
                            f"{url} sent an answer of more than max_response_bytes={cap} bytes; refused after "
                            f"{size} bytes (raise max_response_bytes if it is expected)", status=resp.status_code)
                    if time.monotonic() > call.deadline:
                        raise httpx.ReadTimeout("the request's deadline passed", request=resp.request)
                return resp.status_code, resp.headers, b"".join(chunks)
        finally:
            _CURRENT.call = before
            if batch is not None:
                with batch.lock:
                    batch.calls.discard(call)

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer to one request (retried as the module docstring says)."""
        return self._post(path, payload, None)

    def _post(self, path: str, payload: dict[str, Any], batch: _Batch | None) -> dict[str, Any]:
        import httpx

        body = dict(payload)
        if self.config.model and "model" not in body:
            body["model"] = self.config.model
        url = self.config.base_url.rstrip("/") + "/" + path.lstrip("/")
        data = json.dumps(body).encode()
        for attempt in range(self.config.max_retries + 1):
            if batch is not None and batch.abort.is_set():
                raise _Cancelled()
            retry_after = None
            try:
                status, headers, raw = self._read(url, data, batch)
            except ApiResponseTooLargeError as e:
                self._failed(Fault(path, attempt, "too_large", e.status, self.redact(e, 80)))
                raise type(e)(self.redact(e), status=e.status) from None
            except ApiError as e:
                self._failed(Fault(path, attempt, "malformed", e.status, self.redact(e, 80)))
                raise type(e)(self.redact(e), status=e.status) from None
            except httpx.TimeoutException:
                if batch is not None and batch.abort.is_set():
                    raise _Cancelled() from None
                fault = Fault(path, attempt, "timeout")
            except httpx.TransportError as e:
                if batch is not None and batch.abort.is_set():
                    raise _Cancelled() from None
                fault = Fault(path, attempt, "connection", detail=type(e).__name__)
            else:
                text = raw.decode("utf-8", "replace")
                if status == 200:
                    try:
                        answer = json.loads(text)
                    except ValueError:
                        answer = None
                    if isinstance(answer, dict):
                        self._account(answer)
                        return answer
                    fault = Fault(path, attempt, "malformed", 200, self.redact(text, 80))
                elif status in RETRY_STATUS:
                    fault = Fault(path, attempt, "status", status, self.redact(text, 80))
                    retry_after = headers.get("retry-after")
                else:
                    self._failed(Fault(path, attempt, "status", status, self.redact(text, 80)))
                    raise ApiError(f"{path} answered HTTP {status}: {self.redact(text, 200)} "
                                   "(not retried: check the request, the model name and the API key)",
                                   status=status)
            self._fault(fault)
            if attempt < self.config.max_retries:
                with self._lock:
                    self.usage.retries += 1
                self._wait(attempt, retry_after, batch)
        with self._lock:
            self.usage.failures += 1
        n = self.config.max_retries + 1
        raise ApiError(f"{path} failed {n} time{'s' if n != 1 else ''} (last: {fault.kind}"
                       f"{' ' + str(fault.status) if fault.status else ''}"
                       f"{' after the ' + format(self.config.timeout, 'g') + ' s deadline' if fault.kind == 'timeout' else ''}"
                       "); every attempt is listed in the client's faults (faults.json in a study's outputs)")

    def _account(self, answer: dict[str, Any]) -> None:
        usage = answer.get("usage") or {}
        with self._lock:
            self.usage.requests += 1
            try:
                self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)
            except (TypeError, ValueError, AttributeError):  # a usage block we cannot read costs nothing
                pass

    def post_many(self, path: str, payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answers to ``payloads`` in their order, at most ``concurrency`` requests at a time.

        The first request that fails for good stops the batch: queued requests are not sent, those
        in flight are interrupted and not retried, and one :class:`ApiError` (of the failure's type)
        says what failed and how many requests did not complete."""
        payloads = list(payloads)
        if self.config.concurrency == 1 or len(payloads) <= 1:
            return [self.post(path, p) for p in payloads]  # the first failure ends the loop
        batch = _Batch()

        def run(payload: dict[str, Any]) -> dict[str, Any]:
            if batch.abort.is_set():
                raise _Cancelled()
            try:
                return self._post(path, payload, batch)
            except _Cancelled:
                raise
            except BaseException as e:
                batch.fail(e)
                raise

        pool = ThreadPoolExecutor(min(self.config.concurrency, len(payloads)))
        try:
            futures = [pool.submit(run, p) for p in payloads]
            wait(futures, return_when=FIRST_EXCEPTION)
            if batch.error is not None:
                for f in futures:
                    f.cancel()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        error = batch.error
        if error is None:
            return [f.result() for f in futures]
        done = sum(1 for f in futures if not f.cancelled() and f.exception() is None)
        if not isinstance(error, ApiError):
            raise error
        raise type(error)(f"{error} [stopped the batch at this first permanent failure: {done} of {len(payloads)} "
                          f"requests completed, {len(payloads) - done - 1} stopped or never sent]",
                          status=error.status) from None
