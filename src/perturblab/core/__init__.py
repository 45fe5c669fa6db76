"""The study core: every study is a :class:`Study` run by one driver (:func:`run_study`).

* :mod:`.study` — :class:`Study`, :class:`Phase`, :class:`Task`, :class:`StudyResult`;
* :mod:`.driver` — :func:`run_study`: lock, store, content-keyed resume, progress, executor;
* :mod:`.keys` — content keys of examples, models and options;
* :mod:`.lock` — one process per output directory;
* :mod:`.files` — atomic writes and NaN-safe JSON.
"""

from .._lazy import lazy_exports

_EXPORTS = {
    "Study": "study", "Phase": "study", "Task": "study", "Lazy": "study", "StudyResult": "study", "RunContext": "study",
    "run_study": "driver", "content_key": "keys", "examples_fingerprint": "keys", "model_fingerprint": "keys",
    "output_lock": "lock", "LockedError": "lock", "atomic_write_text": "files", "atomic_write_bytes": "files",
    "write_json": "files", "json_safe": "files",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
