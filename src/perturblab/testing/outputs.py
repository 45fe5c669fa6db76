"""The output files of a study run, as the contracts compare them: each file's text without
run ids and times (:func:`normalised`), the files of a directory, the cells of its results store.
Standard library only: ``scripts/compare_outputs.py`` loads this file by its path."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any


#: JSON keys and CSV columns that name a run or time it: left out when outputs are compared
VOLATILE = frozenset({"run_id", "seconds", "created", "finished", "started", "pid", "config", "config_dir"})


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def normalised(path: str | Path) -> str:
    """The file's text with run ids and times left out (JSON keys, CSV columns in :data:`VOLATILE`),
    so two runs of the same study compare equal.

    Example::

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.json"
        >>> _ = p.write_text('{"run_id": "abc", "n": 3}')
        >>> normalised(p)
        '{\\n "n": 3\\n}'
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.dumps(_strip(json.loads(text)), sort_keys=True, indent=1)
    if path.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        if rows:
            keep = [i for i, c in enumerate(rows[0]) if c not in VOLATILE]
            out = io.StringIO()
            csv.writer(out).writerows([[r[i] for i in keep if i < len(r)] for r in rows])
            return out.getvalue()
    return text


#: output files compared by content; figures and HTML pages are compared by presence
TEXT = frozenset({".json", ".csv", ".md"})
OUTPUT = TEXT | {".png", ".html"}
#: the file a config run adds to each study's folder (its name, kind and options)
MANIFEST = "study.json"


def outputs(d: str | Path) -> dict[str, Path]:
    """The output files of a study directory, by name relative to it (not the results store, its
    lock and caches, nor a config run's ``study.json``)."""
    d = Path(d)
    return {str(p.relative_to(d)): p for p in sorted(d.rglob("*"))
            if p.is_file() and p.suffix in OUTPUT and p.name != MANIFEST}


def contents(d: str | Path) -> dict[str, str | None]:
    """Each output file's :func:`normalised` text (None for a figure or HTML page)."""
    return {name: normalised(p) if p.suffix in TEXT else None for name, p in outputs(d).items()}


def cells(d: str | Path) -> dict[tuple[str, str], str]:
    """The rows of the ``cells`` table of ``d/results.sqlite``: (namespace, key) -> stored result."""
    con = sqlite3.connect(Path(d) / "results.sqlite")
    try:
        return {(s, k): r for s, k, r in con.execute("SELECT study, key, result FROM cells")}
    finally:
        con.close()


