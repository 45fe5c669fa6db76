"""The faults of remote models during a run: what the API clients record, and redaction.

A study that calls models over HTTP (:mod:`perturblab.models.api_client`) can fail in ways the
user must see (timeouts, refused requests, malformed answers), and a server's answer can carry a
secret back (a proxy that reflects the ``Authorization`` header). This module holds what the
driver and the command line need of that, below the models:

* :func:`redact`: every secret removed from a server text before it is shown, logged or stored;
* :func:`register_client`: an API client announces itself when it is made;
* :class:`FaultRecorder`: collects the clients used while it is active and reports their faults
  per model (``faults.json``, :data:`FAULTS_FILE`, and one console line);
* :func:`faults_recorded`: the driver's recorder around a run, which writes ``faults.json``
  beside the results when an API model took part.

A client is any object with ``faults`` (a list of dataclass records with ``kind`` and
``status``), ``usage`` (with ``as_dict()`` of counts including ``requests``), ``name``,
``config.model``, ``config.base_url`` and a ``_lock``.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable, Iterator

from .files import write_json

__all__ = ["FAULTS_FILE", "FaultRecorder", "REDACTED", "faults_recorded", "hide_password", "redact", "register_client"]

#: the file of a run's API faults, beside its results
FAULTS_FILE = "faults.json"
REDACTED = "[REDACTED]"
_HEADER_SECRET = re.compile(
    r"""(?ix)
    (?P<name>(?:proxy-)?authorization|x-api-key|api[-_]?key|apikey|access[-_]?token|client[-_]?secret|password)
    (?P<sep>["']?\s*[:=]\s*["']?)                    # "name": "value", name: value, name=value
    (?P<value>(?:(?:bearer|basic|token)\s+)?[^"'\s,;&}\]\)]+)""")
_BEARER = re.compile(r"(?i)\b(?P<scheme>bearer)(?P<sp>\s+)[A-Za-z0-9._~+/=:-]+")
_URL_USERINFO = re.compile(r"(?i)\b(?P<scheme>https?://)[^/\s@:]+:[^/\s@]+@")
_QUERY_SECRET = re.compile(r"(?i)(?P<name>[?&](?:key|token|sig|signature)=)[^&\s\"']+")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret replaced by ``[REDACTED]``: each of ``secrets`` (the API key,
    also in its JSON-escaped form), the value of any ``Authorization``, ``Proxy-Authorization``,
    ``api-key``/``x-api-key``/``api_key``, ``access_token``, ``client_secret`` or ``password``
    field (``name: value``, ``"name": "value"``, ``name=value``), any ``Bearer`` token, the
    credentials of a URL (``https://user:pass@host``) and ``key``/``token``/``sig`` query values.

    Applied to every text a server sends before it is shown, logged or stored, and before it is
    shortened, so a cut never leaves part of a key behind (the secret-redaction practice of
    OWASP's Logging Cheat Sheet: never log session identifiers, access tokens or passwords)."""
    out = _HEADER_SECRET.sub(lambda m: m.group("name") + m.group("sep") + REDACTED, str(text))
    out = _BEARER.sub(lambda m: m.group("scheme") + m.group("sp") + REDACTED, out)
    out = _URL_USERINFO.sub(lambda m: m.group("scheme") + REDACTED + "@", out)
    out = _QUERY_SECRET.sub(lambda m: m.group("name") + REDACTED, out)
    for secret in secrets:  # wherever else the key shows up
        if secret and len(secret) >= 4:
            for form in {secret, json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/")}:
                out = out.replace(form, REDACTED)
    return out

_ANY_USERINFO = re.compile(r"(?i)\b(?P<head>[a-z][a-z0-9+.-]*://[^/\s@:]*:)(?P<password>[^\s@]*)@")


def hide_password(text: Any) -> str:
    """``text`` (a URL, or a message holding URLs) with the password of every URL replaced by
    ``***``, the user and host kept, as SQLAlchemy renders a URL with ``hide_password=True``: what
    a message about a history database or a tracking store may show of where it is.

    >>> hide_password("refused: postgresql://postgres:s3cr%40t@db:5432/hist and sqlite:///h.db")
    'refused: postgresql://postgres:***@db:5432/hist and sqlite:///h.db'
    >>> hide_password("http://user:pw@mlflow:5000/ and https://host/x")
    'http://user:***@mlflow:5000/ and https://host/x'
    """
    return _ANY_USERINFO.sub(lambda m: m.group("head") + "***@", str(text))


_LIVE: "weakref.WeakSet[Any]" = weakref.WeakSet()
_RECORDERS: list["FaultRecorder"] = []
_RECORDERS_LOCK = threading.Lock()


def register_client(client: Any) -> None:
    """Announce a new API client: it is known to every recorder entered later (when it sends
    requests meanwhile) and to every recorder active now."""
    with _RECORDERS_LOCK:
        _LIVE.add(client)
        for recorder in _RECORDERS:
            recorder._add(client, fresh=True)


class FaultRecorder:
    """Collects the API clients (:class:`~perturblab.models.api_client.ApiClient`) used while it is active (those created meanwhile,
    and older ones that send requests meanwhile), so a study driver can report every API model's
    faults: :meth:`report` (JSON-able, per model), :meth:`write` (``faults.json``) and
    :meth:`line` (one console line). Recorders nest; each sees what happened while it was active.
    Clients in other processes (Ray workers) are not seen."""

    def __init__(self) -> None:
        self._clients: dict[int, tuple[Any, int, dict[str, int], bool]] = {}

    def __enter__(self) -> "FaultRecorder":
        with _RECORDERS_LOCK:
            for client in list(_LIVE):
                self._add(client, fresh=False)
            _RECORDERS.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        with _RECORDERS_LOCK:
            if self in _RECORDERS:
                _RECORDERS.remove(self)

    def _add(self, client: Any, fresh: bool) -> None:
        with client._lock:
            self._clients.setdefault(id(client), (client, len(client.faults), client.usage.as_dict(), fresh))

    def report(self) -> dict[str, Any]:
        """``{"total_faults": n, "models": {name: {...}}}``: per model its endpoint (redacted), usage
        (requests, retries, failures, tokens, bytes) and every fault while recording (kind, status,
        attempt, path, redacted detail), in order."""
        models: dict[str, Any] = {}
        for client, n_before, usage_before, fresh in list(self._clients.values()):
            with client._lock:
                faults = [asdict(f) for f in client.faults[n_before:]]
                usage = {k: v - usage_before.get(k, 0) for k, v in client.usage.as_dict().items()}
            if not fresh and not faults and not usage["requests"]:
                continue  # an older client that did nothing meanwhile
            name = client.name or f"api:{client.config.model}@{redact(client.config.base_url)}"
            key, k = name, 2
            while key in models:
                key, k = f"{name} ({k})", k + 1
            kinds: dict[str, int] = {}
            for f in faults:
                label = f["kind"] + (f" {f['status']}" if f["status"] else "")
                kinds[label] = kinds.get(label, 0) + 1
            models[key] = {"base_url": redact(client.config.base_url), "model": client.config.model,
                           "usage": usage, "fault_counts": kinds, "faults": faults}
        return {"total_faults": sum(len(m["faults"]) for m in models.values()), "models": models}

    @property
    def used(self) -> bool:
        """Whether any API model was in use while recording."""
        return bool(self.report()["models"])

    def write(self, path: str | Path) -> Path:
        """Write :meth:`report` to ``path`` (atomically); returns the path."""
        return write_json(Path(path), self.report())

    def line(self, where: str = "faults.json") -> str:
        """One console line: the number of faults, per model by kind, and where the details are."""
        rep = self.report()
        per = "; ".join(f"{name}: " + (", ".join(f"{n} {k}" for k, n in m["fault_counts"].items()) or "none")
                        + f" in {m['usage']['requests']} answered requests"
                        for name, m in rep["models"].items())
        n = rep["total_faults"]
        return f"API faults: {n} failed attempt{'s' if n != 1 else ''} ({per}); details in {where}"


@contextmanager
def faults_recorded(out: Path) -> Iterator[FaultRecorder]:
    """Record the API clients used inside the block; on leaving it (normally or by an error) write
    their faults to ``out / faults.json`` when any API model was used (nothing otherwise)."""
    with FaultRecorder() as recorder:
        try:
            yield recorder
        finally:
            if recorder.used:
                recorder.write(out / FAULTS_FILE)
