"""Intermediate checkpoints of a fine-tune (SCoPE App. D, Figs. 9-10).

The SCoPE paper follows how shared invariances evolve over training by comparing intermediate
checkpoints m_t with the final one (Fig. 9, Fig. 10 left) and with their predecessor m_{t-1}
(Fig. 10 right). :func:`~.finetune.finetune_classifier` writes such checkpoints when given
``checkpoints=(0.0, 0.2, ..., 1.0)``: fractions of its total number of optimizer steps. Each
becomes a subdirectory ``checkpoint-PPP`` (PPP = percent of training, ``checkpoint-000`` is
the initialised model before any update, with its random classification head, as the paper's
0 % case) of the fine-tune's directory, loadable by ``HFSequenceClassifier(dir)``, with its
provenance in ``perturblab_checkpoint.json`` (step, fraction, ...).

Every checkpoint is first written to a hidden sibling directory and then renamed, so a
directory named ``checkpoint-*`` is always complete.
"""

from __future__ import annotations

import json
import math
import shutil
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import InputError

CHECKPOINT_META = "perturblab_checkpoint.json"
PREFIX = "checkpoint-"


def percent_label(percent: float) -> str:
    """``checkpoint-020`` for 20 %, ``checkpoint-012.5`` for 12.5 % (one decimal when needed)."""
    rounded = round(percent, 1)
    body = f"{int(rounded):03d}" if rounded == int(rounded) else f"{rounded:05.1f}"
    return PREFIX + body


def check_fractions(fractions: Sequence[float]) -> list[float]:
    """``fractions`` sorted, after checking they are distinct numbers in [0, 1] with distinct names."""
    try:
        values = sorted(float(f) for f in fractions)
    except (TypeError, ValueError):
        raise InputError(f"checkpoint fractions must be numbers in [0, 1], got {list(fractions)!r}") from None
    if not values:
        raise InputError("give at least one checkpoint fraction in [0, 1] (e.g. 0, 0.5, 1)")
    bad = [f for f in values if not (math.isfinite(f) and 0.0 <= f <= 1.0)]
    if bad:
        raise InputError(f"checkpoint fractions must lie in [0, 1] (20 % is 0.2), got {bad}")
    names = [percent_label(100 * f) for f in values]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"checkpoint fractions {values} give the same directory name twice ({dupes}); "
                         "give fractions at least 0.001 apart")
    return values


@dataclass
class CheckpointWriter:
    """Saves the model at the steps nearest to ``fractions`` of ``total`` steps into ``root``.

    Used by :func:`~.finetune.finetune_classifier`: :meth:`due` says whether step ``s`` (the
    number of optimizer updates done so far; 0 = before training) is a checkpoint, :meth:`save`
    writes it, :meth:`finish` adds the state training stopped at when a time limit cut it short
    of a requested checkpoint, so the list always ends with the returned model.
    """

    fractions: Sequence[float]
    total: int
    root: Path
    info: dict[str, Any] = field(default_factory=dict)
    written: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fractions = check_fractions(self.fractions)
        self._steps: dict[int, list[float]] = {}
        for f in self.fractions:
            self._steps.setdefault(int(round(f * self.total)), []).append(f)

    def due(self, step: int) -> bool:
        """Whether a checkpoint is requested after ``step`` updates."""
        return step in self._steps

    def save(self, step: int, model: Any, tokenizer: Any, extra: dict[str, Any] | None = None) -> float:
        """Write every checkpoint requested at ``step`` (atomically, one directory each); returns
        the seconds it took (not counted against a training time limit)."""
        start = time.perf_counter()
        for f in self._steps.get(step, []):
            self._write(percent_label(100 * f), step, f, model, tokenizer, extra or {})
        return time.perf_counter() - start

    def finish(self, steps: int, model: Any, tokenizer: Any, extra: dict[str, Any] | None = None) -> list[dict]:
        """Provenance of all written checkpoints, after saving the final state when training stopped
        (time limit) before the last requested checkpoint."""
        last = max(self._steps)
        if steps < last and not any(c["step"] == steps for c in self.written):
            pct = 100 * steps / max(1, self.total)
            self._write(percent_label(pct), steps, None, model, tokenizer, {**(extra or {}), "stopped_early": True})
        return sorted(self.written, key=lambda c: (c["step"], c["name"]))

    def _write(self, name: str, step: int, requested: float | None, model: Any, tokenizer: Any,
               extra: dict[str, Any]) -> None:
        fraction = step / self.total if self.total else (requested or 0.0)
        meta = {"name": name, "step": step, "fraction": fraction,
                "requested_fraction": requested, "total_steps": self.total, **self.info, **extra}
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{name}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / CHECKPOINT_META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
            tmp.rename(self.root / name)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        self.written.append({"name": name, "step": step, "fraction": meta["fraction"],
                             "requested_fraction": requested})


@contextmanager
def removed_on_error(path: Path) -> Iterator[None]:
    """Remove the staging directory ``path`` (and the checkpoints in it) when the block raises."""
    try:
        yield
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def read_checkpoint_meta(path: Path | str) -> dict[str, Any] | None:
    """The ``perturblab_checkpoint.json`` of a checkpoint directory, or None when it has none."""
    file = Path(path).expanduser() / CHECKPOINT_META
    if not file.is_file():
        return None
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def list_checkpoints(path: Path | str) -> list[Path]:
    """The ``checkpoint-*`` subdirectories of a fine-tune, in training order (by step, else by name)."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(f"{str(path)!r} is not a directory")
    dirs = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(PREFIX)]

    def key(p: Path) -> tuple:
        meta = read_checkpoint_meta(p) or {}
        step = meta.get("step")
        return (0 if isinstance(step, int) else 1, step if isinstance(step, int) else 0, p.name)

    return sorted(dirs, key=key)
