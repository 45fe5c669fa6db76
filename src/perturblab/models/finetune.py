"""Time-boxed CPU fine-tuning of a Hugging Face sequence classifier (or regressor), saved for reuse.

:func:`finetune_classifier` trains ``AutoModelForSequenceClassification`` on a labelled
:class:`~perturblab.data.examples.Dataset` with plain torch (AdamW, linear warmup then decay),
by cross-entropy on class labels, or, on a regression data set (numeric targets, no class
names; STS-B), a one-output head (``num_labels=1``, ``problem_type="regression"``) by mean
squared error,
deterministically for a seed and leaving the caller's global RNG state alone. It stops after
``epochs``, at ``max_steps`` or after ``max_seconds`` of wall time, and atomically writes the
model, its tokenizer and ``perturblab_finetune.json`` (provenance). :func:`load_or_finetune`
keeps one directory per (base, data, seed, training config) under ``paths.data_home()/finetuned``.
``checkpoints=`` also keeps intermediate checkpoints (:mod:`.checkpoints`, SCoPE App. D).

The result loads with ``perturblab.models.HFSequenceClassifier(dir)`` (the classifier;
``HFSequenceRegressor(dir)`` for a regression fine-tune) and
``perturblab.models.HFEncoder(dir)`` (hidden states: ``AutoModel`` loads the base weights from
the classification checkpoint).
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import math
import re
import shutil
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..data.examples import Dataset
from ..errors import InputError
from ..paths import data_home
from .base import fingerprint_of
from .checkpoints import CheckpointWriter, check_fractions, removed_on_error
from .presets import data_fingerprint

logger = logging.getLogger(__name__)
META_FILE = "perturblab_finetune.json"


@dataclass(frozen=True)
class FinetuneConfig:
    """Training settings; ``max_seconds``/``max_steps`` of None mean no such limit."""

    epochs: int = 2
    lr: float = 5e-5
    batch_size: int = 32
    max_length: int = 128
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    max_seconds: float | None = 600.0
    max_steps: int | None = None

    def check(self) -> None:
        """Raise :class:`InputError` for settings that cannot train."""
        if not (self.epochs >= 1 and self.batch_size >= 1 and self.max_length >= 2 and self.lr >= 0
                and self.weight_decay >= 0 and 0 <= self.warmup_fraction < 1
                and (self.max_seconds is None or self.max_seconds >= 0)
                and (self.max_steps is None or self.max_steps >= 0)):
            raise InputError(f"bad {self}: need epochs, batch_size >= 1, max_length >= 2, 0 <= warmup_fraction < 1 "
                             "and lr, weight_decay, max_seconds, max_steps >= 0 (the last two may be None)")


def _check_data(train: Dataset) -> np.ndarray:
    """Class indices of ``train`` after checking it can train a classifier, or the float targets of
    a regression data set (no ``label_names``)."""
    name, k = train.name, len(train.label_names)
    if len(train) == 0:
        raise InputError(f"training data {name!r} is empty; give at least one example per class")
    if not train.label_names:  # regression: numeric targets
        y = np.asarray(train.labels, dtype=np.float64)
        if not np.isfinite(y).all() or np.ptp(y) == 0:
            raise InputError(f"regression data {name!r} needs finite targets that are not all equal")
        return y
    if k < 2:
        raise InputError(f"training data {name!r} has {k} class ({train.label_names}); "
                         "a classifier needs at least 2 label_names")
    labels, raw = train.labels, np.asarray([e.label for e in train.examples], dtype=np.float64)
    if not (np.all(raw == np.round(raw)) and raw.min() >= 0 and raw.max() < k):
        raise InputError(f"labels of {name!r} must be class indices 0..{k - 1} (Dataset.labels); "
                         "map label strings to indices into label_names")
    if len(np.unique(labels)) < 2:
        raise InputError(f"training data {name!r} has examples of only one class "
                         f"({train.label_names[int(labels[0])]!r}); give examples of at least 2 classes")
    return labels


def _is_finished(path: Path) -> bool:
    return (path / META_FILE).is_file() and (path / "config.json").is_file()


def _build_model(base: Any, tokenizer: Any, label_names: list[str]) -> tuple[Any, Any, str]:
    """(classification model on CPU, tokenizer, description of the base); no ``label_names``: a
    one-output regression head."""
    from transformers import AutoModelForSequenceClassification, PreTrainedModel
    from .hf import _load_tokenizer

    id2label = {i: str(n) for i, n in enumerate(label_names or ["score"])}
    label2id = {n: i for i, n in id2label.items()}
    problem = "single_label_classification" if label_names else "regression"
    if isinstance(base, (str, Path)):
        if not Path(base).expanduser().is_dir():
            raise InputError(f"base {str(base)!r} is not a local model directory; give a directory written "
                             "by save_pretrained or a PreTrainedModel instance")
        src = str(Path(base).expanduser())
        model = AutoModelForSequenceClassification.from_pretrained(
            src, num_labels=len(id2label), id2label=id2label, label2id=label2id, problem_type=problem,
            ignore_mismatched_sizes=True)
        return model, _load_tokenizer(tokenizer, src), src
    if not isinstance(base, PreTrainedModel):
        raise InputError(f"base must be a local model directory or a transformers PreTrainedModel, "
                         f"got {type(base).__name__}")
    cfg = copy.deepcopy(base.config)
    cfg.id2label, cfg.label2id = id2label, label2id
    cfg.problem_type = problem
    model = AutoModelForSequenceClassification.from_config(cfg)
    encoder = getattr(base, "base_model", base)
    try:
        result = model.base_model.load_state_dict(encoder.state_dict(), strict=False)
    except RuntimeError as err:  # shape mismatches
        raise InputError(f"the weights of base {type(base).__name__} do not fit "
                         f"{type(model).__name__}: {err}") from err
    if result.unexpected_keys:
        raise InputError(f"base {type(base).__name__} has weights that {type(model).__name__} does not use: "
                         f"{sorted(result.unexpected_keys)[:4]}; give the base encoder (e.g. a BertModel)")
    if result.missing_keys:
        logger.warning("weights not in the base, initialised fresh: %s", sorted(result.missing_keys)[:8])
    desc = f"{type(base).__name__}({getattr(base.config, '_name_or_path', '') or 'instance'})"
    return model, _load_tokenizer(tokenizer, None), desc


def _encode(tokenizer: Any, train: Dataset, max_length: int) -> list[dict[str, list[int]]]:
    """Token ids per example (pairs tokenised as pairs), padded later per batch by ``tokenizer.pad``."""
    encs = [tokenizer(e.text, e.text_b, truncation=True, max_length=max_length) for e in train.examples]
    return [{k: list(x[k]) for k in ("input_ids", "token_type_ids") if k in x} for x in encs]


def finetune_classifier(base: Any, train: Dataset, *, seed: int, out_dir: Path | str, tokenizer: Any = None,
                        config: FinetuneConfig = FinetuneConfig(), progress: bool = True,
                        checkpoints: Sequence[float] | None = None) -> Path:
    """Fine-tune ``base`` (a local HF directory or a base-encoder ``PreTrainedModel``) on ``train``.

    A bare encoder gets a freshly initialised classification head. ``tokenizer`` (an object or
    a directory) is needed when ``base`` is an instance. Returns ``out_dir``, which is replaced
    atomically; an existing ``out_dir`` must be an earlier fine-tune (or empty).

    ``checkpoints`` (fractions of the total steps, e.g. ``(0.0, 0.2, ..., 1.0)``) also saves the
    model at those points as ``out_dir/checkpoint-000``, ``checkpoint-020``, ... (SCoPE App. D;
    see :mod:`.checkpoints`); 0 is the initialised model before any update. Saving does not
    change training, and its time does not count against ``max_seconds``. When ``max_seconds``
    stops training before the last requested checkpoint, the state it stopped at is saved as
    one more checkpoint. The list is in ``perturblab_finetune.json`` under ``checkpoints``.
    """
    import torch

    config.check()
    if checkpoints is not None:
        checkpoints = check_fractions(checkpoints)
    labels = _check_data(train)
    out_dir = Path(out_dir).expanduser()
    if out_dir.exists() and not (out_dir.is_dir() and (_is_finished(out_dir) or not any(out_dir.iterdir()))):
        raise InputError(f"out_dir {str(out_dir)!r} exists but is not a finished fine-tune (no {META_FILE}); "
                         "remove it or choose another out_dir")
    per_epoch = math.ceil(len(train) / config.batch_size)
    planned = config.epochs * per_epoch
    total = planned if config.max_steps is None else min(planned, config.max_steps)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]), removed_on_error(tmp):
        torch.manual_seed(seed)
        model, tok, base_desc = _build_model(base, tokenizer, list(train.label_names))
        losses, saved = _train(model, tok, train, labels, config, seed=seed, total=total, tmp=tmp, start=start,
                               base_desc=base_desc, checkpoints=checkpoints, progress=progress)
    wall = time.perf_counter() - start
    steps = len(losses)
    stop = "epochs" if steps == planned else "max_steps" if steps == config.max_steps else "max_seconds"
    tenth = max(1, math.ceil(0.1 * steps))
    meta = {"base": base_desc, "data_name": train.name, "data_fingerprint": data_fingerprint(train),
            "n_train": len(train), "label_names": list(train.label_names), "seed": seed, "config": asdict(config),
            "steps": steps, "epochs_done": steps / per_epoch, "stop_reason": stop, "wall_seconds": wall,
            "loss_first_10pct": float(np.mean(losses[:tenth])) if steps else None,
            "loss_last_10pct": float(np.mean(losses[-tenth:])) if steps else None,
            "torch_version": torch.__version__}
    if checkpoints is not None:
        meta["checkpoint_fractions"], meta["checkpoints"] = list(checkpoints), saved
    _save(model, tok, meta, tmp, out_dir)
    logger.debug("fine-tuned %d steps (%s, %.1f s) into %s", steps, stop, wall, out_dir)
    return out_dir


def _optimizer(model: Any, config: FinetuneConfig, total: int) -> tuple[Any, Any]:
    """AdamW over ``model`` (no weight decay on biases and LayerNorm weights) and its schedule:
    the learning rate rises linearly over the first ``warmup_fraction`` of the ``total`` steps,
    then falls linearly to 0 at the last."""
    import torch

    warmup = int(config.warmup_fraction * total)
    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2], "weight_decay": config.weight_decay},
                             {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=config.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: s / max(1, warmup) if s < warmup
                                              else max(0.0, (total - s) / max(1, total - warmup)))
    return opt, sched


def _batches(n: int, seed: int, config: FinetuneConfig, total: int) -> Iterator[np.ndarray]:
    """The example indices of each of the ``total`` steps: each epoch is a permutation of the
    ``n`` examples (drawn for ``seed``) cut into batches of ``batch_size``."""
    rng, bs = np.random.default_rng(seed), config.batch_size
    orders = (rng.permutation(n) for _ in range(config.epochs))
    return itertools.islice((o[b:b + bs] for o in orders for b in range(0, n, bs)), total)


def _train(model: Any, tok: Any, train: Dataset, labels: np.ndarray, config: FinetuneConfig, *, seed: int,
           total: int, tmp: Path, start: float, base_desc: str, checkpoints: list[float] | None,
           progress: bool) -> tuple[list[float], Any]:
    """Train ``model`` in place for at most ``total`` steps, or until ``max_seconds`` after
    ``start`` (not counting the time spent saving checkpoints) have passed; returns the loss of
    each step and, with ``checkpoints``, the checkpoints saved under ``tmp`` (else None)."""
    from tqdm.auto import tqdm

    limits = (getattr(tok, "model_max_length", None), getattr(model.config, "max_position_embeddings", None))
    max_length = int(min([config.max_length, *[x for x in limits if isinstance(x, int) and x > 1]]))
    encs = _encode(tok, train, max_length)
    opt, sched = _optimizer(model, config, total)
    batches = _batches(len(train), seed, config, total)
    logger.debug("fine-tuning %s on %s (%d examples, %d labels, up to %d steps)", base_desc,
                train.name, len(train), len(train.label_names), total)
    writer, paused = None, 0.0  # checkpoint writer; seconds spent saving checkpoints
    if checkpoints is not None:
        writer = CheckpointWriter(checkpoints, total, tmp, info={
            "base": base_desc, "data_name": train.name, "data_fingerprint": data_fingerprint(train),
            "label_names": list(train.label_names), "seed": seed, "config": asdict(config)})
        paused += writer.save(0, model, tok)
    losses: list[float] = []
    classes = bool(train.label_names)
    model.train()
    with tqdm(total=total, desc="fine-tuning", unit="step", disable=not progress) as bar:
        for idx in batches:
            losses.append(_step(model, tok, [encs[i] for i in idx], labels[idx], classes, opt, sched))
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
            if writer is not None and writer.due(len(losses)):
                paused += writer.save(len(losses), model, tok, {"loss": losses[-1]})
            if config.max_seconds is not None and time.perf_counter() - start - paused >= config.max_seconds:
                break
    return losses, None if writer is None else writer.finish(len(losses), model, tok)


def _step(model: Any, tok: Any, encs: list[dict[str, list[int]]], targets: np.ndarray, classes: bool,
          opt: Any, sched: Any) -> float:
    """One update on the batch of encoded examples ``encs`` (padded here) with ``targets``:
    cross-entropy on class indices (``classes``), else mean squared error of the one output;
    returns the batch's loss."""
    import torch

    batch = tok.pad(encs, return_tensors="pt")
    logits = model(**batch).logits
    if classes:
        loss = torch.nn.functional.cross_entropy(logits, torch.as_tensor(targets, dtype=torch.long))
    else:
        loss = torch.nn.functional.mse_loss(logits[:, 0], torch.as_tensor(targets, dtype=logits.dtype))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    return float(loss.detach())


