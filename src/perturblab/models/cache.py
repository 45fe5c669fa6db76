"""A content-addressed prediction cache in front of any :class:`~.base.Classifier`.

An input's key is ``sha256(json([inner.fingerprint, input]))`` (a pair is keyed apart from
a text), so a cache file can be shared by several models and is invalidated by any change
of the model. Repeated inputs are served without calling the model; the misses of a call are
sent in one batch, in order of first occurrence, each distinct input once. Probabilities are
kept as float32 and always returned as float32, so a result is bit-identical whether it comes
from the model, memory or disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from .base import Classifier, TextInput, check_inputs

_SQL_CHUNK = 500
log = logging.getLogger(__name__)


class CachedClassifier:
    """Wraps ``inner``; same ``labels`` and ``fingerprint``, fewer model calls.

    ``max_entries`` bounds the in-memory entries (least recently used dropped first; the
    disk cache is unbounded). ``path`` is an SQLite file that persists across instances and
    runs. ``hits`` counts inputs served without scoring (including repeats within one call),
    ``misses`` the distinct inputs sent to ``inner``, ``disk_hits`` the hits read from disk.
    """

    def __init__(self, inner: Classifier, max_entries: int | None = None, path: str | Path | None = None) -> None:
        if max_entries is not None and max_entries < 1:
            raise InputError(f"max_entries must be >= 1 or None, got {max_entries}")
        self.inner = inner
        self.labels: list[str] = list(inner.labels)
        self.fingerprint: str = inner.fingerprint
        self.max_entries = max_entries
        self.hits = self.misses = self.disk_hits = 0
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.RLock()
        self.path = Path(path) if path is not None else None
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = self._open(self.path)
            except sqlite3.DatabaseError as e:  # derivable: set the unreadable file aside and start afresh
                if "locked" in str(e) or "readonly" in str(e):
                    raise InputError(f"cannot use {self.path} as a prediction cache ({e}); choose a writable "
                                     "output directory") from None
                aside = self.path.with_name(self.path.name + ".corrupt")
                log.warning("the prediction cache %s is unreadable (%s); moved it to %s and starting an empty one",
                            self.path, e, aside.name)
                for suffix in ("", "-wal", "-shm"):
                    src = Path(str(self.path) + suffix)
                    if src.exists():
                        src.replace(Path(str(aside) + suffix))
                self._db = self._open(self.path)

    def _set_aside(self, error: Exception) -> None:
        """Move a damaged cache file aside (with a warning) and go on with a fresh one."""
        assert self.path is not None and self._db is not None
        log.warning("the prediction cache %s is damaged (%s); moved it to %s.corrupt and starting an empty one",
                    self.path, error, self.path.name)
        self._db.close()
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                src.replace(Path(str(self.path) + ".corrupt" + suffix))
        self._db = self._open(self.path)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS probs (key TEXT PRIMARY KEY, k INTEGER NOT NULL, probs BLOB NOT NULL)")
            db.commit()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def __repr__(self) -> str:
        return f"CachedClassifier({self.inner!r}, hits={self.hits}, misses={self.misses})"

    def __len__(self) -> int:
        return len(self._mem)

    def key(self, x: TextInput) -> str:
        """The cache key of one input for this model."""
        body = json.dumps([self.fingerprint, x if isinstance(x, str) else list(x)], ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def _from_disk(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        if self._db is None or not keys:
            return found
        k = len(self.labels)
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start:start + _SQL_CHUNK]
            try:
                rows = self._db.execute(f"SELECT key, k, probs FROM probs WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk).fetchall()
            except sqlite3.DatabaseError as e:  # damaged pages: derivable, so start a fresh file
                self._set_aside(e)
                return found
            for key, kk, blob in rows:
                p = np.frombuffer(blob, dtype=np.float32).copy() if kk == k and len(blob) == 4 * k else None
                if p is None or not np.isfinite(p).all():  # derivable: drop it, the model scores it again
                    log.warning("discarding a corrupt entry of the prediction cache %s; scoring it again", self.path)
                    continue
                found[key] = p
        return found

    def _remember(self, key: str, p: np.ndarray) -> None:
        self._mem[key] = p
        self._mem.move_to_end(key)
        if self.max_entries is not None:
            while len(self._mem) > self.max_entries:
                self._mem.popitem(last=False)

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float32 probabilities; only unseen inputs reach ``inner``."""
        inputs = check_inputs(inputs)
        k = len(self.labels)
        keys = [self.key(x) for x in inputs]
        first: dict[str, int] = {}
        counts: dict[str, int] = {}
        for i, key in enumerate(keys):
            first.setdefault(key, i)
            counts[key] = counts.get(key, 0) + 1
        with self._lock:
            found = {key: self._mem[key] for key in first if key in self._mem}
            disk = self._from_disk([key for key in first if key not in found])
            self.disk_hits += sum(counts[key] for key in disk)
            found.update(disk)
            todo = [key for key in first if key not in found]
            if todo:
                p = np.asarray(self.inner.predict_proba([inputs[first[key]] for key in todo]))
                if p.shape != (len(todo), k):
                    raise InputError(f"{self.inner!r} returned shape {p.shape} for {len(todo)} inputs; "
                                     f"expected ({len(todo)}, {k})")
                p = p.astype(np.float32)
                new = dict(zip(todo, p))
                found.update(new)
                if self._db is not None:
                    try:
                        self._db.executemany("INSERT OR REPLACE INTO probs (key, k, probs) VALUES (?, ?, ?)",
                                             [(key, k, row.tobytes()) for key, row in new.items()])
                        self._db.commit()
                    except sqlite3.DatabaseError as e:
                        self._set_aside(e)
            self.misses += len(todo)
            self.hits += len(inputs) - len(todo)
            out = np.stack([found[key] for key in keys]) if keys else np.zeros((0, k), np.float32)
            for key in first:
                self._remember(key, found[key])
        return out

    def clear(self, *, disk: bool = False) -> None:
        """Forget the in-memory entries (and the on-disk ones of every model with ``disk=True``)."""
        with self._lock:
            self._mem.clear()
            if disk and self._db is not None:
                self._db.execute("DELETE FROM probs")
                self._db.commit()

    def close(self) -> None:
        """Close the SQLite connection (the in-memory cache stays usable)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> "CachedClassifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