def _save(model: Any, tok: Any, meta: dict[str, Any], tmp: Path, out_dir: Path) -> None:
    """Write ``model``, ``tok`` and ``meta`` into ``tmp`` (which may hold checkpoints already),
    then put it in the place of ``out_dir`` (an earlier fine-tune there is removed); ``tmp`` is
    removed whatever happens."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
        old = out_dir.parent / f".{out_dir.name}.old-{uuid.uuid4().hex[:8]}"
        if out_dir.exists():
            out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def finetuned_dir(base_name: str, train: Dataset, seed: int, config: FinetuneConfig = FinetuneConfig(),
                  checkpoints: Sequence[float] | None = None) -> Path:
    """Where :func:`load_or_finetune` keeps the fine-tune of ``base_name`` on ``train`` with ``seed``
    and ``config`` (each training budget, and each list of checkpoint fractions, gets its own directory)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", base_name).strip("._") or "model"
    cfg = fingerprint_of(sorted(asdict(config).items()))[:8]
    name = f"{safe}__{data_fingerprint(train)}__seed{seed}__{cfg}"
    if checkpoints is not None:
        name += f"__ckpt{fingerprint_of(check_fractions(checkpoints))[:8]}"
    return data_home() / "finetuned" / name


def read_finetune_meta(path: Path | str) -> dict:
    """The ``perturblab_finetune.json`` provenance of a fine-tuned directory."""
    file = Path(path).expanduser() / META_FILE
    if not file.is_file():
        raise InputError(f"{str(path)!r} is not a perturblab fine-tune (no {META_FILE})")
    return json.loads(file.read_text(encoding="utf-8"))


def load_or_finetune(base_name: str, base: Any, train: Dataset, *, seed: int, tokenizer: Any = None,
                     config: FinetuneConfig = FinetuneConfig(), retrain: bool = False,
                     progress: bool = True, checkpoints: Sequence[float] | None = None) -> Path:
    """The directory of ``base`` fine-tuned on ``train`` with ``seed``, trained only when needed.

    A stored directory is reused when its data fingerprint, seed and config (and checkpoint
    fractions, see :func:`finetune_classifier`) match and ``retrain`` is False; otherwise it is
    replaced by a new fine-tune.
    """
    if checkpoints is not None:
        checkpoints = check_fractions(checkpoints)
    path = finetuned_dir(base_name, train, seed, config, checkpoints)
    try:
        meta = {} if retrain or not _is_finished(path) else read_finetune_meta(path)
    except (ValueError, OSError):  # unreadable metadata: fine-tune again
        meta = {}
    if meta and (meta.get("data_fingerprint"), meta.get("seed"), meta.get("config")) == (
            data_fingerprint(train), seed, asdict(config)) and meta.get("checkpoint_fractions") == checkpoints:
        logger.debug("using the fine-tuned model in %s", path)
        return path
    if path.exists() and not _is_finished(path):
        shutil.rmtree(path)  # our own, unfinished or corrupt directory
    kw = {} if checkpoints is None else {"checkpoints": checkpoints}
    return finetune_classifier(base, train, seed=seed, out_dir=path, tokenizer=tokenizer, config=config,
                               progress=progress, **kw)
